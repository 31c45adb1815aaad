"""``textDocument/hover`` on a reference: what the claim, context, entity, tag, domain or note
is, or why it does not resolve."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from lsp_memory.lsp.convert import cursor_at, token_range

if TYPE_CHECKING:
    from lsp_memory.lsp.server import MemoryServer


def register(server: MemoryServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: MemoryServer, params: types.HoverParams) -> types.Hover | None:
        session = ls.session
        at = cursor_at(ls.documents, params.text_document.uri, params.position)
        if session is None or at is None:
            return None
        doc = at.doc
        describer = session.reads().describer()
        found = describer.hover_at(doc.source, at.offset, doc.language_id, doc.uri)
        if found is None:
            return None
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=found.markdown),
            range=token_range(doc, found.reference),
        )
