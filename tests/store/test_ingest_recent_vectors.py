"""Ingesting with the vector cache's recent vectors kept in memory stores what ingesting
without them stores: the same episodes, the same claims, the same ones superseded."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lsp_memory.app import App
from lsp_memory.config import Config
from lsp_memory.services.conversations.ingest import parse_pairs
from lsp_memory.store import vectors

EXTRACTION_SET = Path(__file__).resolve().parents[1] / "data" / "extraction.jsonl"


def log(count: int) -> bytes:
    """``count`` pairs of the extraction set's messages, each in a conversation of 10."""
    rows = [json.loads(line) for line in EXTRACTION_SET.read_text().splitlines() if line.strip()]
    return "".join(
        json.dumps(
            {
                "contentSessionId": f"s{n // 10}",
                "timestamp": f"2026-01-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:00Z",
                "userMessage": rows[n % len(rows)]["userMessage"],
                "assistantResponse": rows[n % len(rows)].get("assistantResponse") or "OK.",
            }
        )
        + "\n"
        for n in range(count)
    ).encode()


def stored(folder: Path, data: bytes) -> dict[str, Any]:
    app = App(replace(Config(), store=folder / "store", cache=folder / "cache", user="ann"))
    try:
        app.ingester().ingest(parse_pairs(data, "log"))
    finally:
        app.close()
    return rows(folder)


def rows(folder: Path) -> dict[str, Any]:
    """The claims (with what superseded each) and the messages of the store in ``folder``."""
    with sqlite3.connect(folder / "store" / "memory.sqlite3") as db:
        claims = db.execute(
            "SELECT c.number, c.statement, c.claim_type, c.status, s.number FROM claims c "
            "LEFT JOIN claims s ON s.claim_id = c.superseded_by ORDER BY c.number"
        ).fetchall()
        episodes = db.execute(
            "SELECT session_id, role, text, occurred_at FROM episodes ORDER BY id"
        ).fetchall()
    return {"claims": claims, "episodes": episodes}


def test_recent_vectors_in_memory_change_nothing_an_ingest_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = log(300)
    kept = stored(tmp_path / "kept", data)
    monkeypatch.setattr(vectors, "RECENT_VECTORS", 0)
    unkept = stored(tmp_path / "unkept", data)
    assert kept == unkept
    superseded = [row for row in kept["claims"] if row[3] == "superseded"]
    assert len(kept["episodes"]) == 600 and len(kept["claims"]) > 200 and len(superseded) > 50
