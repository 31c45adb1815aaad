"""Block references (``[[Note#^id]]``) and embeds (``![[…]]``) through a real JSON-RPC client:
completing a note's blocks and writing a new ``^id`` into the note, definition, hover,
diagnostics, and the context block's embedded parts. A vault of its own per test."""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_memory.services.block.pieces import PINNED_NOTES
from lsp_memory.services.memory.interchange import import_records
from lsp_memory.store.sqlite import open_store
from tests.client.conftest import ENCODINGS, ENV, open_doc, takes_refreshes, utf8
from tests.client.test_remember import record_edits, text_edits
from tests.conftest import KB, USER

SOURCE = """\
# Source

First paragraph
goes on. ^para1

- item one
- item two

## Later

Last words here.
"""
LINKER = "# Linker\n\nIt says: ![[Source#Later]] Done.\nAlso [[Source#^para1|the first]].\n"
CONFIG = ClientServerConfig(
    server_command=[sys.executable, "-m", "lsp_memory", "serve"], server_env=ENV
)


@pytest_lsp.fixture(  # type: ignore[untyped-decorator]
    params=["visual-studio-code", "neovim@v0.11"], config=CONFIG
)
async def editor(
    request: pytest.FixtureRequest, lsp_client: LanguageClient
) -> AsyncIterator[LanguageClient]:
    folder: Path = request.getfixturevalue("tmp_path")
    with open_store(folder / "store") as store:
        import_records(store, KB.read_bytes(), user=USER, source="kb")
    vault = folder / "vault"
    vault.mkdir()
    (vault / "source.md").write_text(SOURCE, encoding="utf-8")
    (vault / "linker.md").write_text(LINKER, encoding="utf-8")
    takes_refreshes(lsp_client)
    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(request.param),
            workspace_folders=[types.WorkspaceFolder(uri=vault.as_uri(), name="v")],
            initialization_options={
                "store": str(folder / "store"),
                "cache": str(folder / "cache"),
            },
        )
    )
    ENCODINGS[id(lsp_client)] = result.capabilities.position_encoding
    for _ in range(300):
        if any("index ready" in m.message for m in lsp_client.log_messages):
            break
        await asyncio.sleep(0.05)
    else:
        pytest.fail(f"no 'index ready' message: {lsp_client.log_messages}")
    yield lsp_client
    await lsp_client.shutdown_session()
    shutil.rmtree(folder / "cache", ignore_errors=True)


def position(client: LanguageClient, text: str, needle: str, after: int = 0) -> types.Position:
    """The client position of ``needle``'s character ``after`` in ``text``."""
    index = text.index(needle) + after
    line = text.count("\n", 0, index)
    before = text[text.rfind("\n", 0, index) + 1 : index]
    column = len(before.encode("utf-8")) if utf8(client) else len(before.encode("utf-16-le")) // 2
    return types.Position(line=line, character=column)


def apply(text: str, edits: list[types.TextEdit]) -> str:
    """``text`` after ``edits`` (ASCII text: every encoding's columns are indices)."""
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character))[::-1]:
        start = starts[edit.range.start.line] + edit.range.start.character
        end = starts[edit.range.end.line] + edit.range.end.character
        text = text[:start] + edit.new_text + text[end:]
    return text


async def complete(
    client: LanguageClient, uri: str, where: types.Position
) -> list[types.CompletionItem]:
    result = await client.text_document_completion_async(
        types.CompletionParams(text_document=types.TextDocumentIdentifier(uri=uri), position=where)
    )
    assert isinstance(result, types.CompletionList)
    return list(result.items)


async def test_blocks_of_another_note_are_completed_and_a_new_id_is_written_into_it(
    editor: LanguageClient, tmp_path: Path
) -> None:
    edits = record_edits(editor)
    source = tmp_path / "vault" / "source.md"
    text = "Quote [[Source#^"
    uri = open_doc(editor, tmp_path / "vault" / "prompt.md", text)
    items = await complete(editor, uri, position(editor, text, "^", 1))
    assert [i.label for i in items] == [
        "First paragraph goes on.",
        "item one",
        "item two",
        "Last words here.",
    ]
    first, one = items[0], items[1]
    assert first.detail == "^para1" and first.command is None
    assert isinstance(first.text_edit, types.TextEdit)
    assert apply(text, [first.text_edit]) == "Quote [[Source#^para1]]"
    assert one.detail == "list item · line 6" and not one.additional_text_edits
    assert isinstance(one.text_edit, types.TextEdit) and one.command is not None
    new_id = one.text_edit.new_text.removeprefix("^").removesuffix("]]")
    assert len(new_id) == 6 and new_id.isalnum()
    assert one.command.command == "lspMemory.addBlockId"
    answer = await editor.workspace_execute_command_async(
        types.ExecuteCommandParams(command=one.command.command, arguments=one.command.arguments)
    )
    assert answer == {"uri": source.as_uri(), "id": new_id, "applied": True}
    assert len(edits) == 1
    # The server asks the client to edit the note (its buffer when open, else the file);
    # applied to the file's text, the edit ends the item's line with its new id.
    written = apply(SOURCE, text_edits(edits[0], source.as_uri()))
    assert written == SOURCE.replace("- item one\n", f"- item one ^{new_id}\n")
    # Run again, the block has an id: one clear error, nothing asked of the client.
    source.write_text(written, encoding="utf-8")
    with pytest.raises(Exception, match=f"has an id: \\^{new_id}"):
        await editor.workspace_execute_command_async(
            types.ExecuteCommandParams(command=one.command.command, arguments=one.command.arguments)
        )
    assert len(edits) == 1
    # Bad arguments: one line each, and the server goes on serving.
    for arguments, message in (
        (["untitled:x", 0, "abc"], "a note is a file"),
        ([source.as_uri(), -1, "abc"], "the block's first line"),
        ([source.as_uri(), 6, "two words"], "letters, digits and hyphens"),
        ([(tmp_path / "none.md").as_uri(), 0, "abc"], "cannot read it"),
    ):
        with pytest.raises(Exception, match=message) as raised:
            await editor.workspace_execute_command_async(
                types.ExecuteCommandParams(command="lspMemory.addBlockId", arguments=arguments)
            )
        assert "\n" not in str(raised.value) and "Traceback" not in str(raised.value)
    assert len(edits) == 1


async def test_a_block_of_the_same_note_gets_its_id_with_the_completion(
    editor: LanguageClient, tmp_path: Path
) -> None:
    source = tmp_path / "vault" / "source.md"
    text = SOURCE + "\nSee [[Source#^item t"
    uri = open_doc(editor, source, text)
    items = await complete(editor, uri, position(editor, text, "See [[Source#^item t", 20))
    two = next(i for i in items if i.label == "item two")
    assert two.command is None and two.additional_text_edits is not None
    assert isinstance(two.text_edit, types.TextEdit)
    new_id = two.text_edit.new_text.removeprefix("^").removesuffix("]]")
    after = apply(text, [two.text_edit, *two.additional_text_edits])
    assert after == (
        SOURCE.replace("- item two\n", f"- item two ^{new_id}\n") + f"\nSee [[Source#^{new_id}]]"
    )


async def test_block_links_and_embeds_resolve_hover_and_are_checked(
    editor: LanguageClient, tmp_path: Path
) -> None:
    text = (
        "A [[Source#^para1]] b ![[Source#Later]] c ![[Source]]\n"
        "d [[Source#^nope]] e ![[Source#^nope]]\n"
    )
    uri = open_doc(editor, tmp_path / "vault" / "prompt.md", text)
    doc = types.TextDocumentIdentifier(uri=uri)

    async def hover(needle: str) -> str:
        found = await editor.text_document_hover_async(
            types.HoverParams(text_document=doc, position=position(editor, text, needle, 4))
        )
        assert found is not None and isinstance(found.contents, types.MarkupContent)
        return found.contents.value

    block = await hover("[[Source#^para1]]")
    assert "> First paragraph\n> goes on." in block and "block ^para1" in block
    section = await hover("![[Source#Later]]")
    assert "> ## Later\n>\n> Last words here." in section and "First paragraph" not in section
    whole = await hover("![[Source]]")
    assert "> # Source" in whole and "> - item two" in whole and "> Last words here." in whole
    went = await editor.text_document_definition_async(
        types.DefinitionParams(text_document=doc, position=position(editor, text, "^para1"))
    )
    assert isinstance(went, list | types.Location)
    target = went[0] if isinstance(went, list) else went
    assert isinstance(target, types.Location | types.LocationLink)
    where = target.range if isinstance(target, types.Location) else target.target_range
    assert target_uri(target) == (tmp_path / "vault" / "source.md").as_uri()
    assert where.start.line == 3  # the line holding ^para1
    for _ in range(100):
        if len(editor.diagnostics.get(uri, [])) >= 2:
            break
        await asyncio.sleep(0.05)
    broken = [d for d in editor.diagnostics.get(uri, []) if d.code == "broken-link"]
    assert [d.range.start.line for d in broken] == [1, 1]
    assert all("Block not found in source.md: ^nope" in d.message for d in broken)


def target_uri(target: types.Location | types.LocationLink) -> str:
    return target.uri if isinstance(target, types.Location) else target.target_uri


async def test_the_context_block_holds_what_a_prompt_or_a_linked_note_embeds(
    editor: LanguageClient, tmp_path: Path
) -> None:
    text = "Use ![[Source#^para1]] and [[Linker]].\n"
    uri = open_doc(editor, tmp_path / "vault" / "prompt.md", text)
    block: dict[str, Any] | None = await editor.workspace_execute_command_async(
        types.ExecuteCommandParams(command="lspMemory.buildContext", arguments=[uri])
    )
    assert block is not None
    notes = {
        item["title"]: item
        for section in block["sections"]
        if section["name"] == PINNED_NOTES
        for item in section["items"]
    }
    assert notes["Source"]["block"] == "para1" and notes["Source"]["heading"] is None
    markdown = block["markdown"]
    # The embedded block alone is the note's content, not the whole note.
    assert "### [[Source#^para1]] [id:source.md]\nFirst paragraph\ngoes on.\n---" in markdown
    assert "item one" not in markdown
    # The linked note's own embed is replaced by the section it embeds.
    assert "It says: ## Later\n\nLast words here. Done." in markdown
    assert "![[Source#Later]]" not in markdown


def edits_by_uri(edit: types.WorkspaceEdit) -> dict[str, list[types.TextEdit]]:
    if edit.changes is not None:
        return {uri: list(found) for uri, found in edit.changes.items()}
    found: dict[str, list[types.TextEdit]] = {}
    for change in edit.document_changes or ():
        assert isinstance(change, types.TextDocumentEdit)
        found.setdefault(change.text_document.uri, []).extend(
            e for e in change.edits if isinstance(e, types.TextEdit)
        )
    return found


async def test_renaming_a_block_id_rewrites_it_and_every_link_to_it(
    editor: LanguageClient, tmp_path: Path
) -> None:
    vault = tmp_path / "vault"
    text = "See [[Source#^para1]] and ![[Source#^para1]], not [[Source#Later]].\n"
    uri = open_doc(editor, vault / "prompt.md", text)
    doc = types.TextDocumentIdentifier(uri=uri)
    on_link = position(editor, text, "para1", 2)
    ready = await editor.text_document_prepare_rename_async(
        types.PrepareRenameParams(text_document=doc, position=on_link)
    )
    assert isinstance(ready, types.PrepareRenamePlaceholder)
    assert ready.placeholder == "para1"
    assert ready.range.start == position(editor, text, "para1")
    edit = await editor.text_document_rename_async(
        types.RenameParams(text_document=doc, position=on_link, new_name="first-para")
    )
    assert edit is not None
    found = edits_by_uri(edit)
    assert apply(text, found[uri]) == (
        "See [[Source#^first-para]] and ![[Source#^first-para]], not [[Source#Later]].\n"
    )
    assert apply(SOURCE, found[(vault / "source.md").as_uri()]) == SOURCE.replace(
        "^para1", "^first-para"
    )
    assert apply(LINKER, found[(vault / "linker.md").as_uri()]) == LINKER.replace(
        "^para1", "^first-para"
    )
    assert len(found) == 3
    # On the ^id in the note itself; a taken or malformed id is refused in one line.
    source_uri = open_doc(editor, vault / "source.md", SOURCE)
    on_id = position(editor, SOURCE, "^para1", 3)
    ready = await editor.text_document_prepare_rename_async(
        types.PrepareRenameParams(
            text_document=types.TextDocumentIdentifier(uri=source_uri), position=on_id
        )
    )
    assert isinstance(ready, types.PrepareRenamePlaceholder) and ready.placeholder == "para1"
    edit = await editor.text_document_rename_async(
        types.RenameParams(
            text_document=types.TextDocumentIdentifier(uri=source_uri),
            position=on_id,
            new_name="^p1",
        )
    )
    assert edit is not None and len(edits_by_uri(edit)) == 3
    with pytest.raises(Exception, match="not a block id"):
        await editor.text_document_rename_async(
            types.RenameParams(
                text_document=types.TextDocumentIdentifier(uri=source_uri),
                position=on_id,
                new_name="two words",
            )
        )
