"""``textDocument/codeLens``: on the first line of a document with references, the size of
its context block against the budget — ``context: 1234 / 1500 tokens`` — running
``lspMemory.buildContext`` when clicked. The block is built by the same service as
``build-context``, so the figure is the one the command gives.

On a note of a vault, ``N references`` on its title (its first ``# `` heading, or line 0)
and on each heading that is linked: the links of other notes and of the open documents
(``services.editor.counts``, from the vault's index: no file is read). Clicking one runs
``lspMemory.showReferences`` (uri, position), which answers the links' locations: the
editor shows them (the VS Code extension as its references view, the Neovim plugin in the
quickfix list). The lenses are asked for again whenever notes change
(``workspace/codeLens/refresh``), an open note's unsaved links included.

A block takes tens of milliseconds on 100k claims (docs/benchmarks.md), so it is built in a
worker thread, and the session keeps the last block of each document: asked again for the
same text of the document, with the store and the indexes unchanged, the lens (and
``lspMemory.buildContext``) gives the block built before. (The text, not the version: a
document closed and opened again starts at version 1 whatever it says.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from lsp_memory import refs
from lsp_memory.lsp.convert import Places, as_document, as_documents, open_document, open_texts

if TYPE_CHECKING:
    from lsp_memory.app import Snapshot
    from lsp_memory.lsp.server import MemoryServer

BUILD = "lspMemory.buildContext"
SHOW_REFERENCES = "lspMemory.showReferences"


def _counted(count: int) -> str:
    return "1 reference" if count == 1 else f"{count} references"


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
        with_block = bool(refs.parse_document(doc.source, doc.language_id, doc.uri).references)
        document, opened = as_document(doc), as_documents(documents)
        buffers = open_texts(documents) if with_block else {}

        def lens(reads: Snapshot) -> list[types.CodeLens] | None:
            found = []
            if with_block:
                block = session.build_context(reads, document, buffers)
                title = f"context: {block.tokens} / {block.budget} tokens"
                if block.over_budget:
                    title += " (over budget: referenced claims alone)"
                top = types.Position(line=0, character=0)
                command = types.Command(title=title, command=BUILD, arguments=[doc.uri])
                found.append(types.CodeLens(range=types.Range(start=top, end=top), command=command))
            for count in reads.link_counts().counts(document, opened):
                at = types.Position(line=count.line, character=0)
                where = {"line": count.line, "character": 0}
                command = types.Command(
                    title=_counted(count.links),
                    command=SHOW_REFERENCES,
                    arguments=[doc.uri, where],
                )
                found.append(types.CodeLens(range=types.Range(start=at, end=at), command=command))
            return found or None

        return await session.run(lens)

    @server.command(SHOW_REFERENCES)
    async def show_references(ls: LanguageServer, *args: Any) -> list[types.Location]:
        """Arguments: an open note's URI and the position of a count's lens (its line). The
        locations of the links that count counted, by document then position."""
        server = cast("MemoryServer", ls)
        session = server.session
        uri = args[0] if args else None
        where = args[1] if len(args) > 1 else None
        line = where.get("line") if isinstance(where, dict) else None
        if not isinstance(uri, str) or isinstance(line, bool) or not isinstance(line, int):
            raise JsonRpcInvalidParams("arguments: a document URI, a position {line, character}")
        doc = open_document(server.documents, uri)
        if session is None or doc is None:
            raise JsonRpcInvalidParams(f"{uri} is not open")
        document, opened = as_document(doc), as_documents(server.documents)
        places = Places(server.workspace.position_codec)

        def find(reads: Snapshot) -> list[types.Location]:
            found = reads.link_counts().places(document, line, opened)
            return [places.location(place) for place in found]

        return await session.run(find)
