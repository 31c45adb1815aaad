"""What embedding in a helper process costs (issue 24), measured side by side with the model
in process, so the machine's load falls on both alike.

- **Blocks**: the context block of the build-context benchmark's prompts (5 references and
  prose, each edited so it is built, not given again), on the server corpus (100k claims +
  10k notes, 117k vectors), built in turns with the query embedded in this process
  (``Embedder``) and by the helper (``RemoteEmbedder``); the first ``WARMUP`` of each left out.
- **Queries**: one query's embedding alone, in turns the same way.
- **Cold**: ``--cold`` times, a fresh helper's first query: the spawn, the model load and the
  answer (what the first search after an idle stop waits for), and the helper's VmRSS and
  VmHWM once loaded and after a batch of 64 passages.

    .venv/bin/python -m benchmarks.embed_helper --cache DIR [--samples 100] [--cold 10] [--json]

Percentiles are ``benchmarks.common.percentile``'s.
"""

from __future__ import annotations

import random
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, emit, latency_ms, proc_status, start_report
from benchmarks.context import prompt
from benchmarks.server_corpus import USER, prepare_in
from lsp_memory.app import App
from lsp_memory.config import Config
from lsp_memory.store.embedhelper import RemoteEmbedder
from lsp_memory.store.vectors import Embedder, TextEmbedder

WARMUP = 5
PROMPTS = 40
QUERY = "which database does the billing service use"
PASSAGE = "A long passage about the project plan, its budget and the people in it. " * 12


def main() -> int:
    parser = arguments(__doc__, seed=True, claims=100_000, notes=10_000, samples=100)
    parser.add_argument("--cache", type=Path, required=True, help="the server corpus folder")
    parser.add_argument("--cold", type=int, default=10, help="fresh helpers timed")
    args = parser.parse_args()
    began = time.perf_counter()
    report = start_report("embed_helper", parameters=vars(args) | {"cache": str(args.cache)})
    prepared = prepare_in(args.cache, args.claims, args.notes, args.seed)
    config = replace(
        Config(),
        store=prepared.store,
        cache=prepared.xdg / "cache" / "lsp-memory",
        user=USER,
        vaults=(prepared.vault,),
    )
    app = App(config)
    side = app.vectors
    if side is None:
        raise SystemExit(f"no vectors: {app.warnings}")
    local, remote = Embedder.load(), RemoteEmbedder.start()
    rng = random.Random(args.seed)
    prompts = [prompt(rng, prepared) for _ in range(PROMPTS)]
    blocks: dict[str, list[float]] = {"process": [], "helper": []}
    queries: dict[str, list[float]] = {"process": [], "helper": []}
    ways: list[tuple[str, TextEmbedder]] = [("process", local), ("helper", remote)]
    for turn in range(args.samples + WARMUP):
        text = f"{prompts[turn % PROMPTS]} (edit {turn})"
        for name, embedder in ways if turn % 2 else ways[::-1]:
            side.embedder = embedder
            started = time.perf_counter()
            app.snapshot().assembler().build(text)
            block = time.perf_counter() - started
            started = time.perf_counter()
            embedder.embed([f"{QUERY} {turn}"])
            query = time.perf_counter() - started
            if turn >= WARMUP:
                blocks[name].append(block)
                queries[name].append(query)
    remote.close()
    report["vectors"] = len(side.index)
    report["blocks"] = {name: latency_ms(times) for name, times in blocks.items()}
    report["queries"] = {name: latency_ms(times) for name, times in queries.items()}
    report["cold"] = cold(args.cold)
    app.close()
    emit(report, as_json=args.json, table=print_report, began=began)
    return 0


def cold(runs: int) -> dict[str, Any]:
    """A fresh helper's first query, ``runs`` times, and its memory."""
    firsts: list[float] = []
    memory: dict[str, dict[str, float]] = {}
    for _ in range(runs):
        embedder = RemoteEmbedder()
        started = time.perf_counter()
        embedder.embed([QUERY])
        firsts.append(time.perf_counter() - started)
        if not memory and embedder.pid is not None:
            memory["loaded"] = proc_status(embedder.pid)
            embedder.embed([PASSAGE] * 64)
            memory["after_64_passages"] = proc_status(embedder.pid)
        embedder.close()
    return {"first_query": latency_ms(firsts), "runs": runs, "helper_memory": memory}


def print_report(report: dict[str, Any]) -> None:
    load = report["machine"].get("load_average_at_start")
    print(f"Embedding in a helper vs in process ({report['vectors']} vectors; load {load})")
    n = report["parameters"]["samples"]
    for what, label in (("blocks", "context block (build)"), ("queries", "one query embedded")):
        for name, row in report[what].items():
            print(
                f"  {label:24} {name:8} n={n}: p50 {row['p50_ms']:7.1f} ms  "
                f"p90 {row['p90_ms']:7.1f}  p99 {row['p99_ms']:7.1f}"
            )
    c = report["cold"]
    first = c["first_query"]
    print(
        f"  a fresh helper's first query, n={c['runs']}: p50 {first['p50_ms']:.0f} ms, "
        f"max {first['max_ms']:.0f} ms"
    )
    for step, row in c["helper_memory"].items():
        print(f"  helper {step}: VmRSS {row['vmrss_mib']:.0f} MiB, VmHWM {row['vmhwm_mib']:.0f}")
    print(f"total {report['total_s']:.0f} s; load average at end {report['load_average_at_end']}")


if __name__ == "__main__":
    sys.exit(main())
