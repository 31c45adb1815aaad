"""``textDocument/definition`` on a reference: a ``[[note]]`` opens its file (at the heading);
a claim, context, entity, tag or domain opens its generated read-only page in the cache
folder, which any editor shows without a plugin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import from_fs_path

from lsp_memory.lsp.convert import offset, open_document
from lsp_memory.services.describe import Describer

if TYPE_CHECKING:
    from lsp_memory.lsp.server import MemoryServer

PAGES = "pages"
"""The folder of generated record pages, inside the store's index folder."""


def register(server: MemoryServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: MemoryServer, params: types.DefinitionParams) -> types.Location | None:
        session = ls.session
        if session is None:
            return None
        doc = open_document(ls.workspace.text_documents, params.text_document.uri)
        if doc is None:
            return None
        position = doc.position_from_client_units(params.position)
        if position.line >= len(doc.lines):
            return None
        app = session.app
        found = Describer(app.store, session.config.user, app.vaults).definition_at(
            doc.source,
            offset(doc, position.line, position.character),
            app.index_folder / PAGES,
            doc.language_id,
            doc.uri,
        )
        if found is None:
            return None
        start = types.Position(line=found.line, character=0)
        return types.Location(
            uri=from_fs_path(str(found.path)) or found.path.as_uri(),
            range=types.Range(start=start, end=start),
        )
