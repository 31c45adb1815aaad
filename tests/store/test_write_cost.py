"""Writes whose cost does not grow with the memory: the slot key (``claims.slot_key``) finds
the same supersede candidates as reading every live claim of the type, a migration fills it
for a store of version 6, and a single write reads no more of a large store than of a small
one (SQLite's virtual-machine steps counted, not time)."""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from lsp_memory import slots
from lsp_memory.errors import UserError
from lsp_memory.model import LIVE_STATUSES, ClaimStatus
from lsp_memory.services.memory.interchange import add_record, import_records
from lsp_memory.services.memory.records import Records
from lsp_memory.services.memory.supersede import UNINDEXED_WINDOW, _same_slot, superseded
from lsp_memory.slots import SOMEONE, fact, slot_key
from lsp_memory.store.schema import LIVE_IN_SQL, MIGRATIONS
from lsp_memory.store.sqlite import Store, open_store
from lsp_memory.store.sqlite.rows import _LIVE

USER = "ann"

SUBJECTS = (
    "I", "I'm", "My sister", "My sister Ana", "Ana", "My brother Ana", "My brother",
    "My little sister Eva", "Eva", "Tom", "My wife, Helen,", "Helen", "User", "My dad",
    "She", "My friend Élodie", "Élodie", "élodie",
)  # fmt: skip
PREDICATES = (
    "lives in {city}", "moved to {city}", "is based in {city}", "is now living in {city}",
    "works at {company}", "joined {company}", "works in {city}", "works in frontend",
    "is a doctor", "is a senior backend developer", "works as a nurse", "is {age}",
    "is {age} years old", "turned {age}", "got married", "is single", "is dating Sam",
    "was born on {age} May", "is pregnant", "is recovering from flu", "loves jazz",
    "lives in {city} and works at {company}", "am {age}", "'m based in {city}",
)  # fmt: skip
POSSESSIVES = (
    "My budget is £{age}00", "My budget for the holiday is £{age}", "My favourite tea is "
    "{company}", "Ana's birthday is {age} May", "My dad's job is plumber", "My email is "
    "a{age}@x.org", "Tom's salary is {age}k", "My sister's phone number is {age}",
)  # fmt: skip


def statement(rng: random.Random) -> str:
    values = {
        "city": rng.choice(("Lyon", "Porto", "Berlin", "Oslo")),
        "company": rng.choice(("Acme", "Globex", "Initech")),
        "age": str(rng.randint(10, 60)),
    }
    if rng.random() < 0.25:
        return rng.choice(POSSESSIVES).format(**values)
    subject, predicate = rng.choice(SUBJECTS), rng.choice(PREDICATES).format(**values)
    if subject == "I'm" or predicate.startswith("'m"):
        return f"I{predicate}" if predicate.startswith("'m") else f"I'm {predicate[3:]}"
    return f"{subject} {predicate}"


def lines(rng: random.Random, count: int) -> bytes:
    statuses = [s.value for s in ClaimStatus]
    rows = [
        {
            "kind": "claim",
            "statement": statement(rng) + f" {'.' * (n % 2)}".rstrip(),
            "claim_type": rng.choice(("identity", "relationship")),
            "status": rng.choice((*(["active"] * 4), *statuses)),
        }
        for n in range(count)
    ]
    return "\n".join(json.dumps(row) for row in rows).encode()


def by_reading_every_claim(store: Store, claim_type: str, text: str) -> set[str]:
    """The slot rule as it reads: every live claim of the type whose statement fills the
    new statement's slot for the same subject (no index, no pre-filter)."""
    new = fact(text)
    assert new is not None
    chosen = set()
    for claim in store.claims(USER, statuses=LIVE_STATUSES):
        old = fact(claim.statement, slot=new.slot)
        if (
            claim.claim_type == claim_type
            and old
            and old.slot == new.slot
            and old.who.same(new.who)
        ):
            chosen.add(claim.claim_id)
    return chosen


def test_the_slot_key_finds_what_reading_every_claim_finds(store: Store) -> None:
    """Random statements over the vocabulary's subjects and forms, in every status: for
    each new statement with a slot, the index lookup gives the same candidates as the
    rule applied to every stored claim (a claim the key misses would fail here)."""
    rng = random.Random(24)
    import_records(store, lines(rng, 600), user=USER, source="random")
    template = store.claims(USER)[0]
    checked = found = 0
    for _ in range(400):
        text, claim_type = statement(rng), rng.choice(("identity", "relationship"))
        new = fact(text)
        if new is None or new.who == SOMEONE:
            continue
        claim = replace(template, claim_id="new", statement=text, claim_types=(claim_type,))
        claim = replace(claim, entities=None)
        expected = by_reading_every_claim(store, claim_type, text)
        assert _same_slot(store, USER, claim, by_entity=False) == expected, text
        checked += 1
        found += len(expected)
    assert checked > 250 and found > 200  # the check compared many slots, most with candidates


def test_every_stored_claim_has_the_key_of_its_statement_and_its_type(store: Store) -> None:
    import_records(store, lines(random.Random(7), 200), user=USER, source="random")
    rows = store._db.execute("SELECT statement, slot_key, claim_type FROM claims").fetchall()
    assert all(key == slot_key(text) for text, key, _ in rows)
    assert sum(key is not None for _, key, _ in rows) > 100
    assert {(c.statement, c.claim_type) for c in store.claims(USER)} == {
        (text, kind) for text, _, kind in rows
    }


def test_a_store_of_version_6_gets_its_slot_keys(tmp_path: Path) -> None:
    """The migration to version 8 fills the columns for the claims already stored, and a
    new claim then supersedes one of them by slot."""
    with open_store(tmp_path, migrations=MIGRATIONS[:6]) as old:
        for number, text in enumerate(("I live in Lyon", "I love jazz", "Ana is 34"), start=1):
            old._db.execute(
                "INSERT INTO claims (claim_id, user, number, friendly_id, statement, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, '2024-01-01T00:00:00Z', "
                "'2024-01-01T00:00:00Z')",
                (f"c-{number}", USER, number, f"said_{number:04}", text),
            )
            old._db.execute("INSERT INTO claim_types VALUES (?, 0, 'identity')", (number,))
    with open_store(tmp_path) as upgraded:
        keys = upgraded._db.execute("SELECT claim_id, slot_key, claim_type FROM claims")
        assert [tuple(row) for row in keys] == [
            ("c-1", "residence\tme", "identity"),
            ("c-2", None, "identity"),
            ("c-3", "age\t@ana", "identity"),
        ]
        Records(upgraded, USER).add_claim("I moved to Berlin", claim_type="identity")
        lyon = upgraded.claim_by_uuid(USER, "c-1")
        assert lyon is not None and lyon.status is ClaimStatus.SUPERSEDED


def test_the_slot_lookup_and_the_recent_claims_use_an_index(store: Store) -> None:
    plans = {
        "slot": (
            "live_statements_in_slot",
            (USER, "identity", "residence\tme"),
            "claims_slot",
        ),
        "recent": ("newest_live_statements", (USER, "identity", 64), "claims_live_type"),
        "every live": ("live_statements_of_type", (USER, "emotional"), "claims_live_type"),
    }
    for what, (method, args, index) in plans.items():
        with traced(store) as statements:
            getattr(store, method)(*args)
        [sql] = statements
        plan = " ".join(row[3] for row in store._db.execute("EXPLAIN QUERY PLAN " + sql))
        assert "SCAN" not in plan and index in plan, (what, plan)
    assert LIVE_IN_SQL == _LIVE  # the partial index's condition is the queries' own


@contextmanager
def traced(store: Store) -> Iterator[list[str]]:
    """The SQL statements run inside the block, with their values (for a query plan)."""
    seen: list[str] = []
    store._db.set_trace_callback(seen.append)
    try:
        yield seen
    finally:
        store._db.set_trace_callback(None)


@contextmanager
def steps(db: sqlite3.Connection) -> Iterator[list[int]]:
    """SQLite virtual-machine steps taken inside the block (every 10th counted)."""
    count = [0]

    def tick() -> int:
        count[0] += 10
        return 0

    db.set_progress_handler(tick, 10)
    try:
        yield count
    finally:
        db.set_progress_handler(None, 0)


def filled(folder: Path, claims: int) -> Store:
    """A store with ``claims`` claims of the user's residence, all but the newest
    superseded (what repeated ingestion leaves), and one of another type."""
    store = open_store(folder)
    rows = [
        {
            "kind": "claim",
            "statement": f"I live in Town{n}",
            "claim_type": "identity",
            "status": "active" if n == claims - 1 else "superseded",
        }
        for n in range(claims)
    ]
    rows.append({"kind": "claim", "statement": "I like tea", "claim_type": "preference"})
    import_records(store, "\n".join(map(json.dumps, rows)).encode(), user=USER, source="x")
    return store


@pytest.mark.parametrize("write", ["add_claim", "newest_live_statements", "every_live"])
def test_a_single_write_reads_as_much_of_a_large_store_as_of_a_small_one(
    tmp_path: Path, write: str
) -> None:
    """``claim add`` (its keys, its number, the slot rule), the type's newest live claims
    the cosine test reads and every live claim of the type (the ``all`` rule): SQLite steps
    at 12 000 claims within 1.5× those at 1 200. Loading every friendly id, scanning the
    type's statements with ``LIKE`` and walking over the type's superseded claims each took
    ten times the steps."""
    counts = []
    for size in (1200, 12000):
        with filled(tmp_path / str(size), size) as store:
            with steps(store._db) as count:
                if write == "add_claim":
                    added = Records(store, USER).add_claim("I moved to Oslo", claim_type="identity")
                    assert [c.statement for c in superseded(store, USER, added)] == []
                elif write == "every_live":  # the `all` rule reads every live claim of a type
                    found = store.live_statements_of_type(USER, "identity")
                    assert [text for _, text in found] == [f"I live in Town{size - 1}"]
                else:
                    found = store.newest_live_statements(USER, "identity", UNINDEXED_WINDOW)
                    assert [text for _, text in found] == [f"I live in Town{size - 1}"]
            counts.append(count[0])
    assert counts[1] <= 1.5 * counts[0], counts


def test_a_single_write_still_refuses_a_friendly_id_or_number_taken(store: Store) -> None:
    first = add_record(store, {"kind": "claim", "statement": "I like tea"}, user=USER).claims[0]
    for given, why in (
        ({"friendly_id": first.friendly_id}, "duplicate friendly id"),
        ({"claim_number": first.number}, "duplicate claim_number"),
    ):
        with pytest.raises(UserError, match=why):
            add_record(store, {"kind": "claim", "statement": "Tea", **given}, user=USER)
    second = add_record(store, {"kind": "claim", "statement": "I like tea"}, user=USER).claims[0]
    assert second.number == first.number + 1 and second.friendly_id != first.friendly_id


def linked(folder: Path, count: int) -> Store:
    """A store with ``count`` contexts (all under the first) and ``count`` entities."""
    store = open_store(folder)
    rows: list[dict[str, object]] = [{"kind": "entity_type", "name": "person", "fields": []}]
    for n in range(count):
        parent = {"parent": "ctx0"} if n else {}
        rows.append({"kind": "context", "name": f"Context {n}", "friendly_id": f"ctx{n}", **parent})
        rows.append({"kind": "entity", "name": f"P{n}", "type": "person", "friendly_id": f"per{n}"})
    import_records(store, "\n".join(map(json.dumps, rows)).encode(), user=USER, source="x")
    return store


def test_a_single_write_reads_as_much_of_many_contexts_and_entities_as_of_few(
    tmp_path: Path,
) -> None:
    """A claim linked to a context and an entity, and a new context under another: SQLite
    steps with 3 000 contexts and entities within 1.5× those with 300 (loading every
    context's parent and every entity's id took ten times the steps)."""
    counts = []
    for size in (300, 3000):
        with linked(tmp_path / str(size), size) as store:
            records = Records(store, USER)
            with steps(store._db) as count:
                records.add_claim("I like tea", contexts=["ctx7"], entities=["per9"])
                records.add_context("Holidays", parent="ctx5")
            counts.append(count[0])
    assert counts[1] <= 1.5 * counts[0], counts


def test_a_single_write_still_checks_its_links_and_names(store: Store) -> None:
    records = Records(store, USER)
    records.add_context("Work", friendly_id="work")
    records.add_context("Trips", parent="work", friendly_id="trips")
    for call, why in (
        (lambda: records.add_claim("I like tea", contexts=["nowhere"]), "unknown context"),
        (lambda: records.add_claim("I like tea", entities=["nobody"]), "unknown entity"),
        (lambda: records.add_context("Trips", friendly_id="trips"), "duplicate friendly id"),
        (lambda: records.add_context("Away", parent="nowhere"), "not a known context"),
    ):
        with pytest.raises(UserError, match=why):
            call()
    made = records.add_context("Trips")  # a name taken: another friendly id is drawn
    assert made.friendly_id != "trips"
    assert records.add_context("Rome", parent="trips").parent == "trips"


def test_a_store_read_by_another_slot_reading_reads_its_keys_again(tmp_path: Path) -> None:
    """A claim's slot key is how ``lsp_memory.slots`` read it when it was stored: a store
    whose keys another version wrote (here: keys gone, another version noted) gets them
    read again when it is opened."""
    with open_store(tmp_path) as store:
        lyon = Records(store, USER).add_claim("I live in Lyon", claim_type="identity")
        store._db.execute("UPDATE claims SET slot_key = NULL")
        store._db.execute("UPDATE store_meta SET value = '0' WHERE key = 'slot_keys'")
    with open_store(tmp_path) as store:
        Records(store, USER).add_claim("I moved to Oslo", claim_type="identity")
        found = store.claim_by_uuid(USER, lyon.claim_id)
        assert found is not None and found.status is ClaimStatus.SUPERSEDED
        meta = store._db.execute("SELECT value FROM store_meta WHERE key = 'slot_keys'")
        assert meta.fetchone()[0] == str(slots.VERSION)


def test_the_slot_reading_s_version_follows_its_text() -> None:
    """Stores keep slot keys read by ``lsp_memory.slots``; a change to it without a new
    ``VERSION`` would leave them stale (a write would miss the claims of its slot)."""
    digest = hashlib.sha256(Path(slots.__file__).read_bytes()).hexdigest()[:12]
    assert (slots.VERSION, digest) == (1, "0e1ecdb6633e"), (
        "lsp_memory/slots.py changed: bump slots.VERSION (stores then read their slot keys "
        "again) and put the new version and digest here"
    )
