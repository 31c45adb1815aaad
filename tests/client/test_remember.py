"""The "Remember selection as a claim" code actions through a real JSON-RPC client: offered
for a non-blank selection, they store it (and, for the second, ask the client to replace it
with the new claim's reference through ``workspace/applyEdit``); positions after non-ASCII
text; clients without code action literals get bare commands; bad arguments get an error."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Union

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from lsp_memory.store.sqlite import open_store
from tests.client.conftest import SERVER, STORE, WORK, ready, utf8
from tests.conftest import USER

LINE = "😀 Note: I always drink green tea after lunch. More text"
SELECTED = "I always drink green tea after lunch."


def units(client: LanguageClient, text: str) -> int:
    return len(text.encode("utf-8")) if utf8(client) else len(text.encode("utf-16-le")) // 2


def selection(client: LanguageClient, line: str, needle: str) -> types.Range:
    start = line.index(needle)
    return types.Range(
        start=types.Position(line=0, character=units(client, line[:start])),
        end=types.Position(line=0, character=units(client, line[: start + len(needle)])),
    )


def open_line(client: LanguageClient, name: str, text: str) -> str:
    uri = (WORK / name).as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=text + "\n"
            )
        )
    )
    return uri


async def code_actions(
    client: LanguageClient,
    uri: str,
    where: types.Range,
    only: list[types.CodeActionKind] | None = None,
) -> list[types.CodeAction | types.Command]:
    found = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=where,
            context=types.CodeActionContext(diagnostics=[], only=only),
        )
    )
    return list(found or ())


async def remember_actions(
    client: LanguageClient,
    uri: str,
    where: types.Range,
    only: list[types.CodeActionKind] | None = None,
) -> list[types.CodeAction | types.Command]:
    """The "Remember selection" actions among the code actions: once an earlier test's claim
    is embedded, a related-claim suggestion ("Reference @…", refactor.rewrite) for the same
    paragraph may come too, depending on how soon the embedding is done."""
    found = await code_actions(client, uri, where, only)
    return [action for action in found if action.title.startswith("Remember selection")]


async def run(client: LanguageClient, command: types.Command) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
    )


def parse_actions_like_editors(client: LanguageClient) -> None:
    """Tell a ``CodeAction`` from a ``Command`` as VS Code and Neovim do, by the type of
    ``command``: lsprotocol (2025.0.0) takes any item with a ``command`` for a Command, which
    turns a code action that runs a command into a Command whose name is the whole object."""
    converter = client.protocol._converter

    def structure(item: Any, _: type) -> types.Command | types.CodeAction:
        if isinstance(item.get("command"), str):
            return converter.structure(item, types.Command)
        return converter.structure(item, types.CodeAction)

    converter.register_structure_hook(Union[types.Command, types.CodeAction], structure)  # noqa: UP007 — lsprotocol registered this spelling


def record_edits(client: LanguageClient) -> list[types.WorkspaceEdit]:
    """Answer the server's ``workspace/applyEdit`` as an editor would; the edits it asked."""
    edits: list[types.WorkspaceEdit] = []

    @client.feature(types.WORKSPACE_APPLY_EDIT)  # type: ignore[untyped-decorator]
    def apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        edits.append(params.edit)
        return types.ApplyWorkspaceEditResult(applied=True)

    return edits


def stored(friendly_id: str) -> str | None:
    with open_store(STORE) as store:
        claim = store.claim_by_friendly_id(USER, friendly_id)
    return None if claim is None else claim.statement


def text_edits(edit: types.WorkspaceEdit, uri: str) -> list[types.TextEdit]:
    if edit.changes is not None:
        return list(edit.changes[uri])
    found: list[types.TextEdit] = []
    for change in edit.document_changes or ():
        assert isinstance(change, types.TextDocumentEdit)
        assert change.text_document.uri == uri
        found += [e for e in change.edits if isinstance(e, types.TextEdit)]
    return found


async def test_a_selection_is_remembered_and_replaced(client: LanguageClient) -> None:
    parse_actions_like_editors(client)
    edits = record_edits(client)
    uri = open_line(client, "remember.md", LINE)
    where = selection(client, LINE, SELECTED)
    keep, replace = await remember_actions(client, uri, where)
    assert isinstance(keep, types.CodeAction) and isinstance(replace, types.CodeAction)
    assert keep.title == "Remember selection as a claim"
    assert replace.title == "Remember selection as a claim and replace it with its reference"
    assert keep.kind == replace.kind == types.CodeActionKind.RefactorExtract
    assert keep.edit is None and keep.command is not None and replace.command is not None

    kept = await run(client, keep.command)
    assert kept["statement"] == SELECTED and kept["replaced"] is False
    assert stored(kept["friendly_id"]) == SELECTED
    assert kept["reference"] == f"@{kept['friendly_id']}"
    assert edits == []  # storing alone leaves the document alone

    swapped = await run(client, replace.command)
    assert swapped["friendly_id"] != kept["friendly_id"]
    assert stored(swapped["friendly_id"]) == SELECTED and swapped["replaced"] is True
    (edit,) = edits
    (text_edit,) = text_edits(edit, uri)
    assert text_edit.range == where and text_edit.new_text == swapped["reference"]


async def test_no_remember_actions_without_a_selection(client: LanguageClient) -> None:
    uri = open_line(client, "no-selection.md", LINE + "\n   \n")
    cursor = types.Position(line=0, character=4)
    assert await remember_actions(client, uri, types.Range(start=cursor, end=cursor)) == []
    blank = types.Range(start=types.Position(line=1, character=0), end=types.Position(2, 2))
    assert await remember_actions(client, uri, blank) == []
    where = selection(client, LINE, SELECTED)
    assert await code_actions(client, uri, where, [types.CodeActionKind.QuickFix]) == []
    refactors = await remember_actions(client, uri, where, [types.CodeActionKind.Refactor])
    assert len(refactors) == 2  # "refactor" asks for refactor.extract too


@pytest.mark.parametrize(
    "arguments",
    [
        [],
        ["file:///not/open.md", {"start": {"line": 0, "character": 0}, "end": {}}],
        [None, {}, True],
        ["{uri}", {"start": {"line": 0, "character": -1}, "end": {"line": 0, "character": 3}}],
        ["{uri}", "0:0-0:5"],
        ["{uri}", {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}}],
    ],
)
async def test_bad_arguments_get_an_error_and_nothing_is_stored(
    client: LanguageClient, arguments: list[Any]
) -> None:
    uri = open_line(client, "bad-remember.md", LINE)
    arguments = [uri if a == "{uri}" else a for a in arguments]
    with open_store(STORE) as store:
        before = store.last_change()
    with pytest.raises(Exception, match=r"range|URI|open|empty"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="lspMemory.rememberSelection", arguments=arguments)
        )
    with open_store(STORE) as store:
        assert store.last_change() == before
    assert await code_actions(client, uri, selection(client, LINE, SELECTED))  # still serving


def _commands_only() -> types.ClientCapabilities:
    capabilities = client_capabilities("visual-studio-code")
    assert capabilities.text_document is not None
    assert capabilities.text_document.code_action is not None
    capabilities.text_document.code_action.code_action_literal_support = None
    return capabilities


@pytest_lsp.fixture(config=SERVER)  # type: ignore[untyped-decorator]
async def plain(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    """A client that takes code actions only as bare commands (LSP before 3.8)."""
    await ready(lsp_client, _commands_only())
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_a_client_without_literals_gets_commands(plain: LanguageClient) -> None:
    uri = open_line(plain, "plain.md", LINE)
    keep, _replace = await remember_actions(plain, uri, selection(plain, LINE, SELECTED))
    assert isinstance(keep, types.Command)
    assert keep.command == "lspMemory.rememberSelection"
    assert stored((await run(plain, keep))["friendly_id"]) == SELECTED
