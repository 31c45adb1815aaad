"""``textDocument/codeLens``: on the first line of a document with references, the size of
its context block against the budget — ``context: 1234 / 1500 tokens`` — running
``lspMemory.buildContext`` when clicked. The block is built by the same service as
``build-context``, so the figure is the one the command gives.

A block takes tens of milliseconds on 100k claims (docs/benchmarks.md), so it is built in a
worker thread, and the session keeps the last block of each document: asked again for the
same text of the document, with the store and the indexes unchanged, the lens (and
``lspMemory.buildContext``) gives the block built before. (The text, not the version: a
document closed and opened again starts at version 1 whatever it says.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from lsp_memory import refs
from lsp_memory.lsp.convert import as_document, open_document, open_texts

if TYPE_CHECKING:
    from lsp_memory.app import Snapshot
    from lsp_memory.lsp.server import MemoryServer

BUILD = "lspMemory.buildContext"


def refresh(ls: MemoryServer) -> None:
    """The memory changed (or the first index sync ended: lenses asked before it got none):
    ask the client for the lenses again, where it takes that request."""
    workspace = ls.client_capabilities.workspace
    lenses = workspace.code_lens if workspace is not None else None
    if lenses is not None and lenses.refresh_support:
        ls.ask(ls.workspace_code_lens_refresh_async(None), "workspace/codeLens/refresh")


def register(server: MemoryServer) -> None:
    server.on_memory_changed.append(refresh)

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    async def code_lens(
        ls: MemoryServer, params: types.CodeLensParams
    ) -> list[types.CodeLens] | None:
        session = ls.session
        documents = ls.documents
        doc = open_document(documents, params.text_document.uri)
        if session is None or doc is None or not session.ready.is_set():
            return None
        if not refs.parse_document(doc.source, doc.language_id, doc.uri).references:
            return None
        document, buffers = as_document(doc), open_texts(documents)

        def lens(reads: Snapshot) -> list[types.CodeLens]:
            block = session.build_context(reads, document, buffers)
            title = f"context: {block.tokens} / {block.budget} tokens"
            if block.over_budget:
                title += " (over budget: referenced claims alone)"
            top = types.Position(line=0, character=0)
            return [
                types.CodeLens(
                    range=types.Range(start=top, end=top),
                    command=types.Command(title=title, command=BUILD, arguments=[doc.uri]),
                )
            ]

        return await session.run(lens)
