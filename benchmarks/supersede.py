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
"""

from __future__ import annotations

import random
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
    args = parser.parse_args()
    began = time.perf_counter()
    report = start_report("supersede", parameters=vars(args))
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


def print_rules(report: dict[str, Any]) -> None:
    for rule, row in report["rules"].items():
        print(f"{rule}: {row}")
    print(f"{report['vectors']} vectors loaded in {report['vectors_loaded_s']} s")
    embed = report["embed_ms"]
    print(f"embedding {embed['statements']} statements at once: {embed['median']} ms (median of 5)")
    print(f"machine: {report['machine']}; load average at end {report['load_average_at_end']}")


if __name__ == "__main__":
    raise SystemExit(main())
