"""``textDocument/documentHighlight``: on a reference, every reference in the same document
that names the same claim, context, entity, tag, domain or note, whatever its form — so
``#42``, ``@claim_42`` and ``@prefer_morning_a3f2`` light up together. Off a reference,
nothing (find references covers a note as a whole)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from lsp_memory.lsp.convert import Places, as_document, cursor_at

if TYPE_CHECKING:
    from lsp_memory.lsp.server import MemoryServer


def register(server: MemoryServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT)
    def highlights(
        ls: MemoryServer, params: types.DocumentHighlightParams
    ) -> list[types.DocumentHighlight] | None:
        session = ls.session
        at = cursor_at(ls.documents, params.text_document.uri, params.position)
        if session is None or at is None:
            return None
        finder = session.reads().references()
        document = as_document(at.doc)
        found = finder.target_at(document, at.offset)
        if found is None or found[1] is None:
            return None
        places = Places(ls.workspace.position_codec)
        return [
            types.DocumentHighlight(
                range=places.range(place), kind=types.DocumentHighlightKind.Text
            )
            for place in finder.find(found[0], [document], notes=False)
        ]
