"""A conversation's context block over MCP, with its passive recall made ahead or not.

    .venv/bin/python -m benchmarks.recall_ahead [--pairs 2000] [--turns 40] [--pause-ms 500]

A store filled as a user's would be (``lsp-memory ingest`` of ``--pairs`` message pairs of
the labelled extraction set, cycled over sessions, then ``lsp-memory index``), and
``lsp-memory mcp`` spawned by the SDK's client. Then ``--turns`` turns of one new
conversation, as an agent drives it: ``ingest_messages`` with the last exchange, and the next
block, ``build_context(text=the next user message, session_id=…)``, asked

- **after a pause** of ``--pause-ms`` (the assistant writing its answer): the server has made
  the conversation's recall ahead meanwhile (``recall: "precomputed"``);
- **at once**: the recall made ahead (on a reader's thread, begun as the exchange was
  answered) is usually not done yet, so the block recalls itself.

Each turn asks both, on alternate turns of the same conversation (even turns paused, odd
turns at once), so both see the same store. Reported: each call's wall time as the client
sees it, p50/p95/p99 (benchmarks/common.py, one method), and how many blocks said
``precomputed``.
"""

from __future__ import annotations

import asyncio
import json
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
    latency_ms,
    lsp_memory_command,
    mcp_session,
    start_report,
)
from benchmarks.ingest import pairs


async def turns(env: dict[str, str], count: int, pause_s: float) -> dict[str, Any]:
    rows = [r for r in extraction_rows() if r.get("assistantResponse")]
    times: dict[str, list[float]] = {"ingest": [], "paused": [], "at_once": []}
    said: dict[str, list[str]] = {"paused": [], "at_once": []}
    async with mcp_session(env) as session:
        warm = await session.call_tool("search_memory", {"query": "warm up"})
        assert not warm.is_error, warm.content
        for n in range(count):
            row, following = rows[n % len(rows)], rows[(n + 1) % len(rows)]
            started = time.perf_counter()
            stored = await session.call_tool(
                "ingest_messages",
                {
                    "session_id": "bench-turns",
                    "user_message": row["userMessage"],
                    "assistant_response": row["assistantResponse"],
                    "timestamp": f"2026-02-01T10:{n % 60:02d}:{n // 60:02d}Z",
                },
            )
            times["ingest"].append(time.perf_counter() - started)
            assert not stored.is_error, stored.content
            kind = "paused" if n % 2 == 0 else "at_once"
            if kind == "paused":
                await asyncio.sleep(pause_s)
            started = time.perf_counter()
            block = await session.call_tool(
                "build_context",
                {"text": following["userMessage"], "session_id": "bench-turns"},
            )
            times[kind].append(time.perf_counter() - started)
            assert not block.is_error and block.structured_content is not None, block.content
            said[kind].append(block.structured_content["recall"])
    return {
        name: {**latency_ms(samples, (50, 95, 99)), "calls": len(samples)}
        for name, samples in times.items()
    } | {f"{name}_precomputed": said[name].count("precomputed") for name in said}


def main() -> int:
    parser = arguments(__doc__)
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--pause-ms", type=int, default=500)
    args = parser.parse_args()
    began = time.perf_counter()
    report = start_report("recall_ahead", parameters=vars(args))
    with tempfile.TemporaryDirectory(prefix="lsp-memory-recall-ahead-") as folder:
        work = Path(folder)
        env = isolated_env(work / "xdg", work / "store", "bench")
        source = work / "pairs.jsonl"
        source.write_text("\n".join(json.dumps(p) for p in pairs(args.pairs)) + "\n")
        for command in (("ingest", str(source)), ("index",)):
            subprocess.run(
                lsp_memory_command(*command), env=env, cwd=ROOT, check=True, capture_output=True
            )
        report["results"] = asyncio.run(turns(env, args.turns, args.pause_ms / 1000))
    emit(report, as_json=args.json, began=began, table=table)
    return 0


def table(report: dict[str, Any]) -> None:
    results = report["results"]
    print(f"{'call':<34}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'calls':>7}")
    for name, label in (
        ("ingest", "ingest_messages (answer)"),
        ("paused", "build_context after a pause"),
        ("at_once", "build_context at once"),
    ):
        row = results[name]
        figures = "".join(f"{row[f'p{p}_ms']:>9.1f}" for p in (50, 95, 99))
        print(f"{label:<34}{figures}{row['calls']:>7}")
    print(
        f"precomputed: {results['paused_precomputed']} of the paused blocks, "
        f"{results['at_once_precomputed']} of the others"
    )


if __name__ == "__main__":
    raise SystemExit(main())
