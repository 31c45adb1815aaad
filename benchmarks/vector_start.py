"""What the vectors cost a new process on the 100k-claim corpus: ``lsp-memory search`` as a
whole CLI process, and the time and resident memory of opening the vector side.

    python -m benchmarks.vector_start --cache DIR [--runs 7] [--json]

``DIR`` holds the server benchmark's corpus (``benchmarks/server_corpus.py``: 100 000
claims, 10 000 notes, 117k embedded documents; built there on first use, ~25 minutes of
embedding). Measured, each in fresh processes, the indexes already built:

1. ``lsp-memory search QUERY`` (``benchmarks.context.SEARCHES``), ``--runs`` processes after
   one untimed: median, min, max in seconds.
2. ``--runs`` fresh processes that open the app, then its vector side (the model, then the
   vectors), then run 5 dense searches: seconds to open the side, VmRSS (and RssAnon,
   RssFile) before it, after it and after the searches, in MiB; medians.
3. One process: 300 queries (stored vectors of random documents plus noise), after 20 warm-up
   searches, through ``VectorIndex.search`` (top 10 of the user; and of active claims), and
   ``similarity`` of 20 random documents each: p50/p99 in ms
   (``benchmarks.common.latency_ms``); VmRSS at the end.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, emit, lsp_memory_command, proc_status, start_report
from benchmarks.context import SEARCHES
from benchmarks.server_corpus import Prepared, prepare_in

CHILD = """
import json, sys, time
from benchmarks.common import proc_status
from lsp_memory.app import App
from lsp_memory.config import load_config
app = App(load_config()[0])
app.store
steps = {"before": proc_status()}
started = time.perf_counter()
side = app.vectors
steps["open_s"] = time.perf_counter() - started
steps["vectors"] = proc_status()
vectors = side.embedder.embed(sys.argv[1:])
started = time.perf_counter()
for vector in vectors:
    side.index.search(vector, k=10, user=app.config.user)
steps["search_s"] = (time.perf_counter() - started) / len(vectors)
steps["searched"] = proc_status()
steps["documents"] = len(side.index)
print(json.dumps(steps))
"""


SEARCHES_CHILD = """
import json, numpy as np, time
from benchmarks.common import latency_ms, proc_status
from lsp_memory.app import App
from lsp_memory.config import load_config
app = App(load_config()[0])
side = app.vectors
user = app.config.user
rng = np.random.default_rng(7)
ids = [row[0] for row in side.catalog.embedded()]
picked = side.index.vectors([ids[i] for i in rng.integers(0, len(ids), 300)])
queries = [v + rng.normal(0, 0.04, v.shape).astype(np.float32) for v in picked.values()]
for query in queries[:20]:
    side.index.search(query, k=10, user=user)
found = {}
for name, options in (("all", {}), ("active_claims", {"kinds": ["claim"], "statuses": ["active"]})):
    samples = []
    for query in queries:
        started = time.perf_counter()
        side.index.search(query, k=10, user=user, **options)
        samples.append(time.perf_counter() - started)
    found[name] = latency_ms(samples)
samples = []
for query in queries:
    some = [ids[i] for i in rng.integers(0, len(ids), 20)]
    started = time.perf_counter()
    side.index.similarity(some, query)
    samples.append(time.perf_counter() - started)
found["similarity_20"] = latency_ms(samples)
found["memory"] = proc_status()
print(json.dumps(found))
"""


def searches(prepared: Prepared) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", SEARCHES_CHILD],
        env=prepared.env(), check=True, capture_output=True, text=True,
    )  # fmt: skip
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def cli_search(prepared: Prepared, runs: int) -> dict[str, Any]:
    env = prepared.env()
    command = lsp_memory_command("--vault", str(prepared.vault))

    def timed(query: str) -> float:
        started = time.perf_counter()
        subprocess.run([*command, "search", query], env=env, check=True, capture_output=True)
        return time.perf_counter() - started

    first = timed(SEARCHES[-1])
    times = [timed(SEARCHES[n % len(SEARCHES)]) for n in range(runs)]
    return {
        "first_s": first,
        "runs": runs,
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
    }


def open_side(prepared: Prepared, runs: int) -> dict[str, Any]:
    env = prepared.env()
    found = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", CHILD, *SEARCHES[:5]],
            env=env, check=True, capture_output=True, text=True,
        )  # fmt: skip
        found.append(json.loads(done.stdout.strip().splitlines()[-1]))

    def median(path: tuple[str, ...]) -> float:
        values = []
        for steps in found:
            value: Any = steps
            for key in path:
                value = value[key]
            values.append(float(value))
        return statistics.median(values)

    memory = {
        step: {key: median((step, key)) for key in ("vmrss_mib", "rssanon_mib", "rssfile_mib")}
        for step in ("before", "vectors", "searched")
    }
    return {
        "runs": runs,
        "documents": found[0]["documents"],
        "open_s": median(("open_s",)),
        "search_ms": median(("search_s",)) * 1000,
        "memory_mib": memory,
        "vectors_added_mib": memory["vectors"]["vmrss_mib"] - memory["before"]["vmrss_mib"],
        "searched_added_mib": memory["searched"]["vmrss_mib"] - memory["before"]["vmrss_mib"],
    }


def main() -> int:
    parser = arguments(__doc__, seed=True, claims=100_000, notes=10_000, runs=7)
    parser.add_argument("--cache", type=Path, required=True, help="the corpus folder")
    args = parser.parse_args()
    started = time.perf_counter()
    report = start_report("vector_start", parameters={**vars(args), "cache": str(args.cache)})
    report["load_average_at_start"] = os.getloadavg()
    prepared = prepare_in(args.cache, args.claims, args.notes, args.seed)
    report["cli_search"] = cli_search(prepared, args.runs)
    report["open_side"] = open_side(prepared, args.runs)
    report["searches"] = searches(prepared)
    report["harness_memory"] = proc_status()
    emit(report, as_json=True, began=started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
