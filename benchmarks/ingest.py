"""Conversation ingestion and the MCP server's start, timed.

    .venv/bin/python -m benchmarks.ingest [--pairs 2000] [--spawns 5] [--json]

1. ``lsp-memory ingest`` of ``--pairs`` message pairs (the labelled extraction set's
   messages, cycled over sessions and timestamps so each is new) into a fresh store, as one
   process: pairs per second, extraction and supersede on write included, embedding left to
   the indexer (queued). Then the same file again: every pair already stored.
2. ``lsp-memory mcp`` spawned by the SDK's client ``--spawns`` times: seconds from spawn to
   the answer of a first ``search_memory`` call (on the store just filled).

With ``--report-every K`` (e.g. ``--pairs 100000 --report-every 10000 --spawns 0``), the
cost of ingesting as the memory grows instead: the same ``--pairs`` pairs as one
``lsp-memory ingest`` process into a fresh store (its whole time), then into another fresh
store as files of ``K`` pairs ingested one after another, each its own process (pairs per
second of each, and the last file's throughput over the first's; the same per CPU second,
which a shared machine's load changes far less).

Targets (issue: conversations): ≥ 200 pairs/s; MCP start to first answer ≤ 1.5 s. Issue 24:
100 000 pairs ≤ 5 min as one process; the last 10 000 pairs ≥ 0.8× the first 10 000's rate.
"""

from __future__ import annotations

import asyncio
import json
import resource
import statistics
import subprocess
import sys
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


def pairs(count: int, start: int = 0) -> list[dict[str, Any]]:
    """``count`` pairs of the synthetic log from pair ``start`` on: each new (its own
    conversation of 10 pairs and time), the messages cycled from the extraction set."""
    rows = extraction_rows()
    made = []
    for n in range(start, start + count):
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
    return timed_cpu(env, *args)[0]


def timed_cpu(env: dict[str, str], *args: str) -> tuple[float, float]:
    """The wall time and the CPU time (user + system, the process and its children) of
    ``lsp-memory ARGS``: on a shared machine the wall time mostly measures the other jobs
    (a 90 000-pair ingest took 409 s of wall time and 149 s of CPU at load 6-7)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(lsp_memory_command(*args), env=env, cwd=ROOT, check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


async def first_answer(env: dict[str, str]) -> float:
    started = time.perf_counter()
    async with mcp_session(env) as session:
        result = await session.call_tool("search_memory", {"query": "where do I live"})
        took = time.perf_counter() - started
        assert not result.is_error, result.content
    return took


def write_pairs(path: Path, made: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps(p) for p in made) + "\n")
    return path


def growth(work: Path, count: int, every: int) -> dict[str, Any]:
    """``count`` pairs as one process into a fresh store, then as files of ``every`` pairs
    one after another into another: the whole time, and pairs per second per file."""
    whole_env = isolated_env(work / "xdg", work / "whole", "bench")
    whole, whole_cpu = timed_cpu(
        whole_env, "ingest", str(write_pairs(work / "all.jsonl", pairs(count)))
    )
    env = isolated_env(work / "xdg", work / "grown", "bench")
    rates, cpu_rates = [], []
    for start in range(0, count, every):
        size = min(every, count - start)
        source = write_pairs(work / "part.jsonl", pairs(size, start))
        wall, cpu = timed_cpu(env, "ingest", str(source))
        rates.append(round(size / wall))
        cpu_rates.append(round(size / cpu))
        print(
            f"pairs {start + size}: {rates[-1]} pairs/s, {cpu_rates[-1]} per CPU second",
            file=sys.stderr,
            flush=True,
        )
    return {
        "whole_process_s": round(whole, 1),
        "whole_process_cpu_s": round(whole_cpu, 1),
        "whole_pairs_per_s": round(count / whole),
        "report_every": every,
        "pairs_per_s_per_file": rates,
        "last_over_first": round(rates[-1] / rates[0], 2),
        "pairs_per_cpu_s_per_file": cpu_rates,
        "last_over_first_cpu": round(cpu_rates[-1] / cpu_rates[0], 2),
    }


def main() -> int:
    parser = arguments(__doc__)
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--spawns", type=int, default=5)
    parser.add_argument("--report-every", type=int, default=0, metavar="K")
    args = parser.parse_args()
    if args.report_every < 0 or args.pairs < 1:
        parser.error("--pairs must be ≥ 1 and --report-every ≥ 0")
    began = time.perf_counter()
    report = start_report("ingest", parameters=vars(args))
    if args.report_every:
        with tempfile.TemporaryDirectory(prefix="lsp-memory-ingest-") as folder:
            report |= growth(Path(folder), args.pairs, args.report_every)
        emit(report, as_json=args.json, table=print, began=began)
        return 0
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
