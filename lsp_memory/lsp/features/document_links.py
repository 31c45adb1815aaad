"""``textDocument/documentLink``: each ``[[link]]`` that resolves opens its note (at the
heading for ``[[Note#Heading]]``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from lsp_memory.lsp.convert import open_document, token_range

if TYPE_CHECKING:
    from lsp_memory.lsp.server import MemoryServer


def register(server: MemoryServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_LINK)
    def links(ls: MemoryServer, params: types.DocumentLinkParams) -> list[types.DocumentLink]:
        doc = open_document(ls.documents, params.text_document.uri)
        if ls.session is None or doc is None:
            return []
        annotator = ls.session.reads().annotator()
        text_document = ls.client_capabilities.text_document
        support = text_document.document_link if text_document is not None else None
        tooltips = bool(support and support.tooltip_support)
        return [
            types.DocumentLink(
                range=token_range(doc, link.reference),
                target=link.path.as_uri() + ("" if link.line is None else f"#L{link.line + 1}"),
                tooltip=link.title if tooltips else None,
            )
            for link in annotator.links(doc.source, doc.language_id, doc.uri)
        ]
