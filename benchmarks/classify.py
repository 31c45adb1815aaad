"""The claim classifier: accuracy on the held-out split of ``tests/data/categories.jsonl`` (per
category and overall, with a confusion matrix), the same on the train split (to show how much it
over-fits), and statements per second on one core (median of 5 runs). Targets: ≥ 0.85 held-out
accuracy, ≥ 500 statements/s.

- ``--train`` refits the built-in model on the train split and writes
  ``lsp_memory/services/memory/data/classifier.json`` (the held-out split is never read for it).
- ``--cv K`` reports K-fold cross-validated accuracy on the train split only: what to tune on.

Run: ``.venv/bin/python -m benchmarks.classify [--train] [--cv 5] [--json]``.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.common import ROOT, arguments, emit, start_report
from lsp_memory.model import CATEGORIES
from lsp_memory.services.memory.classify import (
    Model,
    builtin_model,
    model_path,
    read_labelled,
    train,
)

DATA = ROOT / "tests" / "data" / "categories.jsonl"


def _split(records: Sequence[dict[str, str]], name: str) -> list[dict[str, str]]:
    return [r for r in records if r.get("split", "train") == name]


def evaluate(model: Model, records: Sequence[dict[str, str]]) -> dict[str, Any]:
    """Accuracy overall and per category, and the confusion matrix (true → predicted)."""
    confusion = {c: dict.fromkeys(CATEGORIES, 0) for c in CATEGORIES}
    for record in records:
        confusion[record["category"]][model.decide(record["text"]).category] += 1
    per = {
        c: (row[c] / total if (total := sum(row.values())) else 0.0) for c, row in confusion.items()
    }
    right = sum(confusion[c][c] for c in CATEGORIES)
    return {"n": len(records), "accuracy": right / len(records), "per": per, "confusion": confusion}


def speed(model: Model, texts: Sequence[str], runs: int = 5) -> float:
    """Statements per second, the median of ``runs`` passes over ``texts``."""
    rates = []
    for _ in range(runs):
        start = time.perf_counter()
        for text in texts:
            model.decide(text)
        rates.append(len(texts) / (time.perf_counter() - start))
    return statistics.median(rates)


def cross_validate(records: Sequence[dict[str, str]], folds: int, **options: Any) -> float:
    shuffled = list(records)
    random.Random(7).shuffle(shuffled)
    right = 0
    for k in range(folds):
        test = shuffled[k::folds]
        fit = [r for i, r in enumerate(shuffled) if i % folds != k]
        model = train([r["text"] for r in fit], [r["category"] for r in fit], **options)
        right += sum(model.decide(r["text"]).category == r["category"] for r in test)
    return right / len(shuffled)


def _table(result: dict[str, Any], title: str) -> str:
    lines = [f"{title}: {result['accuracy']:.3f} ({result['n']} statements)"]
    lines += [f"  {c:<15} {result['per'][c]:.3f}" for c in CATEGORIES]
    return "\n".join(lines)


def _confusion(result: dict[str, Any]) -> str:
    short = [c[:5] for c in CATEGORIES]
    lines = ["true \\ predicted  " + " ".join(f"{s:>5}" for s in short)]
    for c in CATEGORIES:
        row = result["confusion"][c]
        lines.append(f"{c:<17} " + " ".join(f"{row[p]:>5}" for p in CATEGORIES))
    return "\n".join(lines)


def main() -> int:
    parser = arguments(__doc__)
    parser.add_argument("--train", action="store_true", help="refit and write the model")
    parser.add_argument("--cv", type=int, metavar="K", help="K-fold accuracy on train only")
    args = parser.parse_args()
    began = time.perf_counter()
    report = start_report("classify", parameters=vars(args))
    records = read_labelled(DATA.read_text("utf-8").splitlines())
    train_set, test_set = _split(records, "train"), _split(records, "test")
    if args.cv:
        print(f"{args.cv}-fold accuracy on train: {cross_validate(train_set, args.cv):.3f}")
        return 0
    if args.train:
        model = train([r["text"] for r in train_set], [r["category"] for r in train_set])
        path = model_path()
        path.write_text(json.dumps(model.to_json(), separators=(",", ":")) + "\n", "utf-8")
        print(f"wrote {path} ({len(model.weights)} features, {path.stat().st_size} bytes)")
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    builtin_model.cache_clear()
    model = builtin_model()
    report["test"], report["train"] = evaluate(model, test_set), evaluate(model, train_set)
    report["per_second"] = speed(model, [r["text"] for r in records] * 10)
    emit(report, as_json=args.json, table=print_accuracy, began=began)
    return 0


def print_accuracy(report: dict[str, Any]) -> None:
    print(_table(report["test"], "held-out accuracy (target >= 0.85)"))
    print(_table(report["train"], "train accuracy"))
    print("held-out confusion matrix:")
    print(_confusion(report["test"]))
    rate = report["per_second"]
    print(f"speed: {rate:,.0f} statements/s on one core (median of 5; target >= 500)")


if __name__ == "__main__":
    raise SystemExit(main())
