"""The embeddings benchmark: model load, embedding throughput, memory and exact vector search.

    .venv/bin/python -m benchmarks.embeddings [--sentences 2000] [--passages 500]
        [--vectors 110000] [--queries 1000] [--loads 5] [--rounds 1] [--seed 7] [--json]

A seeded generator writes English-like text from a fixed vocabulary: short sentences of 6–18
words (~12) and passages of 120–180 words (~150). Then:

1. **Load**: ``Embedder.load()`` of the default model (hash checks included), ``--loads``
   times; the first and the median.
2. **Throughput**: ``Embedder.embed`` of the sentences and of the passages with ``threads``
   1 and 2: batches from length-sorted texts, from texts in input order (both ≤ 32 texts and
   ≤ ``MAX_BATCH_TOKENS``), and sorted with no token cap (32 texts a batch); items/s after a
   one-batch warm-up, best of ``--rounds``.
3. **Memory**: a fresh process imports the module, loads the model, embeds the sentences,
   then the passages (threads 1 and 2); peak RSS (``ru_maxrss``, and ``VmHWM`` in the JSON)
   after each step. Run first, while this process is small.
4. **Cache**: ``VectorCache.put_many`` and ``get_many`` of the sentence vectors.
5. **Search**: a ``VectorIndex`` of ``--vectors`` random unit vectors of 384 numbers, 10/11 of
   one user (mixed kinds and statuses) and 1/11 of another; ``--queries`` queries of top-10
   per case; p50/p99 in ms (``benchmarks.common.percentile``), and the build rate.

Results are printed as a table or as one JSON object.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    ROOT,
    arguments,
    emit,
    latency_ms,
    peak_rss_mib,
    print_head,
    proc_status,
    start_report,
)
from lsp_memory.store.vectors import (
    MAX_BATCH_TOKENS,
    MAX_TOKENS,
    Embedder,
    VectorCache,
    VectorIndex,
    content_hash,
)

DIM = 384
BATCH = 32
K = 10
USER = "bench"
OTHER_USER = "other"
STEPS = ("import", "load", "sentences", "passages")
COUNTS = ("sentences", "passages", "vectors", "queries")

WORDS = (
    "the a an and or but of to in on at for with from by about after before during while "
    "memory note claim context entity project meeting server editor client language vector "
    "search index query result database migration schedule deadline report budget review "
    "team manager engineer customer design release version bug feature test build deploy "
    "Monday Tuesday Wednesday Thursday Friday morning afternoon evening week month year "
    "quickly slowly carefully finally usually never always often sometimes really "
    "important small large new old first last next previous simple complex local remote "
    "write read update delete move keep change fix ship plan decide agree remember forget "
    "Alice Bob Carol Dave Berlin Paris London Python Rust SQLite Neovim coffee weather dog "
    "garden train holiday birthday doctor dentist invoice tax contract lease apartment"
).split()


def sentence(rng: random.Random, low: int, high: int) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(low, high))]
    return " ".join(words).capitalize() + "."


def passage(rng: random.Random) -> str:
    target = rng.randint(120, 180)
    parts: list[str] = []
    count = 0
    while count < target:
        part = sentence(rng, 8, 20)
        parts.append(part)
        count += part.count(" ") + 1
    return " ".join(parts)


def bench_load(loads: int) -> dict[str, Any]:
    seconds = []
    for _ in range(loads):
        began = time.perf_counter()
        Embedder.load()
        seconds.append(time.perf_counter() - began)
    return {"first_s": seconds[0], "median_s": statistics.median(seconds), "loads": loads}


def bench_throughput(texts: Sequence[str], embedder: Embedder, rounds: int) -> dict[str, Any]:
    tokens = [len(embedding.ids) for embedding in embedder._encode(texts)]
    rows: dict[str, Any] = {"items": len(texts), "mean_tokens": statistics.fmean(tokens)}
    modes: dict[str, dict[str, Any]] = {
        "sorted": {"sort_by_length": True},
        "unsorted": {"sort_by_length": False},
        "sorted_uncapped": {"sort_by_length": True, "max_batch_tokens": BATCH * MAX_TOKENS},
    }
    for mode, options in modes.items():
        embedder.embed(texts[:BATCH], **options)  # warm-up
        best = float("inf")
        for _ in range(rounds):
            began = time.perf_counter()
            embedder.embed(texts, batch_size=BATCH, **options)
            best = min(best, time.perf_counter() - began)
        rows[mode] = {"seconds": best, "items_per_s": len(texts) / best}
    return rows


def rss_probe(threads: int, sentences: int, passages: int, seed: int) -> dict[str, Any]:
    """Run in a fresh process: peak RSS in MiB after import, load and embedding."""
    short = [sentence(random.Random(seed + i), 6, 18) for i in range(sentences)]
    rng = random.Random(seed)
    long = [passage(rng) for _ in range(passages)]
    result: dict[str, Any] = {}

    def mark(step: str) -> None:
        # VmHWM: the peak of this process image (unlike ru_maxrss, reset by exec).
        result[step] = {
            "ru_maxrss_mib": peak_rss_mib(),
            "vm_hwm_mib": proc_status().get("vmhwm_mib"),
        }

    mark("import")
    embedder = Embedder.load(threads=threads)
    mark("load")
    embedder.embed(short)
    mark("sentences")
    embedder.embed(long)
    mark("passages")
    return result


def bench_rss(sentences: int, passages: int, seed: int) -> dict[str, Any]:
    """Peak RSS of fresh processes; call it while this one is small, as a child's ru_maxrss
    starts from its parent's size at fork."""
    rows: dict[str, Any] = {}
    for threads in (1, 2):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.embeddings",
                "--rss-probe",
                str(threads),
                "--sentences",
                str(sentences),
                "--passages",
                str(passages),
                "--seed",
                str(seed),
            ],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        )
        rows[f"threads={threads}"] = json.loads(done.stdout)
    return rows


def bench_cache(embedder: Embedder, texts: Sequence[str]) -> dict[str, Any]:
    vectors = embedder.embed(texts)
    items = {content_hash(text): vector for text, vector in zip(texts, vectors, strict=True)}
    with tempfile.TemporaryDirectory(prefix="lsp-memory-bench-") as folder:
        with VectorCache(Path(folder) / "vectors.sqlite3") as cache:
            began = time.perf_counter()
            cache.put_many(embedder.model_id, items)
            put = time.perf_counter() - began
            began = time.perf_counter()
            found = cache.get_many(embedder.model_id, items)
            get = time.perf_counter() - began
            assert len(found) == len(items)
        size = (Path(folder) / "vectors.sqlite3").stat().st_size
    return {"items": len(items), "put_ms": put * 1000, "get_ms": get * 1000, "bytes": size}


def bench_search(total: int, queries: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    kinds = rng.choice(["claim", "note", "entity", "context"], total, p=[0.8, 0.1, 0.08, 0.02])
    statuses = rng.choice(["active", "superseded", "retracted"], total, p=[0.9, 0.07, 0.03])
    other_every = 11  # one row in 11 belongs to the other user
    index = VectorIndex(DIM)
    began = time.perf_counter()
    for row in range(total):
        vector = rng.standard_normal(DIM).astype(np.float32)
        user = OTHER_USER if row % other_every == 0 else USER
        index.upsert(f"doc{row}", user, str(kinds[row]), str(statuses[row]), vector)
    built = time.perf_counter() - began
    probes = rng.standard_normal((queries, DIM)).astype(np.float32)
    cases: dict[str, tuple[str, Collection[str] | None, Collection[str] | None]] = {
        f"user {USER} (~{total - total // other_every:,} rows)": (USER, None, None),
        f"user {USER}, claims, active": (USER, {"claim"}, {"active"}),
        f"user {OTHER_USER} (~{total // other_every:,} rows)": (OTHER_USER, None, None),
    }
    result: dict[str, Any] = {
        "vectors": total,
        "build_s": built,
        "upserts_per_s": total / built,
        "matrix_mib": index._matrix.nbytes / 2**20,
        "cases": {},
    }
    for name, (user, wanted_kinds, wanted_statuses) in cases.items():
        for probe in probes[:20]:  # warm-up
            index.search(probe, k=K, user=user, kinds=wanted_kinds, statuses=wanted_statuses)
        seconds = []
        for probe in probes:
            began = time.perf_counter()
            index.search(probe, k=K, user=user, kinds=wanted_kinds, statuses=wanted_statuses)
            seconds.append(time.perf_counter() - began)
        result["cases"][name] = latency_ms(seconds)
    return result


def print_table(report: dict[str, Any]) -> None:
    params = report["parameters"]
    counts = ", ".join(f"{params[name]:,} {name}" for name in COUNTS)
    print_head("lsp-memory embeddings benchmark", report, f"{counts}; seed {params['seed']}")
    print(
        f"\nmodel load: first {report['load']['first_s']:.3f} s, "
        f"median {report['load']['median_s']:.3f} s\n"
        f"\n{'throughput (items/s)':<40}{'sorted':>9}{'unsorted':>9}{'uncapped':>9}"
        f"   (batches ≤ {BATCH} texts, ≤ {MAX_BATCH_TOKENS} tokens; uncapped: ≤ {BATCH} only)"
    )
    for threads, sets in report["throughput"].items():
        for name, row in sets.items():
            label = f"{name} ×{row['items']} (~{row['mean_tokens']:.0f} tok), {threads}"
            speeds = "".join(
                f"{row[mode]['items_per_s']:>9.1f}"
                for mode in ("sorted", "unsorted", "sorted_uncapped")
            )
            print(f"{label:<40}{speeds}")
    print(f"\n{'peak RSS, MiB (ru_maxrss)':<28}{'import':>8}{'load':>8}{'+sent.':>8}{'+pass.':>8}")
    for threads, row in report["rss"].items():
        steps = "".join(f"{row[step]['ru_maxrss_mib']:>8.0f}" for step in STEPS)
        print(f"{threads:<28}{steps}")
    cache = report["cache"]
    print(
        f"\ncache: put {cache['items']} in {cache['put_ms']:.1f} ms, get in "
        f"{cache['get_ms']:.1f} ms, file {cache['bytes'] / 2**20:.1f} MiB"
    )
    search = report["search"]
    print(
        f"\nsearch: {search['vectors']:,} vectors, built at {search['upserts_per_s']:,.0f}"
        f" upserts/s, matrix {search['matrix_mib']:.0f} MiB; top-{K}, ms"
    )
    print(f"{'case':<38}{'p50':>8}{'p99':>8}{'max':>8}")
    for name, row in search["cases"].items():
        print(f"{name:<38}{row['p50_ms']:>8.2f}{row['p99_ms']:>8.2f}{row['max_ms']:>8.2f}")
    print(f"\ntotal {report['total_s']:.0f} s; load average at end {report['load_average_at_end']}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__, seed=True, queries=1000)
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--passages", type=int, default=500)
    parser.add_argument("--vectors", type=int, default=110_000)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1, help="embedding rounds; best kept")
    parser.add_argument("--rss-probe", type=int, metavar="THREADS", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_probe is not None:
        probe = rss_probe(args.rss_probe, args.sentences, args.passages, args.seed)
        print(json.dumps(probe))
        return 0
    if (
        min(args.sentences, args.passages, args.queries, args.loads, args.rounds) < 1
        or args.vectors < 11
    ):
        parser.error("counts must be positive, --vectors at least 11")

    began = time.perf_counter()
    sentences = [sentence(random.Random(args.seed + i), 6, 18) for i in range(args.sentences)]
    rng = random.Random(args.seed)
    passages = [passage(rng) for _ in range(args.passages)]
    names = ("sentences", "passages", "vectors", "queries", "loads", "rounds", "seed")
    report = start_report("embeddings", parameters={name: getattr(args, name) for name in names})
    report["rss"] = bench_rss(args.sentences, args.passages, args.seed)
    report["load"] = bench_load(args.loads)
    report["throughput"] = {}
    for threads in (1, 2):
        embedder = Embedder.load(threads=threads)
        report["throughput"][f"threads={threads}"] = {
            "sentences": bench_throughput(sentences, embedder, args.rounds),
            "passages": bench_throughput(passages, embedder, args.rounds),
        }
    report["cache"] = bench_cache(embedder, sentences)
    report["search"] = bench_search(args.vectors, args.queries, args.seed)
    emit(report, as_json=args.json, table=print_table, began=began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
