"""The MCP server's ``search_memory`` on a large memory: 100 000 claims + 100 000 episodes.

    .venv/bin/python -m benchmarks.search_memory [--cache DIR] [--work DIR]
        [--episodes 100000] [--queries 200] [--json]

1. The claims are the consolidation benchmark's embedded base (``benchmarks.consolidate``:
   the server corpus's 100 000 claims, embedded for real; built once in ``--cache``, about
   17 minutes, then reused).
2. A copy of it gains ``--episodes`` messages (half user, half assistant, in sessions of 20),
   written through the store's own ``add_episodes``, and indexed by the project's indexer
   (``IndexKeeper.index``). Their vectors: 256 messages embedded for real, the rest noisy copies
   of those (the exact vector search costs the same whatever the vectors say; embedding 100k
   messages for real would take another 20 minutes and measure the model, not the search).
   Then a new process rebuilds the vector file from the cache, and the benchmark stops unless
   its index holds every embedded document.
3. ``lsp-memory mcp`` is spawned by the SDK's own client over stdio, asked once to warm up,
   then ``--queries`` ``search_memory`` calls per ``search_type`` (``all``, ``episodes``,
   ``facts``), each timed at the client from request to answer; p50/p90/p99
   (``benchmarks.common.percentile``), and the server's CPU time per call (``/proc``).
4. With ``--in-process``, the same searches in this process instead (``App.search_records``
   with ``search_memory``'s options, the model in a helper as the server has it; after
   ``WARM_SEARCHES`` others): the CPU time of each (``time.process_time``), whose
   percentiles the machine's load changes far less than it changes the wall time's.

Targets: p99 ≤ 50 ms on 100k claims + 100k episodes (issue: conversations); ≤ 20 ms at
207k documents (issue 24).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    arguments,
    emit,
    extraction_rows,
    latency_ms,
    mcp_session,
    noisy_copies,
    start_report,
    store_vectors,
    workspace,
)
from benchmarks.consolidate import embedded_base, environment
from benchmarks.server_corpus import USER
from lsp_memory.app import App
from lsp_memory.config import Config
from lsp_memory.services.retrieval.documents import embed_text
from lsp_memory.store.sqlite import Episode
from lsp_memory.store.vectors import content_hash

REAL = 256
NOISE = 0.05
TOPICS = (
    "Lyon", "Berlin", "the garden", "my sister", "the marathon", "Rust", "sourdough", "the move",
    "my knee", "the budget", "piano lessons", "the conference", "our dog", "the flat", "Oslo",
)  # fmt: skip


def messages(count: int, seed: int) -> list[Episode]:
    """``count`` episodes: the extraction set's messages, each with a topic and a number so
    that no two texts are the same."""
    rows = extraction_rows()
    rng = random.Random(seed)
    made = []
    for n in range(count):
        row = rng.choice(rows)
        role = "user" if n % 2 == 0 else "assistant"
        text = row["userMessage"] if role == "user" else row.get("assistantResponse") or "OK."
        text = f"{text} (about {rng.choice(TOPICS)}, note {n})"
        when = f"2025-{1 + n // 9000 % 12:02d}-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:00Z"
        made.append(Episode(f"bench-{n}", USER, f"session-{n // 20}", role, text, when, when))
    return made


def add_episodes(work: Path, count: int, seed: int) -> dict[str, Any]:
    """Store, index and give vectors to ``count`` episodes in the store at ``work``."""
    config = replace(
        Config(),
        store=work / "store",
        cache=work / "xdg" / "cache" / "lsp-memory",  # where ``environment`` puts it
        user=USER,
        vaults=(),
    )
    app = App(config)
    try:
        started = time.perf_counter()
        app.store.add_episodes(messages(count, seed))
        stored = time.perf_counter() - started
        started = time.perf_counter()
        report = app.keeper.index(embed=False)
        indexed = time.perf_counter() - started
        docs = [d for d in report.text.docs if d.kind == "episode"]
        side = app.vectors
        if side is None:
            raise SystemExit(f"the embedding model cannot be loaded: {app.warnings}")
        started = time.perf_counter()
        rng = np.random.default_rng(seed)
        sample = rng.choice(len(docs), size=min(REAL, len(docs)), replace=False)
        real = side.embedder.embed([embed_text(docs[i]) for i in sample])
        matrix = noisy_copies(real, len(docs), rng, NOISE)
        matrix[sample] = real
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        store_vectors(side, docs, [content_hash(embed_text(d)) for d in docs], matrix)
        vector_file = side.file
    finally:
        app.close()
    # Those vectors went into the cache and the queue behind this process's vector index:
    # a vector file it wrote now would be stamped current without them (the run of 2026-11-26
    # searched 107 099 documents, not 207 099). A new process without the file reads every
    # cached vector, the episodes' and (once drained) the claims', and writes it anew.
    if vector_file is not None:
        vector_file.unlink(missing_ok=True)
    app = App(config)
    try:
        app.keeper.index()
        vectors = time.perf_counter() - started
        status = app.status()
        searched = len(app.vectors.index) if app.vectors is not None else 0
        if searched != status["index"]["embedded"]:
            raise SystemExit(
                f"the vector index holds {searched} documents of {status['index']['embedded']}"
            )
        return {
            "episodes": len(docs),
            "store_s": round(stored, 1),
            "index_s": round(indexed, 1),
            "vectors_s": round(vectors, 1),
            "vector_index": searched,
            "status": status,
        }
    finally:
        app.close()


def queries(count: int, seed: int) -> list[str]:
    rows = extraction_rows()
    rng = random.Random(seed + 1)
    words = [w.strip(".,!?") for row in rows for w in row["userMessage"].split() if len(w) > 3]
    asked = []
    for _ in range(count):
        asked.append(" ".join(rng.sample(words, rng.randint(2, 5))))
    return asked


async def measure(env: dict[str, str], asked: list[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    async with mcp_session(env) as session:
        started = time.perf_counter()
        await session.call_tool("search_memory", {"query": "warm up"})
        found["first_answer_s"] = round(time.perf_counter() - started, 2)
        server = server_pid()
        for search_type in ("all", "episodes", "facts"):
            samples = []
            spent = cpu_seconds(server)
            for query in asked:
                began = time.perf_counter()
                result = await session.call_tool(
                    "search_memory", {"query": query, "search_type": search_type}
                )
                samples.append(time.perf_counter() - began)
                assert not result.is_error, result.content
            found[search_type] = latency_ms(samples)
            if server is not None:
                used = cpu_seconds(server) - spent
                found[search_type]["server_cpu_ms_per_call"] = round(1000 * used / len(asked), 1)
    return found


WARM_SEARCHES = 20
"""Searches ``--in-process`` makes before it measures: a long-lived process's first ones
copy the int8 rows and hash the vector file's ids (``store.vectors``), once."""


def in_process(work: Path, asked: list[str]) -> dict[str, Any]:
    """``asked`` searched in this process, as ``search_memory`` searches (its scopes, statuses,
    limit, near-duplicates and floor; the index refreshed first): per ``search_type``, the
    percentiles of each search's wall and CPU time (``time.process_time``: this process's
    threads, not the embedding helper's)."""
    from lsp_memory.mcp.server import SEARCH_TYPES
    from lsp_memory.services.retrieval.search import SCOPES, SHOWN_STATUSES

    config = replace(
        Config(),
        store=work / "store",
        cache=work / "xdg" / "cache" / "lsp-memory",
        user=USER,
        vaults=(),
    )
    app = App(config)
    app.load_model_ahead(helper=True)

    def search(query: str, search_type: str) -> None:
        app.refresh_indexes()
        app.search_records(
            query,
            kinds=SCOPES[SEARCH_TYPES[search_type]],
            statuses=SHOWN_STATUSES,
            k=5,
            diverse=True,
            min_similarity=app.config.min_similarity,
        )

    found: dict[str, Any] = {}
    try:
        for n in range(WARM_SEARCHES):
            search(f"warm up {n}", "all")
        for search_type in ("all", "episodes", "facts"):
            walls, cpus = [], []
            for query in asked:
                began, used = time.perf_counter(), time.process_time()
                search(query, search_type)
                cpus.append(time.process_time() - used)
                walls.append(time.perf_counter() - began)
            found[search_type] = latency_ms(walls)
            found[search_type]["cpu"] = latency_ms(cpus)
    finally:
        app.close()
    return found


def server_pid() -> int | None:
    """The ``lsp-memory mcp`` process this benchmark spawned (Linux: ``/proc``), or None."""
    for children in Path("/proc/self/task").glob("*/children"):
        for pid in children.read_text().split():
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"lsp_memory" in command and b"mcp" in command:
                return int(pid)
    return None


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of process ``pid`` so far (0 when unknown): its mean per call
    is the server's own cost, which the wall time mixes with the machine's other jobs."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = arguments(__doc__, seed=True, claims=100_000, queries=200)
    parser.add_argument("--cache", type=Path, help="keep the embedded claims here")
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument(
        "--work", type=Path, help="prepare the store here once and keep it (else a scratch one)"
    )
    parser.add_argument(
        "--in-process", action="store_true", help="search in this process, not through MCP"
    )
    args = parser.parse_args()
    began = time.perf_counter()
    results = start_report("search_memory", parameters=vars(args))
    cache = args.cache or Path(tempfile.mkdtemp(prefix="lsp-memory-search-memory-"))
    base, _built = embedded_base(cache, cache / f"corpus-{args.claims}", args.claims, args.seed)
    with workspace("search-memory-run", args.work, fresh=False) as work:
        prepared = work / "episodes.json"
        if not prepared.exists():
            shutil.copytree(base, work, dirs_exist_ok=True)
            prepared.write_text(json.dumps(add_episodes(work, args.episodes, args.seed)))
        results["build"] = json.loads(prepared.read_text())
        asked = queries(args.queries, args.seed)
        if args.in_process:
            results.update(in_process(work, asked))
        else:
            results.update(asyncio.run(measure(environment(work), asked)))
    emit(results, as_json=args.json, table=print_searches, began=began)
    return 0


def print_searches(results: dict[str, Any]) -> None:
    for name in ("all", "episodes", "facts"):
        print(f"search_memory {name}: {results[name]}")
    if "first_answer_s" in results:
        print(f"first answer after initialize (vectors loaded): {results['first_answer_s']} s")


if __name__ == "__main__":
    raise SystemExit(main())
