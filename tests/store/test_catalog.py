"""The embedding queue's counts: what waits and what is embedded (the pending count is read
through the queue's partial index, ``INDEXED BY``: SQLite refuses the query if it cannot)."""

from __future__ import annotations

from pathlib import Path

from lsp_memory.store.catalog import Entry, VectorCatalog


def test_counts_follow_the_queue(tmp_path: Path) -> None:
    catalog = VectorCatalog(tmp_path / "catalog.sqlite3")
    entries = [
        Entry(f"claim:{n}", "ann", "claim", "active", f"h{n}", f"text {n}") for n in range(3)
    ]
    catalog.enqueue(entries)
    assert (catalog.counts(), catalog.pending_count()) == ((0, 3), 3)
    catalog.mark_embedded(entries[:2])
    assert (catalog.counts(), catalog.pending_count()) == ((2, 1), 1)
    catalog.close()
