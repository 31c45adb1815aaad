"""Find references, prepareRename and rename through a real JSON-RPC client (pytest-lsp), with
the recorded capabilities of VS Code and Neovim 0.7 and 0.11 (UTF-8 positions).

Renames change the store and the vault, so each test gets its own server on a fresh copy
of the fixture knowledge base and vault (``tmp_path``), chosen by ``initializationOptions``;
the shared store of ``tests/client/conftest.py`` is never touched. The vault holds one more
note, ``mentions.md``, naming records in every form after emoji (UTF-16 and UTF-8 columns
differ there).
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_memory.services.memory.interchange import import_records
from lsp_memory.store.sqlite import STORE_FILE, open_store
from tests.client.conftest import ENCODINGS, ENV, WORK, takes_refreshes
from tests.client.test_hover_definition import markdown, opened, position_of, units
from tests.conftest import DATA, KB, USER, snapshot

MENTIONS = """\
# Mentions 😀

😀 café @leaf_superseded_a004, then #4 and @claim_4.
Context @leaf_ctx, by its name @leaf_context; entity @alice_ent.
`@leaf_ctx in code` is no reference.
Alice: [[Alice Notes]], [[A. Example]], [[alice.md]], [[Alice|Al]],
[[Alice Notes#Working Style|her style]]. Plan: [[project-plan]].
"""
REQUEST_FAILED = types.LSPErrorCodes.RequestFailed


async def start(
    request: pytest.FixtureRequest,
    lsp_client: LanguageClient,
    capabilities: types.ClientCapabilities,
) -> None:
    """Initialise ``lsp_client`` on a fresh store and vault in the test's ``tmp_path``."""
    folder: Path = request.getfixturevalue("tmp_path")
    with open_store(folder / "store") as store:
        import_records(store, KB.read_bytes(), user=USER, source="kb")
    shutil.copytree(DATA / "notes", folder / "vault")
    (folder / "vault" / "mentions.md").write_text(MENTIONS, encoding="utf-8")
    takes_refreshes(lsp_client)
    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            workspace_folders=[types.WorkspaceFolder(uri=(folder / "vault").as_uri(), name="v")],
            initialization_options={
                "store": str(folder / "store"),
                "cache": str(folder / "cache"),
                "busy_timeout_ms": 200,
            },
        )
    )
    ENCODINGS[id(lsp_client)] = result.capabilities.position_encoding
    for _ in range(300):
        if any("index ready" in m.message for m in lsp_client.log_messages):
            return
        await asyncio.sleep(0.05)
    pytest.fail(f"no 'index ready' message: {lsp_client.log_messages}")


CONFIG = ClientServerConfig(
    server_command=[sys.executable, "-m", "lsp_memory", "serve"], server_env=ENV
)


@pytest_lsp.fixture(  # type: ignore[untyped-decorator]
    params=["visual-studio-code", "neovim@v0.7", "neovim@v0.11"], config=CONFIG
)
async def editor(
    request: pytest.FixtureRequest, lsp_client: LanguageClient
) -> AsyncIterator[LanguageClient]:
    await start(request, lsp_client, client_capabilities(request.param))
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)  # type: ignore[untyped-decorator]
async def no_file_renames(
    request: pytest.FixtureRequest, lsp_client: LanguageClient
) -> AsyncIterator[LanguageClient]:
    """VS Code, but declaring no resource operations: it cannot rename files."""
    capabilities = client_capabilities("visual-studio-code")
    assert capabilities.workspace is not None and capabilities.workspace.workspace_edit
    capabilities.workspace.workspace_edit.resource_operations = None
    await start(request, lsp_client, capabilities)
    yield lsp_client
    await lsp_client.shutdown_session()


# -- helpers -------------------------------------------------------------------------------------


def vault_of(tmp_path: Path) -> Path:
    return tmp_path / "vault"


async def references(
    client: LanguageClient, uri: str, text: str, needle: str, *, declaration: bool = False
) -> Sequence[types.Location] | None:
    return await client.text_document_references_async(
        types.ReferenceParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=position_of(client, text, needle),
            context=types.ReferenceContext(include_declaration=declaration),
        )
    )


def texts_at(
    client: LanguageClient, found: Sequence[types.Location] | None, texts: dict[str, str]
) -> list[tuple[str, str]]:
    """Each location as (file name, the text in its range), read back through the client's
    position units from ``texts`` (by URI) or the file."""
    assert found is not None
    shown = []
    for location in found:
        text = texts.get(location.uri)
        if text is None:
            text = Path(location.uri.removeprefix("file://")).read_text(encoding="utf-8")
        start = offset(client, text, location.range.start)
        end = offset(client, text, location.range.end)
        shown.append((location.uri.rpartition("/")[2], text[start:end]))
    return shown


def offset(client: LanguageClient, text: str, position: types.Position) -> int:
    """The string index of a client position in ``text``."""
    lines = text.splitlines(True)
    line = lines[position.line] if position.line < len(lines) else ""
    index = 0
    while index < len(line) and units(client, line[:index]) < position.character:
        index += 1
    return sum(len(x) for x in lines[: position.line]) + index


def applied(client: LanguageClient, edit: types.WorkspaceEdit | None) -> dict[str, str]:
    """What the text edits of ``edit`` make of each file (by name), as a client applies
    them."""
    assert edit is not None
    by_uri: dict[str, list[types.TextEdit]] = {}
    if edit.document_changes is not None:
        for change in edit.document_changes:
            if isinstance(change, types.TextDocumentEdit):
                edits = [e for e in change.edits if isinstance(e, types.TextEdit)]
                by_uri.setdefault(change.text_document.uri, []).extend(edits)
    for uri, changed in (edit.changes or {}).items():
        by_uri.setdefault(uri, []).extend(changed)
    result = {}
    for uri, edits in by_uri.items():
        text = Path(uri.removeprefix("file://")).read_text(encoding="utf-8")
        spans = [
            (offset(client, text, e.range.start), offset(client, text, e.range.end), e.new_text)
            for e in edits
        ]
        for start, end, new_text in sorted(spans, reverse=True):
            text = text[:start] + new_text + text[end:]
        result[uri.rpartition("/")[2]] = text
    return result


async def rename(
    client: LanguageClient, uri: str, text: str, needle: str, new_name: str, *, delta: int = 1
) -> types.WorkspaceEdit | None:
    return await client.text_document_rename_async(
        types.RenameParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=position_of(client, text, needle, delta),
            new_name=new_name,
        )
    )


async def prepare(
    client: LanguageClient, uri: str, text: str, needle: str, delta: int = 1
) -> types.PrepareRenameResult | None:
    return await client.text_document_prepare_rename_async(
        types.PrepareRenameParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=position_of(client, text, needle, delta),
        )
    )


def versioned(client: LanguageClient) -> bool:
    """Whether the client declared ``documentChanges`` (VS Code; not these Neovims)."""
    workspace = client.capabilities.workspace if client.capabilities else None
    edit = workspace.workspace_edit if workspace else None
    return bool(edit and edit.document_changes)


# -- references ----------------------------------------------------------------------------------


async def test_references_to_a_claim_in_every_form_after_emoji(
    editor: LanguageClient, tmp_path: Path
) -> None:
    text = "😀😀 ask #4, please"
    async with opened(editor, text, (tmp_path / "prompt.md").as_uri()) as uri:
        found = await references(editor, uri, text, "#4")
        assert texts_at(editor, found, {uri: text}) == [
            ("prompt.md", "#4"),
            ("mentions.md", "@leaf_superseded_a004"),
            ("mentions.md", "#4"),
            ("mentions.md", "@claim_4"),
        ]
        assert found is not None
        assert found[0].range.start == types.Position(line=0, character=units(editor, "😀😀 ask "))
        line = "😀 café @leaf_superseded_a004, then "
        assert found[2].range == types.Range(
            start=types.Position(line=2, character=units(editor, line)),
            end=types.Position(line=2, character=units(editor, line + "#4")),
        )
        # A record is declared in the store, not in a document: the same answer.
        assert await references(editor, uri, text, "#4", declaration=True) == found


async def test_references_to_a_context_by_id_or_name_and_to_an_entity(
    editor: LanguageClient, tmp_path: Path
) -> None:
    text = "@leaf_context or @alice_ent"
    async with opened(editor, text, (tmp_path / "prompt.md").as_uri()) as uri:
        context = texts_at(editor, await references(editor, uri, text, "@leaf"), {uri: text})
        assert context == [
            ("prompt.md", "@leaf_context"),
            ("mentions.md", "@leaf_ctx"),  # the one in a code span is not a reference
            ("mentions.md", "@leaf_context"),
        ]
        entity = texts_at(editor, await references(editor, uri, text, "@alice"), {uri: text})
        assert entity == [("prompt.md", "@alice_ent"), ("mentions.md", "@alice_ent")]


async def test_references_to_a_note_through_every_link_form_and_from_inside_it(
    editor: LanguageClient, tmp_path: Path
) -> None:
    backlinks = [
        ("mentions.md", "[[Alice Notes]]"),
        ("mentions.md", "[[A. Example]]"),
        ("mentions.md", "[[alice.md]]"),
        ("mentions.md", "[[Alice|Al]]"),
        ("mentions.md", "[[Alice Notes#Working Style|her style]]"),
        ("project-plan.md", "[[Alice Notes]]"),
        ("deep-note.md", "[[Alice Notes#Working Style|Alice's style]]"),
    ]
    text = "😀 see [[./alice#Open Questions]]"
    async with opened(editor, text, (tmp_path / "prompt.md").as_uri()) as uri:
        found = await references(editor, uri, text, "[[./alice", declaration=True)
        assert texts_at(editor, found, {uri: text}) == [
            ("alice.md", "Alice Notes"),  # the declaration: the front-matter title
            ("prompt.md", "[[./alice#Open Questions]]"),
            *backlinks,
        ]
    alice = vault_of(tmp_path) / "alice.md"
    note = alice.read_text(encoding="utf-8")
    async with opened(editor, note, alice.as_uri()) as uri:
        inside = await references(editor, uri, note, "manages the")
        assert texts_at(editor, inside, {}) == backlinks


async def test_references_in_the_shared_fixture_vault(client: LanguageClient) -> None:
    """The same through the shared ``client`` fixture (read only: nothing is renamed)."""
    text = "😀 [[project-plan#Risks|the risks]]"
    async with opened(client, text, (WORK / "references.md").as_uri()) as uri:
        found = await references(client, uri, text, "[[project", declaration=True)
        assert texts_at(client, found, {uri: text}) == [
            ("project-plan.md", "Project Plan"),  # the title heading
            ("references.md", "[[project-plan#Risks|the risks]]"),
            ("alice.md", "[[Project Plan#Milestones]]"),
            ("meeting.md", "[[project-plan]]"),
            ("old-plan.md", "[[Project Plan]]"),
        ]


async def test_the_unsaved_text_of_an_open_note_wins_over_its_file(
    editor: LanguageClient, tmp_path: Path
) -> None:
    mentions = vault_of(tmp_path) / "mentions.md"
    buffer = "# Mentions\n\n🎉🎉 only #4 now\n"
    async with opened(editor, buffer, mentions.as_uri()) as uri:
        text = "#4"
        async with opened(editor, text, (tmp_path / "prompt.md").as_uri()) as prompt:
            found = await references(editor, prompt, text, "#4")
            assert found is not None and len(found) == 2
            assert {location.uri for location in found} == {uri, prompt}
            in_buffer = next(location for location in found if location.uri == uri)
            assert in_buffer.range.start == types.Position(
                line=2, character=units(editor, "🎉🎉 only ")
            )


# -- prepareRename -------------------------------------------------------------------------------


async def test_prepare_rename_gives_the_range_of_the_name_and_a_placeholder(
    editor: LanguageClient, tmp_path: Path
) -> None:
    text = "😀 café @leaf_ctx and [[Alice|Al]] or #4"
    async with opened(editor, text, (tmp_path / "prompt.md").as_uri()) as uri:
        found = await prepare(editor, uri, text, "@leaf_ctx", 4)
        start = units(editor, "😀 café @")
        assert found == types.PrepareRenamePlaceholder(
            range=types.Range(
                start=types.Position(line=0, character=start),
                end=types.Position(line=0, character=start + len("leaf_ctx")),
            ),
            placeholder="leaf_ctx",
        )
        link = await prepare(editor, uri, text, "[[Alice", 3)
        start = units(editor, "😀 café @leaf_ctx and [[")
        assert link == types.PrepareRenamePlaceholder(
            range=types.Range(
                start=types.Position(line=0, character=start),
                end=types.Position(line=0, character=start + len("Alice")),
            ),
            placeholder="Alice Notes",
        )
        assert await prepare(editor, uri, text, "and") is None
        with pytest.raises(JsonRpcException) as error:
            await prepare(editor, uri, text, "#4")
        assert error.value.code == REQUEST_FAILED
        assert "claim numbers are permanent" in error.value.message
    plan = vault_of(tmp_path) / "project-plan.md"
    note = plan.read_text(encoding="utf-8")
    async with opened(editor, note, plan.as_uri()) as uri:
        title = await prepare(editor, uri, note, "Project Plan", 3)
        assert title == types.PrepareRenamePlaceholder(
            range=types.Range(
                start=types.Position(line=0, character=2),
                end=types.Position(line=0, character=14),
            ),
            placeholder="Project Plan",
        )
        assert await prepare(editor, uri, note, "The plan") is None


# -- rename --------------------------------------------------------------------------------------


async def test_renaming_a_context_id_rewrites_every_id_and_renames_it_in_the_store(
    editor: LanguageClient, tmp_path: Path
) -> None:
    text = "😀 ask @leaf_ctx about #1"
    prompt = tmp_path / "prompt.md"
    prompt.write_text(text, encoding="utf-8")
    async with opened(editor, text, prompt.as_uri()) as uri:
        edit = await rename(editor, uri, text, "@leaf_ctx", "@leaf_branch")
        assert edit is not None
        if versioned(editor):
            assert edit.changes is None and edit.document_changes is not None
            versions = {
                c.text_document.uri.rpartition("/")[2]: c.text_document.version
                for c in edit.document_changes
                if isinstance(c, types.TextDocumentEdit)
            }
            assert versions == {"prompt.md": 1, "mentions.md": None}
        else:
            assert edit.document_changes is None
        texts = applied(editor, edit)
        assert texts["prompt.md"] == "😀 ask @leaf_branch about #1"
        assert "Context @leaf_branch, by its name @leaf_context;" in texts["mentions.md"]
        assert "`@leaf_ctx in code`" in texts["mentions.md"]
    with open_store(tmp_path / "store") as store:  # a connection of its own
        assert store.context_by_friendly_id(USER, "leaf_ctx") is None
        renamed = store.context_by_friendly_id(USER, "leaf_branch")
        assert renamed is not None and renamed.name == "Leaf Context"
    async with opened(editor, "@leaf_ctx @leaf_branch", (tmp_path / "after.md").as_uri()) as uri:
        old = await editor.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=0, character=2),
            )
        )
        assert markdown(old) == "⚠️ No memory or context found with ID: leaf_ctx"
        new = await editor.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=0, character=12),
            )
        )
        assert "**Context @leaf_branch** · Leaf Context" in markdown(new)


async def test_renaming_a_note_renames_its_file_where_the_client_can(
    editor: LanguageClient, tmp_path: Path
) -> None:
    vault = vault_of(tmp_path)
    mentions = vault / "mentions.md"
    text = mentions.read_text(encoding="utf-8")
    async with opened(editor, text, mentions.as_uri()) as uri:
        edit = await rename(editor, uri, text, "[[project-plan]]", "Project Roadmap", delta=3)
    texts = applied(editor, edit)
    assert edit is not None
    assert texts["project-plan.md"].startswith("# Project Roadmap\n")
    assert "See [[Project Roadmap#Milestones]]" in texts["alice.md"]
    assert "Superseded by [[Project Roadmap]]." in texts["old-plan.md"]
    if versioned(editor):  # VS Code: documentChanges and the rename resource operation
        assert edit.document_changes is not None
        last = edit.document_changes[-1]
        assert last == types.RenameFile(
            old_uri=(vault / "project-plan.md").as_uri(),
            new_uri=(vault / "project-roadmap.md").as_uri(),
            options=types.RenameFileOptions(overwrite=False, ignore_if_exists=False),
        )
        assert "Plan: [[project-roadmap]]." in texts["mentions.md"]
        assert "Agenda from [[project-roadmap]];" in texts["meeting.md"]
    else:  # these Neovims declare no documentChanges: the file keeps its name
        assert edit.document_changes is None
        assert "meeting.md" not in texts and "mentions.md" not in texts


async def test_renaming_a_note_for_a_client_that_cannot_rename_files(
    no_file_renames: LanguageClient, tmp_path: Path
) -> None:
    client = no_file_renames
    alice = vault_of(tmp_path) / "alice.md"
    text = alice.read_text(encoding="utf-8")
    async with opened(client, text, alice.as_uri()) as uri:
        edit = await rename(client, uri, text, "[[meeting|", "Weekly Sync", delta=3)
    assert edit is not None and edit.document_changes is not None
    assert all(isinstance(c, types.TextDocumentEdit) for c in edit.document_changes)
    texts = applied(client, edit)
    # Titled by its file name, which stays: the title goes into new front matter.
    assert texts["meeting.md"].startswith("---\ntitle: Weekly Sync\n---\nNotes from the")
    assert "[[Weekly Sync|the last meeting]]" in texts["alice.md"]


async def test_bad_renames_get_one_clear_error_and_the_server_keeps_serving(
    editor: LanguageClient, tmp_path: Path
) -> None:
    before = snapshot(tmp_path / "store")
    text = "#4 @leaf_ctx [[Alice]] plain"
    async with opened(editor, text, (tmp_path / "prompt.md").as_uri()) as uri:
        with pytest.raises(JsonRpcException) as failed:
            await rename(editor, uri, text, "#4", "anything")
        assert failed.value.code == REQUEST_FAILED
        assert failed.value.message.startswith("#4: claim numbers are permanent")
        for new_name, message in [
            ("9lives", "'9lives' is not a valid id"),
            ("mid_ctx", "@mid_ctx is already the id of a context; choose another id"),
        ]:
            with pytest.raises(JsonRpcInvalidParams) as invalid:
                await rename(editor, uri, text, "@leaf_ctx", new_name)
            assert message in invalid.value.message
        with pytest.raises(JsonRpcInvalidParams) as taken:
            await rename(editor, uri, text, "[[Alice", "Old Plan", delta=3)
        assert "[[Old Plan]] already names the note old-plan.md" in taken.value.message
        assert await rename(editor, uri, text, "plain", "x_y_z") is None
        nowhere = (tmp_path / "never-opened.md").as_uri()
        assert await references(editor, nowhere, text, "#4") is None
        assert await prepare(editor, nowhere, text, "#4") is None
        hover = await editor.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=position_of(editor, text, "@leaf_ctx"),
            )
        )
        assert "**Context @leaf_ctx**" in markdown(hover)
    assert snapshot(tmp_path / "store") == before


async def test_a_locked_store_fails_the_rename_and_nothing_changes(
    editor: LanguageClient, tmp_path: Path
) -> None:
    before = snapshot(tmp_path / "store")
    text = "@leaf_ctx"
    holder = sqlite3.connect(tmp_path / "store" / STORE_FILE, isolation_level=None)
    async with opened(editor, text, (tmp_path / "prompt.md").as_uri()) as uri:
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(JsonRpcException) as locked:
                await rename(editor, uri, text, "@leaf", "leaf_branch")
            assert locked.value.code == REQUEST_FAILED
            assert "is locked by another process" in locked.value.message
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert snapshot(tmp_path / "store") == before
        edit = await rename(editor, uri, text, "@leaf", "leaf_branch")  # free again: it works
        assert edit is not None
