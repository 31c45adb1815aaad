"""MCP ``build_context`` as of a date against now, on the server corpus (100 000 claims).

    .venv/bin/python -m benchmarks.context_as_of --work DIR [--queries 10] [--as-of DATE]
        [--json]

The same copy of the server corpus and the same history as ``benchmarks/search_as_of.py``
(``give_history``: a consolidation run on 2026-01-15 that changed every claim, and 2 000
single writes on 2026-02-01), so every claim that existed at the date asked has a change to
undo: the worst case for a block as of a date, which reads every claim made by then as it
was. ``lsp-memory mcp`` is spawned by the SDK's own client and asked once each way to warm
up, each timed (``first_now_s``, ``first_as_of_s``: the first block as of the date reads
every claim made by then; each reading thread of the server keeps that date's claims until
the store changes). Then each of ``--queries`` prompts (the extraction set's words, with a
reference to claim #12) is built with and without ``as_of``, alternating which goes first,
each timed at the client; p50/p90/p99 (``benchmarks.common.percentile``) and the ratio of
the medians.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, emit, latency_ms, mcp_session, start_report
from benchmarks.consolidate import environment
from benchmarks.search_as_of import give_history
from benchmarks.search_memory import queries


async def measure(env: dict[str, str], asked: list[str], as_of: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    async with mcp_session(env) as session:
        started = time.perf_counter()
        await session.call_tool("build_context", {"text": "warm up #12"})
        found["first_now_s"] = round(time.perf_counter() - started, 2)
        started = time.perf_counter()
        await session.call_tool("build_context", {"text": "warm up #12", "as_of": as_of})
        found["first_as_of_s"] = round(time.perf_counter() - started, 2)
        samples: dict[str, list[float]] = {"now": [], "as_of": []}
        for n, query in enumerate(asked):
            for which in ("now", "as_of") if n % 2 == 0 else ("as_of", "now"):
                given: dict[str, Any] = {"text": f"{query} #12"}
                if which == "as_of":
                    given["as_of"] = as_of
                began = time.perf_counter()
                result = await session.call_tool("build_context", given)
                samples[which].append(time.perf_counter() - began)
                assert not result.is_error, result.content
        now, then = latency_ms(samples["now"]), latency_ms(samples["as_of"])
        found["build_context"] = {
            "now": now,
            "as_of": then,
            "p50_ratio": round(then["p50_ms"] / now["p50_ms"], 2),
        }
    return found


def main() -> int:
    parser = arguments(__doc__, seed=True, queries=10)
    parser.add_argument("--work", type=Path, required=True, help="a copy of the server corpus")
    parser.add_argument("--as-of", default="2024-06-30", help="the date asked (default mid-2024)")
    args = parser.parse_args()
    began = time.perf_counter()
    results = start_report("context_as_of", parameters={**vars(args), "work": str(args.work)})
    results["build"] = give_history(args.work)
    asked = queries(args.queries, args.seed)
    results.update(asyncio.run(measure(environment(args.work), asked, args.as_of)))
    emit(results, as_json=args.json, table=print_blocks, began=began)
    return 0


def print_blocks(results: dict[str, Any]) -> None:
    found = results["build_context"]
    for which in ("now", "as_of"):
        print(
            f"build_context {which}: " + ", ".join(f"{k} {v:.1f}" for k, v in found[which].items())
        )
    print(f"  as_of / now: p50 ×{found['p50_ratio']}")


if __name__ == "__main__":
    raise SystemExit(main())
