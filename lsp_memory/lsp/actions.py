"""Code actions that more than one feature offers or runs: "Remember selection as a claim"
(offered with the quick fixes of ``diagnostics``, run by ``commands``'
``lspMemory.rememberSelection``), "Pin @x" / "Unpin @x" on a claim's reference (run by
``lspMemory.pinClaim`` / ``lspMemory.unpinClaim``), "Link to [[Title]]" on an unlinked
mention of a note (the edit that links it; ``mentions`` lists them for a note); the command a
block completion runs (``lspMemory.addBlockId``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.workspace import TextDocument

from lsp_memory import refs
from lsp_memory.lsp.convert import as_document, client_position, edit_capability, workspace_edit
from lsp_memory.model import Claim, Reference

if TYPE_CHECKING:
    from lsp_memory.app import Snapshot
    from lsp_memory.lsp.session import Session

REMEMBER = "lspMemory.rememberSelection"
CREATE_NOTE = "lspMemory.createNote"
"""The command a "Create note" quick fix runs where the client cannot create files."""
REMEMBER_KIND = types.CodeActionKind.RefactorExtract
LINK_KIND = types.CodeActionKind.RefactorRewrite
"""The kind of "Link to [[Title]]" on an unlinked mention."""
PIN, UNPIN = "lspMemory.pinClaim", "lspMemory.unpinClaim"
"""The commands "Pin @x" and "Unpin @x" run: argument, the claim's reference."""
ADD_BLOCK_ID = "lspMemory.addBlockId"
"""The command a ``[[Note#^`` completion item runs to write the chosen block's new ``^id``
into another note: arguments, the note's URI, the block's first line (0-based) and the id."""


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
    if not _wanted(REMEMBER_KIND, params):
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


def claim_at(
    reads: Snapshot, text: str, offset: int, language_id: str | None, path: str | None
) -> tuple[Reference, Claim] | None:
    """The reference at ``offset`` of a document and the claim it names, if it names one
    (read in a worker: it resolves)."""
    reference = refs.reference_at(text, offset, language_id, path)
    if reference is None:
        return None
    resolution = reads.resolver().resolve(reference)
    if resolution.error is not None or resolution.kind != "claim" or not resolution.claims:
        return None
    return reference, resolution.claims[0]


def pin_actions(
    found: tuple[Reference, Claim] | None, params: types.CodeActionParams, literal: bool
) -> list[types.CodeAction | types.Command]:
    """ "Pin @x" on a reference to a claim that is not pinned, "Unpin @x" on one that is.
    They have no kind, so a client asking for some kinds only (``only``) is not offered
    them."""
    if found is None or params.context.only:
        return []
    reference, claim = found
    title, name = (
        (f"Unpin {reference.text}", UNPIN) if claim.pinned else (f"Pin {reference.text}", PIN)
    )
    # The claim's uuid: the action stays right if the text or the claim's id changes meanwhile.
    command = types.Command(title=title, command=name, arguments=[f"@memory:{claim.claim_id}"])
    return [types.CodeAction(title=title, command=command) if literal else command]


async def mention_actions(
    session: Session,
    doc: TextDocument,
    params: types.CodeActionParams,
    capabilities: types.ClientCapabilities,
    literal: bool,
) -> list[types.CodeAction | types.Command]:
    """ "Link to [[Title]]" on each unlinked mention of a note that meets the requested
    range: the edit replacing it with the link (``services.editor.mentions``), scanned in a
    worker. Only for clients that take code actions with edits (``literal``)."""
    if not literal or not _wanted(LINK_KIND, params):
        return []
    document = as_document(doc)
    start = doc.offset_at_position(params.range.start)
    end = doc.offset_at_position(params.range.end)
    found = await session.run(lambda reads: reads.mentions().in_document(document, start, end))
    capability, version = edit_capability(capabilities), {doc.uri: doc.version}
    actions: list[types.CodeAction | types.Command] = []
    for suggestion in found:
        at = doc.server_position_at_offset(suggestion.start)
        width = suggestion.end - suggestion.start
        where = types.Range(
            start=client_position(doc, at.line, at.character),
            end=client_position(doc, at.line, at.character + width),
        )
        edit = types.TextEdit(range=where, new_text=suggestion.new_text)
        actions.append(
            types.CodeAction(
                title=suggestion.title,
                kind=LINK_KIND,
                edit=workspace_edit(capability, {doc.uri: [edit]}, version),
            )
        )
    return actions


def _wanted(kind: types.CodeActionKind, params: types.CodeActionParams) -> bool:
    """Whether the client asked for actions of ``kind`` (``only`` unset, or a prefix)."""
    only = [str(getattr(each, "value", each)) for each in params.context.only or ()]
    wanted: str = kind.value
    return not only or any(wanted == each or wanted.startswith(f"{each}.") for each in only)
