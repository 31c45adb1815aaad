"""Ingesting a file in chunks of ``CHUNK_PAIRS`` pairs stores what ingesting it whole
stores (the same episodes, claims and supersedes; a short answer after a chunk's end still
finds its question; a message repeated from an earlier chunk is "already stored"), and no
chunk's statements are embedded with another's (what is held in memory does not grow with
the file: 90 000 pairs read whole peaked at 702 MB)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lsp_memory.app import App
from lsp_memory.config import Config
from lsp_memory.services.conversations import ingest
from lsp_memory.services.conversations.ingest import parse_pairs
from lsp_memory.services.memory.records import Records
from tests.store.test_ingest_recent_vectors import log, rows

CHUNK = 7


def with_questions(count: int) -> bytes:
    """``count`` pairs of the extraction set, a question answered in one word across the
    first chunk's end (lines 7 and 8), and the first 10 lines again at the end."""
    lines = log(count).decode().splitlines()
    question = {
        "contentSessionId": "kids",
        "timestamp": "2026-03-01T10:00:00Z",
        "userMessage": "Can you help me plan a birthday party?",
        "assistantResponse": "Sure. Do you have kids?",
    }
    answer = {**question, "timestamp": "2026-03-01T10:01:00Z", "userMessage": "yes, two kids"}
    answer["assistantResponse"] = "Then plan for two."
    lines[CHUNK - 1 : CHUNK - 1] = [json.dumps(question), json.dumps(answer)]
    return ("\n".join(lines + lines[:10]) + "\n").encode()


def stored(folder: Path, data: bytes) -> tuple[dict[str, Any], list[str]]:
    app = App(replace(Config(), store=folder / "store", cache=folder / "cache", user="ann"))
    try:
        results = app.ingester().ingest(parse_pairs(data, "log"))
        # A friendly id ends in a random suffix: the rest of each line is compared.
        said = [re.sub(r"@\w+_[0-9a-f]{4}\b", "@…", r.describe()) for r in results]
    finally:
        app.close()
    return rows(folder), said


def test_a_file_ingested_in_chunks_stores_what_it_stores_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = with_questions(60)
    whole, said_whole = stored(tmp_path / "whole", data)  # 72 pairs < CHUNK_PAIRS
    embedded: list[int] = []
    embed = Records.embed

    def counted(self: Records, statements: Any) -> Any:
        embedded.append(len(statements))
        return embed(self, statements)

    monkeypatch.setattr(ingest, "CHUNK_PAIRS", CHUNK)
    monkeypatch.setattr(Records, "embed", counted)
    chunked, said_chunked = stored(tmp_path / "chunked", data)
    assert chunked == whole
    assert said_chunked == said_whole
    assert len(embedded) == -(-72 // CHUNK)  # one batch per chunk, none larger
    assert any(row[1] == "I have two kids" for row in whole["claims"]), whole["claims"]
    assert said_whole[-10:] == [f"line {n}: already stored" for n in range(63, 73)]
