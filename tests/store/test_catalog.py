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


def _entry(n: int, text: str = "text", status: str = "active") -> Entry:
    return Entry(f"claim:{n:05d}", "ann", "claim", status, f"{text} {n}", f"{text} {n}")


def test_enqueue_keeps_embedded_texts_and_queues_changed_ones(tmp_path: Path) -> None:
    """An unchanged text only takes its new status (returned); a changed one is queued, and
    a document removed before is no longer counted as gone. Within one call the last entry
    of an id wins, and one queued in it is not status-only for the next."""
    catalog = VectorCatalog(tmp_path / "catalog.sqlite3")
    first = [_entry(n) for n in range(6)]
    catalog.enqueue(first)
    catalog.mark_embedded(first)
    catalog.remove([first[5].doc_id])
    _state, _changed, gone = catalog.changes(0)
    assert gone == [first[5].doc_id]
    again = [
        _entry(0, status="archived"),  # same text: status only
        _entry(1, "changed"),  # new text: queued
        _entry(2, status="archived"),
        _entry(2, "changed"),  # then changed in the same call: queued
        _entry(3, "changed"),
        _entry(3),  # back to the embedded text, after a queued one: queued
        _entry(5),  # removed before: queued again, no longer gone
    ]
    status_only = catalog.enqueue(again)
    assert status_only == [again[0], again[2]]
    pending = {e.doc_id: e.text for e in catalog.pending(10)}
    assert pending == {
        "claim:00001": "changed 1",
        "claim:00002": "changed 2",
        "claim:00003": "text 3",
        "claim:00005": "text 5",
    }
    _state, changed, gone = catalog.changes(0)
    assert gone == []
    assert {row[0]: row[3] for row in changed}["claim:00000"] == "archived"
    assert catalog.counts() == (2, 4)  # 0 and 4 embedded
    catalog.close()


def test_enqueue_looks_documents_up_in_batches(tmp_path: Path) -> None:
    """Which path a large enqueue takes: the embedded texts are read a few hundred ids per
    query, not one query per document (3 s of a 117 000-document full build)."""
    catalog = VectorCatalog(tmp_path / "catalog.sqlite3")
    entries = [_entry(n) for n in range(1200)]
    catalog.enqueue(entries)
    catalog.mark_embedded(entries)
    statements: list[str] = []
    catalog._db.set_trace_callback(statements.append)
    assert len(catalog.enqueue([_entry(n, status="archived") for n in range(1200)])) == 1200
    catalog._db.set_trace_callback(None)
    reads = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert 1 <= len(reads) <= 4, reads[:5]
    assert catalog.counts() == (1200, 0)
    catalog.close()
