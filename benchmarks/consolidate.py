"""Consolidation at scale: ``lsp-memory consolidate`` as a whole process on 100 000 claims.

    .venv/bin/python -m benchmarks.consolidate [--cache DIR] [--claims 100000] [--new 1000]
        [--json]

1. The corpus is the server benchmark's (``benchmarks.server_corpus``: 100 000 generated
   claims of nine types, seed 7), copied into a scratch store and embedded **for real**
   (``lsp-memory index``, the default model; the server corpus's own vectors are noisy copies
   of 256 real ones, which would make every claim a near-duplicate of hundreds). With
   ``--cache DIR`` the embedded store is kept and reused; building it takes minutes.
   The generated claims are taken as inferred from conversations (``origin``), so decay
   weighs on each of them: claims the user wrote do not decay, and would leave a run little
   to do.
2. From scratch: ``consolidate --now T --json`` on a copy, timed as a whole process, with its
   peak resident memory (``wait4``'s ``ru_maxrss``).
3. Incremental: 1 000 new claims imported (a third paraphrase an existing claim, a third
   negate one, a third are new), embedded by ``index`` (timed apart: the language server's
   background thread does this as claims arrive), then ``consolidate`` one day later, timed.
4. The same run again at the same ``--now``: it must change nothing.

Targets (issue: memory lifecycle): from scratch ≤ 120 s, incremental ≤ 10 s on this 2-core
machine.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import (
    arguments,
    emit,
    isolated_env,
    start_report,
    timed_process,
    workspace,
)
from benchmarks.server_corpus import USER, prepare
from lsp_memory.store.sqlite import open_store

NEW_TYPES = ("preference", "goal", "identity", "constraint", "project-active")


def embedded_base(
    cache: Path, corpus_root: Path, claims: int, seed: int
) -> tuple[Path, dict[str, Any]]:
    """A store of the corpus's claims with real vectors in its own cache folder."""
    base = cache / f"consolidate-{claims}"
    meta = base / "built.json"
    if meta.exists():
        return base, json.loads(meta.read_text())
    corpus = prepare(corpus_root, claims, 100, seed)
    shutil.rmtree(base, ignore_errors=True)
    (base / "xdg").mkdir(parents=True)
    shutil.copytree(corpus.store, base / "store")
    env = environment(base)
    built = {"index": timed_process(env, "index")}
    meta.write_text(json.dumps(built))
    return base, built


def environment(base: Path) -> dict[str, str]:
    """``lsp-memory``'s environment for the store at ``base``: its cache in ``base/xdg/cache``."""
    return isolated_env(base / "xdg", base / "store", USER)


def new_claims(store: Path, count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` new claims: paraphrases and negations of existing ones, and new ones."""
    with sqlite3.connect(store / "memory.sqlite3") as db:
        rows = db.execute(
            "SELECT c.statement, t.type FROM claims c JOIN claim_types t ON t.claim = c.id "
            "AND t.pos = 0 WHERE c.user = ? ORDER BY c.id",
            (USER,),
        ).fetchall()
    rng = random.Random(seed)
    made = []
    for n in range(count):
        statement, claim_type = rng.choice(rows)
        body = statement.rstrip(".")
        if n % 3 == 0:
            text = f"Really, {body[0].lower()}{body[1:]}."
        elif n % 3 == 1:
            text = f"It is no longer true that {body[0].lower()}{body[1:]}."
        else:
            claim_type = rng.choice(NEW_TYPES)
            text = f"I now keep a note about item {n} in {rng.choice(['Lyon', 'Oslo', 'Porto'])}."
        made.append(
            {
                "kind": "claim",
                "statement": text,
                "claim_type": claim_type,
                "confidence": round(rng.uniform(0.5, 1.0), 2),
            }
        )
    return made


def summary(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "changes": len(report["changes"]),
        "merged": report["merged"],
        "contradictions": report["contradictions"],
        "deprecated": report["deprecated"],
        "review": len(report["review"]),
    }


def print_runs(results: dict[str, Any]) -> None:
    for name in ("from_scratch", "incremental", "again"):
        print(f"{name}: {results[name]}")
    print(f"embedding the new claims apart: {results['embed_new']}")
    print(f"machine: {results['machine']}; load average at end {results['load_average_at_end']}")


def main() -> int:
    parser = arguments(__doc__, seed=True, claims=100_000)
    parser.add_argument("--cache", type=Path, help="keep the embedded corpus here")
    parser.add_argument(
        "--corpus", type=Path, help="the server benchmark's corpus (default: built in --cache)"
    )
    parser.add_argument("--new", type=int, default=1000, help="claims added before run 2")
    args = parser.parse_args()
    began = time.perf_counter()
    results = start_report("consolidate", parameters=vars(args))
    cache = args.cache or Path(tempfile.mkdtemp(prefix="lsp-memory-consolidate-"))
    corpus = args.corpus or cache / f"corpus-{args.claims}"
    base, results["build"] = embedded_base(cache, corpus, args.claims, args.seed)
    with workspace("consolidate-run") as work:
        shutil.copytree(base, work, dirs_exist_ok=True)
        env = environment(work)
        with open_store(work / "store") as opened:  # brought to this version's schema
            opened._db.execute("UPDATE claims SET origin = 'inferred'")

        def consolidate(name: str, now: str) -> None:
            out = work / f"{name}.json"
            results[name] = timed_process(env, "consolidate", "--now", now, "--json", output=out)
            results[name].update(summary(json.loads(out.read_text())))

        consolidate("from_scratch", "2026-01-01")
        added = work / "new.jsonl"
        added.write_text(
            "\n".join(json.dumps(c) for c in new_claims(work / "store", args.new, args.seed))
        )
        results["import_new"] = timed_process(env, "import", str(added))
        results["embed_new"] = timed_process(env, "index")
        consolidate("incremental", "2026-01-02")
        consolidate("again", "2026-01-02")
    emit(results, as_json=args.json, table=print_runs, began=began)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
