"""The "Link [[Title]]" and "Reference @id" code actions: related-note suggestions for the
paragraph under the cursor (``services.editor.related``), each an edit that appends the link or
reference to the end of the paragraph. Offered with ``diagnostics``' code actions, to clients
that take code actions (``literal``), unless ``related_similarity`` is off."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from lsp_memory.lsp.convert import client_position, edit_capability, workspace_edit

if TYPE_CHECKING:
    from lsp_memory.lsp.session import Session

RELATED_KIND = types.CodeActionKind.RefactorRewrite
"""The kind of a suggestion's action: it rewrites the paragraph, fixing nothing."""


async def related_actions(
    session: Session,
    capabilities: types.ClientCapabilities,
    doc: TextDocument,
    params: types.CodeActionParams,
    literal: bool,
) -> list[types.CodeAction | types.Command]:
    """The related-note actions for the paragraph at the start of the request's range;
    its suggestions are found in a worker, over the text as it is now."""
    threshold = session.config.related_similarity
    only = [str(getattr(kind, "value", kind)) for kind in params.context.only or ()]
    wanted: str = RELATED_KIND.value
    if threshold is None or not literal or not session.ready.is_set():
        return []
    if only and not any(wanted == kind or wanted.startswith(f"{kind}.") for kind in only):
        return []
    text, version, language_id = doc.source, doc.version, doc.language_id
    offset = doc.offset_at_position(params.range.start)
    path = to_fs_path(doc.uri)
    paragraph, found = await session.run(
        lambda reads: reads.suggester().suggest(
            text, offset, threshold=threshold, path=path, language_id=language_id, wait=False
        )
    )
    if paragraph is None or not found or doc.version != version:
        return []  # (changed meanwhile: the paragraph's end would be off)
    end = doc.server_position_at_offset(paragraph.end)
    where = client_position(doc, end.line, end.character)
    capability = edit_capability(capabilities)
    actions: list[types.CodeAction | types.Command] = []
    for suggestion in found:
        title = (
            f"Link {suggestion.reference}"
            if suggestion.kind == "note"
            else f"Reference {suggestion.reference}: {suggestion.label}"
        )
        edit = types.TextEdit(
            range=types.Range(start=where, end=where), new_text=f" {suggestion.reference}"
        )
        actions.append(
            types.CodeAction(
                title=title,
                kind=RELATED_KIND,
                edit=workspace_edit(capability, {doc.uri: [edit]}, {doc.uri: version}),
            )
        )
    return actions
