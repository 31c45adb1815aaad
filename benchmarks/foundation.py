"""The foundation benchmark: import rate, resolve latency and reference-grammar throughput.

    .venv/bin/python -m benchmarks.foundation [--claims 100000] [--contexts 2000]
        [--entities 5000] [--repeat N] [--json] [--seed 7] [--workdir DIR]

A seeded generator builds, in memory, the JSONL interchange files (docs/reference.md, Interchange
format) of one user
(claims, a five-level context tree, tags, entity types and entities with ``entity_ref``
fields) and of a second user (``"user": "other"``, as many claims, its own small tree). Then:

1. **Import**: ``import_records`` of the first user's file into an empty store, then of the
   second user's file into the same (now populated) store; ``--repeat`` rounds, each into a
   fresh store; claims/s and records/s, median and range. The store file size afterwards.
2. **Resolve**: ``Resolver.resolve`` of parsed references (``parse_argument`` is outside the
   timed region) for every reference kind, after a warm-up; p50/p90/p99/max in ms
   (``benchmarks.common.percentile``). Every warm-up result is checked (kind, id, and for
   contexts the exact claim count).
3. **Grammar**: ``refs.parse`` of ~8 MB of generated Markdown prose with references of every
   kind, code spans, fenced blocks and some non-ASCII text, with ``markdown=True`` and
   ``False``; best and median of the rounds, in MB/s (10^6 bytes of UTF-8).

Stores go to a temporary folder that is removed afterwards, or under ``--workdir`` (kept).
Results are printed as a table, each figure next to its target, or as one JSON object.
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, emit, latency_ms, print_head, start_report, workspace
from lsp_memory import ids, refs
from lsp_memory.model import Reference
from lsp_memory.services.kernel.resolver import Resolution, Resolver, parse_argument
from lsp_memory.services.memory.interchange import import_records
from lsp_memory.store.sqlite import STORE_FILE, open_store

USER = "bench"
OTHER_USER = "other"

# Targets from the issue.
TARGET_IMPORT_CLAIMS_PER_S = 20_000.0
TARGET_SINGLE_CLAIM_P99_MS = 1.0
TARGET_CONTEXT_500_P99_MS = 10.0
TARGET_GRAMMAR_MB_PER_S = 10.0

BIG_CONTEXT_CLAIMS = 500  # the context size the resolve target is about
RESOLVES = 2000  # timed resolutions per reference kind
BIG_RESOLVES = 300  # timed resolutions of the ~500-claim context
WARMUP = 100
CASE_BUDGET_S = 15.0  # a kind far slower than its target stops here (with ≥ MIN_RUNS runs)
MIN_RUNS = 300
GRAMMAR_BYTES = 8_000_000
GRAMMAR_ROUNDS = 5

WORDS = """
account agenda airport album analysis answer apple archive article audit autumn backup badge
balance banner battery beach bicycle billing blog board book border bridge budget bug
build cabin cache calendar camera campaign canvas career castle chapter chart checklist
client cloud coach coffee column comment compiler concert contract cookie copy course
credit customer cycle dashboard database deadline debt deploy design desk diary dinner
doctor document domain draft dream editor email energy engine estimate event exercise
feature feedback festival field figure finance flight folder forest format frame friend
garden gateway gift goal grammar graph guitar habit harbor health hiking holiday hospital
hotel idea incident index insurance interview invoice island issue journal kernel kitchen
ladder language laptop launch lawyer lesson letter library license lunch manual map market
meeting memory mentor message method migration milestone model module monitor morning
mountain museum network newsletter notebook office onboarding orchard package painting
paper parser partner password payment pension phone photo piano pipeline planning plugin
podcast policy portfolio postcard poster present printer priority process product profile
project prototype puzzle query queue quarter radio recipe record release report request
research review river roadmap roof router runbook salary sandbox schedule schema school
script season server service session shelf shopping signal sketch sleep snapshot soccer
software spring sprint staging station storage story strategy studio subscription summary
supplier support survey swimming system table tablet task teacher team template tennis
terminal ticket timeline token tooling training travel trip tutorial upgrade vacation
vendor version video village violin vision visit volunteer wallet warehouse weather website
wedding weekend window winter workshop yoga
""".split()

ADJECTIVES = """
quiet early late weekly daily monthly remote local shared private quick slow careful
detailed simple strict flexible urgent optional main backup legacy modern annual personal
""".split()

OPENINGS = [
    "I prefer",
    "I usually",
    "We decided to",
    "My team plans to",
    "The client wants",
    "I need to",
    "Remember that the",
    "Our",
    "The",
    "I stopped using the",
    "I am working on the",
    "My manager asked for a",
    "Next quarter the",
    "I learned that the",
]

CLAIM_TYPES = [
    "fact",
    "preference",
    "decision",
    "goal",
    "identity",
    "relationship",
    "project-active",
    "constraint",
    "emotional",
]
DOMAINS = ["work", "health", "personal", "finance", "learning", "family", "travel", "hobbies"]
# Mostly active; the rest spread over the other statuses (only active/contested are "live").
STATUSES = ["active"] * 88 + ["contested"] * 4 + ["retracted"] * 3 + ["superseded"] * 3
STATUSES += ["deprecated", "merged"]
LIVE = frozenset({"active", "contested"})
FIRST_NAMES = """
Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy Rupert Sybil
Trent Victor Walter Yara Zoe Amir Bea Chen Dana Elif Farid Gosia Hana Ines Jonas Kenji Lena
""".split()
LAST_NAMES = """
Smith Jones Garcia Muller Rossi Novak Kim Tanaka Silva Dubois Ivanova Okafor Larsen Haddad
Schmidt Moreau Costa Nguyen Patel Cohen Kowalski Berg Fischer Romero Sato Walsh
""".split()
NON_ASCII = ["café", "naïve", "Zürich", "東京の会議", "メモを確認", "数据库", "🚀", "✨", "résumé"]
ENTITY_TYPES = {
    "Person": {
        "email": "email",
        "role": "text",
        "start_date": "date",
        "skills": "text_list",
        "team": "entity_ref",
        "manager": "entity_ref",
        "profile": "note_ref",
    },
    "Team": {"lead": "entity_ref", "members": "entity_ref_list"},
    "Project": {
        "owner": "entity_ref",
        "team": "entity_ref",
        "status": "select",
        "related": "entity_ref_list",
    },
}
"""The entity types of the first user and their fields (name → type), in this order."""


# -- data generation --------------------------------------------------------------------------


@dataclass(slots=True)
class UserData:
    """One user's generated JSONL and what the benchmark needs to know about it."""

    data: bytes
    records: int
    claims: int
    claim_fids: list[str]  # index n-1 holds claim number n
    context_fids: list[str]
    context_names: list[str]
    context_levels: list[int]  # 1 (roots) to 5 (leaves)
    live_in_context: list[int]  # distinct live claims linked to the context or a descendant
    entity_fids: list[str]
    leaf_tag_fids: list[str]
    tag_claims: dict[str, int] = field(default_factory=dict)  # leaf tag → live claims
    entity_claims: dict[str, int] = field(default_factory=dict)  # entity → live claims


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _statement(rng: random.Random) -> str:
    """A sentence of 40 to 200 characters."""
    length = rng.randint(40, 200)
    parts = [rng.choice(OPENINGS), rng.choice(ADJECTIVES), rng.choice(WORDS)]
    size = sum(len(p) + 1 for p in parts)
    while size < length - 1:
        word = rng.choice(WORDS) if rng.random() < 0.8 else rng.choice(ADJECTIVES)
        if rng.random() < 0.01:
            word = rng.choice(NON_ASCII)
        parts.append(word)
        size += len(word) + 1
    text = " ".join(parts)
    return text[: length - 1].rstrip() + "."


def _level_sizes(total: int) -> list[int]:
    """How many contexts on each of the five levels: few roots, most of them leaves."""
    sizes = [max(1, round(total * share)) for share in (0.002, 0.008, 0.04, 0.2)]
    sizes.append(max(1, total - sum(sizes)))
    return sizes


def _distinct_name(rng: random.Random, taken: set[str]) -> str:
    while True:
        count = rng.choice((2, 2, 3))
        name = " ".join(w.capitalize() for w in rng.sample(ADJECTIVES + WORDS, count))
        if name.lower() not in taken:
            taken.add(name.lower())
            return name


def generate_user(
    rng: random.Random,
    *,
    user: str | None,
    claims: int,
    contexts: int,
    entities: int,
    tags: int,
) -> UserData:
    """One user's records as JSONL bytes. ``user`` None leaves the field out (the import's
    default user applies)."""
    lines: list[str] = []
    start = datetime(2023, 1, 1, tzinfo=UTC)
    scope: dict[str, Any] = {} if user is None else {"user": user}

    def add(record: dict[str, Any]) -> None:
        lines.append(json.dumps({**record, **scope}, ensure_ascii=False))

    # Contexts: a five-level tree. Levels 2-4 spread evenly over their parents; the leaves
    # pick a parent at random, so level-4 contexts hold anywhere from 0 to ~10 leaves.
    names: set[str] = set()
    context_fids: list[str] = []
    context_names: list[str] = []
    context_levels: list[int] = []
    parent_of: list[int] = []
    previous: list[int] = []
    for level, size in enumerate(_level_sizes(contexts), start=1):
        current: list[int] = []
        for position in range(size):
            index = len(context_fids)
            name = _distinct_name(rng, names)
            initials = "".join(word[0] for word in name.lower().split())
            fid = f"{initials}_{index:04d}"  # never the name key: that has no digits
            parent = -1
            if previous:
                parent = previous[position % len(previous)] if level < 5 else rng.choice(previous)
            record: dict[str, Any] = {
                "kind": "context",
                "context_id": _uuid(rng),
                "friendly_id": fid,
                "name": name,
                "description": f"Level {level} context for {name.lower()}.",
                "created_at": "2023-01-01T00:00:00Z",
            }
            if parent >= 0:
                record["parent"] = context_fids[parent]
            add(record)
            context_fids.append(fid)
            context_names.append(name)
            context_levels.append(level)
            parent_of.append(parent)
            current.append(index)
        previous = current
    ancestors: list[tuple[int, ...]] = []
    for index in range(len(context_fids)):
        chain = [index]
        while parent_of[chain[-1]] >= 0:
            chain.append(parent_of[chain[-1]])
        ancestors.append(tuple(chain))

    # Tags: a two-level tree; claims carry leaf tags.
    tag_fids: list[str] = []
    leaf_tag_fids: list[str] = []
    parent_tags = max(1, tags // 5) if tags else 0
    for index in range(tags):
        word = rng.choice(WORDS)
        fid = f"{word}_{index}_tag"
        record = {"kind": "tag", "friendly_id": fid, "name": word.capitalize()}
        if index >= parent_tags:
            record["parent"] = tag_fids[index % parent_tags]
            leaf_tag_fids.append(fid)
        add(record)
        tag_fids.append(fid)

    # Entity types and entities, linked to each other through entity_ref fields.
    entity_fids: list[str] = []
    if entities:
        for type_name, type_fields in ENTITY_TYPES.items():
            listed = [{"name": name, "type": kind} for name, kind in type_fields.items()]
            add({"kind": "entity_type", "name": type_name, "fields": listed})
        teams = max(1, entities // 50)
        projects = max(1, entities // 4)
        people = max(1, entities - teams - projects)
        kinds = ["Team"] * teams + ["Person"] * people + ["Project"] * projects
        kinds = kinds[:entities]
        entity_names: list[str] = []
        for index, kind in enumerate(kinds):
            if kind == "Person":
                name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
            elif kind == "Team":
                name = f"{rng.choice(WORDS).capitalize()} Team"
            else:
                name = f"Project {rng.choice(WORDS).capitalize()} {rng.choice(WORDS).capitalize()}"
            entity_names.append(name)
            entity_fids.append(f"{ids.slug(name, max_words=3)}_{kind.lower()}_{index}")
        team_fids = entity_fids[:teams]
        person_fids = entity_fids[teams : teams + people] or team_fids
        for index, kind in enumerate(kinds):
            fields: dict[str, Any]
            if kind == "Person":
                first = entity_names[index].split()[0].lower()
                fields = {
                    "email": f"{first}.{index}@example.com",
                    "role": rng.choice(["Engineer", "Designer", "Manager", "Analyst", "Lawyer"]),
                    "start_date": _stamp(start - timedelta(days=rng.randrange(5000)))[:10],
                    "skills": rng.sample(WORDS, 2),
                    "team": rng.choice(team_fids),
                }
                if rng.random() < 0.7:
                    fields["manager"] = rng.choice(person_fids)
                if rng.random() < 0.2:
                    fields["profile"] = f"people/{entity_fids[index]}"
            elif kind == "Team":
                members = rng.sample(person_fids, min(4, len(person_fids)))
                fields = {"lead": members[0], "members": ", ".join(members)}
            else:
                fields = {
                    "owner": rng.choice(person_fids),
                    "team": rng.choice(team_fids),
                    "status": rng.choice(["planned", "active", "done"]),
                    "related": rng.sample(entity_fids, 2),
                }
            add(
                {
                    "kind": "entity",
                    "entity_id": _uuid(rng),
                    "friendly_id": entity_fids[index],
                    "name": entity_names[index],
                    "type": kind,
                    "fields": fields,
                    "created_at": "2023-06-01T00:00:00Z",
                }
            )

    # Claims, with the counts the resolve checks need.
    live_counts = [0] * len(context_fids)
    tag_claims: Counter[str] = Counter()
    entity_claims: Counter[str] = Counter()
    claim_fids: list[str] = []
    taken: set[str] = set()
    for number in range(1, claims + 1):
        statement = _statement(rng)
        fid = ids.friendly_id(statement, taken, suffix=lambda: f"{rng.getrandbits(16):04x}")
        taken.add(fid)
        claim_fids.append(fid)
        created = start + timedelta(seconds=rng.randrange(3 * 365 * 86400))
        updated = created + timedelta(seconds=rng.randrange(60 * 86400))
        status = rng.choice(STATUSES)
        linked = rng.sample(range(len(context_fids)), rng.choice((1, 1, 1, 2, 2)))
        types = [rng.choice(CLAIM_TYPES)]
        if rng.random() < 0.15:
            types.append(rng.choice(CLAIM_TYPES))
        domains = [rng.choice(DOMAINS)]
        if rng.random() < 0.25:
            domains.append(rng.choice(DOMAINS))
        record = {
            "kind": "claim",
            "claim_id": _uuid(rng),
            "claim_number": number,
            "friendly_id": fid,
            "statement": statement,
            "claim_type": types[0],
            "claim_types": list(dict.fromkeys(types)),
            "context_domain": domains[0],
            "context_domains": list(dict.fromkeys(domains)),
            "status": status,
            "confidence": round(rng.uniform(0.3, 1.0), 2),
            "contexts": [context_fids[i] for i in linked],
            "created_at": _stamp(created),
            "updated_at": _stamp(updated),
        }
        if rng.random() < 0.3:
            record["possible_questions"] = [
                f"What about the {rng.choice(WORDS)}?" for _ in range(rng.choice((1, 1, 2)))
            ]
        claim_tags: list[str] = []
        if leaf_tag_fids and rng.random() < 0.3:
            claim_tags = rng.sample(leaf_tag_fids, rng.choice((1, 1, 2)))
            record["tags"] = claim_tags
        claim_entities: list[str] = []
        if entity_fids and rng.random() < 0.2:
            claim_entities = rng.sample(entity_fids, rng.choice((1, 1, 2)))
            record["entities"] = claim_entities
        if rng.random() < 0.002:
            record["pinned"] = True
        if rng.random() < 0.1:
            record["meta"] = {"source": rng.choice(["chat", "import", "note"])}
        add(record)
        if status in LIVE:
            for context in {a for i in linked for a in ancestors[i]}:
                live_counts[context] += 1
            tag_claims.update(claim_tags)
            entity_claims.update(claim_entities)

    data = ("\n".join(lines) + "\n").encode("utf-8")
    return UserData(
        data=data,
        records=len(lines),
        claims=claims,
        claim_fids=claim_fids,
        context_fids=context_fids,
        context_names=context_names,
        context_levels=context_levels,
        live_in_context=live_counts,
        entity_fids=entity_fids,
        leaf_tag_fids=leaf_tag_fids,
        tag_claims=dict(tag_claims),
        entity_claims=dict(entity_claims),
    )


def grammar_text(rng: random.Random, size: int) -> str:
    """About ``size`` bytes of Markdown prose: headings, paragraphs, lists, a reference every
    70-130 characters of text (every kind, plus look-alikes that are not references), inline code
    spans, fenced code blocks, and non-ASCII text on about 5% of lines."""

    def word() -> str:
        return rng.choice(WORDS)

    # Each kind below its threshold of one draw in [0, 1); the rest, look-alikes.
    kinds: list[tuple[float, Callable[[], str]]] = [
        (0.25, lambda: f"#{rng.randint(1, 99_999)}"),
        (0.35, lambda: f"@claim_{rng.randint(1, 99_999)}"),
        (0.6, lambda: f"@{word()}_{word()}_{rng.getrandbits(16):04x}"),
        (0.68, lambda: f"@{rng.choice(('memory', 'mem'))}:{uuid.UUID(int=rng.getrandbits(128))}"),
        (0.8, lambda: f"[[{word().capitalize()} {word().capitalize()}]]"),
        (0.85, lambda: f"[[{word()}/{word()}#Notes|the {word()}]]"),
        (0.9, lambda: f"(@{word()}_{word()})."),
    ]

    def reference() -> str:
        pick = rng.random()
        for below, make in kinds:
            if pick < below:
                return make()
        # Look-alikes: never references.
        return rng.choice(("user@example.com", "@ab", "#42a", "issue#7", "a@b.c"))

    def line() -> str:
        parts: list[str] = []
        length = 0
        target = rng.randint(60, 120)
        next_ref = rng.randint(70, 130) - rng.randint(0, 70)
        while length < target:
            if length >= next_ref:
                word = reference()
                next_ref = length + rng.randint(70, 130)
            elif rng.random() < 0.004:
                word = f"`{rng.choice(WORDS)}(@{rng.choice(WORDS)}_x)`"
            else:
                word = rng.choice(WORDS) if rng.random() < 0.85 else rng.choice(ADJECTIVES)
            parts.append(word)
            length += len(word) + 1
        if rng.random() < 0.06:
            parts.insert(rng.randrange(len(parts) + 1), rng.choice(NON_ASCII))
        return " ".join(parts)

    out: list[str] = []
    total = 0
    while total < size:
        pick = rng.random()
        if pick < 0.08:
            block = f"## {rng.choice(WORDS).capitalize()} {rng.choice(WORDS)}"
        elif pick < 0.1:
            body = "\n".join(
                f"    call(@{rng.choice(WORDS)}_{rng.choice(WORDS)}, #{rng.randint(1, 999)})"
                for _ in range(rng.randint(2, 5))
            )
            block = f"```python\n{body}\n```"
        elif pick < 0.3:
            block = "\n".join(f"- {line()}" for _ in range(rng.randint(2, 5)))
        else:
            block = "\n".join(line() for _ in range(rng.randint(2, 6)))
        out.append(block)
        total += len(block.encode("utf-8")) + 2
    return "\n\n".join(out) + "\n"


# -- measuring --------------------------------------------------------------------------------


def _file_size(folder: Path) -> int:
    return sum(
        (folder / name).stat().st_size
        for name in (STORE_FILE, STORE_FILE + "-wal")
        if (folder / name).exists()
    )


def bench_import(
    base: Path, first: UserData, second: UserData, rounds: int
) -> tuple[dict[str, Any], Path]:
    """``rounds`` imports of both files, each round into a fresh store. Returns the figures
    and the last round's store folder (left in place for the resolve benchmark)."""
    times: dict[str, list[float]] = {"first": [], "second": []}
    folder = base
    size = 0
    for round_number in range(rounds):
        if round_number:
            shutil.rmtree(folder)
        folder = Path(tempfile.mkdtemp(prefix=f"store{round_number}-", dir=base))
        with open_store(folder) as store:
            for key, data in (("first", first), ("second", second)):
                started = time.perf_counter()
                import_records(store, data.data, user=USER, source=f"{key}.jsonl")
                times[key].append(time.perf_counter() - started)
        size = _file_size(folder)  # closing checkpoints the WAL into the main file

    def figures(key: str, data: UserData) -> dict[str, Any]:
        seconds = times[key]
        median = statistics.median(seconds)
        return {
            "claims": data.claims,
            "records": data.records,
            "megabytes": len(data.data) / 1e6,
            "seconds": seconds,
            "seconds_median": median,
            "claims_per_s": data.claims / median,
            "claims_per_s_range": [data.claims / max(seconds), data.claims / min(seconds)],
            "records_per_s": data.records / median,
        }

    return (
        {
            "rounds": rounds,
            "first_user": figures("first", first),
            "second_user": figures("second", second),
            "store_bytes": size,
            "store_bytes_per_claim": size / (first.claims + second.claims),
        },
        folder,
    )


@dataclass(slots=True)
class Case:
    """One reference kind to resolve: the arguments and the check on each warm-up result."""

    key: str
    label: str
    arguments: list[str]
    check: Callable[[str, Resolution], str | None]  # an error message, or None
    target_ms: float | None = None
    note: str = ""


def run_case(resolver: Resolver, case: Case, warmup: int) -> dict[str, Any]:
    parsed: list[Reference] = [parse_argument(argument) for argument in case.arguments]
    problems: list[str] = []
    claims_returned: list[int] = []
    for argument, reference in zip(case.arguments[:warmup], parsed[:warmup], strict=True):
        resolution = resolver.resolve(reference)
        problem = case.check(argument, resolution)
        if problem:
            problems.append(problem)
        claims_returned.append(len(resolution.claims))
    timed = parsed[warmup:]
    samples: list[float] = []
    clock = time.perf_counter
    resolve = resolver.resolve
    deadline = clock() + CASE_BUDGET_S
    for reference in timed:
        started = clock()
        resolve(reference)
        ended = clock()
        samples.append(ended - started)
        if ended > deadline and len(samples) >= MIN_RUNS:
            break
    figures = latency_ms(samples)
    result: dict[str, Any] = {
        "label": case.label,
        "runs": len(samples),
        "runs_planned": len(timed),
        **figures,
        "claims_returned_mean": statistics.fmean(claims_returned) if claims_returned else 0,
        "target_p99_ms": case.target_ms,
        "met": None if case.target_ms is None else figures["p99_ms"] <= case.target_ms,
        "check_failures": problems[:5],
        "check_failure_count": len(problems),
    }
    if case.note:
        result["note"] = case.note
    return result


def bench_resolve(folder: Path, data: UserData, rng: random.Random) -> dict[str, Any]:
    """Latency of every reference kind, against the first user's records."""
    # The context closest to 500 live claims through its descendants (ties: the first).
    big = min(
        range(len(data.context_fids)),
        key=lambda i: (abs(data.live_in_context[i] - BIG_CONTEXT_CLAIMS), i),
    )
    big_fid, big_name = data.context_fids[big], data.context_names[big]
    big_count = data.live_in_context[big]
    big_key = "_".join(big_name.lower().split())
    claim_fids = set(data.claim_fids)
    context_fids = set(data.context_fids)
    leaves = [
        i
        for i, level in enumerate(data.context_levels)
        if level == max(data.context_levels)
        and "_".join(data.context_names[i].lower().split()) not in claim_fids | context_fids
    ]
    fid_of_key = {
        "_".join(name.lower().split()): fid
        for fid, name in zip(data.context_fids, data.context_names, strict=True)
    }
    count_of_fid = dict(zip(data.context_fids, data.live_in_context, strict=True))
    number_of_fid = {fid: n for n, fid in enumerate(data.claim_fids, start=1)}
    total = WARMUP + RESOLVES

    def claim_check(argument: str, found: Resolution) -> str | None:
        number = int(argument[1:]) if argument.startswith("#") else number_of_fid[argument[1:]]
        if found.kind != "claim" or found.id != data.claim_fids[number - 1]:
            return f"{argument} → {found.kind} {found.id} {found.error or ''}"
        return None

    def context_check(argument: str, found: Resolution) -> str | None:
        target = argument[1:]
        fid = target if target in count_of_fid else fid_of_key[target]
        if found.kind != "context" or found.id != fid or len(found.claims) != count_of_fid[fid]:
            return (
                f"{argument} → {found.kind} {found.id} with {len(found.claims)} claims, "
                f"expected {fid} with {count_of_fid[fid]}"
            )
        return None

    def entity_check(argument: str, found: Resolution) -> str | None:
        expected = data.entity_claims.get(argument[1:], 0)
        if found.kind != "entity" or found.id != argument[1:] or len(found.claims) != expected:
            return f"{argument} → {found.kind} {found.id} ({len(found.claims)} claims)"
        return None

    def tag_check(argument: str, found: Resolution) -> str | None:
        expected = data.tag_claims.get(argument[1:], 0)
        if found.kind != "tag" or found.id != argument[1:] or len(found.claims) != expected:
            return f"{argument} → {found.kind} {found.id} ({len(found.claims)} claims)"
        return None

    def unresolved_check(argument: str, found: Resolution) -> str | None:
        return None if found.kind is None and found.error else f"{argument} → {found.kind}"

    leaf_sample = [rng.choice(leaves) for _ in range(total)]
    cases = [
        Case(
            "number",
            "#N (claim by number)",
            [f"#{rng.randint(1, data.claims)}" for _ in range(total)],
            claim_check,
            TARGET_SINGLE_CLAIM_P99_MS,
        ),
        Case(
            "claim_friendly_id",
            "@friendly_id (claim)",
            [f"@{rng.choice(data.claim_fids)}" for _ in range(total)],
            claim_check,
            TARGET_SINGLE_CLAIM_P99_MS,
        ),
        Case(
            "context_500_friendly_id",
            f"@{big_fid} (context, {big_count} claims)",
            [f"@{big_fid}"] * (WARMUP // 5 + BIG_RESOLVES),
            context_check,
            TARGET_CONTEXT_500_P99_MS,
        ),
        Case(
            "context_500_name",
            f"@{big_key} (same context by name)",
            [f"@{big_key}"] * (WARMUP // 5 + BIG_RESOLVES),
            context_check,
            TARGET_CONTEXT_500_P99_MS,
        ),
        Case(
            "context_leaf_name",
            "@name_key (random leaf contexts by name)",
            ["@" + "_".join(data.context_names[i].lower().split()) for i in leaf_sample],
            context_check,
            note="name fallback: the same leaves as the next row, by name",
        ),
        Case(
            "context_leaf_friendly_id",
            "@friendly_id (same leaf contexts)",
            [f"@{data.context_fids[i]}" for i in leaf_sample],
            context_check,
        ),
    ]
    for key, label, pool, check in (
        ("entity", "@entity (entity + its claims)", data.entity_fids, entity_check),
        ("tag", "@tag (random leaf tags)", data.leaf_tag_fids, tag_check),
    ):
        if pool:  # a user without entities or tags has no such case
            cases.append(Case(key, label, [f"@{rng.choice(pool)}" for _ in range(total)], check))
    cases.append(
        Case(
            "unresolved",
            "@unknown_id (unresolved)",
            [f"@missing_{rng.getrandbits(32):08x}_zz" for _ in range(total)],
            unresolved_check,
        )
    )
    results: dict[str, Any] = {
        "big_context": {
            "friendly_id": big_fid,
            "name": big_name,
            "name_key": big_key,
            "level": data.context_levels[big],
            "live_claims": big_count,
        },
        "cases": {},
    }
    with open_store(folder) as store:
        resolver = Resolver(store, USER)
        for case in cases:
            warmup = WARMUP // 5 if case.key.startswith("context_500") else WARMUP
            results["cases"][case.key] = run_case(resolver, case, warmup)
    return results


def bench_grammar(text: str, rounds: int) -> dict[str, Any]:
    megabytes = len(text.encode("utf-8")) / 1e6
    lines = [line for line in text.splitlines() if line.strip()]
    non_ascii = sum(1 for line in lines if not line.isascii())
    result: dict[str, Any] = {
        "megabytes": megabytes,
        "lines": len(lines),
        "non_ascii_lines_share": non_ascii / max(1, len(lines)),
        "rounds": rounds,
    }
    for markdown in (True, False):
        seconds: list[float] = []
        tokens = 0
        for _ in range(rounds):
            started = time.perf_counter()
            parsed = refs.parse(text, markdown=markdown)
            seconds.append(time.perf_counter() - started)
            tokens = len(parsed.references)
        result["markdown" if markdown else "plain"] = {
            "tokens": tokens,
            "chars_per_token": len(text) / max(1, tokens),
            "seconds": seconds,
            "mb_per_s_best": megabytes / min(seconds),
            "mb_per_s_median": megabytes / statistics.median(seconds),
            "target_mb_per_s": TARGET_GRAMMAR_MB_PER_S,
            "met": megabytes / statistics.median(seconds) >= TARGET_GRAMMAR_MB_PER_S,
        }
    return result


# -- output -----------------------------------------------------------------------------------


def _mark(met: bool | None) -> str:
    return "" if met is None else ("✓" if met else "✗")


def print_table(report: dict[str, Any]) -> None:
    params = report["parameters"]
    print_head(
        "lsp-memory foundation benchmark",
        report,
        f"{params['claims']} claims, {params['contexts']} contexts, "
        f"{params['entities']} entities for {USER!r}; {params['claims']} claims for "
        f"{OTHER_USER!r}; seed {params['seed']}; generated in {report['generate_s']:.1f} s",
    )
    imp = report["import"]
    print(f"\nImport (median of {imp['rounds']} rounds, each into a fresh store)")
    print(f"  {'':50} {'claims/s':>10} {'records/s':>10} {'range (claims/s)':>18}  target")
    for key, label in (
        ("first_user", "first user, empty store"),
        ("second_user", "second user, populated store"),
    ):
        row = imp[key]
        low, high = row["claims_per_s_range"]
        met = row["claims_per_s"] >= TARGET_IMPORT_CLAIMS_PER_S
        described = f"{label} ({row['claims']} claims, {row['megabytes']:.0f} MB)"
        print(
            f"  {described:50} "
            f"{row['claims_per_s']:>10,.0f} {row['records_per_s']:>10,.0f} "
            f"{f'{low:,.0f}-{high:,.0f}':>18}  ≥ {TARGET_IMPORT_CLAIMS_PER_S:,.0f} "
            f"{_mark(met)}"
        )
    print(
        f"  store file: {imp['store_bytes'] / 1e6:.1f} MB "
        f"({imp['store_bytes_per_claim']:.0f} bytes per claim)"
    )
    res = report["resolve"]
    big = res["big_context"]
    print(
        f"\nResolve latency in ms (Resolver.resolve only); the ~500-claim context: "
        f"{big['name']!r} @{big['friendly_id']} (level {big['level']}, "
        f"{big['live_claims']} live claims)"
    )
    print(
        f"  {'reference':48} {'runs':>5} {'claims':>7} {'p50':>7} {'p90':>7} {'p99':>7} "
        f"{'max':>7}  target p99"
    )
    any_capped = False
    for row in res["cases"].values():
        target = row["target_p99_ms"]
        capped = row["runs"] < row["runs_planned"]
        any_capped = any_capped or capped
        print(
            f"  {row['label'][:48]:48} {row['runs']:>5}{'*' if capped else ' '}"
            f"{row['claims_returned_mean']:>7.1f} "
            f"{row['p50_ms']:>7.3f} {row['p90_ms']:>7.3f} {row['p99_ms']:>7.3f} "
            f"{row['max_ms']:>7.3f}  "
            + (f"≤ {target:g} {_mark(row['met'])}" if target is not None else "—")
        )
        if row["check_failure_count"]:
            print(f"    CHECK FAILED ({row['check_failure_count']}): {row['check_failures'][0]}")
    if any_capped:
        print(f"  * stopped after {CASE_BUDGET_S:g} s of timed runs (planned {RESOLVES})")
    gram = report["grammar"]
    print(
        f"\nGrammar: refs.parse of {gram['megabytes']:.1f} MB Markdown "
        f"({gram['non_ascii_lines_share']:.1%} of lines non-ASCII), {gram['rounds']} rounds"
    )
    print(
        f"  {'mode':20} {'tokens':>8} {'chars/token':>11} {'best MB/s':>10} "
        f"{'median MB/s':>12}  target"
    )
    for key, label in (("markdown", "markdown=True"), ("plain", "markdown=False")):
        row = gram[key]
        print(
            f"  {label:20} {row['tokens']:>8} {row['chars_per_token']:>11.0f} "
            f"{row['mb_per_s_best']:>10.1f} "
            f"{row['mb_per_s_median']:>12.1f}  ≥ {TARGET_GRAMMAR_MB_PER_S:g} {_mark(row['met'])}"
        )
    print(
        f"\ntotal {report['total_s']:.0f} s, peak RSS {report['peak_rss_mib_harness']:.0f} MiB; "
        f"load average at end {report['load_average_at_end']}"
    )


# -- main -------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__, seed=True, claims=100_000)
    parser.add_argument("--contexts", type=int, default=2000, help="contexts of the first user")
    parser.add_argument("--entities", type=int, default=5000, help="entities of the first user")
    parser.add_argument(
        "--repeat", type=int, default=3, help="import rounds, each into a fresh store"
    )
    parser.add_argument("--workdir", type=Path, help="put the stores here and keep them")
    args = parser.parse_args(argv)
    if args.claims < 10 or args.contexts < 5 or args.repeat < 1:
        parser.error("need --claims ≥ 10, --contexts ≥ 5 and --repeat ≥ 1")

    began = time.perf_counter()
    names = ("claims", "contexts", "entities", "repeat", "seed")
    data = start_report("foundation", parameters={name: getattr(args, name) for name in names})
    rng = random.Random(args.seed)
    first = generate_user(
        rng,
        user=None,
        claims=args.claims,
        contexts=args.contexts,
        entities=args.entities,
        tags=max(5, args.contexts // 10),
    )
    second = generate_user(
        rng,
        user=OTHER_USER,
        claims=args.claims,
        contexts=max(5, args.contexts // 10),
        entities=0,
        tags=0,
    )
    text = grammar_text(rng, GRAMMAR_BYTES)
    data["generate_s"] = time.perf_counter() - began
    with workspace("foundation", args.workdir) as base:
        data["import"], folder = bench_import(base, first, second, args.repeat)
        data["resolve"] = bench_resolve(folder, first, rng)
    data["grammar"] = bench_grammar(text, GRAMMAR_ROUNDS)
    data["store_folder"] = str(folder) if args.workdir is not None else None
    emit(data, as_json=args.json, table=print_table, began=began)
    failures = sum(row["check_failure_count"] for row in data["resolve"]["cases"].values())
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
