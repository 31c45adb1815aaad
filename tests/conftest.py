"""Shared fixtures: the fixture knowledge base in ``tests/data`` and stores on ``tmp_path``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_memory.services.memory.interchange import import_records
from lsp_memory.store.sqlite import STORE_FILE, Store, open_store

DATA = Path(__file__).parent / "data"
KB = DATA / "kb.jsonl"
BAD = DATA / "bad"
USER = "ann"  # the importing user of kb.jsonl; its second user is "mallory"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(tmp_path / "store") as opened:
        yield opened


@pytest.fixture
def kb(store: Store) -> Store:
    """A store holding kb.jsonl, imported as ``ann``."""
    import_records(store, KB.read_bytes(), user=USER, source=str(KB))
    return store


def snapshot(store_folder: Path) -> str:
    """Every row of the store as SQL text, to show that a failed operation changed nothing;
    less the claims' token counts, which a language server fills in the background whenever
    it likes (and the group sizes' sums of them): derived, not written by anyone."""
    db = sqlite3.connect(store_folder / STORE_FILE)
    copy = sqlite3.connect(":memory:")
    try:  # closed here, not when collected: a later rmtree races the WAL file's removal
        db.backup(copy)
        columns = {row[1] for row in copy.execute("PRAGMA table_info(claims)")}
        if "line_tokens" in columns:
            copy.execute("UPDATE claims SET line_tokens = NULL")
            copy.execute("UPDATE group_sizes SET tokens = 0, uncounted = 0")
        return "\n".join(copy.iterdump())
    finally:
        db.close()
        copy.close()
