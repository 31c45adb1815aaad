"""The MCP server's lanes (``mcp.server.Lanes``): once the parts its reads share are open,
a reader's thread prepares the vector index (its file's ids hashed, its int8 rows copied),
which two of its first ~16 searches did otherwise (~0.1–0.2 s each at 207k documents: the
two slowest of 200 ``search_memory`` calls)."""

from __future__ import annotations

import time
from pathlib import Path

from lsp_memory.mcp.server import Lanes
from lsp_memory.services.memory.interchange import import_records
from tests.conftest import KB, USER
from tests.store.test_search import make_app


def test_the_vector_index_is_prepared_once_the_shared_parts_are_open(tmp_path: Path) -> None:
    first = make_app(tmp_path)
    import_records(first.store, KB.read_bytes(), user=USER, source="kb")
    first.keeper.index()  # embeds everything and writes the vector file
    first.close()
    app = make_app(tmp_path)
    lanes = Lanes(app)
    try:
        assert lanes._open().result(timeout=60)
        side = app.loaded_vectors
        assert side is not None
        index, base = side.index, side.index.base
        assert base is not None and base.count > 0
        deadline = time.monotonic() + 30
        while not (base.hashed and index._copied(base)) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert base.hashed and index._copied(base)  # no search ran: the lanes did it
    finally:
        lanes.close()
        app.close()
