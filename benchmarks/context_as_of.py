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

import time
from typing import Any

from benchmarks.common import latency_ms, mcp_session
from benchmarks.search_as_of import paired, run_as_of


async def measure(env: dict[str, str], asked: list[str], as_of: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    async with mcp_session(env) as session:
        started = time.perf_counter()
        await session.call_tool("build_context", {"text": "warm up #12"})
        found["first_now_s"] = round(time.perf_counter() - started, 2)
        started = time.perf_counter()
        await session.call_tool("build_context", {"text": "warm up #12", "as_of": as_of})
        found["first_as_of_s"] = round(time.perf_counter() - started, 2)
        calls = [{"text": f"{query} #12"} for query in asked]
        samples, _ = await paired(session, "build_context", calls, as_of)
        now, then = latency_ms(samples["now"]), latency_ms(samples["as_of"])
        found["build_context"] = {
            "now": now,
            "as_of": then,
            "p50_ratio": round(then["p50_ms"] / now["p50_ms"], 2),
        }
    return found


def main() -> int:
    return run_as_of(__doc__, "context_as_of", 10, measure, print_blocks)


def print_blocks(results: dict[str, Any]) -> None:
    found = results["build_context"]
    for which in ("now", "as_of"):
        print(
            f"build_context {which}: " + ", ".join(f"{k} {v:.1f}" for k, v in found[which].items())
        )
    print(f"  as_of / now: p50 ×{found['p50_ratio']}")


if __name__ == "__main__":
    raise SystemExit(main())
