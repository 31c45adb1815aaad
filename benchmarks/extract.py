"""Claim extraction from conversation messages, scored on a labelled set.

    .venv/bin/python -m benchmarks.extract [--data FILE] [--details dev|test|all|none]
        [--runs 5] [--json]

Each line of the set is a message pair with the claims a careful reader would write down
(``expected``: statement and category), optionally the assistant's message before it
(``previousAssistant``, which a short answer is read with), and a ``split``: ``dev`` was
looked at while writing the rules, ``test`` was not (how the set is labelled: tests/data/README.md).

The matching rule: an extracted statement matches an expected one when they are the same
after normalisation (lower case, straight apostrophes, punctuation and spaces collapsed), or
when their content words (``services.memory.compare.content``: stop words out, crude stems, words of
liking as one, numbers as written) overlap with Jaccard ≥ 0.6. Each extracted statement takes
the unmatched expected claim of its pair it overlaps most; each expected claim is matched at
most once. Reported per split: precision (matched / extracted), recall (matched / expected),
category accuracy on the matched pairs, and the pairs per second extraction runs at over the
whole set (classification included, pinned to one core; the median of 5 passes ×10).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.common import EXTRACTION_SET, arguments, emit, start_report
from lsp_memory.services.conversations.extract import extract
from lsp_memory.services.memory.classify import Classifier
from lsp_memory.services.memory.compare import content

MATCH = 0.6
SPLITS = ("dev", "test")


def normalised(text: str) -> str:
    """Lower case, straight apostrophes, anything but letters and digits one space."""
    text = text.lower().replace("’", "'")
    return " ".join(re.sub(r"[^\w']+", " ", text).split())


def overlap(a: str, b: str) -> float:
    """1.0 for statements equal after normalisation, else the Jaccard index of their content
    words."""
    if normalised(a) == normalised(b):
        return 1.0
    left, right = content(a), content(b)
    if not left or not right:
        return 0.0
    return len(left & right) / len(left | right)


def similar(a: str, b: str) -> bool:
    return overlap(a, b) >= MATCH


def score(rows: list[dict[str, Any]], classifier: Classifier | None = None) -> dict[str, Any]:
    """Precision, recall and category accuracy of ``extract`` over ``rows``, with what was
    missed, what was extracted for nothing, and the category mistakes."""
    found = expected = matched = right_category = 0
    misses: list[str] = []
    extra: list[str] = []
    wrong: list[str] = []
    for row in rows:
        got = extract(
            row["userMessage"],
            row.get("assistantResponse"),
            classifier=classifier,
            question=row.get("previousAssistant"),
        )
        want = list(row["expected"])
        found += len(got)
        expected += len(want)
        for claim in got:
            best = max(want, key=lambda w: overlap(claim.statement, w["statement"]), default=None)
            if best is None or not similar(claim.statement, best["statement"]):
                extra.append(claim.statement)
                continue
            want.remove(best)
            matched += 1
            if claim.category == best["category"]:
                right_category += 1
            else:
                wrong.append(f"{claim.statement} — {claim.category}, expected {best['category']}")
        misses += [w["statement"] for w in want]
    return {
        "pairs": len(rows),
        "expected": expected,
        "extracted": found,
        "matched": matched,
        "precision": round(matched / found, 3) if found else 1.0,
        "recall": round(matched / expected, 3) if expected else 1.0,
        "category_accuracy": round(right_category / matched, 3) if matched else None,
        "missed": misses,
        "spurious": extra,
        "wrong_category": wrong,
    }


def speed(rows: list[dict[str, Any]], classifier: Classifier, runs: int = 5) -> list[float]:
    """Message pairs extracted per second (classification included), one rate per pass over
    ``rows`` ×10, ``runs`` passes."""
    for row in rows[:5]:  # the classifier's model is read once, not timed
        extract(row["userMessage"], classifier=classifier)
    rates = []
    for _ in range(runs):
        started = time.perf_counter()
        for _ in range(10):
            for row in rows:
                extract(
                    row["userMessage"],
                    row.get("assistantResponse"),
                    classifier=classifier,
                    question=row.get("previousAssistant"),
                )
        rates.append(10 * len(rows) / (time.perf_counter() - started))
    return rates


def main() -> int:
    parser = arguments(__doc__)
    parser.add_argument("--data", type=Path, default=EXTRACTION_SET)
    parser.add_argument(
        "--details",
        choices=(*SPLITS, "all", "none"),
        default="dev",
        help="list missed, spurious and wrongly classified statements of this split "
        "(default: dev; looking at test's is tuning on it)",
    )
    parser.add_argument("--runs", type=int, default=5, help="speed passes (median reported)")
    args = parser.parse_args()
    began = time.perf_counter()
    lines = args.data.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    classifier = Classifier()
    report = start_report("extract", parameters=vars(args))
    for split in SPLITS:
        report[split] = score([r for r in rows if r["split"] == split], classifier)
    report["all"] = score(rows, classifier)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    rates = speed(rows, classifier, args.runs)
    report["pairs_per_second"] = round(statistics.median(rates))
    report["pairs_per_second_runs"] = [round(rate) for rate in rates]
    shown = {"all": SPLITS, "none": ()}.get(args.details, (args.details,))
    for split in ("dev", "test", "all"):
        if split not in shown:
            for key in ("missed", "spurious", "wrong_category"):
                report[split].pop(key)
    emit(report, as_json=args.json, table=print_scores, began=began)
    return 0


def print_scores(report: dict[str, Any]) -> None:
    m = report["machine"]
    load = m["load_average_at_start"]
    print(f"machine: {m['cpu']}, {m['cpus']} cpus, load {load}, Python {m['python']}")
    for split in (*SPLITS, "all"):
        r = report[split]
        print(
            f"{split:>4}: {r['pairs']} pairs, {r['expected']} expected, {r['extracted']} "
            f"extracted — precision {r['precision']:.3f}, recall {r['recall']:.3f}, "
            f"category accuracy {r['category_accuracy']}"
        )
        for statement in r.get("missed", []):
            print(f"      missed:   {statement}")
        for statement in r.get("spurious", []):
            print(f"      spurious: {statement}")
        for mistake in r.get("wrong_category", []):
            print(f"      category: {mistake}")
    print(
        f"{report['pairs_per_second']} pairs/s, median of "
        f"{len(report['pairs_per_second_runs'])} passes ×10 over the set "
        f"(one core, classification included; target ≥ 200)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
