"""MCP ``search_memory`` as of a date against now, on the server corpus (100 000 claims).

    .venv/bin/python -m benchmarks.search_as_of --work DIR [--queries 200] [--as-of DATE]
        [--json]

1. ``--work`` is a copy of the server corpus (``benchmarks/server_corpus.py``: 100 000 claims
   created over 2023–2025, 2 000 contexts, 5 000 entities, 10 000 notes, 117 000 embedded
   documents) — never the shared one: this benchmark writes into it. The first time, it gives
   the memory a history to undo: one consolidation run on 2026-01-15 that lowers the
   confidence of every claim (200 000 recorded changes, as a decay of all of them writes),
   and 2 000 single writes on 2026-02-01 (1 000 retracted, 1 000 pinned), all through the
   store's own writes (the search indexes are told nothing changed: the texts did not).
2. ``lsp-memory mcp`` is spawned by the SDK's own client over stdio and asked once to warm
   up; then each of ``--queries`` queries (the extraction set's words, as
   ``benchmarks/search_memory.py`` makes them) is asked with and without ``as_of``, the two
   alternating (which goes first flips each query, so a load change hits both), for
   ``search_type`` ``facts`` and ``all``, each timed at the client from request to answer;
   p50/p90/p99 (``benchmarks.common.percentile``) and the ratio of the medians.

Target (issue 26): with ``as_of`` within 2× of without.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, emit, latency_ms, mcp_session, start_report
from benchmarks.consolidate import environment
from benchmarks.search_memory import queries
from benchmarks.server_corpus import USER
from lsp_memory.app import App
from lsp_memory.config import Config
from lsp_memory.model import ClaimStatus
from lsp_memory.store.sqlite import FieldChange

RUN_AT = "2026-01-15T00:00:00.000000Z"
WRITES_AT = "2026-02-01T00:00:00.000000Z"
WRITES = 1000


def give_history(work: Path) -> dict[str, Any]:
    """The run and the single writes of the module's docstring, unless the store has them."""
    config = replace(
        Config(), store=work / "store", cache=work / "xdg" / "cache" / "lsp-memory", user=USER
    )
    app = App(config)
    try:
        store = app.store
        if store.last_run(USER) is not None:
            return {"history": "kept"}
        started = time.perf_counter()
        rows = store._db.execute(
            "SELECT id, claim_id, confidence, decayed_at FROM claims WHERE user = ? ORDER BY id",
            (USER,),
        ).fetchall()
        changes = []
        for row, _, confidence, decayed in rows:
            changes.append(
                FieldChange(row, "confidence", confidence, round(confidence * 0.9, 4), "decay")
            )
            changes.append(FieldChange(row, "decayed_at", decayed, RUN_AT, "decay"))
        store.record_run(
            USER, kind="consolidate", now=RUN_AT, created_at=RUN_AT, changes=changes, indexed=()
        )
        live = [claim_id for _, claim_id, *_ in rows[: 4 * WRITES]]
        for claim_id in live[:WRITES]:
            store.set_status(USER, claim_id, ClaimStatus.RETRACTED, WRITES_AT)
        for claim_id in live[WRITES : 2 * WRITES]:
            store.set_pinned(USER, claim_id, True, WRITES_AT)
        return {
            "history_s": round(time.perf_counter() - started, 1),
            "run_changes": len(changes),
            "single_writes": 2 * WRITES,
        }
    finally:
        app.close()


async def measure(env: dict[str, str], asked: list[str], as_of: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    async with mcp_session(env) as session:
        started = time.perf_counter()
        await session.call_tool("search_memory", {"query": "warm up"})
        await session.call_tool("search_memory", {"query": "warm up", "as_of": as_of})
        found["first_answers_s"] = round(time.perf_counter() - started, 2)
        for search_type in ("facts", "all"):
            calls = [{"query": query, "search_type": search_type} for query in asked]
            samples, answers = await paired(session, "search_memory", calls, as_of)
            hits = {
                which: sum(len(a["results"]) for a in found) for which, found in answers.items()
            }
            now, then = latency_ms(samples["now"]), latency_ms(samples["as_of"])
            found[search_type] = {
                "now": now,
                "as_of": then,
                "p50_ratio": round(then["p50_ms"] / now["p50_ms"], 2),
                "p99_ratio": round(then["p99_ms"] / now["p99_ms"], 2),
                "hits": hits,
            }
    return found


async def paired(
    session: Any, tool: str, calls: list[dict[str, Any]], as_of: str
) -> tuple[dict[str, list[float]], dict[str, list[dict[str, Any]]]]:
    """Each of ``calls`` (the tool's arguments) made without and with ``as_of``, which goes
    first flipping each call (so a load change hits both): the seconds each took at the
    client and the structured answers, by ``now`` and ``as_of``."""
    samples: dict[str, list[float]] = {"now": [], "as_of": []}
    answers: dict[str, list[dict[str, Any]]] = {"now": [], "as_of": []}
    for n, call in enumerate(calls):
        for which in ("now", "as_of") if n % 2 == 0 else ("as_of", "now"):
            given = {**call, **({"as_of": as_of} if which == "as_of" else {})}
            began = time.perf_counter()
            result = await session.call_tool(tool, given)
            samples[which].append(time.perf_counter() - began)
            assert not result.is_error, result.content
            answers[which].append(result.structured_content or {})
    return samples, answers


def main() -> int:
    return run_as_of(__doc__, "search_as_of", 200, measure, print_searches)


def run_as_of(
    doc: str | None,
    name: str,
    count: int,
    measure: Callable[[dict[str, str], list[str], str], Coroutine[Any, Any, dict[str, Any]]],
    table: Callable[[dict[str, Any]], None],
) -> int:
    """An as-of benchmark's run: its arguments, the history given to the copy of the corpus,
    ``measure`` over ``--queries`` queries (``count`` by default), the report."""
    parser = arguments(doc, seed=True, queries=count)
    parser.add_argument("--work", type=Path, required=True, help="a copy of the server corpus")
    parser.add_argument("--as-of", default="2024-06-30", help="the date asked (default mid-2024)")
    args = parser.parse_args()
    began = time.perf_counter()
    results = start_report(name, parameters={**vars(args), "work": str(args.work)})
    results["build"] = give_history(args.work)
    asked = queries(args.queries, args.seed)
    results.update(asyncio.run(measure(environment(args.work), asked, args.as_of)))
    emit(results, as_json=args.json, table=table, began=began)
    return 0


def print_searches(results: dict[str, Any]) -> None:
    lines = []
    for name in ("facts", "all"):
        found = results[name]
        lines += [
            f"search_memory {name} {which}: "
            + ", ".join(f"{k} {v:.1f}" for k, v in found[which].items())
            for which in ("now", "as_of")
        ]
        lines.append(f"  as_of / now: p50 ×{found['p50_ratio']}, p99 ×{found['p99_ratio']}")
    print("\n".join(lines))


if __name__ == "__main__":
    raise SystemExit(main())
