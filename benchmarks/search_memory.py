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
3. ``lsp-memory mcp`` is spawned by the SDK's own client over stdio, asked once to warm up,
   then ``--queries`` ``search_memory`` calls per ``search_type`` (``all``, ``episodes``,
   ``facts``), each timed at the client from request to answer; p50/p90/p99
   (``benchmarks.common.percentile``).

Target (issue: conversations): p99 ≤ 50 ms on 100k claims + 100k episodes.
"""

from __future__ import annotations

import asyncio
import json
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
        app.keeper.index()  # the claims' vectors back from the cache into a rebuilt index
        vectors = time.perf_counter() - started
        return {
            "episodes": len(docs),
            "store_s": round(stored, 1),
            "index_s": round(indexed, 1),
            "vectors_s": round(vectors, 1),
            "status": app.status(),
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
        for search_type in ("all", "episodes", "facts"):
            samples = []
            for query in asked:
                began = time.perf_counter()
                result = await session.call_tool(
                    "search_memory", {"query": query, "search_type": search_type}
                )
                samples.append(time.perf_counter() - began)
                assert not result.is_error, result.content
            found[search_type] = latency_ms(samples)
    return found


def main() -> int:
    parser = arguments(__doc__, seed=True, claims=100_000, queries=200)
    parser.add_argument("--cache", type=Path, help="keep the embedded claims here")
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument(
        "--work", type=Path, help="prepare the store here once and keep it (else a scratch one)"
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
        results.update(asyncio.run(measure(environment(work), asked)))
    emit(results, as_json=args.json, table=print_searches, began=began)
    return 0


def print_searches(results: dict[str, Any]) -> None:
    for name in ("all", "episodes", "facts"):
        print(f"search_memory {name}: {results[name]}")
    print(f"first answer after initialize (vectors loaded): {results['first_answer_s']} s")


if __name__ == "__main__":
    raise SystemExit(main())
