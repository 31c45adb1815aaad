"""The language-server benchmark: completion, hover, definition and diagnostics latency,
start-up, and memory of ``python -m lsp_memory serve``, timed through a JSON-RPC client over
the server's stdin and stdout; and obsidian.nvim's ripgrep search for ``[[`` on the same vault.

    .venv/bin/python -m benchmarks.server [--claims 100000] [--notes 10000] [--samples 300]
        [--spawns 10] [--cache DIR] [--json] [--seed 7] [--skip SUITE ...] [--only SUITE ...]

The parts, each a module of this package:

- ``server_corpus``: the corpus (the search benchmark's), built once or kept in ``--cache``.
- ``lspclient``: the JSON-RPC client over the server's stdin and stdout.
- ``server_inputs``: the documents and every request's input, drawn from the seed.
- ``server_suites``: start-up, latency, diagnostics and memory, while embedding.
- ``server_ripgrep``: obsidian.nvim's ripgrep search for ``[[``.
- ``server_probe``: the cycle collector and the background thread.
- ``server_concurrent``: completion and hover while a slow request runs.
- ``server_helper``: memory of the server and its embedding helper, search by meaning warm
  and after the helper's idle stop.
- ``server_report``: the table or the JSON object.

Percentiles are ``benchmarks.common.percentile``'s.

The suites run in this order: ``startup``, ``main`` (latency, diagnostics, memory), ``rg``,
``embedding``, ``probe``, ``concurrent``, ``helper``. ``--skip`` leaves some out; ``--only``
runs just those named (``rg`` and ``embedding`` compare with ``main``'s cases, so they need it).

Results are printed as a table (each figure beside its target) or as one JSON object.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, emit, latency_ms, start_report, workspace
from benchmarks.lspclient import vs_code_capabilities
from benchmarks.server_concurrent import concurrent
from benchmarks.server_corpus import Prepared, prepare_in
from benchmarks.server_helper import helper_suite
from benchmarks.server_inputs import WARMUP, make_inputs
from benchmarks.server_probe import probe
from benchmarks.server_report import print_table, strip_samples
from benchmarks.server_ripgrep import ripgrep
from benchmarks.server_suites import (
    CAPPED_RUNS,
    CASE_CAP_S,
    SIDE_PASS_SAMPLES,
    Bench,
    main_server,
    startup,
    while_embedding,
)

SUITES = ("startup", "main", "rg", "embedding", "probe", "concurrent", "helper")


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__, seed=True, claims=100_000, notes=10_000, samples=300)
    parser.add_argument("--spawns", type=int, default=10, help="fresh processes per trigger")
    parser.add_argument("--raw", action="store_true", help="with --json: every request's time")
    parser.add_argument("--cache", type=Path, help="keep the corpus, store and indexes here")
    parser.add_argument("--skip", nargs="*", default=[], choices=SUITES, help="suites left out")
    parser.add_argument("--only", nargs="+", choices=SUITES, help="run just these suites")
    args = parser.parse_args(argv)
    if args.claims < 1000 or args.notes < 100 or args.samples < 10 or args.spawns < 1:
        parser.error("need --claims ≥ 1000, --notes ≥ 100, --samples ≥ 10, --spawns ≥ 1")
    suites = [s for s in SUITES if s in (args.only or SUITES) and s not in args.skip]
    if "main" not in suites and {"rg", "embedding"} & set(suites):
        parser.error("rg and embedding are compared with the main server's cases: run main too")

    began = time.perf_counter()
    report = start_report("server", parameters=parameters(args, suites))
    with workspace("server", args.cache, fresh=False) as base:
        work = Path(tempfile.mkdtemp(prefix="run-", dir=base))
        try:
            started = time.perf_counter()
            prepared = prepare_in(base, args.claims, args.notes, args.seed)
            report["prepare_s"] = time.perf_counter() - started
            report.update(run(args, suites, prepared, work))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if not args.raw:
        report = strip_samples(report)
    emit(report, as_json=args.json, table=print_table, began=began)
    return 0


def parameters(args: argparse.Namespace, suites: Sequence[str]) -> dict[str, Any]:
    return {
        "claims": args.claims,
        "notes": args.notes,
        "samples": args.samples,
        "spawns_per_trigger": args.spawns,
        "seed": args.seed,
        "warmup": WARMUP,
        "case_cap_s": CASE_CAP_S,
        "capped_runs": CAPPED_RUNS,
        "client": "hand-written JSON-RPC over pipes, VS Code capabilities",
        "suites": list(suites),
    }


def run(
    args: argparse.Namespace, suites: Sequence[str], prepared: Prepared, work: Path
) -> dict[str, Any]:
    rng = random.Random(args.seed + 1)
    inputs = make_inputs(rng, prepared, args.samples)
    bench = Bench(prepared, vs_code_capabilities(), inputs, work, rng, args.seed)
    start: dict[str, Any] | None = None
    startup_s = 0.0
    if "startup" in suites:
        started = time.perf_counter()
        start = startup(bench, args.spawns)
        startup_s = time.perf_counter() - started
    main_run = main_server(bench, args.samples) if "main" in suites else None
    report: dict[str, Any] = {"corpus_reused": prepared.reused, "build": prepared.build}
    if start is not None:
        report["startup"] = start
        report["startup_s"] = startup_s
    if main_run is not None:
        report["main"] = main_run
    if "rg" in suites and main_run is not None:
        report["ripgrep"] = ripgrep(prepared, main_run["latency"])
    if "embedding" in suites and main_run is not None:
        embedding = while_embedding(bench, min(args.samples, SIDE_PASS_SAMPLES))
        for key, row in embedding["cases"].items():
            idle = main_run["latency"].get(key) or main_run["diagnostics"]["did_open"]
            row["idle_same_inputs"] = latency_ms(
                [s / 1000 for s in idle["samples_ms"][: row["runs"]]]
            )
        report["while_embedding"] = embedding
    if "probe" in suites:
        report["probe"] = probe(bench, min(args.samples, SIDE_PASS_SAMPLES))
    if "concurrent" in suites:
        report["concurrent"] = concurrent(bench, args.samples)
    if "helper" in suites:
        report["helper"] = helper_suite(bench, min(args.samples, SIDE_PASS_SAMPLES))
    return report


if __name__ == "__main__":
    sys.exit(main())
