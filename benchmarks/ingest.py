"""Conversation ingestion and the MCP server's start, timed.

    .venv/bin/python -m benchmarks.ingest [--pairs 2000] [--spawns 5] [--json]

1. ``lsp-memory ingest`` of ``--pairs`` message pairs (the labelled extraction set's
   messages, cycled over sessions and timestamps so each is new) into a fresh store, as one
   process: pairs per second, extraction and supersede on write included, embedding left to
   the indexer (queued). Then the same file again: every pair already stored.
2. ``lsp-memory mcp`` spawned by the SDK's client ``--spawns`` times: seconds from spawn to
   the answer of a first ``search_memory`` call (on the store just filled).

Targets (issue: conversations): ≥ 200 pairs/s; MCP start to first answer ≤ 1.5 s.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import (
    ROOT,
    arguments,
    emit,
    extraction_rows,
    isolated_env,
    lsp_memory_command,
    mcp_session,
    start_report,
)


def pairs(count: int) -> list[dict[str, Any]]:
    rows = extraction_rows()
    made = []
    for n in range(count):
        row = rows[n % len(rows)]
        made.append(
            {
                "contentSessionId": f"s{n // 10}",
                "timestamp": f"2026-01-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:00Z",
                "userMessage": row["userMessage"],
                "assistantResponse": row.get("assistantResponse") or "OK.",
            }
        )
    return made


def timed(env: dict[str, str], *args: str) -> float:
    started = time.perf_counter()
    subprocess.run(lsp_memory_command(*args), env=env, cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - started


async def first_answer(env: dict[str, str]) -> float:
    started = time.perf_counter()
    async with mcp_session(env) as session:
        result = await session.call_tool("search_memory", {"query": "where do I live"})
        took = time.perf_counter() - started
        assert not result.is_error, result.content
    return took


def main() -> int:
    parser = arguments(__doc__)
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--spawns", type=int, default=5)
    args = parser.parse_args()
    began = time.perf_counter()
    report = start_report("ingest", parameters=vars(args))
    with tempfile.TemporaryDirectory(prefix="lsp-memory-ingest-") as folder:
        work = Path(folder)
        env = isolated_env(work / "xdg", work / "store", "bench")
        source = work / "pairs.jsonl"
        source.write_text("\n".join(json.dumps(p) for p in pairs(args.pairs)) + "\n")
        startup = statistics.median(timed(env, "--version") for _ in range(3))
        first = timed(env, "ingest", str(source))
        again = timed(env, "ingest", str(source))
        spawns = [asyncio.run(first_answer(env)) for _ in range(args.spawns)]
    report |= {
        "pairs": args.pairs,
        "ingest_s": round(first, 2),
        "pairs_per_s": round(args.pairs / first),
        "pairs_per_s_without_startup": round(args.pairs / (first - startup)),
        "again_s": round(again, 2),
        "process_start_s": round(startup, 2),
        "mcp_first_answer_s": {
            "median": round(statistics.median(spawns), 2),
            "max": round(max(spawns), 2),
            "all": [round(s, 2) for s in spawns],
        },
    }
    emit(report, as_json=args.json, table=print, began=began)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
