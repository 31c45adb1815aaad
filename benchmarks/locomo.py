"""LoCoMo as a memory-retrieval benchmark: BM25, dense and hybrid search over claims, or
(``--episodes``) over the conversation's own messages ingested as episodes.

For each conversation: its observations become claims (speaker → context, session date →
created_at) imported into a fresh store with the project's own import code, indexed with its
own indexer (Tantivy + local ONNX embeddings), and queried with every question except the
adversarial category 5 through its own search service. An observation is relevant to a
question when its evidence dialogue id is among the question's evidence; questions without a
relevant observation are not scorable and are left out.

    .venv/bin/python -m benchmarks.locomo --data ../shared/data/locomo/locomo-dev.json --json

prints one JSON object: nDCG@10, Recall@10 and Hit@5 for ``bm25``, ``dense`` and ``hybrid``
(the product's default fusion, no relevance floor) and ``hybrid+floor`` (with the default
``min_similarity``, as the search doors run it), for the whole split and (``parts``) for the
conversations tuned on and those held out (``TUNED``), plus, with ``--study``, the same for
other fusion settings.

With ``--floor [COSINE ...]`` it measures the relevance floor (setting ``min_similarity``;
default the setting's default): for BM25, dense and hybrid, nDCG@10 of each question on its
own conversation's claims without and with the floor (the floor's cost), and how often the
question asked of each *other* conversation's claims finds nothing (the no-answer rate; the
answer is not there, though the topics are alike). Reported for the conversations the floor
was tuned on (the first three), the two held out, and all; ``--margin`` also tries other
values of ``FLOOR_MARGIN``. With ``--episodes`` too, the same over the conversations'
ingested turns (below), the floors being the episodes' own (``min_similarity`` less
``EPISODE_FLOOR_BELOW``; the margin by default ``EPISODE_FLOOR_MARGIN``); ``--methods``
measures only some of BM25, dense and hybrid.

With ``--lineage`` the turns are stored too, as episodes, and each observation is imported
with ``derived_from`` naming its evidence turns, as ``ingest`` writes an extracted claim: the
claims are then indexed with the text of their messages.

With ``--episodes`` each conversation's turns go through ``lsp-memory ingest``'s code as
message pairs (a turn, then the next one as the reply; the session's date as the timestamp),
extraction included, and a question's relevant documents are the episodes of its evidence
turns.
The data is evaluation-only (CC BY-NC 4.0) and is never copied into the package.
"""

from __future__ import annotations

import json
import math
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, emit, start_report
from lsp_memory.app import App
from lsp_memory.config import DEFAULT_MIN_SIMILARITY, Config
from lsp_memory.ids import timestamp
from lsp_memory.model import doc_id
from lsp_memory.services.memory.interchange import import_records
from lsp_memory.services.retrieval.search import (
    EPISODE_FLOOR_BELOW,
    EPISODE_FLOOR_MARGIN,
    FLOOR_MARGIN,
    SHOWN_STATUSES,
    HybridSearch,
    Mode,
)
from lsp_memory.store.sqlite import Episode

USER = "locomo"
K = 10
_NAMESPACE = uuid.UUID("6f1c7a52-3f0e-4d7e-9d8e-4c0d2b3f5a10")


def _date(text: str) -> str | None:
    """``1:56 pm on 8 May, 2023`` → ISO 8601."""
    try:
        moment = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return None
    return moment.isoformat()


def _slug(name: str) -> str:
    words = re.findall(r"[a-z0-9]+", name.lower()) or ["speaker"]
    return "_".join(["speaker", *words])


def turn_id(conversation: dict[str, Any], dia_id: str) -> str:
    """The episode id a turn is stored under with ``--lineage``."""
    return str(uuid.uuid5(_NAMESPACE, f"{conversation.get('sample_id', 'conv')}:turn:{dia_id}"))


def turns_of(conversation: dict[str, Any]) -> list[Episode]:
    """The conversation's turns as episodes (``"<speaker>: <text>"``, the session's date),
    stored as they are, without extraction: the messages the observations were drawn from."""
    talk = conversation["conversation"]
    sample = str(conversation.get("sample_id", "conv"))
    found: list[Episode] = []
    number = 1
    while isinstance(talk.get(f"session_{number}"), list):
        when = _date(str(talk.get(f"session_{number}_date_time", ""))) or "2000-01-01T00:00:00"
        stamp = timestamp(when)
        for turn in talk[f"session_{number}"]:
            found.append(
                Episode(
                    turn_id(conversation, turn["dia_id"]), USER, f"{sample}-session-{number}",
                    "user", _message(turn, images=False), stamp, stamp,
                )
            )  # fmt: skip
        number += 1
    return found


def claims_of(
    conversation: dict[str, Any], *, lineage: bool = False
) -> tuple[bytes, dict[str, set[str]]]:
    """The conversation's observations as interchange lines, and each claim's evidence ids;
    with ``lineage`` each claim is derived from its evidence turns (``turns_of``)."""
    talk = conversation["conversation"]
    sample = str(conversation.get("sample_id", "conv"))
    lines: list[dict[str, Any]] = []
    evidence: dict[str, set[str]] = {}
    speakers: dict[str, str] = {}
    for key, by_speaker in conversation["observation"].items():
        session = key.removesuffix("_observation")
        created = _date(str(talk.get(f"{session}_date_time", "")))
        for speaker, facts in by_speaker.items():
            context = speakers.setdefault(speaker, _slug(speaker))
            for position, fact in enumerate(facts):
                text, ids = fact[0], fact[1]
                ids = [ids] if isinstance(ids, str) else list(ids)
                claim_id = str(uuid.uuid5(_NAMESPACE, f"{sample}:{key}:{speaker}:{position}"))
                record: dict[str, Any] = {
                    "kind": "claim",
                    "claim_id": claim_id,
                    "statement": str(text),
                    "contexts": [context],
                    "meta": {"evidence": ids, "session": session},
                }
                if created:
                    record["created_at"] = created
                if lineage:
                    record["derived_from"] = [turn_id(conversation, str(i)) for i in ids]
                lines.append(record)
                evidence[doc_id("claim", claim_id)] = {str(i) for i in ids}
    header = [
        {"kind": "context", "name": name, "friendly_id": fid} for name, fid in speakers.items()
    ]
    data = "\n".join(json.dumps(line) for line in [*header, *lines]).encode()
    return data, evidence


def questions_of(
    conversation: dict[str, Any], evidence: dict[str, set[str]]
) -> list[tuple[str, set[str]]]:
    """Scorable questions (category ≠ 5, at least one relevant claim) and their relevant ids."""
    scorable = []
    for qa in conversation["qa"]:
        if qa.get("category") == 5:
            continue
        wanted = {str(e) for e in qa.get("evidence", [])}
        relevant = {doc for doc, ids in evidence.items() if ids & wanted}
        if relevant:
            scorable.append((str(qa["question"]), relevant))
    return scorable


def metrics(ranked: Sequence[str], relevant: set[str]) -> dict[str, float]:
    gains = [1.0 if doc in relevant else 0.0 for doc in ranked[:K]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), K)))
    return {
        "ndcg@10": dcg / ideal,
        "recall@10": sum(gains) / len(relevant),
        "hit@5": 1.0 if any(gains[:5]) else 0.0,
    }


Variant = tuple[str, Mode, dict[str, Any]]
DEFAULT: list[Variant] = [
    ("bm25", "bm25", {}),
    ("dense", "dense", {}),
    ("hybrid", "hybrid", {}),
    # As the search doors run it: with the configured relevance floor.
    ("hybrid+floor", "hybrid", {"min_similarity": DEFAULT_MIN_SIMILARITY}),
]
STUDY: list[Variant] = [
    *[
        (f"minmax w{w} pool{pool}", "hybrid", {"fusion": "minmax", "dense_weight": w, "pool": pool})
        for pool in (50, 100, 200)
        for w in (0.3, 0.4, 0.5, 0.6, 0.7)
    ],
    *[
        (f"zscore w{w} pool100", "hybrid", {"fusion": "zscore", "dense_weight": w, "pool": 100})
        for w in (0.5, 0.6)
    ],
    ("rrf pool100", "hybrid", {"fusion": "rrf", "pool": 100}),
    ("hybrid, near-duplicates once", "hybrid", {"diverse": True}),
]
_ENGINE_OPTIONS = ("fusion", "dense_weight", "pool")


def _score(
    base: HybridSearch,
    question: str,
    *,
    kind: str,
    relevant: set[str],
    variants: Sequence[Variant],
) -> dict[str, dict[str, float]]:
    """One question's metrics for every variant."""
    found: dict[str, dict[str, float]] = {}
    for name, mode, options in variants:
        engine = base
        tuned = {o: options[o] for o in _ENGINE_OPTIONS if o in options}
        if tuned:
            engine = HybridSearch(base.text, base.vectors, base.embedder, **tuned)
        hits = engine.search(
            question,
            user=USER,
            kinds={kind},
            k=K,
            mode=mode,
            diverse=options.get("diverse", False),
            min_similarity=options.get("min_similarity"),
        )
        found[name] = metrics([h.id for h in hits], relevant)
    return found


def _means(totals: dict[str, dict[str, float]], count: int, study: bool) -> dict[str, Any]:
    """Each default variant's metrics averaged over ``count`` questions (and, with ``study``,
    every variant's under ``"study"``)."""
    means = {
        name: {metric: round(value / max(count, 1), 4) for metric, value in scores.items()}
        for name, scores in totals.items()
    }
    report: dict[str, Any] = {name: means[name] for name, _, _ in DEFAULT}
    if study:
        report["study"] = means
    return report


def _parts(count: int) -> dict[str, set[int]]:
    """Which conversations each part of the split holds (see ``TUNED``)."""
    return {
        "tuned": set(range(min(TUNED, count))),
        "held_out": set(range(TUNED, count)),
        "all": set(range(count)),
    }


class _Tally:
    """Metric sums per part of the split and per variant."""

    def __init__(self, count: int, variants: Sequence[Variant]) -> None:
        self.parts = _parts(count)
        self.sums = {
            part: {name: dict.fromkeys(("ndcg@10", "recall@10", "hit@5"), 0.0)
                   for name, _, _ in variants}
            for part in self.parts
        }  # fmt: skip
        self.questions = dict.fromkeys(self.parts, 0)

    def add(self, conversation: int, found: dict[str, dict[str, float]]) -> None:
        for part, members in self.parts.items():
            if conversation not in members:
                continue
            self.questions[part] += 1
            for name, scores in found.items():
                for metric, value in scores.items():
                    self.sums[part][name][metric] += value

    def report(self, study: bool, names: Sequence[str]) -> dict[str, Any]:
        """The whole split's means as before, and each part's under ``"parts"``."""
        report = _means(self.sums["all"], self.questions["all"], study)
        report["parts"] = self.by_part(names)
        return report

    def by_part(self, names: Sequence[str]) -> dict[str, Any]:
        """Each part's question count and the means of the ``names`` variants."""
        return {
            part: {
                "questions": self.questions[part],
                **{
                    name: {
                        metric: round(value / max(self.questions[part], 1), 4)
                        for metric, value in self.sums[part][name].items()
                    }
                    for name in names
                },
            }
            for part in self.parts
        }


def _message(turn: dict[str, Any], *, images: bool) -> str:
    """A turn as the message its reader saw: the speaker, the text and, with ``images``, the
    picture it shared as its caption (LoCoMo gives each shared image a BLIP caption; the
    dataset's own agents read turns this way, "… and shared <caption>")."""
    text = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    if images and caption:
        text += f" [shared {caption}]"
    return text


def pairs_of(conversation: dict[str, Any], *, images: bool = False) -> list[tuple[Any, list[str]]]:
    """The conversation's turns as message pairs (``services.conversations.ingest.Pair``),
    each with the dialogue ids of its one or two turns, in order."""
    from lsp_memory.services.conversations.ingest import pair_from

    talk = conversation["conversation"]
    sample = str(conversation.get("sample_id", "conv"))
    found: list[tuple[Any, list[str]]] = []
    number = 1
    while isinstance(talk.get(f"session_{number}"), list):
        turns = talk[f"session_{number}"]
        when = _date(str(talk.get(f"session_{number}_date_time", "")))
        for start in range(0, len(turns), 2):
            first, *rest = turns[start : start + 2]
            value: dict[str, Any] = {
                "contentSessionId": f"{sample}-session-{number}",
                "userMessage": _message(first, images=images),
                "timestamp": when,
            }
            if rest:
                value["assistantResponse"] = _message(rest[0], images=images)
            found.append((pair_from(value, len(found) + 1), [t["dia_id"] for t in (first, *rest)]))
        number += 1
    return found


def ingest_turns(
    app: App, conversation: dict[str, Any], *, images: bool = False
) -> tuple[dict[str, set[str]], dict[str, set[str]], int]:
    """The conversation's turns ingested as message pairs (``pairs_of``), extraction
    included: each episode's dialogue id, each extracted claim's (the turn it was extracted
    from), and how many claims superseded an earlier one as they were written."""
    pairs = pairs_of(conversation, images=images)
    results = app.ingester().ingest([pair for pair, _ in pairs])
    evidence: dict[str, set[str]] = {}
    from_turns: dict[str, set[str]] = {}
    superseded = 0
    for result, (_, ids) in zip(results, pairs, strict=True):
        for episode_id, dia_id in zip(result.episodes, ids, strict=False):
            evidence[doc_id("episode", episode_id)] = {dia_id}
        for claim, replaced in result.claims:
            # Only the first turn of a pair (the "user" message) is extracted.
            from_turns[doc_id("claim", claim.claim_id)] = {ids[0]}
            superseded += len(replaced)
    return evidence, from_turns, superseded


def run_episodes(
    data_file: Path, cache: Path | None, *, study: bool = False, images: bool = False
) -> dict[str, Any]:
    """Retrieval of evidence turns over ingested episodes: bm25, dense and hybrid."""
    started = time.perf_counter()
    conversations = json.loads(data_file.read_text(encoding="utf-8"))
    variants = DEFAULT + (STUDY if study else [])
    tally = _Tally(len(conversations), variants)
    over_claims_by_part = _Tally(len(conversations), [("hybrid", "hybrid", {})])
    count = episodes = extracted = superseded = 0
    # Extraction: the questions whose evidence turn produced a claim, searched over claims.
    over_claims = {"questions": 0, "ndcg@10": 0.0, "recall@10": 0.0, "hit@10": 0.0}
    ingest_seconds = index_seconds = 0.0
    with tempfile.TemporaryDirectory(prefix="lsp-memory-locomo-") as scratch:
        shared_cache = cache or Path(scratch) / "cache"
        for number, conversation in enumerate(conversations):
            config = replace(
                Config(), store=Path(scratch) / f"store-{number}", cache=shared_cache, user=USER
            )
            app = App(config)
            try:
                began = time.perf_counter()
                evidence, from_turns, replaced = ingest_turns(app, conversation, images=images)
                ingest_seconds += time.perf_counter() - began
                extracted += len(from_turns)
                superseded += replaced
                episodes += len(evidence)
                began = time.perf_counter()
                app.keeper.index()
                index_seconds += time.perf_counter() - began
                for question, relevant in questions_of(conversation, evidence):
                    found = _score(
                        app.hybrid_search(),
                        question,
                        kind="episode",
                        relevant=relevant,
                        variants=variants,
                    )
                    tally.add(number, found)
                    count += 1
                search = app.hybrid_search()
                for question, relevant in questions_of(conversation, from_turns):
                    hits = search.search(
                        question, user=USER, kinds={"claim"}, statuses=SHOWN_STATUSES, k=K
                    )
                    scores = metrics([h.id for h in hits], relevant)
                    over_claims_by_part.add(number, {"hybrid": scores})
                    over_claims["questions"] += 1
                    over_claims["ndcg@10"] += scores["ndcg@10"]
                    over_claims["recall@10"] += scores["recall@10"]
                    over_claims["hit@10"] += 1.0 if scores["recall@10"] else 0.0
            finally:
                app.close()
    report = tally.report(study, [name for name, _, _ in variants])
    asked = max(int(over_claims["questions"]), 1)
    report["extraction"] = {
        "claims": extracted,
        "superseded_on_write": superseded,
        "questions_with_an_extracted_claim": int(over_claims["questions"]),
        **{
            f"hybrid over claims {metric}": round(value / asked, 4)
            for metric, value in over_claims.items()
            if metric != "questions"
        },
        "hybrid over claims, by part": {
            part: {"questions": found["questions"], "ndcg@10": found["hybrid"]["ndcg@10"]}
            for part, found in over_claims_by_part.by_part(["hybrid"]).items()
        },
    }
    report.update(
        {
            "data": str(data_file),
            "over": "episodes",
            "images": images,
            "conversations": len(conversations),
            "episodes": episodes,
            "questions": count,
            "ingest_seconds": round(ingest_seconds, 1),
            "index_seconds": round(index_seconds, 1),
            "seconds": round(time.perf_counter() - started, 1),
        }
    )
    return report


def run(
    data_file: Path, study: bool, cache: Path | None, *, lineage: bool = False
) -> dict[str, Any]:
    started = time.perf_counter()
    conversations = json.loads(data_file.read_text(encoding="utf-8"))
    variants = DEFAULT + (STUDY if study else [])
    tally = _Tally(len(conversations), variants)
    count = claims = 0
    index_seconds = 0.0
    with tempfile.TemporaryDirectory(prefix="lsp-memory-locomo-") as scratch:
        shared_cache = cache or Path(scratch) / "cache"
        for number, conversation in enumerate(conversations):
            data, evidence = claims_of(conversation, lineage=lineage)
            config = replace(
                Config(),
                store=Path(scratch) / f"store-{number}",
                cache=shared_cache,
                user=USER,
                vaults=(),
            )
            app = App(config)
            try:
                if lineage:
                    app.store.add_episodes(turns_of(conversation))
                import_records(app.store, data, user=USER, source=f"conversation {number}")
                began = time.perf_counter()
                app.keeper.index()
                index_seconds += time.perf_counter() - began
                base = app.hybrid_search()
                for question, relevant in questions_of(conversation, evidence):
                    found = _score(
                        base, question, kind="claim", relevant=relevant, variants=variants
                    )
                    tally.add(number, found)
                    count += 1
                claims += len(evidence)
            finally:
                app.close()
    report = tally.report(study, [name for name, _, _ in variants])
    report.update(
        {
            "data": str(data_file),
            "conversations": len(conversations),
            "claims": claims,
            "lineage": lineage,
            "questions": count,
            "index_seconds": round(index_seconds, 1),
            "seconds": round(time.perf_counter() - started, 1),
        }
    )
    return report


TUNED = 3
"""The floor was chosen on the first three conversations of the dev split; the rest are held
out for reporting (the dev split is all the data there is)."""
_MODES: tuple[Mode, ...] = ("bm25", "dense", "hybrid")


@dataclass(frozen=True, slots=True)
class _Asker:
    """One question, by one method, asked of any store with or without a floor (the floor of
    the kind searched: ``shift`` is added to make it the ``min_similarity`` searched with)."""

    question: str
    vector: Any
    kind: str
    mode: Mode
    shift: float

    def __call__(self, engine: HybridSearch, k: int, floor: float | None) -> list[str]:
        hits = engine.search(
            self.question,
            user=USER,
            kinds={self.kind},
            k=k,
            mode=self.mode,
            query_vector=self.vector,
            min_similarity=None if floor is None else floor + self.shift,
        )
        return [hit.id for hit in hits]


def run_floor(
    data_file: Path,
    floors: Sequence[float],
    margins: Sequence[float],
    cache: Path | None,
    *,
    kind: str = "claim",
    methods: Sequence[Mode] = _MODES,
) -> dict[str, Any]:
    """The relevance floor's no-answer rate on other conversations and its cost on the
    question's own (module doc), for each floor and margin, by part of the split, over the
    conversations' claims or (``kind`` "episode") their ingested turns. ``floors`` are the
    floor of the kind searched: an episode's is ``EPISODE_FLOOR_BELOW`` under the configured
    ``min_similarity``, so that much is added to what the search is given."""
    shift = EPISODE_FLOOR_BELOW if kind == "episode" else 0.0
    started = time.perf_counter()
    conversations = json.loads(data_file.read_text(encoding="utf-8"))
    settings = [(floor, margin) for floor in floors for margin in margins]
    parts = {
        "tuned": set(range(TUNED)),
        "held_out": set(range(TUNED, len(conversations))),
        "all": set(range(len(conversations))),
    }
    # part → mode → setting (None: no floor) → sums
    sums: dict[str, dict[str, dict[Any, dict[str, float]]]] = {
        part: {
            mode: {
                key: {"ndcg@10": 0.0, "questions": 0, "empty": 0, "asked_elsewhere": 0}
                for key in (None, *settings)
            }
            for mode in methods
        }
        for part in parts
    }
    with tempfile.TemporaryDirectory(prefix="lsp-memory-locomo-") as scratch:
        shared_cache = cache or Path(scratch) / "cache"
        apps: list[App] = []
        asked: list[list[tuple[str, set[str]]]] = []
        try:
            for number, conversation in enumerate(conversations):
                config = replace(
                    Config(),
                    store=Path(scratch) / f"store-{number}",
                    cache=shared_cache,
                    user=USER,
                    vaults=(),
                )
                apps.append(App(config))
                if kind == "episode":
                    evidence = ingest_turns(apps[-1], conversation)[0]
                else:
                    data, evidence = claims_of(conversation)
                    import_records(apps[-1].store, data, user=USER, source=f"conversation {number}")
                apps[-1].keeper.index()
                asked.append(questions_of(conversation, evidence))
            base = [app.hybrid_search() for app in apps]
            engines = {
                margin: [
                    HybridSearch(b.text, b.vectors, b.embedder, floor_margin=margin) for b in base
                ]
                for margin in margins
            }
            embedder = base[0].embedder
            assert embedder is not None, "the floor needs the embedding model"
            for own, questions in enumerate(asked):
                into = [sums[part] for part, members in parts.items() if own in members]
                for question, relevant in questions:
                    vector = embedder.embed([question])[0]
                    for mode in methods:
                        ask = _Asker(question, vector, kind, mode, shift)
                        plain = metrics(ask(base[own], K, None), relevant)["ndcg@10"]
                        found: dict[Any, tuple[float, int]] = {None: (plain, 0)}
                        # Whether anything passes depends on the floor, not on the margin nor
                        # on k: one hit tells.
                        empty = {
                            floor: sum(
                                not ask(engines[margins[0]][other], 1, floor)
                                for other in range(len(apps))
                                if other != own
                            )
                            for floor in floors
                        }
                        for floor, margin in settings:
                            floored = metrics(ask(engines[margin][own], K, floor), relevant)
                            found[(floor, margin)] = (floored["ndcg@10"], empty[floor])
                        for sums_of in into:
                            for key, (score, nothing) in found.items():
                                tally = sums_of[mode][key]
                                tally["ndcg@10"] += score
                                tally["questions"] += 1
                                tally["empty"] += nothing
                                tally["asked_elsewhere"] += len(apps) - 1
        finally:
            for app in apps:
                app.close()
    report: dict[str, Any] = {"floor": {}, "over": kind}
    for part, by_mode in sums.items():
        rows: dict[str, Any] = {}
        for method, by_key in by_mode.items():
            unfloored = by_key[None]
            asked_n = max(int(unfloored["questions"]), 1)
            without = unfloored["ndcg@10"] / asked_n
            rows[method] = {"ndcg@10": round(without, 4), "floors": []}
            for floor, margin in settings:
                at = by_key[(floor, margin)]
                with_floor = at["ndcg@10"] / asked_n
                rows[method]["floors"].append(
                    {
                        "min_similarity": floor,
                        "margin": margin,
                        "ndcg@10": round(with_floor, 4),
                        "cost": round(without - with_floor, 4),
                        "no_answer": round(at["empty"] / max(at["asked_elsewhere"], 1), 4),
                    }
                )
        members = sorted(parts[part])
        report["floor"][part] = {
            "conversations": [str(conversations[i].get("sample_id", i)) for i in members],
            "questions": int(by_mode[methods[0]][None]["questions"]),
            **rows,
        }
    report.update(
        {
            "data": str(data_file),
            "conversations": len(conversations),
            "seconds": round(time.perf_counter() - started, 1),
        }
    )
    return report


def print_floor(report: dict[str, Any]) -> None:
    print(f"LoCoMo relevance floor ({report['seconds']} s)")
    for part, found in report["floor"].items():
        print(f"{part}: {', '.join(found['conversations'])} ({found['questions']} questions)")
        for mode in _MODES:
            if mode not in found:
                continue
            row = found[mode]
            print(f"  {mode:6} no floor   nDCG@10 {row['ndcg@10']:.4f}")
            for each in row["floors"]:
                print(
                    f"  {mode:6} floor {each['min_similarity']:.2f} margin {each['margin']:.2f}  "
                    f"nDCG@10 {each['ndcg@10']:.4f}  cost {each['cost']:+.4f}  "
                    f"no answer elsewhere {each['no_answer']:.3f}"
                )


def print_retrieval(report: dict[str, Any]) -> None:
    print(
        f"LoCoMo retrieval: {report['questions']} questions, {report['claims']} claims, "
        f"{report['conversations']} conversations ({report['seconds']} s)"
    )
    shown = [name for name, _, _ in DEFAULT]
    rows = report.get("study", {k: report[k] for k in shown})
    for name in dict.fromkeys((*shown, *rows)):  # each once, these first
        if name in rows or name in report:
            scores = rows.get(name) or report[name]
            print(
                f"  {name:18} nDCG@10 {scores['ndcg@10']:.3f}  Recall@10 "
                f"{scores['recall@10']:.3f}  Hit@5 {scores['hit@5']:.3f}"
            )
    for part, found in report["parts"].items():
        figures = "  ".join(f"{name} {found[name]['ndcg@10']:.3f}" for name in shown)
        print(f"  {part:9} ({found['questions']} questions) nDCG@10: {figures}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--data", type=Path, required=True, help="LoCoMo-format JSON file")
    parser.add_argument("--study", action="store_true", help="also measure other fusions")
    parser.add_argument("--cache", type=Path, help="keep embeddings here between runs")
    parser.add_argument(
        "--episodes", action="store_true", help="ingest the turns, search the episodes"
    )
    parser.add_argument(
        "--lineage",
        action="store_true",
        help="store the turns too, each claim derived from its evidence turns",
    )
    parser.add_argument(
        "--images",
        action="store_true",
        help="with --episodes: a turn that shared an image also says its caption",
    )
    parser.add_argument(
        "--floor",
        nargs="*",
        type=float,
        metavar="COSINE",
        help=f"measure the relevance floor at these values (default {DEFAULT_MIN_SIMILARITY}; "
        f"with --episodes the episodes' own floor, default "
        f"{DEFAULT_MIN_SIMILARITY - EPISODE_FLOOR_BELOW:g})",
    )
    parser.add_argument(
        "--margin",
        nargs="+",
        type=float,
        help=f"with --floor: the margins below the floor to try (default {FLOOR_MARGIN}; "
        f"{EPISODE_FLOOR_MARGIN} with --episodes)",
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        choices=_MODES,
        default=list(_MODES),
        help="with --floor: the search methods measured (default all three)",
    )
    args = parser.parse_args(argv)
    began = time.perf_counter()
    report = start_report("locomo", parameters=vars(args))
    if args.floor is not None:
        kind = "episode" if args.episodes else "claim"
        floors = args.floor or [
            DEFAULT_MIN_SIMILARITY - (EPISODE_FLOOR_BELOW if args.episodes else 0)
        ]
        margins = args.margin or [EPISODE_FLOOR_MARGIN if args.episodes else FLOOR_MARGIN]
        report |= run_floor(args.data, floors, margins, args.cache, kind=kind, methods=args.methods)
        emit(report, as_json=args.json, table=print_floor, began=began)
    elif args.episodes:  # always one JSON object
        report |= run_episodes(args.data, args.cache, study=args.study, images=args.images)
        emit(report, as_json=True, began=began)
    else:
        report |= run(args.data, args.study, args.cache, lineage=args.lineage)
        emit(report, as_json=args.json, table=print_retrieval, began=began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
