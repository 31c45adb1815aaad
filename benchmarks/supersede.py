"""The supersede check of a single write at scale: ``services.memory.supersede.superseded`` on a
store of 100 000 claims, embedding of the new statement included.

    python benchmarks/supersede.py --store DIR --cache DIR [--samples 200] [--json]

``--store``/``--cache`` are an embedded store and its cache folder, such as the one
``benchmarks/consolidate.py --cache`` builds (``<cache>/consolidate-100000/store`` and
``…/xdg/cache/lsp-memory``). New statements of every rule's types are checked against the
store (nothing is written); reported per rule: p50, p95, p99 and max in milliseconds.
Target (issue: memory lifecycle): ≤ 20 ms p99.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lsp_memory.app import App  # noqa: E402
from lsp_memory.config import Config  # noqa: E402
from lsp_memory.ids import new_uuid, now  # noqa: E402
from lsp_memory.model import Claim, ClaimStatus  # noqa: E402
from lsp_memory.services.memory.supersede import rule_for, superseded  # noqa: E402

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


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--user", default="bench")
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
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
    report: dict[str, Any] = {
        rule: {
            "n": len(values),
            "p50": round(statistics.median(values), 2),
            "p95": round(percentile(values, 0.95), 2),
            "p99": round(percentile(values, 0.99), 2),
            "max": round(max(values), 2),
            "superseded": found.get(rule),
        }
        for rule, values in sorted(times.items())
    }
    report["vectors_loaded_s"] = round(loaded, 1)
    report["vectors"] = len(side.index)
    report["machine"] = {
        "cpus": os.cpu_count(),
        "load": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
    }
    app.close()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for rule, row in report.items():
            print(f"{rule}: {row}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
