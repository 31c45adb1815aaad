"""Diagnostics and their quick fixes through a real JSON-RPC client (pytest-lsp), with the
recorded capabilities of VS Code and Neovim 0.7 and 0.11 (UTF-8 positions): what is published
on open, change (debounced), save and close, the fixes' edits, and positions after non-ASCII
text. Ambiguous links need two notes of one title, which the shared fixture vault does not
have (and the server sees new files only on a rescan): they are tested in
``tests/store/test_checks.py``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from tests.client.conftest import SERVER, VAULT, WORK, ready, utf8

Diagnostics = Sequence[types.Diagnostic]


async def wait_for(
    client: LanguageClient,
    uri: str,
    ready: Callable[[Diagnostics], bool] = lambda _: True,
    timeout: float = 10,
) -> list[types.Diagnostic]:
    """The diagnostics published for ``uri`` once ``ready`` holds for them."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = client.diagnostics.get(uri)
        if found is not None and ready(found):
            return list(found)
        await asyncio.sleep(0.02)
    raise AssertionError(f"no such diagnostics for {uri}: {client.diagnostics.get(uri)}")


def open_text(client: LanguageClient, name: str, text: str, language: str = "markdown") -> str:
    uri = (WORK / name).as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id=language, version=1, text=text
            )
        )
    )
    return uri


def change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def column(client: LanguageClient, text: str) -> int:
    """The client's column after ``text`` (bytes for UTF-8 clients, else UTF-16 units)."""
    return len(text.encode()) if utf8(client) else len(text.encode("utf-16-le")) // 2


def at(diagnostics: Diagnostics, line: int, character: int) -> types.Diagnostic:
    found = [d for d in diagnostics if d.range.start == types.Position(line, character)]
    assert len(found) == 1, diagnostics
    return found[0]


async def actions(
    client: LanguageClient, uri: str, diagnostic: types.Diagnostic
) -> list[types.CodeAction]:
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            # Quick fixes only: on a claim's reference "Pin"/"Unpin" is offered too.
            context=types.CodeActionContext(
                diagnostics=[diagnostic], only=[types.CodeActionKind.QuickFix]
            ),
        )
    )
    found = [a for a in result or () if isinstance(a, types.CodeAction)]
    assert len(found) == len(result or ())
    return found


def text_edits(action: types.CodeAction, uri: str) -> list[types.TextEdit]:
    """The edits an action makes to ``uri``, from ``changes`` or ``documentChanges``."""
    assert action.edit is not None
    if action.edit.changes is not None:
        return list(action.edit.changes[uri])
    return [
        edit
        for change in action.edit.document_changes or ()
        if isinstance(change, types.TextDocumentEdit) and change.text_document.uri == uri
        for edit in change.edits
        if isinstance(edit, types.TextEdit)
    ]


def apply(client: LanguageClient, line: str, edit: types.TextEdit) -> str:
    """``line`` with ``edit`` (on that line, in the client's units) applied."""
    encoding = "utf-8" if utf8(client) else "utf-16-le"
    width = 1 if utf8(client) else 2
    data = line.encode(encoding)
    start, end = edit.range.start.character * width, edit.range.end.character * width
    return (data[:start] + edit.new_text.encode(encoding) + data[end:]).decode(encoding)


DOCUMENT = """\
Ask @no_such_thing about #4 and #5, not #3.
Read [[Missing Target]] and [[Old Plan]].
Fine: #1 @leaf_ctx [[Project Plan]] `#6` user@domain.com
```
@no_such_code #4 [[Missing Target]]
```
"""
LINES = DOCUMENT.splitlines()


async def test_each_kind_is_published_with_its_code_severity_and_range(
    client: LanguageClient,
) -> None:
    uri = open_text(client, "kinds.md", DOCUMENT)
    found = await wait_for(client, uri)
    assert {d.source for d in found} == {"lsp-memory"}
    summary = sorted(
        (d.range.start.line, d.range.start.character, d.range.end.character, d.code, d.severity)
        for d in found
    )
    warning, hint = types.DiagnosticSeverity.Warning, types.DiagnosticSeverity.Hint
    assert summary == [
        (0, 4, 18, "unresolved", warning),
        (0, 25, 27, "inactive-claim", warning),
        (0, 32, 34, "inactive-claim", warning),
        (0, 40, 42, "inactive-claim", warning),
        (1, 5, 23, "broken-link", warning),
        (1, 28, 40, "archived-note", hint),
    ]
    assert at(found, 0, 4).message == "No memory or context found with ID: no_such_thing"
    assert at(found, 0, 25).message == (
        "Claim #4 (@leaf_superseded_a004) is superseded by #1 (@leaf_active_a001)"
    )
    assert at(found, 1, 5).message == "Note not found: Missing Target"
    deprecated = [types.DiagnosticTag.Deprecated]
    assert [list(d.tags or ()) for d in found if d.code == "inactive-claim"] == [deprecated] * 3
    assert all(not d.tags for d in found if d.code != "inactive-claim")


async def test_inactive_claims_are_fixed_to_their_successor(client: LanguageClient) -> None:
    uri = open_text(client, "fixes.md", DOCUMENT)
    found = await wait_for(client, uri)
    for character, successor in ((25, "#1"), (32, "#7")):
        diagnostic = at(found, 0, character)
        (action,) = await actions(client, uri, diagnostic)
        assert action.title == f"Replace with {successor}"
        assert action.kind == types.CodeActionKind.QuickFix
        assert list(action.diagnostics or ()) == [diagnostic]
        (edit,) = text_edits(action, uri)
        fixed = apply(client, LINES[0], edit)
        assert fixed == LINES[0][:character] + successor + LINES[0][character + 2 :]
    assert await actions(client, uri, at(found, 0, 40)) == []  # #3: retracted, no successor
    assert await actions(client, uri, at(found, 0, 4)) == []


async def test_a_broken_link_offers_to_create_the_note(client: LanguageClient) -> None:
    uri = open_text(client, "create.md", DOCUMENT)
    diagnostic = at(await wait_for(client, uri), 1, 5)
    assert client.capabilities is not None
    workspace = client.capabilities.workspace
    capability = workspace.workspace_edit if workspace is not None else None
    operations = (capability.resource_operations or ()) if capability is not None else ()
    found = await actions(client, uri, diagnostic)
    if types.ResourceOperationKind.Create not in operations:
        await _create_by_command(client, found, diagnostic)
        return
    (action,) = found
    assert action.title == "Create note 'Missing Target'"
    assert list(action.diagnostics or ()) == [diagnostic]
    assert action.edit is not None
    create, insert = action.edit.document_changes or ()
    target = (VAULT / "Missing Target.md").as_uri()
    assert isinstance(create, types.CreateFile) and create.uri == target
    assert isinstance(insert, types.TextDocumentEdit) and insert.text_document.uri == target
    assert [e.new_text for e in insert.edits if isinstance(e, types.TextEdit)] == [
        "# Missing Target\n"
    ]
    assert not (VAULT / "Missing Target.md").exists()  # the client creates it, not the server


async def _create_by_command(
    client: LanguageClient, found: list[types.CodeAction], diagnostic: types.Diagnostic
) -> None:
    """A client that cannot create files in an edit gets the fix as a command, which
    creates the note (inside a vault only, never over a file)."""
    (action,) = found
    assert action.title == "Create note 'Missing Target'" and action.edit is None
    assert list(action.diagnostics or ()) == [diagnostic]
    assert action.command is not None and action.command.command == "lspMemory.createNote"
    target = VAULT / "Missing Target.md"
    try:
        params = types.ExecuteCommandParams(
            command=action.command.command, arguments=action.command.arguments
        )
        created = await client.workspace_execute_command_async(params)
        assert created is not None and created["created"] is True
        assert target.read_text(encoding="utf-8") == "# Missing Target\n"
        with pytest.raises(Exception, match="already exists"):
            await client.workspace_execute_command_async(params)
        outside = (WORK / "escaped.md").as_uri()
        with pytest.raises(Exception, match="outside the notes folders"):
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="lspMemory.createNote", arguments=[outside])
            )
        assert not (WORK / "escaped.md").exists()
    finally:
        target.unlink(missing_ok=True)


@pytest_lsp.fixture(config=SERVER)  # type: ignore[untyped-decorator]
async def no_create(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    """VS Code's capabilities without file creation in edits (as eglot or Helix), but
    with ``window/showDocument`` (the test client keeps what it is asked to show)."""
    capabilities = client_capabilities("visual-studio-code")
    assert capabilities.workspace is not None and capabilities.workspace.workspace_edit
    capabilities.workspace.workspace_edit.resource_operations = [types.ResourceOperationKind.Rename]

    # lsprotocol reads any action with a "command" member as a bare Command (its hook for
    # Command | CodeAction), the server's CodeAction that runs lspMemory.createNote too.
    def action_or_command(data: Any, _: type) -> types.Command | types.CodeAction:
        if isinstance(data.get("command"), str):
            return converter.structure(data, types.Command)
        return converter.structure(data, types.CodeAction)

    converter = lsp_client.protocol._converter
    converter.register_structure_hook(types.Command | types.CodeAction, action_or_command)
    await ready(lsp_client, capabilities)
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_without_file_creation_the_fix_is_a_command_that_opens_the_note(
    no_create: LanguageClient,
) -> None:
    uri = open_text(no_create, "create-by-command.md", DOCUMENT)
    diagnostic = at(await wait_for(no_create, uri), 1, 5)
    target = (VAULT / "Missing Target.md").as_uri()
    await _create_by_command(no_create, await actions(no_create, uri, diagnostic), diagnostic)
    for _ in range(100):
        if no_create.shown_documents:
            break
        await asyncio.sleep(0.02)
    assert [(d.uri, d.take_focus) for d in no_create.shown_documents] == [(target, True)]


async def test_no_actions_outside_diagnostics_or_for_other_kinds(client: LanguageClient) -> None:
    uri = open_text(client, "elsewhere.md", DOCUMENT)
    await wait_for(client, uri)
    cursor = types.Position(2, 3)
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(cursor, cursor),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert not result
    source = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(types.Position(0, 0), types.Position(1, 0)),
            context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.Source]),
        )
    )
    assert not source


async def test_references_in_code_give_nothing_but_other_languages_count(
    client: LanguageClient,
) -> None:
    code = "`see #4` and\n```\n@no_such_thing\n```\n"
    assert await wait_for(client, open_text(client, "code.md", code)) == []
    plain = await wait_for(client, open_text(client, "code.txt", code, language="plaintext"))
    assert sorted(str(d.code) for d in plain) == ["inactive-claim", "unresolved"]


async def test_positions_after_non_ascii_text(client: LanguageClient) -> None:
    line = "😀 café #4 — [[Old Plan|é]]"
    uri = open_text(client, "wide.md", line)
    found = await wait_for(client, uri)
    start = column(client, "😀 café ")
    claim = at(found, 0, start)
    assert claim.range.end.character == column(client, "😀 café #4")
    archived = at(found, 0, column(client, "😀 café #4 — "))
    assert archived.range.end.character == column(client, line)
    (action,) = await actions(client, uri, claim)
    (edit,) = text_edits(action, uri)
    assert apply(client, line, edit) == "😀 café #1 — [[Old Plan|é]]"


async def test_changes_are_debounced_and_the_latest_text_wins(client: LanguageClient) -> None:
    uri = open_text(client, "typing.md", "nothing yet")
    assert await wait_for(client, uri) == []
    seen: set[str] = set()
    for version, name in enumerate(("first", "second", "third", "last"), start=2):
        change(client, uri, version, f"@no_such_{name}")
        # Changes 50 ms apart: well inside the 300 ms debounce, so none but the last is checked.
        for _ in range(5):
            seen.update(d.message for d in client.diagnostics.get(uri) or ())
            await asyncio.sleep(0.01)
    final = await wait_for(client, uri, lambda found: len(found) == 1)
    assert final[0].message == "No memory or context found with ID: no_such_last"
    seen.update(d.message for d in final)
    assert seen == {"No memory or context found with ID: no_such_last"}


async def test_save_checks_again_and_close_clears(client: LanguageClient) -> None:
    uri = open_text(client, "saved.md", "see #3")
    assert [d.code for d in await wait_for(client, uri)] == ["inactive-claim"]
    del client.diagnostics[uri]
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert [d.code for d in await wait_for(client, uri)] == ["inactive-claim"]
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert await wait_for(client, uri, lambda found: len(found) == 0) == []


async def test_a_reference_that_fails_is_logged_and_the_rest_still_published(
    client: LanguageClient,
) -> None:
    # A claim number too large for SQLite makes the store raise: one reference fails, the
    # others are still checked. (Should the resolver come to call it unresolved, that is
    # fine too: the point is that nothing else is lost.)
    uri = open_text(client, "huge.md", "#99999999999999999999999 and #4 and [[Old Plan]]")
    found = await wait_for(client, uri)
    codes = sorted(str(d.code) for d in found)
    logged = [m.message for m in client.log_messages if "#99999999999999999999999" in m.message]
    if logged:
        assert codes == ["archived-note", "inactive-claim"]
        assert len(logged) == 1 and "cannot check" in logged[0]
    else:  # a number above every claim's: a mention, not a warning
        assert codes == ["archived-note", "inactive-claim", "unknown-mention"]
    follow_up = open_text(client, "after.md", "@no_such_thing")
    assert [d.code for d in await wait_for(client, follow_up)] == ["unresolved"]


async def test_a_notes_handles_attachments_comments_and_table_links_are_not_warnings(
    client: LanguageClient,
) -> None:
    """What a real vault holds (Obsidian's own help: 270 broken links reported, 4 real):
    attachments, links hidden in ``%% comments %%``, ``\\|`` inside a table, people's
    ``@handles`` and numbers. Only the missing note is a warning now; a handle or a number
    that could not be a memory reference is a hint."""
    text = (
        "Thanks @octocat for ![[diagram.png]] in #9999.\n"
        "| a | [[Alice Notes\\|Alice]] | [[Nowhere Yet\\|later]] |\n"
        "%% [[Draft idea]] @someone_else %%\n"
    )
    uri = open_text(client, "vaultlike.md", text)
    found = await wait_for(client, uri)
    warning, hint = types.DiagnosticSeverity.Warning, types.DiagnosticSeverity.Hint
    assert sorted(
        (d.range.start.line, d.range.start.character, d.code, d.severity) for d in found
    ) == [
        (0, 7, "unknown-mention", hint),
        (0, 40, "unknown-mention", hint),
        (1, 31, "broken-link", warning),
    ]
    (broken,) = [d for d in found if d.code == "broken-link"]
    assert broken.message == "Note not found: Nowhere Yet"
