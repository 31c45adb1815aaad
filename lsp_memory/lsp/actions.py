"""Code actions that more than one feature offers or runs: "Remember selection as a claim"
(offered with the quick fixes of ``diagnostics``, run by ``commands``'
``lspMemory.rememberSelection``)."""

from __future__ import annotations

from lsprotocol import types
from pygls.workspace import TextDocument

from lsp_memory import refs

REMEMBER = "lspMemory.rememberSelection"
CREATE_NOTE = "lspMemory.createNote"
"""The command a "Create note" quick fix runs where the client cannot create files."""
REMEMBER_KIND = types.CodeActionKind.RefactorExtract


def remember_actions(
    doc: TextDocument, params: types.CodeActionParams, literal: bool
) -> list[types.CodeAction | types.Command]:
    """The two "Remember selection" actions for a non-blank selection: store it as a claim,
    or store it and replace it with the claim's reference. Code actions for clients that take
    them (``literal``), bare commands for the others."""
    where = params.range
    # Nothing to remember in a blank selection, or in one that is only references (the
    # range of a diagnostic's quick fix, say).
    if where.start == where.end or not refs.parse(selected_text(doc, where)).clean_text.strip():
        return []
    only = [str(getattr(kind, "value", kind)) for kind in params.context.only or ()]
    wanted: str = REMEMBER_KIND.value
    if only and not any(wanted == kind or wanted.startswith(f"{kind}.") for kind in only):
        return []
    uri = doc.uri
    choices = [
        ("Remember selection as a claim", False),
        ("Remember selection as a claim and replace it with its reference", True),
    ]
    found: list[types.CodeAction | types.Command] = []
    for title, replace in choices:
        command = types.Command(title=title, command=REMEMBER, arguments=[uri, where, replace])
        found.append(
            types.CodeAction(title=title, kind=REMEMBER_KIND, command=command)
            if literal
            else command
        )
    return found


def selected_text(doc: TextDocument, where: types.Range) -> str:
    """The text of a client range (in its position units), stripped."""
    start = doc.offset_at_position(where.start)
    end = doc.offset_at_position(where.end)
    return doc.source[start:end].strip() if end > start else ""
