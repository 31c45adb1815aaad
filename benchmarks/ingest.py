"""Conversation ingestion and the MCP server's start, timed.

    python benchmarks/ingest.py [--pairs 2000] [--spawns 5] [--json]

1. ``lsp-memory ingest`` of ``--pairs`` message pairs (the labelled extraction set's
   messages, cycled over sessions and timestamps so each is new) into a fresh store, as one
   process: pairs per second, extraction and supersede on write included, embedding left to
   the indexer (queued). Then the same file again: every pair already stored.
2. ``lsp-memory mcp`` spawned by the SDK's client ``--spawns`` times: seconds from spawn to
   the answer of a first ``search_memory`` call (on the store just filled).

Targets (issue: conversations): ≥ 200 pairs/s; MCP start to first answer ≤ 1.5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "extraction.jsonl"


def environment(work: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(work),
        "XDG_CACHE_HOME": str(work / "cache"),
        "XDG_CONFIG_HOME": str(work / "config"),
        "LSP_MEMORY_STORE": str(work / "store"),
        "LSP_MEMORY_USER": "bench",
        "PYTHONPATH": str(ROOT),
    }


def pairs(count: int) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line]
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
    subprocess.run(
        [sys.executable, "-m", "lsp_memory", *args],
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


async def first_answer(env: dict[str, str]) -> float:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "lsp_memory", "mcp"], env=env, cwd=str(ROOT)
    )
    started = time.perf_counter()
    with Path(os.devnull).open("w") as errors:
        async with (
            stdio_client(params, errlog=errors) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("search_memory", {"query": "where do I live"})
            took = time.perf_counter() - started
            assert not result.is_error, result.content
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--spawns", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lsp-memory-ingest-") as folder:
        work = Path(folder)
        env = environment(work)
        source = work / "pairs.jsonl"
        source.write_text("\n".join(json.dumps(p) for p in pairs(args.pairs)) + "\n")
        startup = statistics.median(timed(env, "--version") for _ in range(3))
        first = timed(env, "ingest", str(source))
        again = timed(env, "ingest", str(source))
        spawns = [asyncio.run(first_answer(env)) for _ in range(args.spawns)]
    report = {
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
        "machine": {
            "cpus": os.cpu_count(),
            "load": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
        },
    }
    print(json.dumps(report, indent=2) if args.json else report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
