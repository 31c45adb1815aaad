"""The language-server benchmark: completion, hover, definition and diagnostics latency,
start-up, and memory of ``python -m lsp_memory serve``, timed through a JSON-RPC client over
the server's stdin and stdout; and obsidian.nvim's ripgrep search for ``[[`` on the same vault.

    python benchmarks/server.py [--claims 100000] [--notes 10000] [--samples 300]
                                [--spawns 10] [--cache DIR] [--json] [--seed 7]
                                [--skip SUITE ...] [--only SUITE ...]

The parts, each a module beside this one:

- ``server_corpus.py``: the corpus (the search benchmark's), built once or kept in ``--cache``.
- ``lspclient.py``: the JSON-RPC client over the server's stdin and stdout.
- ``server_inputs.py``: the documents and every request's input, drawn from the seed.
- ``server_suites.py``: start-up, latency, diagnostics and memory, while embedding.
- ``server_ripgrep.py``: obsidian.nvim's ripgrep search for ``[[``.
- ``server_probe.py``: the cycle collector and the background thread.
- ``server_concurrent.py``: completion and hover while a slow request runs.
- ``server_report.py``: the table or the JSON object.

The suites run in this order: ``startup``, ``main`` (latency, diagnostics, memory), ``rg``,
``embedding``, ``probe``, ``concurrent``. ``--skip`` leaves some out; ``--only`` runs just
those named (``rg`` and ``embedding`` compare with ``main``'s cases, so they need it).

Results are printed as a table (each figure beside its target) or as one JSON object.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from foundation import machine, percentiles
from lspclient import vs_code_capabilities
from server_concurrent import concurrent
from server_corpus import Prepared, prepare
from server_inputs import WARMUP, make_inputs
from server_probe import probe
from server_report import print_table, strip_samples
from server_ripgrep import ripgrep
from server_suites import (
    CAPPED_RUNS,
    CASE_CAP_S,
    SIDE_PASS_SAMPLES,
    Bench,
    main_server,
    startup,
    while_embedding,
)

SUITES = ("startup", "main", "rg", "embedding", "probe", "concurrent")


def code_version() -> dict[str, Any]:
    """The commit measured, and the files of the package changed since it (others edit it
    while benchmarks run)."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
        return done.stdout.strip()

    changed = git("status", "--porcelain", "--", "lsp_memory").splitlines()
    return {"commit": git("rev-parse", "--short", "HEAD"), "package_changes": changed}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--claims", type=int, default=100_000)
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=300, help="timed requests per case")
    parser.add_argument("--spawns", type=int, default=10, help="fresh processes per trigger")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--raw", action="store_true", help="with --json: every request's time")
    parser.add_argument("--seed", type=int, default=7)
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
    facts = machine()
    if args.cache is not None:
        args.cache.mkdir(parents=True, exist_ok=True)
        base = args.cache.resolve()
    else:
        base = Path(tempfile.mkdtemp(prefix="lsp-memory-server-"))
    key = hashlib.sha1(f"{args.claims}-{args.notes}-{args.seed}".encode()).hexdigest()[:8]
    work = Path(tempfile.mkdtemp(prefix="run-", dir=base))
    try:
        started = time.perf_counter()
        prepared = prepare(base / f"corpus-{key}", args.claims, args.notes, args.seed)
        prepare_s = time.perf_counter() - started
        report = run(args, suites, prepared, work, facts)
        report["prepare_s"] = prepare_s
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if args.cache is None:
            shutil.rmtree(base, ignore_errors=True)
    report["total_s"] = time.perf_counter() - began
    report["load_average_at_end"] = machine()["load_average_at_start"]
    report["peak_rss_mib_harness"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if args.json:
        print(
            json.dumps(report if args.raw else strip_samples(report), indent=2, ensure_ascii=False)
        )
    else:
        print_table(report)
    return 0


def run(
    args: argparse.Namespace,
    suites: Sequence[str],
    prepared: Prepared,
    work: Path,
    facts: dict[str, Any],
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
    report: dict[str, Any] = {
        "benchmark": "server",
        "machine": facts,
        "parameters": {
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
        },
        "code": code_version(),
        "corpus_reused": prepared.reused,
        "build": prepared.build,
    }
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
            row["idle_same_inputs"] = percentiles(
                [s / 1000 for s in idle["samples_ms"][: row["runs"]]]
            )
        report["while_embedding"] = embedding
    if "probe" in suites:
        report["probe"] = probe(bench, min(args.samples, SIDE_PASS_SAMPLES))
    if "concurrent" in suites:
        report["concurrent"] = concurrent(bench, args.samples)
    return report


if __name__ == "__main__":
    sys.exit(main())
