"""Claim extraction from conversation messages, scored on a labelled dev set.

    python benchmarks/extract.py [--data tests/data/extraction.jsonl] [--json]

Each line of the set is a message pair with the claims a careful reader would write down
(``expected``: statement and category) and a ``split`` (``dev`` was looked at while writing
the rules, ``test`` was not). An extracted statement matches an expected one when their
content words (``services.compare.content``: stop words out, crude stems, numbers as
written) overlap with Jaccard ≥ 0.6; each expected claim is matched once. Reported per
split: precision, recall, category accuracy on the matched pairs, and the pairs per second
extraction runs at (classification included, one core).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lsp_memory.services.compare import content  # noqa: E402
from lsp_memory.services.extract import Extracted, extract  # noqa: E402

MATCH = 0.6


def similar(a: str, b: str) -> bool:
    left, right = content(a), content(b)
    if not left or not right:
        return a.strip().lower() == b.strip().lower()
    return len(left & right) / len(left | right) >= MATCH


def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    found = expected = matched = right_category = 0
    misses: list[str] = []
    extra: list[str] = []
    for row in rows:
        got = extract(row["userMessage"], row.get("assistantResponse"))
        want = list(row["expected"])
        found += len(got)
        expected += len(want)
        for claim in got:
            hit = next((w for w in want if similar(claim.statement, w["statement"])), None)
            if hit is None:
                extra.append(claim.statement)
                continue
            want.remove(hit)
            matched += 1
            right_category += claim.category == hit["category"]
        misses += [w["statement"] for w in want]
    return {
        "pairs": len(rows),
        "expected": expected,
        "extracted": found,
        "precision": round(matched / found, 3) if found else 1.0,
        "recall": round(matched / expected, 3) if expected else 1.0,
        "category_accuracy": round(right_category / matched, 3) if matched else None,
        "missed": misses,
        "spurious": extra,
    }


def speed(rows: list[dict[str, Any]], rounds: int = 20) -> float:
    started = time.perf_counter()
    count = 0
    for _ in range(rounds):
        for row in rows:
            found: list[Extracted] = extract(row["userMessage"], row.get("assistantResponse"))
            count += 1 + 0 * len(found)
    return count / (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT / "tests" / "data" / "extraction.jsonl")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines() if line]
    report: dict[str, Any] = {
        split: score([r for r in rows if r["split"] == split]) for split in ("dev", "test")
    }
    report["pairs_per_second"] = round(speed(rows))
    report["machine"] = {
        "cpus": os.cpu_count(),
        "load": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
    }
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    for split in ("dev", "test"):
        r = report[split]
        print(
            f"{split:>4}: {r['pairs']} pairs, {r['expected']} expected claims — precision "
            f"{r['precision']:.3f}, recall {r['recall']:.3f}, category accuracy "
            f"{r['category_accuracy']}"
        )
        for statement in r["missed"]:
            print(f"      missed:   {statement}")
        for statement in r["spurious"]:
            print(f"      spurious: {statement}")
    print(f"{report['pairs_per_second']} pairs/s (one core, classification included)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
