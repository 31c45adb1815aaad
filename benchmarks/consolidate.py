"""Consolidation at scale: ``lsp-memory consolidate`` as a whole process on 100 000 claims.

    python benchmarks/consolidate.py [--cache DIR] [--claims 100000] [--new 1000] [--json]

1. The corpus is the server benchmark's (``benchmarks/server_corpus.py``: 100 000 generated
   claims of nine types, seed 7), copied into a scratch store and embedded **for real**
   (``lsp-memory index``, the default model; the server corpus's own vectors are noisy copies
   of 256 real ones, which would make every claim a near-duplicate of hundreds). With
   ``--cache DIR`` the embedded store is kept and reused; building it takes minutes.
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

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from foundation import machine as machine_at_start  # noqa: E402
from server_corpus import USER, prepare  # noqa: E402

NEW_TYPES = ("preference", "goal", "identity", "constraint", "project-active")


def run(env: dict[str, str], *args: str, output: Path | None = None) -> dict[str, Any]:
    """Run ``python -m lsp_memory ARGS``; its wall time, peak RSS and exit status."""
    started = time.perf_counter()
    with Path(output or os.devnull).open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "lsp_memory", *args],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stderr is not None
        errors = process.stderr.read()
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"lsp-memory {' '.join(args)} failed ({code}): {errors.strip()[-400:]}")
    return {"seconds": round(wall, 2), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1)}


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
    built = {"index": run(env, "index")}
    meta.write_text(json.dumps(built))
    return base, built


def environment(base: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(base / "xdg"),
        "XDG_CACHE_HOME": str(base / "xdg" / "cache"),
        "XDG_CONFIG_HOME": str(base / "xdg" / "config"),
        "XDG_DATA_HOME": str(base / "xdg" / "data"),
        "LSP_MEMORY_STORE": str(base / "store"),
        "LSP_MEMORY_USER": USER,
        "PYTHONPATH": str(ROOT),
    }


def new_claims(store: Path, count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` new claims: paraphrases and negations of existing ones, and new ones."""
    import sqlite3

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


def machine(at_start: dict[str, Any]) -> dict[str, Any]:
    """What a result was measured on: ``foundation.machine()`` as taken at the start, with
    the load at the end and the commit."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return {
        **at_start,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "commit": commit.stdout.strip(),
    }


def summary(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "changes": len(report["changes"]),
        "merged": report["merged"],
        "contradictions": report["contradictions"],
        "deprecated": report["deprecated"],
        "review": len(report["review"]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, help="keep the embedded corpus here")
    parser.add_argument(
        "--corpus", type=Path, help="the server benchmark's corpus (default: built in --cache)"
    )
    parser.add_argument("--claims", type=int, default=100_000)
    parser.add_argument("--new", type=int, default=1000, help="claims added before run 2")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cache = args.cache or Path(tempfile.mkdtemp(prefix="lsp-memory-consolidate-"))
    start = machine_at_start()
    corpus = args.corpus or cache / f"corpus-{args.claims}"
    base, built = embedded_base(cache, corpus, args.claims, args.seed)
    work = Path(tempfile.mkdtemp(prefix="lsp-memory-consolidate-run-"))
    try:
        shutil.copytree(base, work, dirs_exist_ok=True)
        env = environment(work)
        results: dict[str, Any] = {"build": built}
        out = work / "run1.json"
        results["from_scratch"] = run(
            env, "consolidate", "--now", "2026-01-01", "--json", output=out
        )
        results["from_scratch"].update(summary(json.loads(out.read_text())))
        added = work / "new.jsonl"
        added.write_text(
            "\n".join(json.dumps(c) for c in new_claims(work / "store", args.new, args.seed))
        )
        results["import_new"] = run(env, "import", str(added))
        results["embed_new"] = run(env, "index")
        out = work / "run2.json"
        results["incremental"] = run(
            env, "consolidate", "--now", "2026-01-02", "--json", output=out
        )
        results["incremental"].update(summary(json.loads(out.read_text())))
        out = work / "run3.json"
        results["again"] = run(env, "consolidate", "--now", "2026-01-02", "--json", output=out)
        results["again"].update(summary(json.loads(out.read_text())))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["machine"] = machine(start)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for name in ("from_scratch", "incremental", "again"):
            print(f"{name}: {results[name]}")
        print(f"embedding the new claims apart: {results['embed_new']}")
        print(f"machine: {results['machine']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
