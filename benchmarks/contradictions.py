"""Which pairs of claims consolidation calls a contradiction, at which cosine: the labelled
pairs below, embedded with the default model, judged by the word rules of
``services.memory.compare`` at each candidate threshold.

    .venv/bin/python -m benchmarks.contradictions [--json]

Three sets, written for this benchmark (docs/benchmarks.md, Contradictions):

- **negations**: one statement and its negation ("I eat meat" / "I don't eat meat"): each
  should be flagged;
- **values**: two values of one slot ("I live in Lyon" / "I live in Berlin"): each should be
  flagged, by the slot rule, which needs no cosine;
- **unrelated**: pairs of opposite valence about different things, or the same thing said
  twice ("I don't like dark roast" / "I like light roast", "I'm not a morning person" /
  "I'm a night owl"): none should be flagged.

The seed's threshold (cosine > 0.85) was set for another embedding model; this measures what
it and lower ones catch with ours.
"""

from __future__ import annotations

import time
from typing import Any

from benchmarks.common import arguments, emit, start_report

NEGATIONS = [
    ("I live in Lyon", "I no longer live in Lyon"),
    ("I like green tea", "I don't like green tea"),
    ("I drink coffee after 4pm", "I never drink coffee after 4pm"),
    ("I love cilantro", "I hate cilantro"),
    ("I eat meat", "I don't eat meat"),
    ("I am vegetarian", "I am not vegetarian"),
    ("I work remotely", "I no longer work remotely"),
    ("I have a dog", "I don't have a dog"),
    ("I enjoy running in the morning", "I hate running in the morning"),
    ("I smoke", "I quit smoking"),
    ("I use Vim for coding", "I don't use Vim for coding anymore"),
    ("I am married", "I am not married"),
    ("I like jazz music", "I dislike jazz music"),
    ("My daughter plays the piano", "My daughter doesn't play the piano"),
    ("I want to move to Berlin", "I don't want to move to Berlin"),
    ("I prefer concise answers", "I don't prefer concise answers"),
    ("I drive to work", "I never drive to work"),
    ("I go to the gym on Mondays", "I stopped going to the gym on Mondays"),
    ("I am allergic to peanuts", "I am not allergic to peanuts"),
    ("I like working late at night", "I avoid working late at night"),
]
VALUES = [
    ("I work as a backend developer", "I work in frontend now"),
    ("I live in Lyon", "I live in Berlin"),
    ("I work at Google", "I work at Microsoft"),
    ("My favourite colour is blue", "My favourite colour is green"),
    ("My sister lives in Porto", "My sister lives in Madrid"),
    ("I moved to Oslo", "I'm based in Copenhagen"),
    ("My son is 7 years old", "My son is 8 years old"),
    ("My name is Chris", "My name is Christopher Jones"),
]
UNRELATED = [
    ("I don't like dark roast coffee", "I like light roast coffee"),
    ("I like tea", "I don't like coffee"),
    ("I love hiking in the mountains", "I hate hiking in the rain"),
    ("I don't eat meat", "I eat fish on Fridays"),
    ("I never work on weekends", "I work from home on Fridays"),
    ("I don't have a cat", "I have a dog"),
    ("I like my job", "I don't like my commute"),
    ("I am not a morning person", "I am a night owl"),
    ("I don't drink alcohol", "I drink coffee every morning"),
    ("I can't swim", "I can ride a bike"),
    ("I avoid sugar", "I like dark chocolate"),
    ("I don't watch TV", "I watch football with my son"),
    ("I never fly for work", "I fly to Lisbon every summer"),
    ("My sister lives in Porto", "My brother lives in Madrid"),
    ("I live in Lyon", "My sister lives in Lyon"),
    ("I work as a developer", "I work as a backend developer"),
    ("I work at Google", "I work in Zurich"),
    ("I like tea", "I don't like it when meetings run late"),
]
THRESHOLDS = (0.70, 0.75, 0.80, 0.85)


def judge() -> dict[str, Any]:
    """For each set and threshold, how many pairs the rules flag."""
    from lsp_memory.services.memory.compare import conflict, opposite
    from lsp_memory.store.vectors import Embedder, normalise

    embedder = Embedder.load()
    results: dict[str, Any] = {}
    for name, pairs in (("negations", NEGATIONS), ("values", VALUES), ("unrelated", UNRELATED)):
        first = normalise(embedder.embed([a for a, _ in pairs]))
        second = normalise(embedder.embed([b for _, b in pairs]))
        cosines = [float(c) for c in (first * second).sum(axis=1)]
        words = [opposite(a, b) for a, b in pairs]
        slots = [conflict(a, b) is not None for a, b in pairs]
        results[name] = {
            "pairs": len(pairs),
            "slot rule": sum(slots),
            **{
                f"negation rule, cosine ≥ {t:.2f}": sum(
                    w and c >= t for w, c in zip(words, cosines, strict=True)
                )
                for t in THRESHOLDS
            },
            "cosines": [round(c, 3) for c in cosines],
        }
    return results


def print_table(results: dict[str, Any]) -> None:
    for name in ("negations", "values", "unrelated"):
        found = results[name]
        counts = ", ".join(f"{k}: {v}" for k, v in found.items() if k != "cosines")
        print(f"{name}: {counts}")


def main() -> int:
    parser = arguments(__doc__)
    args = parser.parse_args()
    began = time.perf_counter()
    results = start_report("contradictions")
    results.update(judge())
    emit(results, as_json=args.json, table=print_table, began=began)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
