"""Consolidation at scale: ``lsp-memory consolidate`` as a whole process on 100 000 claims.

    .venv/bin/python -m benchmarks.consolidate [--cache DIR] [--claims 100000] [--new 1000]
        [--json]
    .venv/bin/python -m benchmarks.consolidate --store DIR --cache-home DIR [--now T]
        [--repeat 3] [--inferred] [--json]

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

With ``--store DIR --cache-home DIR`` nothing is built: consolidation runs on that store with
that cache folder (``$XDG_CACHE_HOME``: its ``lsp-memory/`` holds the vector cache and the
indexes), **written in place** — give it a copy. One run at ``--now`` settles it (timed and
reported: it may change much), ``index`` brings the search indexes up to date with it, then
``--repeat`` runs at the same ``--now`` change nothing and are timed, each a whole process
(median and every sample). ``--inferred`` first marks every
claim inferred from conversations, as step 1 does, so decay weighs on them.

Targets (issue: memory lifecycle): from scratch ≤ 120 s, incremental ≤ 10 s on this 2-core
machine; a run that changes nothing at 100k claims ≤ 3 s (issue 24).
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
    percentile,
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


def unchanged_runs(
    store: Path, cache_home: Path, now: str, repeat: int, *, inferred: bool
) -> dict[str, Any]:
    """On an existing store and cache folder (written in place): one run at ``now`` to
    settle, then ``repeat`` runs at the same ``now``, each a whole process, which must change
    nothing; their wall times, median by ``benchmarks.common.percentile``."""
    if inferred:
        with open_store(store) as opened:  # brought to this version's schema
            opened._db.execute("UPDATE claims SET origin = 'inferred'")
    found: dict[str, Any] = {}
    with workspace("consolidate-unchanged") as work:
        env = isolated_env(work / "xdg", store, USER, cache_home)

        def consolidate() -> dict[str, Any]:
            out = work / "run.json"
            timed = timed_process(env, "consolidate", "--now", now, "--json", output=out)
            return {**timed, **summary(json.loads(out.read_text()))}

        found["settle"] = consolidate()
        # The indexes catch up with what the settling run changed (the next process's
        # refresh would, up to 30 s after a run that deprecated 86k claims): not a cost of
        # a run that changes nothing.
        found["index_after_settle"] = timed_process(env, "index")
        runs = [consolidate() for _ in range(repeat)]
    changed = [run for run in runs if run["changes"] or run["review"]]
    if changed:
        raise SystemExit(f"a run at the same --now changed something: {changed[0]}")
    seconds = [run["seconds"] for run in runs]
    found["unchanged"] = {
        "median_s": round(percentile(seconds, 50), 2),
        "seconds": seconds,
        "peak_rss_mib": max(run["peak_rss_mib"] for run in runs),
    }
    return found


def print_unchanged(results: dict[str, Any]) -> None:
    print(f"settle: {results['settle']}; index after it: {results['index_after_settle']}")
    print(f"unchanged: {results['unchanged']}")
    print(f"machine: {results['machine']}; load average at end {results['load_average_at_end']}")


def main() -> int:
    parser = arguments(__doc__, seed=True, claims=100_000)
    parser.add_argument("--cache", type=Path, help="keep the embedded corpus here")
    parser.add_argument(
        "--corpus", type=Path, help="the server benchmark's corpus (default: built in --cache)"
    )
    parser.add_argument("--new", type=int, default=1000, help="claims added before run 2")
    parser.add_argument("--store", type=Path, help="an existing store (written in place)")
    parser.add_argument("--cache-home", type=Path, help="its $XDG_CACHE_HOME (with --store)")
    parser.add_argument("--now", default="2026-01-01", help="with --store: the runs' --now")
    parser.add_argument("--repeat", type=int, default=3, help="with --store: timed runs")
    parser.add_argument(
        "--inferred", action="store_true", help="with --store: mark every claim inferred"
    )
    args = parser.parse_args()
    began = time.perf_counter()
    results = start_report("consolidate", parameters=vars(args))
    if args.store is not None:
        if args.cache_home is None:
            parser.error("--store needs --cache-home (the folder holding lsp-memory/)")
        results |= unchanged_runs(
            args.store.resolve(),
            args.cache_home.resolve(),
            args.now,
            args.repeat,
            inferred=args.inferred,
        )
        emit(results, as_json=args.json, table=print_unchanged, began=began)
        return 0
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
