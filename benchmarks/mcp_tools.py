"""The MCP toolset's latency on the server benchmark's corpus (100 000 claims, 2 000
contexts, 10 000 notes): ``list_memories`` with each filter, ``get_memory``,
``recent_activity``, ``read_note`` and the ``memory://claim`` resource, each called through
the official SDK's client over ``lsp-memory mcp``'s stdio, after warm-up calls.

    .venv/bin/python -m benchmarks.mcp_tools [--claims 100000] [--notes 10000]
        [--samples 100] [--cache DIR] [--json] [--seed 7]

``--cache`` is the folder the server benchmark keeps its corpus in (built there when
missing); the tools only read it. Percentiles are ``benchmarks.common.percentile``'s, of the
time from sending a call to its answer.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client

from benchmarks.common import arguments, emit, latency_ms, start_report, workspace
from benchmarks.server_corpus import prepare_in

WARMUP = 5
Plan = dict[str, list[tuple[str, dict[str, Any]]]]
"""Each case's name and its calls: (a tool's name or a resource's URI, arguments)."""


def cases(rng: random.Random, claims: dict[str, Any], paths: list[str], count: int) -> Plan:
    """Each case's name and the calls it makes: (tool or resource URI, arguments)."""
    contexts = claims["context_fids"]
    total = len(claims["claim_fids"])
    return {
        "list_memories": [("list_memories", {})] * count,
        "list_memories type": [("list_memories", {"type": "preference"})] * count,
        "list_memories context": [
            ("list_memories", {"context": rng.choice(contexts)}) for _ in range(count)
        ],
        "list_memories since 30d": [("list_memories", {"since": "30d"})] * count,
        "list_memories all 200": [("list_memories", {"status": "all", "limit": 200})] * count,
        "get_memory": [
            ("get_memory", {"reference": f"#{rng.randint(1, total)}"}) for _ in range(count)
        ],
        "recent_activity 30d": [("recent_activity", {"timeframe": "30d"})] * count,
        "read_note": [("read_note", {"path": rng.choice(paths)}) for _ in range(count)],
        "resource memory://claim": [
            (f"memory://claim/{rng.randint(1, total)}", {}) for _ in range(count)
        ],
    }


async def measure(params: StdioServerParameters, plan: Plan, errlog: Path) -> dict[str, Any]:
    """Run every case's calls in one session; each case's latency."""
    found: dict[str, Any] = {}
    with errlog.open("w") as errors:
        async with (
            stdio_client(params, errlog=errors) as (read, write),
            ClientSession(read, write) as session,
        ):
            started = time.perf_counter()
            await session.initialize()
            await session.call_tool("list_memories", {"limit": 1})
            found["first_call_s"] = time.perf_counter() - started
            for name, calls in plan.items():
                for target, arguments_ in calls[:WARMUP]:
                    await _call(session, target, arguments_)
                timings, sizes = [], []
                for target, arguments_ in calls:
                    began = time.perf_counter()
                    size = await _call(session, target, arguments_)
                    timings.append(time.perf_counter() - began)
                    sizes.append(size)
                found[name] = {**latency_ms(timings), "results_mean": sum(sizes) / len(sizes)}
    return found


async def _call(session: ClientSession, target: str, arguments_: dict[str, Any]) -> int:
    """One call; how many records it gave (1 for a note or a resource)."""
    if target.startswith("memory://"):
        await session.read_resource(target)
        return 1
    result = await session.call_tool(target, arguments_)
    if result.is_error:
        raise SystemExit(f"{target} {arguments_}: {result.content}")
    content = result.structured_content or {}
    return len(content.get("memories", [])) + len(content.get("notes", [])) or 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__, seed=True, claims=100_000, notes=10_000, samples=100)
    parser.add_argument("--cache", type=Path, help="the server benchmark's corpus folder")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    report = start_report("mcp_tools", parameters=vars(args) | {"cache": str(args.cache)})
    with workspace("mcp-tools", args.cache, fresh=False) as base:
        prepared = prepare_in(base, args.claims, args.notes, args.seed)
        rng = random.Random(args.seed)
        plan = cases(rng, prepared.claims, prepared.paths, args.samples)
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "lsp_memory", "--vault", str(prepared.vault), "mcp"],
            env=prepared.env(),
        )
        report["results"] = asyncio.run(measure(params, plan, base / "mcp-tools.log"))
    emit(report, as_json=args.json, table=print_table, began=began)
    return 0


def print_table(report: dict[str, Any]) -> None:
    results = report["results"]
    print(f"first call (start, scan, open): {results['first_call_s']:.2f} s")
    print(f"{'case':28} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'results':>8}")
    for name, figures in results.items():
        if name == "first_call_s":
            continue
        print(
            f"{name:28} {figures['p50_ms']:8.1f} {figures['p90_ms']:8.1f} "
            f"{figures['p99_ms']:8.1f} {figures['results_mean']:8.1f}"
        )


if __name__ == "__main__":
    sys.exit(main())
