"""Unlinked mentions through a real JSON-RPC client (VS Code's and Neovim's recorded
capabilities, UTF-16 and UTF-8 positions): "Link to [[Title]]" on a mention of a note's title
or alias, whose edit, applied, links it with the text kept as the label; nothing in code, a
link or a comment; ``lspMemory.unlinkedMentions`` lists the notes that mention a note without
linking it, as locations."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.client.conftest import VAULT, WORK, client, utf8  # noqa: F401
from tests.client.test_remember import code_actions

LINES = [
    "Café — see the project plan, ask alice.",
    "`Project Plan` %% Alice %% [[Deep Note]] Nested Note, old plan",
]


def open_text(client: LanguageClient) -> str:  # noqa: F811
    uri = (WORK / "mentions.md").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text="\n".join(LINES) + "\n"
            )
        )
    )
    return uri


def column(client: LanguageClient, line: str, index: int) -> int:  # noqa: F811
    """The client's column of Python index ``index`` of ``line``."""
    encoding = "utf-8" if utf8(client) else "utf-16-le"
    size = 1 if encoding == "utf-8" else 2
    return len(line[:index].encode(encoding)) // size


def apply(client: LanguageClient, edit: types.TextEdit) -> list[str]:  # noqa: F811
    """``LINES`` with one single-line edit applied, in the client's position units."""
    line = LINES[edit.range.start.line]
    encoding = "utf-8" if utf8(client) else "utf-16-le"
    size = 1 if encoding == "utf-8" else 2
    data = line.encode(encoding)
    start, end = edit.range.start.character * size, edit.range.end.character * size
    changed = (data[:start].decode(encoding), data[end:].decode(encoding))
    lines = list(LINES)
    lines[edit.range.start.line] = changed[0] + edit.new_text + changed[1]
    return lines


def at(client: LanguageClient, line: int, needle: str) -> types.Range:  # noqa: F811
    where = types.Position(
        line=line, character=column(client, LINES[line], LINES[line].index(needle) + 1)
    )
    return types.Range(start=where, end=where)


def edit_of(action: types.CodeAction | types.Command) -> types.TextEdit:
    assert isinstance(action, types.CodeAction) and action.edit is not None
    assert action.kind == types.CodeActionKind.RefactorRewrite
    edit = action.edit
    if edit.document_changes:
        (change,) = edit.document_changes
        assert isinstance(change, types.TextDocumentEdit)
        (text_edit,) = change.edits
    else:
        assert edit.changes is not None
        ((text_edit,),) = edit.changes.values()
    assert isinstance(text_edit, types.TextEdit)
    return text_edit


async def test_link_to_a_mentioned_note(client: LanguageClient) -> None:  # noqa: F811
    uri = open_text(client)
    (plan,) = await code_actions(client, uri, at(client, 0, "project plan"))
    assert plan.title == "Link to [[Project Plan]]"
    assert apply(client, edit_of(plan))[0] == (
        "Café — see the [[Project Plan|project plan]], ask alice."
    )
    (alice,) = await code_actions(client, uri, at(client, 0, "alice"))
    assert alice.title == "Link to [[Alice Notes]]"
    assert apply(client, edit_of(alice))[0] == (
        "Café — see the project plan, ask [[Alice Notes|alice]]."
    )
    # In code, a comment or a link, nothing; nor for a note the document links already.
    for needle in ("Project Plan", "Alice", "Deep Note", "Nested Note"):
        assert await code_actions(client, uri, at(client, 1, needle)) == []
    (old,) = await code_actions(client, uri, at(client, 1, "old plan"))
    assert apply(client, edit_of(old))[1].endswith("Nested Note, [[Old Plan|old plan]]")
    only = [types.CodeActionKind.QuickFix]
    assert await code_actions(client, uri, at(client, 0, "alice"), only) == []


async def test_the_notes_that_mention_a_note(client: LanguageClient) -> None:  # noqa: F811
    found = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="lspMemory.unlinkedMentions", arguments=[(VAULT / "alice.md").as_uri()]
        )
    )
    # meeting.md names Alice (an alias) and links other notes; project-plan.md and
    # sub/deep-note.md link Alice Notes, so they are not listed.
    assert found == [
        {
            "note": "meeting.md",
            "title": "meeting",
            "file": str(VAULT / "meeting.md"),
            "uri": (VAULT / "meeting.md").as_uri(),
            "range": {"start": {"line": 5, "character": 0}, "end": {"line": 5, "character": 5}},
            "text": "Alice",
            "snippet": "Alice and Bob. Agenda from [[project-plan]]; follow-up in "
            "[[sub/deep-note]].",
        }
    ]
    for arguments in ([], [42], [(WORK / "nowhere.md").as_uri()]):
        with pytest.raises(Exception, match=r"URI|not a note"):
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(
                    command="lspMemory.unlinkedMentions", arguments=arguments
                )
            )
