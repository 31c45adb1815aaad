"""The supersede check of a single write at scale: ``services.memory.supersede.superseded`` on a
store of 100 000 claims, embedding of the new statement included.

    .venv/bin/python -m benchmarks.supersede --store DIR --cache DIR [--samples 200] [--json]

``--store``/``--cache`` are an embedded store and its cache folder, such as the one
``python -m benchmarks.consolidate --cache`` builds (``<cache>/consolidate-100000/store`` and
``…/xdg/cache/lsp-memory``). New statements of every rule's types are checked against the
store (nothing is written); reported per rule: p50, p95, p99 (``benchmarks.common.percentile``)
and max in milliseconds. Target (issue: memory lifecycle): ≤ 20 ms p99.
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
from lsp_memory.model import Claim, ClaimStatus
from lsp_memory.services.memory.supersede import rule_for, superseded

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
    args = parser.parse_args()
    began = time.perf_counter()
    report = start_report("supersede", parameters=vars(args))
    app = App(Config(store=args.store, cache=args.cache, user=args.user))
    started = time.perf_counter()
    side = app.vectors
    loaded = time.perf_counter() - started
    assert side is not None, "no embedding model"
    rng = random.Random(7)
    times: dict[str, list[float]] = {}
    found: dict[str, int] = {}
    for n in range(args.samples + 20):
        claim_type = rng.choice(sorted(STATEMENTS))
        template = rng.choice(STATEMENTS[claim_type])
        statement = template.format(**{k: rng.choice(v) for k, v in WORDS.items()})
        claim = Claim(
            claim_id=new_uuid(), user=args.user, number=10**6 + n, friendly_id=f"new_{n}",
            statement=statement, claim_types=(claim_type,), domains=(),
            status=ClaimStatus.ACTIVE, confidence=1.0, possible_questions=(), pinned=False,
            created_at=now(), updated_at=now(),
        )  # fmt: skip
        began = time.perf_counter()
        replaced = superseded(app.store, args.user, claim, side)
        took = (time.perf_counter() - began) * 1000
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
    report["vectors_loaded_s"] = round(loaded, 1)
    report["vectors"] = len(side.index)
    app.close()
    emit(report, as_json=args.json, table=print_rules, began=began)
    return 0


def print_rules(report: dict[str, Any]) -> None:
    for rule, row in report["rules"].items():
        print(f"{rule}: {row}")
    print(f"{report['vectors']} vectors loaded in {report['vectors_loaded_s']} s")
    print(f"machine: {report['machine']}; load average at end {report['load_average_at_end']}")


if __name__ == "__main__":
    raise SystemExit(main())
