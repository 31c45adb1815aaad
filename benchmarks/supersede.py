"""The supersede check of a single write at scale: ``services.memory.supersede.superseded`` on a
store of 100 000 claims, embedding of the new statement included.

    .venv/bin/python -m benchmarks.supersede --store DIR --cache DIR [--samples 200]
        [--unindexed N] [--json]

``--store``/``--cache`` are an embedded store and its cache folder, such as the one
``python -m benchmarks.consolidate --cache`` builds (``<cache>/consolidate-100000/store`` and
``…/xdg/cache/lsp-memory``). New statements of every rule's types are checked against the
store (nothing is written to it); each statement is made unique (a token at its end), so its
embedding is computed, and kept in the vector cache, as a real write's is. Reported per rule:
p50, p95, p99 (``benchmarks.common.percentile``) and max in milliseconds. With
``--unindexed N`` the N most recently stored live claims of each type are first taken out of
the in-memory vector index, as after writes nothing has indexed yet: each check then reads
their vectors from the vector cache (claims it has no vector for would be embedded, at most
``EMBED_AT_MOST`` a write: ``embed_ms`` reports what embedding that many statements takes).
Target (issue 23): a single write with supersede ≤ 50 ms p99.

``--writes`` times whole single writes instead — ``Records.add_claim`` as ``claim add`` and
MCP ``remember`` call it: the statement embedded, the supersede check, the keys and the
insert — on a copy of ``--store`` in a scratch folder (``--store`` is not written), after
one write of each type (the first ``all`` write supersedes every live claim of its type).
With ``--small N`` the same writes also go to a store of the first N claims of ``--store``
(claims only, their links dropped; imported, then indexed from the vector cache), and the
report gives each percentile's ratio, large over small. Issue 24's target: a single write at
100 000 claims ≤ 1.5× its time at 1 000.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, emit, percentile, start_report
from lsp_memory.app import App
from lsp_memory.config import Config
from lsp_memory.ids import new_uuid, now
from lsp_memory.model import Claim, ClaimStatus, doc_id
from lsp_memory.services.memory.supersede import (
    EMBED_AT_MOST,
    UNINDEXED_WINDOW,
    rule_for,
    superseded,
)

STATEMENTS = {
    "identity": ["I live in {city}", "I moved to {city}", "I work at {company}"],
    "preference": ["My favourite tea is {tea}", "I prefer {tea} in the morning"],
    "goal": ["I want to visit {city} next year"],
    "constraint": ["I can only travel to {city} by train"],
    "project-active": ["I am migrating {company}'s billing this month"],
    "relationship": ["Anna lives in {city}", "My sister works at {company}"],
    "emotional": ["I feel anxious about {city}"],
    "decision": ["We chose {company} as the vendor"],
}
WORDS = {
    "city": ["Lyon", "Berlin", "Oslo", "Porto", "Lima", "Kyoto"],
    "company": ["Acme", "Globex", "Initech", "Umbrella"],
    "tea": ["sencha", "oolong", "rooibos", "earl grey"],
}


def main() -> int:
    parser = arguments(__doc__)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--user", default="bench")
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--unindexed", type=int, default=0, help="claims per type unindexed")
    parser.add_argument("--writes", action="store_true", help="time whole single writes")
    parser.add_argument("--small", type=int, default=0, metavar="N", help="and on N claims")
    args = parser.parse_args()
    began = time.perf_counter()
    report = start_report("supersede", parameters=vars(args))
    if args.writes:
        with tempfile.TemporaryDirectory(prefix="lsp-memory-writes-") as folder:
            report |= writes(Path(folder), args)
        emit(report, as_json=args.json, table=print, began=began)
        return 0
    app = App(Config(store=args.store, cache=args.cache, user=args.user))
    started = time.perf_counter()
    side = app.vectors
    loaded = time.perf_counter() - started
    assert side is not None, "no embedding model"
    if args.unindexed:
        for claim_type in STATEMENTS:
            newest = app.store.newest_live_statements(args.user, claim_type, args.unindexed)
            for claim_id, _ in newest:
                side.index.remove(doc_id("claim", claim_id))
    rng = random.Random(7)
    run = new_uuid()[:6]  # no statement is in the vector cache from an earlier run
    times: dict[str, list[float]] = {}
    found: dict[str, int] = {}
    for n in range(args.samples + 20):
        claim_type = rng.choice(sorted(STATEMENTS))
        template = rng.choice(STATEMENTS[claim_type])
        statement = template.format(**{k: rng.choice(v) for k, v in WORDS.items()}) + f" {run}{n}"
        claim = Claim(
            claim_id=new_uuid(), user=args.user, number=10**6 + n, friendly_id=f"new_{n}",
            statement=statement, claim_types=(claim_type,), domains=(),
            status=ClaimStatus.ACTIVE, confidence=1.0, possible_questions=(), pinned=False,
            created_at=now(), updated_at=now(),
        )  # fmt: skip
        checked = time.perf_counter()
        replaced = superseded(app.store, args.user, claim, side)
        took = (time.perf_counter() - checked) * 1000
        if n < 20:
            continue  # warm-up
        rule = rule_for(claim_type)
        times.setdefault(rule, []).append(took)
        times.setdefault("overall", []).append(took)
        found[rule] = found.get(rule, 0) + len(replaced)
    report["rules"] = {
        rule: {
            "n": len(values),
            **{f"p{p}": round(percentile(values, p), 2) for p in (50, 95, 99)},
            "max": round(max(values), 2),
            "superseded": found.get(rule),
        }
        for rule, values in sorted(times.items())
    }
    fresh = [f"I collect stamps from country {n} of {rng.random()}" for n in range(EMBED_AT_MOST)]
    embedding = []
    for _ in range(5):
        started = time.perf_counter()
        side.embedder.embed(fresh)
        embedding.append((time.perf_counter() - started) * 1000)
    report["embed_ms"] = {
        "statements": EMBED_AT_MOST,
        "median": round(percentile(embedding, 50), 1),
    }
    report["unindexed_window"] = UNINDEXED_WINDOW
    report["vectors_loaded_s"] = round(loaded, 1)
    report["vectors"] = len(side.index)
    app.close()
    emit(report, as_json=args.json, table=print_rules, began=began)
    return 0


def statements(rng: random.Random, count: int, run: str) -> list[tuple[str, str]]:
    """``count`` new ``(type, statement)`` pairs of every rule, each unique (so embedded)."""
    made = []
    for n in range(count):
        claim_type = rng.choice(sorted(STATEMENTS))
        template = rng.choice(STATEMENTS[claim_type])
        words = {k: rng.choice(v) for k, v in WORDS.items()}
        made.append((claim_type, template.format(**words) + f" {run}{n}"))
    return made


def timed_writes(store: Path, cache: Path, user: str, samples: int) -> dict[str, Any]:
    """Single writes into ``store``: one of each type first, then ``samples`` timed."""
    app = App(Config(store=store, cache=cache, user=user))
    assert app.vectors is not None, "no embedding model"
    records = app.records()
    run = new_uuid()[:6]
    for claim_type in sorted(STATEMENTS):  # warm-up; the first `all` write supersedes them all
        records.add_claim(STATEMENTS[claim_type][0].format(city="Rome", company="Acme",
                          tea="mint") + f" {run}", claim_type=claim_type)  # fmt: skip
    took = []
    for claim_type, statement in statements(random.Random(7), samples, run):
        started = time.perf_counter()
        records.add_claim(statement, claim_type=claim_type)
        took.append((time.perf_counter() - started) * 1000)
    claims = app.store._db.execute("SELECT count(*) FROM claims").fetchone()[0]
    vectors = len(app.vectors.index)
    app.close()
    return {
        "claims": claims,
        "vectors": vectors,
        **{f"p{p}_ms": round(percentile(took, p), 2) for p in (50, 90, 99)},
        "max_ms": round(max(took), 2),
    }


def small_store(work: Path, big: Path, cache: Path, user: str, count: int) -> Path:
    """A store of the first ``count`` claims of ``big`` (claims only, links dropped),
    indexed with the vectors ``cache`` already holds. ``big`` is the scratch copy (opening a
    store migrates it)."""
    app = App(Config(store=big, cache=cache, user=user))
    kept = []
    for line in app.export_records():
        record = json.loads(line)
        if record.get("kind") == "claim":
            kept.append({k: record[k] for k in ("kind", "statement", "claim_types", "status")
                         if k in record})  # fmt: skip
            if len(kept) == count:
                break
    app.close()
    small = App(Config(store=work / "small", cache=cache, user=user))
    small.import_records("\n".join(map(json.dumps, kept)).encode(), source="small")
    small.keeper.index(full=True, embed=True)
    small.close()
    return work / "small"


def index_key(store: Path) -> str:
    """The name of a store's folder of indexes in the cache (``App.index_folder``)."""
    return hashlib.sha1(str(store.resolve()).encode()).hexdigest()[:16]


def writes(work: Path, args: Any) -> dict[str, Any]:
    """``--writes``: whole single writes on a copy of the store, and on a small one."""
    cache = work / "cache"
    shutil.copytree(args.cache, cache)  # the writes' embeddings go to the copy
    shutil.copytree(args.store, work / "large")
    # A store's indexes are found by its path: the copy takes over the original's (the
    # cache's only ones when it was copied from where the store was built).
    indexes = cache / "indexes"
    built = indexes / index_key(args.store)
    if not built.exists():
        [built] = list(indexes.iterdir())
    built.rename(indexes / index_key(work / "large"))
    found = {"large": timed_writes(work / "large", cache, args.user, args.samples)}
    if args.small:
        small = small_store(work, work / "large", cache, args.user, args.small)
        found["small"] = timed_writes(small, cache, args.user, args.samples)
        found["large_over_small"] = {
            key: round(found["large"][key] / found["small"][key], 2)
            for key in ("p50_ms", "p90_ms", "p99_ms")
        }
    return {"writes": found}


def print_rules(report: dict[str, Any]) -> None:
    for rule, row in report["rules"].items():
        print(f"{rule}: {row}")
    print(f"{report['vectors']} vectors loaded in {report['vectors_loaded_s']} s")
    embed = report["embed_ms"]
    print(f"embedding {embed['statements']} statements at once: {embed['median']} ms (median of 5)")
    print(f"machine: {report['machine']}; load average at end {report['load_average_at_end']}")


if __name__ == "__main__":
    raise SystemExit(main())
