"""``workspace/symbol``: the hybrid search (BM25 fused with local embeddings) over claims,
contexts, entities and notes, as the editor's "go to symbol in workspace" list.

A note's symbol is its file. A record's is its generated page (see ``definition``): clients
that can resolve a symbol's range later (``workspaceSymbol/resolve``) get the page's URI at
once and the page is written when one is picked; others get pages written for every hit.
The search runs in a worker thread.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path

from lsp_memory.services.editor.describe import Page
from lsp_memory.text import one_line

if TYPE_CHECKING:
    from lsp_memory.app import Snapshot
    from lsp_memory.lsp.server import MemoryServer
    from lsp_memory.services.retrieval.search import Hit

LIMIT = 30
"""Symbols per query: a picker's screenful, and each may need a page written."""
STATUSES = ("active", "contested", "archived")
SEMANTIC_FLOOR = 0.3
"""A hit that shares no word with the query is listed only this close to it (cosine): the
dense side always has nearest neighbours, even of "zzqxv" (0.26 on the fixture knowledge base),
while "morning routine" finds "I prefer to do deep work in the morning" at 0.58."""
_NAME_CUT = 100
_KINDS = {
    "note": types.SymbolKind.File,
    "context": types.SymbolKind.Namespace,
    "entity": types.SymbolKind.Class,
    "claim": types.SymbolKind.Constant,
}
_TOP = types.Range(
    start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
)


def _uri(path: Path) -> str:
    return from_fs_path(str(path)) or path.as_uri()


def _name(hit: Hit) -> str:
    return one_line(hit.title, _NAME_CUT)


def _container(hit: Hit) -> str:
    return hit.key if hit.kind == "note" else f"@{hit.key} · {hit.kind}"


def _resolvable(ls: MemoryServer) -> bool:
    """Whether the client fills a symbol's range in later (LSP 3.17)."""
    workspace = ls.client_capabilities.workspace
    symbol = workspace.symbol if workspace is not None else None
    support = symbol.resolve_support if symbol is not None else None
    return support is not None and "location.range" in support.properties


def _location(reads: Snapshot, hit: Hit) -> types.Location | None:
    """Where a hit opens: a note's file, or its record page (written now)."""
    if hit.kind == "note":
        note = next((v.notes.get(hit.key) for v in reads.vaults if hit.key in v.notes), None)
        if note is None:
            return None
        return types.Location(uri=_uri(Path(note.vault) / note.path), range=_TOP)
    path = reads.describer().page_of(hit.kind, hit.key, reads.pages)
    return None if path is None else types.Location(uri=_uri(path), range=_TOP)


SYMBOL_KINDS = ("claim", "context", "entity", "note")
"""What the symbol list shows: records and notes (conversation episodes are not symbols)."""


def _page_uri(reads: Snapshot, hit: Hit) -> str:
    """The URI a record's page will have, without writing it."""
    return _uri(reads.pages / Page(hit.kind, hit.key, "").relative)


def _symbols(
    reads: Snapshot, query: str, resolvable: bool
) -> list[types.WorkspaceSymbol] | list[types.SymbolInformation]:
    found_hits = reads.search().search(
        query, user=reads.user, kinds=SYMBOL_KINDS, statuses=STATUSES, k=LIMIT
    )
    hits = [h for h in found_hits if h.bm25 > 0 or h.similarity >= SEMANTIC_FLOOR]
    if resolvable:
        found: list[types.WorkspaceSymbol] = []
        for hit in hits:
            location: types.Location | types.LocationUriOnly | None
            if hit.kind == "note":
                location = _location(reads, hit)
            else:
                location = types.LocationUriOnly(uri=_page_uri(reads, hit))
            if location is not None:
                found.append(
                    types.WorkspaceSymbol(
                        name=_name(hit),
                        kind=_KINDS.get(hit.kind, types.SymbolKind.File),
                        location=location,
                        container_name=_container(hit),
                        data={"kind": hit.kind, "key": hit.key},
                    )
                )
        return found
    listed: list[types.SymbolInformation] = []
    for hit in hits:
        place = _location(reads, hit)
        if place is not None:
            listed.append(
                types.SymbolInformation(
                    name=_name(hit),
                    kind=_KINDS.get(hit.kind, types.SymbolKind.File),
                    location=place,
                    container_name=_container(hit),
                )
            )
    return listed


def register(server: MemoryServer) -> None:
    @server.feature(types.WORKSPACE_SYMBOL, types.WorkspaceSymbolOptions(resolve_provider=True))
    async def symbols(
        ls: MemoryServer, params: types.WorkspaceSymbolParams
    ) -> list[types.WorkspaceSymbol] | list[types.SymbolInformation] | None:
        session = ls.session
        if session is None or not session.ready.is_set():
            return None
        resolvable = _resolvable(ls)
        return await session.run(lambda reads: _symbols(reads, params.query, resolvable))

    @server.feature(types.WORKSPACE_SYMBOL_RESOLVE)
    def resolve(ls: MemoryServer, symbol: types.WorkspaceSymbol) -> types.WorkspaceSymbol:
        """Write the picked record's page and give its range; anything else as it came."""
        session = ls.session
        data: Any = symbol.data
        if session is None or not isinstance(data, dict):
            return symbol
        kind, key = data.get("kind"), data.get("key")
        if not isinstance(kind, str) or not isinstance(key, str) or kind == "note":
            return symbol
        reads = session.reads()
        path = reads.describer().page_of(kind, key, reads.pages)
        if path is not None:
            symbol.location = types.Location(uri=_uri(path), range=_TOP)
        return symbol
