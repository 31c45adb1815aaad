"""File renames that keep links: ``workspace/willRenameFiles`` answers the edits that rewrite
every link to the renamed or moved notes, ``workspace/didRenameFiles`` makes the index follow
at once — through a real JSON-RPC client (pytest-lsp) with VS Code's recorded capabilities
(the editor that sends both; it takes ``documentChanges``).

Each test gets its own server on a vault of its own in ``tmp_path`` (the edits are applied to
copies of the texts and checked as text; the files are moved only where the test says).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.client.conftest import ENV, takes_refreshes
from tests.client.test_hover_definition import opened
from tests.client.test_references_rename import applied

NOTES = {
    "Old.md": "Old text, see [[Other]].\n\n## Intro\n\nAn intro ^blk\n\nSelf: [[Old#Intro]].\n",
    "Other.md": (
        "Plain [[Old]], labelled [[Old|the old one]], anchored [[Old#Intro]], "
        "block [[Old#^blk]], embed ![[Old]], by file [[old.md]].\n"
        "By title [[Titled Note]], by alias [[Nick]], by path [[notes/Deep]], by name [[Deep]].\n"
        "Headed [[Headed]].\n"
    ),
    "titled.md": "---\ntitle: Titled Note\naliases: [Nick]\n---\nBody [[Old]] and [[titled]].\n",
    "Headed.md": "# Headed\n\nA note whose title heading is its file name.\n",
    "notes/Deep.md": "Deep note. Back to [[Old]] and [[notes/Deep#Top]].\n\n# Top\n",
}


async def start(lsp_client: LanguageClient, vault: Path, store: Path) -> None:
    for name, text in NOTES.items():
        (vault / name).parent.mkdir(parents=True, exist_ok=True)
        (vault / name).write_text(text, encoding="utf-8")
    takes_refreshes(lsp_client)

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)  # type: ignore[untyped-decorator]
    def accept(_: types.RegistrationParams) -> None:
        """Accepted, as VS Code accepts the file watcher: the server then rescans unasked
        only every minute, so only didRenameFiles can make it follow a rename at once."""

    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            workspace_folders=[types.WorkspaceFolder(uri=vault.as_uri(), name="vault")],
            initialization_options={"store": str(store), "cache": str(store.parent / "cache")},
        )
    )
    lsp_client.declared = result.capabilities  # type: ignore[attr-defined]
    for _ in range(300):
        if any("index ready" in m.message for m in lsp_client.log_messages):
            return
        await asyncio.sleep(0.05)
    pytest.fail(f"no 'index ready' message: {lsp_client.log_messages}")


@pytest_lsp.fixture(  # type: ignore[untyped-decorator]
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "lsp_memory", "serve"], server_env=ENV
    )
)
async def editor(
    request: pytest.FixtureRequest, lsp_client: LanguageClient
) -> AsyncIterator[LanguageClient]:
    folder: Path = request.getfixturevalue("tmp_path")
    (folder / "vault").mkdir()
    await start(lsp_client, folder / "vault", folder / "store")
    yield lsp_client
    await lsp_client.shutdown_session()


def vault_of(tmp_path: Path) -> Path:
    return tmp_path / "vault"


async def will_rename(
    client: LanguageClient, *moves: tuple[Path, Path]
) -> types.WorkspaceEdit | None:
    return await client.workspace_will_rename_files_async(
        types.RenameFilesParams(
            files=[types.FileRename(old_uri=a.as_uri(), new_uri=b.as_uri()) for a, b in moves]
        )
    )


async def test_the_server_declares_both_for_notes_and_folders(editor: LanguageClient) -> None:
    declared: types.ServerCapabilities = editor.declared  # type: ignore[attr-defined]
    assert declared.workspace is not None and declared.workspace.file_operations is not None
    operations = declared.workspace.file_operations
    for registered in (operations.will_rename, operations.did_rename):
        assert registered is not None
        patterns = {(f.pattern.glob, f.pattern.matches) for f in registered.filters}
        assert patterns == {
            ("**/*.{md,markdown}", types.FileOperationPatternKind.File),
            ("**/*", types.FileOperationPatternKind.Folder),
        }


async def test_renaming_a_note_rewrites_every_link_keeping_labels_anchors_and_embeds(
    editor: LanguageClient, tmp_path: Path
) -> None:
    vault = vault_of(tmp_path)
    edit = await will_rename(editor, (vault / "Old.md", vault / "New.md"))
    texts = applied(editor, edit)
    assert texts["Other.md"] == (
        "Plain [[New]], labelled [[New|the old one]], anchored [[New#Intro]], "
        "block [[New#^blk]], embed ![[New]], by file [[New.md]].\n"
        "By title [[Titled Note]], by alias [[Nick]], by path [[notes/Deep]], by name [[Deep]].\n"
        "Headed [[Headed]].\n"
    )
    assert (
        texts["titled.md"]
        == "---\ntitle: Titled Note\naliases: [Nick]\n---\nBody [[New]] and [[titled]].\n"
    )
    assert texts["Deep.md"] == "Deep note. Back to [[New]] and [[notes/Deep#Top]].\n\n# Top\n"
    # Its own link to itself follows it; the edits name the file where it still is.
    assert texts["Old.md"].endswith("Self: [[New#Intro]].\n")
    assert edit is not None and edit.document_changes is not None
    uris = {
        c.text_document.uri for c in edit.document_changes if isinstance(c, types.TextDocumentEdit)
    }
    assert (vault / "Old.md").as_uri() in uris


async def test_a_title_by_heading_or_front_matter_and_an_alias_are_kept_but_the_file_name_is_not(
    editor: LanguageClient, tmp_path: Path
) -> None:
    vault = vault_of(tmp_path)
    # "Titled Note" (front matter) and "Nick" (alias) still name the note; "titled" named
    # its file.
    texts = applied(editor, await will_rename(editor, (vault / "titled.md", vault / "t2.md")))
    assert set(texts) == {"titled.md"}
    assert texts["titled.md"].endswith("Body [[Old]] and [[t2]].\n")
    # "Headed" is the title heading, but also the file's name the user just changed.
    texts = applied(editor, await will_rename(editor, (vault / "Headed.md", vault / "Lead.md")))
    assert texts["Other.md"].endswith("Headed [[Lead]].\n")
    # Unless another note has that title (notes/Deep.md's "# Top"): then its path.
    texts = applied(editor, await will_rename(editor, (vault / "Headed.md", vault / "Top.md")))
    assert texts["Other.md"].endswith("Headed [[./Top]].\n")


async def test_moving_a_note_into_a_folder_keeps_a_unique_name_and_paths_follow(
    editor: LanguageClient, tmp_path: Path
) -> None:
    vault = vault_of(tmp_path)
    # [[Old]] still names it alone in archive/: nothing to rewrite.
    assert await will_rename(editor, (vault / "Old.md", vault / "archive" / "Old.md")) is None
    texts = applied(editor, await will_rename(editor, (vault / "notes/Deep.md", vault / "Deep.md")))
    assert "by path [[Deep]], by name [[Deep]]" in texts["Other.md"]
    assert texts["Deep.md"] == "Deep note. Back to [[Old]] and [[Deep#Top]].\n\n# Top\n"


async def test_a_name_another_note_would_win_gets_the_path_form(
    editor: LanguageClient, tmp_path: Path
) -> None:
    vault = vault_of(tmp_path)
    # A second Old.md deeper down: [[Old]] names the shorter path, Old.md, until it moves
    # below it; then its links need the path.
    (vault / "people").mkdir()
    (vault / "people" / "Old.md").write_text("Another Old.\n", encoding="utf-8")
    editor.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[
                types.FileEvent(
                    uri=(vault / "people" / "Old.md").as_uri(), type=types.FileChangeType.Created
                )
            ]
        )
    )
    move = (vault / "Old.md", vault / "archive" / "Old.md")
    for _ in range(100):  # until the rescan the event asks for has indexed people/Old.md
        edit = await will_rename(editor, move)
        if edit is not None:
            break
        await asyncio.sleep(0.1)
    texts = applied(editor, edit)
    assert texts["Other.md"].startswith(
        "Plain [[archive/Old]], labelled [[archive/Old|the old one]], anchored "
        "[[archive/Old#Intro]], block [[archive/Old#^blk]], embed ![[archive/Old]], "
        "by file [[archive/Old.md]].\n"
    )


async def test_renaming_a_folder_rewrites_the_links_by_path_to_every_note_under_it(
    editor: LanguageClient, tmp_path: Path
) -> None:
    vault = vault_of(tmp_path)
    texts = applied(editor, await will_rename(editor, (vault / "notes", vault / "deep")))
    assert "by path [[deep/Deep]], by name [[Deep]]." in texts["Other.md"]
    assert texts["Deep.md"] == "Deep note. Back to [[Old]] and [[deep/Deep#Top]].\n\n# Top\n"
    assert set(texts) == {"Other.md", "Deep.md"}


async def test_open_unsaved_buffers_are_edited_as_they_are(
    editor: LanguageClient, tmp_path: Path
) -> None:
    vault = vault_of(tmp_path)
    buffer = "Unsaved 😀 first line\nnow [[Old#Intro|intro]] here\n"
    other = vault / "Other.md"
    prompt = (tmp_path / "prompt.md").as_uri()
    async with (
        opened(editor, buffer, other.as_uri()) as uri,
        opened(editor, "Outside: [[Old]]\n", prompt),
    ):
        edit = await will_rename(editor, (vault / "Old.md", vault / "New.md"))
        assert edit is not None and edit.document_changes is not None
        by_uri = {
            c.text_document.uri: c
            for c in edit.document_changes
            if isinstance(c, types.TextDocumentEdit)
        }
        assert by_uri[uri].text_document.version == 1
        (change,) = by_uri[uri].edits
        assert isinstance(change, types.TextEdit)
        lines = buffer.splitlines(keepends=True)
        start, end = change.range.start, change.range.end
        assert start.line == end.line == 1
        line = lines[1]
        lines[1] = line[: start.character] + change.new_text + line[end.character :]
        assert "".join(lines) == "Unsaved 😀 first line\nnow [[New#Intro|intro]] here\n"
        assert [getattr(e, "new_text", None) for e in by_uri[prompt].edits] == ["New"]


async def test_a_rename_outside_the_vault_or_of_no_note_returns_nothing(
    editor: LanguageClient, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "Old.md").write_text("[[x]]\n", encoding="utf-8")
    assert await will_rename(editor, (outside / "Old.md", outside / "New.md")) is None
    vault = vault_of(tmp_path)
    (vault / "empty").mkdir()
    assert await will_rename(editor, (vault / "empty", vault / "void")) is None


async def test_after_the_rename_the_index_follows_at_once(
    editor: LanguageClient, tmp_path: Path
) -> None:
    vault = vault_of(tmp_path)
    text = "See [[New]].\n"
    async with opened(editor, text, (tmp_path / "prompt.md").as_uri()) as uri:
        for _ in range(200):
            found = editor.diagnostics.get(uri)
            if found:
                break
            await asyncio.sleep(0.05)
        assert found and "Note not found: New" in found[0].message
        (vault / "Old.md").rename(vault / "New.md")
        editor.workspace_did_rename_files(
            types.RenameFilesParams(
                files=[
                    types.FileRename(
                        old_uri=(vault / "Old.md").as_uri(), new_uri=(vault / "New.md").as_uri()
                    )
                ]
            )
        )
        # No file event is sent and the watched vault is rescanned unasked once a minute.
        for _ in range(200):
            if not editor.diagnostics.get(uri):
                break
            await asyncio.sleep(0.05)
        assert not editor.diagnostics.get(uri)
        completion = await editor.text_document_completion_async(
            types.CompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=0, character=8),
            )
        )
        items = completion.items if isinstance(completion, types.CompletionList) else completion
        labels = [item.label for item in items or ()]
        assert "New" in labels and "Old" not in labels
