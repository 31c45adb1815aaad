"""``textDocument/hover`` on a reference: what the claim, context, entity, tag, domain or note
is, or why it does not resolve."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from lsp_memory.lsp.convert import client_position, cursor_at

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from lsp_memory.lsp.server import MemoryServer
    from lsp_memory.model import Reference


def _token_range(doc: TextDocument, reference: Reference) -> types.Range:
    """The reference's range in client units, from its string offsets (a token never spans
    lines)."""
    start = doc.server_position_at_offset(reference.offset)
    end = start.character + reference.end - reference.offset
    return types.Range(
        start=client_position(doc, start.line, start.character),
        end=client_position(doc, start.line, end),
    )


def register(server: MemoryServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: MemoryServer, params: types.HoverParams) -> types.Hover | None:
        session = ls.session
        at = cursor_at(ls.workspace.text_documents, params.text_document.uri, params.position)
        if session is None or at is None:
            return None
        doc = at.doc
        found = session.describer.hover_at(doc.source, at.offset, doc.language_id, doc.uri)
        if found is None:
            return None
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=found.markdown),
            range=_token_range(doc, found.reference),
        )
