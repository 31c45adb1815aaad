"""``lsp-memory claim list``, now and as of a date, as whole processes at 100 000 claims.

    .venv/bin/python -m benchmarks.claim_list --work DIR [--as-of DATE] [--runs 5]
        [--tree DIR] [--json]

``--work`` is a copy of the server corpus given the as-of history, as
``benchmarks/search_as_of.py`` gives it (the first time: one consolidation run lowering
every claim's confidence, 2 000 single writes; never the shared corpus). Each listing below
runs ``--runs`` times, the listings taking turns, each timed from spawn to exit with its CPU
seconds (``wait4``); medians by ``statistics.median``. ``--tree`` runs the code of another
checkout (``git archive`` of an older commit), for a before/after pair.

- ``claim list``: all 100 000 lines;
- ``claim list --limit 20``;
- ``claim list --as-of DATE --limit 20``: the first 20 claims that existed then, as they were;
- ``claim list --as-of DATE``: every claim that existed then (about half at mid-2024);
- ``claim list --as-of DATE --json --limit 300``: whole records.

No target of its own: issue 24's "every command within 1 s at 100k claims" is the yardstick,
and a listing of 100 000 lines is as long as its output.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, emit, lsp_memory_command, start_report
from benchmarks.consolidate import environment
from benchmarks.context import run_timed, summary
from benchmarks.search_as_of import give_history


def listings(as_of: str) -> dict[str, list[str]]:
    return {
        "list": [],
        "list --limit 20": ["--limit", "20"],
        "as-of --limit 20": ["--as-of", as_of, "--limit", "20"],
        "as-of": ["--as-of", as_of],
        "as-of --json --limit 300": ["--as-of", as_of, "--json", "--limit", "300"],
    }


def main() -> int:
    parser = arguments(__doc__)
    parser.add_argument("--work", type=Path, required=True, help="a copy of the server corpus")
    parser.add_argument("--as-of", default="2024-06-30", help="the date asked (default mid-2024)")
    parser.add_argument("--runs", type=int, default=5, help="processes per listing")
    parser.add_argument("--tree", type=Path, help="run this checkout's lsp_memory")
    args = parser.parse_args()
    began = time.perf_counter()
    results = start_report(
        "claim_list",
        parameters={**vars(args), "work": str(args.work), "tree": str(args.tree or "")},
    )
    results["build"] = give_history(args.work)
    env = environment(args.work)
    command = lsp_memory_command("claim", "list")
    if args.tree is not None:  # -P: not this folder's lsp_memory (`-m` puts it first)
        env["PYTHONPATH"] = str(args.tree.resolve())
        command.insert(1, "-P")
    asked = listings(args.as_of)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in asked}
    for _ in range(args.runs):
        for name, extra in asked.items():
            runs[name].append(run_timed([*command, *extra], env))
    results["listings"] = {name: summary(found) for name, found in runs.items()}
    emit(results, as_json=args.json, table=print_listings, began=began)
    return 0


def print_listings(results: dict[str, Any]) -> None:
    for name, row in results["listings"].items():
        print(
            f"claim {name}: median {row['median_s']:.2f} s ({row['min_s']:.2f}–"
            f"{row['max_s']:.2f}), CPU {row['cpu_median_s']:.2f} s"
        )


if __name__ == "__main__":
    raise SystemExit(main())
