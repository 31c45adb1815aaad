"""A claim as it was at a moment, and its history, on a real store: single writes recorded
field by field (retract, restore, pin, a context added), a run that changed a claim and was
undone later (its changes hold between the two moments), a claim superseded before writes
were recorded (active until its ``valid_to``), and dates given to ``--as-of``."""

from __future__ import annotations

import contextlib
import json
import random
from datetime import UTC, datetime, timedelta

import pytest

from lsp_memory.errors import UserError
from lsp_memory.model import ClaimStatus
from lsp_memory.services.kernel.asof import (
    LiveThen,
    as_of_moment,
    claim_then,
    claims_then,
    history,
    live_then,
    status_since,
)
from lsp_memory.services.memory import records as records_module
from lsp_memory.services.memory.interchange import add_record
from lsp_memory.services.memory.records import Records
from lsp_memory.store.sqlite import ChangedSince, FieldChange, LaterRuns, Store
from tests.conftest import USER

DAY = "2026-01-01T00:00:00.000000Z"


def claim(store: Store, statement: str, **fields: object) -> str:
    """A new claim of ``USER``, created on ``DAY``; its id."""
    record = {"kind": "claim", "statement": statement, "created_at": DAY, **fields}
    return add_record(store, record, user=USER).claims[0].claim_id


def at(store: Store, claim_id: str, moment: str) -> tuple[str, float, bool] | None:
    found = store.claim_by_uuid(USER, claim_id)
    assert found is not None
    then = claim_then(store, USER, found, moment)
    return None if then is None else (then.status.value, then.confidence, then.pinned)


def test_single_writes_are_recorded_and_undone_in_time(store: Store) -> None:
    chess = claim(store, "I play chess on Sundays")
    add_record(store, {"kind": "context", "name": "Games", "friendly_id": "games"}, user=USER)
    store.set_pinned(USER, chess, True, "2026-02-01T00:00:00.000000Z")
    store.set_status(USER, chess, ClaimStatus.RETRACTED, "2026-03-01T00:00:00.000000Z")
    store.restore(USER, chess, "2026-04-01T00:00:00.000000Z")
    games = store.context_by_friendly_id(USER, "games")
    assert games is not None
    store.link_context(USER, chess, games.context_id, True, "2026-05-01T00:00:00.000000Z")

    assert at(store, chess, "2025-12-31T00:00:00.000000Z") is None
    assert at(store, chess, "2026-01-15T00:00:00.000000Z") == ("active", 1.0, False)
    assert at(store, chess, "2026-02-15T00:00:00.000000Z") == ("active", 1.0, True)
    assert at(store, chess, "2026-03-15T00:00:00.000000Z") == ("retracted", 1.0, True)
    assert at(store, chess, "2026-04-15T00:00:00.000000Z") == ("active", 1.0, True)
    found = store.claim_by_uuid(USER, chess)
    assert found is not None and found.contexts == ("games",)
    april = claim_then(store, USER, found, "2026-04-15T00:00:00.000000Z")
    assert april is not None and april.contexts == ()

    # Each write recorded the claim's updated_at: its recency as of a date is its last
    # write's by then, not its creation.
    updated = [
        then.updated_at[:10]
        for moment in ("2026-01-15", "2026-02-15", "2026-03-15", "2026-04-15", "2026-05-15")
        if (then := claim_then(store, USER, found, f"{moment}T00:00:00.000000Z"))
    ]
    assert updated == ["2026-01-01", "2026-02-01", "2026-03-01", "2026-04-01", "2026-05-01"]
    lines = [(c.at[:10], c.what, dict(c.fields)) for c in history(store, USER, found)]
    month = "2026-{:02}-01T00:00:00.000000Z".format
    assert lines == [
        ("2026-01-01", "created", {"status": (None, "active"), "confidence": (None, 1.0)}),
        ("2026-02-01", "pinned", {"pinned": (False, True), "updated_at": (DAY, month(2))}),
        (
            "2026-03-01",
            "retracted",
            {"status": ("active", "retracted"), "updated_at": (month(2), month(3))},
        ),
        (
            "2026-04-01",
            "restored",
            {"status": ("retracted", "active"), "updated_at": (month(3), month(4))},
        ),
        (
            "2026-05-01",
            "added to a context",
            {"context": (None, "games"), "updated_at": (month(4), month(5))},
        ),
    ]
    assert status_since(store, USER, found) == "2026-04-01T00:00:00.000000Z"


def test_a_run_undone_later_holds_between_its_time_and_its_undoing(store: Store) -> None:
    coffee = claim(store, "I like dark roast coffee", confidence=0.9)
    row = store._db.execute("SELECT id FROM claims WHERE claim_id = ?", (coffee,)).fetchone()[0]
    store.record_run(
        USER,
        kind="consolidate",
        now="2026-02-01T00:00:00.000000Z",
        created_at="2026-02-01T00:00:00.000000Z",
        changes=[
            FieldChange(row, "confidence", 0.9, 0.2, "decay"),
            FieldChange(row, "status", "active", "deprecated", "below 0.3"),
        ],
    )
    store.undo_run(USER, 1, "2026-03-01T00:00:00.000000Z")

    assert at(store, coffee, "2026-01-15T00:00:00.000000Z") == ("active", 0.9, False)
    assert at(store, coffee, "2026-02-15T00:00:00.000000Z") == ("deprecated", 0.2, False)
    assert at(store, coffee, "2026-03-15T00:00:00.000000Z") == ("active", 0.9, False)
    found = store.claim_by_uuid(USER, coffee)
    assert found is not None
    changes = history(store, USER, found)
    assert [(c.at[:10], c.run, c.undone) for c in changes[1:]] == [
        ("2026-02-01", 1, False),
        ("2026-02-01", 1, False),
        ("2026-03-01", 1, True),
    ]
    assert changes[-1].fields == {"status": ("deprecated", "active"), "confidence": (0.2, 0.9)}


def test_a_claim_superseded_before_writes_were_recorded(store: Store) -> None:
    new = claim(store, "I live in Berlin")
    old = claim(
        store,
        "I live in Lyon",
        status="superseded",
        superseded_by=new,
        valid_to="2026-06-01T00:00:00Z",
    )
    assert store._db.execute("SELECT count(*) FROM claim_writes").fetchone()[0] == 0
    assert at(store, old, "2026-05-01T00:00:00.000000Z") == ("active", 1.0, False)
    assert at(store, old, "2026-07-01T00:00:00.000000Z") == ("superseded", 1.0, False)
    berlin = store.claim_by_uuid(USER, new)
    assert berlin is not None
    replaced = [c for c in history(store, USER, berlin) if c.other is not None]
    assert [(c.at[:10], c.what, c.relation, c.other and c.other.statement) for c in replaced] == [
        ("2026-06-01", "supersedes", "replaces", "I live in Lyon")
    ]


def test_a_supersede_is_recorded_with_its_fields(store: Store) -> None:
    old, new = claim(store, "I live in Lyon"), claim(store, "I live in Berlin")
    store.supersede(USER, [old], new, "2026-06-01T00:00:00.000000Z")
    rows = store._db.execute("SELECT what, field, before, after FROM claim_writes ORDER BY id")
    assert [(w, f, json.loads(b), json.loads(a)) for w, f, b, a in rows] == [
        ("superseded", "status", "active", "superseded"),
        ("superseded", "superseded_by", None, new),
        ("superseded", "valid_to", None, "2026-06-01T00:00:00.000000Z"),
        ("superseded", "updated_at", DAY, "2026-06-01T00:00:00.000000Z"),
    ]


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("2026-03-01", "2026-03-01T23:59:59.999999Z"),
        ("2026-03-01T09:30:00Z", "2026-03-01T09:30:00.000000Z"),
        ("2026-03-01T09:30:00+02:00", "2026-03-01T07:30:00.000000Z"),
        (" 2026-03-01T09:30 ", "2026-03-01T09:30:00.000000Z"),
    ],
)
def test_as_of_dates(given: str, stored: str) -> None:
    assert as_of_moment(given) == stored


@pytest.mark.parametrize("given", ["yesterday", "", "2026-02-30", "2026-13-01", "10000-01-01"])
def test_a_bad_as_of_date_is_one_line(given: str) -> None:
    with pytest.raises(UserError, match=r"^not a date: .* \(give an ISO 8601 date or date-time"):
        as_of_moment(given)


def _day(n: int) -> str:
    """The ``n``-th day of 2026 at noon, stored."""
    return (datetime(2026, 1, 1, 12, tzinfo=UTC) + timedelta(days=n)).strftime(STAMP)


STAMP = "%Y-%m-%dT%H:%M:%S.000000Z"


def _write_a_history(store: Store, seed: int) -> list[str]:
    """Sixty claims made over 2026 with every kind of change after them: single writes
    (retract, restore, pin, unpin, supersede), runs changing status, confidence,
    ``valid_to`` and ``updated_at`` (some undone later), claims superseded before writes were
    recorded, claims valid only from a date or until one. The days written, in order."""
    rng = random.Random(seed)
    types = ("fact", "preference", "identity", "decision")
    made: list[str] = []
    for day in range(0, 300, 5):
        fields: dict[str, object] = {
            "claim_type": rng.choice(types),
            "confidence": rng.choice((0.2, 0.5, 0.6, 0.9, 1.0)),
            "pinned": rng.random() < 0.15,
            "created_at": _day(day),
            "updated_at": _day(day),
        }
        odd = rng.random()
        if odd < 0.1:
            fields["valid_from"] = _day(day + rng.randint(1, 60))
        elif odd < 0.2:
            fields["valid_to"] = _day(day + rng.randint(1, 60))
        elif odd < 0.3 and made:  # superseded before writes were recorded
            fields.update(
                status="superseded",
                superseded_by=rng.choice(made),
                valid_to=_day(day + rng.randint(-3, 60)),
            )
        record = {"kind": "claim", "statement": f"claim {day} of seed {seed}", **fields}
        made.append(add_record(store, record, user=USER).claims[0].claim_id)
        for _ in range(rng.randint(0, 3)):
            _change(store, rng, made, _day(day + 1 + rng.randint(0, 3)))
    return [_day(n) for n in range(0, 310, 5)]


def _change(store: Store, rng: random.Random, made: list[str], when: str) -> None:
    """One change to one of ``made`` at ``when``: a single write or a run, or an undo."""
    target = rng.choice(made)
    now = store.claim_by_uuid(USER, target)
    assert now is not None
    pick = rng.random()
    if pick < 0.15:
        store.set_status(USER, target, ClaimStatus.RETRACTED, when)
    elif pick < 0.25:
        store.restore(USER, target, when)
    elif pick < 0.4:
        store.set_pinned(USER, target, not now.pinned, when)
    elif pick < 0.5 and target != made[-1]:
        store.supersede(USER, [target], made[-1], when)
    elif pick < 0.9:
        row = store._db.execute("SELECT id FROM claims WHERE claim_id = ?", (target,)).fetchone()
        changes = [
            FieldChange(row[0], name, before, after, "test")
            for name, before, after in (
                ("confidence", now.confidence, rng.choice((0.1, 0.4, 0.55, 0.8))),
                (
                    "status",
                    now.status.value,
                    rng.choice(("active", "deprecated", "contested", "merged")),
                ),
                ("valid_to", now.valid_to, rng.choice((None, when))),
                ("updated_at", now.updated_at, when),
            )
            if rng.random() < 0.5 and before != after
        ]
        if changes:
            store.record_run(USER, kind="consolidate", now=when, created_at=when, changes=changes)
    else:
        last = store.last_run(USER)
        if last is not None:
            with contextlib.suppress(LaterRuns, ChangedSince):
                store.undo_run(USER, last.number, when)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_claims_live_at_a_moment_chosen_from_light_rows_are_those_put_back_whole(
    store: Store, seed: int
) -> None:
    """``LiveThen`` chooses a block's pinned claims and tiers from rows put back in SQL; each
    choice is the one made by putting every claim back whole (``claims_then``) and keeping
    those live then, newest (then) first — at every date of a history with every kind of
    change, on either side of each."""
    days = _write_a_history(store, seed)
    everyone = store.claims_by_ids(USER, [c.claim_id for c in store.claims(USER)], links=False)
    moments = sorted({*days, *(_day(n) for n in range(-1, 320, 7))})
    checked = 0
    for moment in moments:
        whole = [
            c for c in claims_then(store, USER, everyone, moment) if c and live_then(c, moment)
        ]
        whole.sort(key=lambda c: (c.updated_at, c.number), reverse=True)
        live = LiveThen(store, USER, moment)
        assert live.newest(len(everyone)) == whole, moment
        assert live.pinned() == [c for c in whole if c.pinned]
        confident = [c for c in whole if c.confidence >= 0.5]
        assert live.newest(5, min_confidence=0.5) == confident[:5]
        since = _day(100)
        kinds = ("identity", "preference")
        assert (
            live.newest(4, types=kinds, since=since, min_confidence=0.5)
            == [c for c in confident if set(kinds) & set(c.claim_types) and c.updated_at >= since][
                :4
            ]
        )
        asked = [c.claim_id for c in everyone[::3]]
        assert live.of(asked, 0.5) == {c.claim_id: c for c in confident if c.claim_id in asked}
        checked += len(whole)
    assert checked > 200  # the history is not empty at most dates


@pytest.mark.parametrize("seed", [1, 2])
def test_claim_list_as_of_a_page_at_a_time_is_the_list_put_back_whole(
    store: Store, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``claim list --as-of`` puts back a page of claims at a time and stops at its limit;
    with pages of 7, what it lists at every date of a history (by status then, limited) is
    what putting every claim back whole and filtering lists."""
    days = _write_a_history(store, seed)
    monkeypatch.setattr(records_module, "LIST_PAGE", 7)
    records = Records(store, USER)
    everyone = store.claims(USER)
    chosen = [None, [ClaimStatus.ACTIVE], [ClaimStatus.RETRACTED, ClaimStatus.SUPERSEDED]]
    listed = 0
    for moment in sorted({*days[::4], _day(-1), _day(400)}):
        whole = [c for c in claims_then(store, USER, everyone, moment) if c]
        for statuses in chosen:
            wanted = [c for c in whole if statuses is None or c.status in statuses]
            for limit in (None, 1, 5, 13):
                assert records.listed_then(statuses, limit, moment) == wanted[:limit], moment
            lean = records.listed_then(statuses, None, moment, links=False)
            assert [(c.number, c.status, c.statement) for c in lean] == [
                (c.number, c.status, c.statement) for c in wanted
            ]
            listed += len(wanted)
    assert listed > 100
