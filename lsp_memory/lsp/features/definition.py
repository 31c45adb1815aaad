"""``textDocument/definition`` on a reference: a ``[[note]]`` opens its file (at the heading);
a claim, context, entity, tag or domain opens its generated read-only page in the cache
folder, which any editor shows without a plugin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import from_fs_path

from lsp_memory.lsp.convert import cursor_at

if TYPE_CHECKING:
    from lsp_memory.lsp.server import MemoryServer


def register(server: MemoryServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: MemoryServer, params: types.DefinitionParams) -> types.Location | None:
        session = ls.session
        at = cursor_at(ls.documents, params.text_document.uri, params.position)
        if session is None or at is None:
            return None
        doc = at.doc
        reads = session.reads()
        found = reads.describer().definition_at(
            doc.source, at.offset, reads.pages, doc.language_id, doc.uri
        )
        if found is None:
            return None
        start = types.Position(line=found.line, character=0)
        return types.Location(
            uri=from_fs_path(str(found.path)) or found.path.as_uri(),
            range=types.Range(start=start, end=start),
        )
