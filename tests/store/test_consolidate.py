"""Consolidation over a real store with the real embedding model: evidence, decay,
contradictions, merges and deprecation, each change recorded, the same run twice changing
nothing, a dry run writing nothing, incremental runs, and undo putting back exactly what a
run changed."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from lsp_memory import ids
from lsp_memory.app import App
from lsp_memory.config import Config, DecayRates, apply_settings
from lsp_memory.errors import UserError
from lsp_memory.model import Claim
from lsp_memory.services.memory.interchange import add_record
from lsp_memory.store.sqlite import STORE_FILE, Episode, Undone

USER = "ann"
DAY1 = "2026-01-01T00:00:00.000000Z"
DAY10 = "2026-01-10T00:00:00.000000Z"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    opened = App(Config(store=tmp_path / "store", user=USER, cache=tmp_path / "cache"))
    yield opened
    opened.close()


def add(app: App, statement: str, claim_type: str, **fields: Any) -> Claim:
    record = {
        "kind": "claim",
        "statement": statement,
        "claim_type": claim_type,
        "confidence": 0.9,
        "created_at": DAY1,
        **fields,
    }
    return add_record(app.store, record, user=USER).claims[0]


def claim(app: App, number: int) -> Claim:
    found = app.store.claim_by_number(USER, number)
    assert found is not None
    return found


def claims_table(app: App) -> list[tuple[Any, ...]]:
    with sqlite3.connect(app.config.store / STORE_FILE) as db:
        return db.execute("SELECT * FROM claims ORDER BY id").fetchall()


def episode(app: App, key: str, text: str, when: str) -> None:
    app.store.add_episodes([Episode(key, USER, "s1", "user", text, when, when)])


def test_an_episode_is_evidence_once(app: App) -> None:
    add(app, "I live in Lyon", "identity", confidence=0.8)
    episode(app, "ep-1", "I live in Lyon, France", "2026-01-05T00:00:00Z")
    episode(app, "ep-2", "My cat is called Miso", "2026-01-05T00:00:00Z")
    report = app.consolidation().run("2026-01-05T00:00:00.000000Z")
    lyon = claim(app, 1)
    assert lyon.confidence == pytest.approx(0.8 + 0.05 * 0.2, abs=1e-4)
    assert lyon.derived_from == ("ep-1",)  # the unrelated episode is not evidence
    assert lyon.evidence_count == 1
    fields = [c["field"] for c in report.changes if c["reason"].startswith("evidence")]
    assert fields == ["confidence", "derived_from", "evidence_count", "evidence_at"]
    # An episode no newer than the claim's last evidence does not count.
    episode(app, "ep-0", "I live in Lyon", "2026-01-02T00:00:00Z")
    again = app.consolidation().run("2026-01-05T00:00:00.000000Z")
    assert again.changes == []
    assert claim(app, 1).evidence_count == 1


def test_decay_follows_the_days_since_the_later_of_creation_evidence_and_its_last_decay(
    app: App,
) -> None:
    add(app, "I am learning Portuguese", "goal", confidence=0.9, derived_from=["ep-1"])
    add(
        app,
        "My passport number ends in 42",
        "identity",
        confidence=0.9,
        pinned=True,
        derived_from=["ep-2"],
    )
    app.consolidation().run(DAY10)
    assert claim(app, 1).confidence == pytest.approx(round(0.9 * math.exp(-0.09), 4))
    assert claim(app, 2).confidence == 0.9  # pinned claims do not decay
    before = claims_table(app)
    assert app.consolidation().run(DAY10).changes == []  # the same now: nothing
    assert claims_table(app) == before
    app.consolidation().run("2026-01-20T00:00:00.000000Z")  # ten more days since the run
    # One curve from creation: the first run's rounding (0.82253 → 0.8225) is not compounded.
    assert claim(app, 1).confidence == pytest.approx(round(0.9 * math.exp(-0.19), 4))


def every(start: str, step: timedelta, until: str) -> Iterator[str]:
    """The moments from ``start`` (excluded) to ``until`` (included), ``step`` apart."""
    moment, last = ids.moment_of(start) + step, ids.moment_of(until)
    while moment <= last:
        yield ids.stored(moment)
        moment += step


def test_decay_does_not_depend_on_how_often_consolidation_runs(app: App, tmp_path: Path) -> None:
    """Runs every 5 minutes for 30 days (each change below the rounding) end where one run at
    30 days does, within the rounding; so do runs every 3 days. A pinned claim never decays."""
    inferred = {"derived_from": ["ep-1"]}
    add(app, "I am learning Portuguese", "goal", **inferred)
    add(app, "My passport number ends in 42", "identity", pinned=True, **inferred)
    day30 = ids.stored(ids.moment_of(DAY1) + timedelta(days=30))
    for now in every(DAY1, timedelta(minutes=5), day30):
        app.consolidation().run(now)
    once = round(0.9 * math.exp(-0.3), 4)  # 0.6667: one run at 30 days
    assert claim(app, 1).confidence == pytest.approx(once, abs=1e-4)
    assert claim(app, 2).confidence == 0.9
    other = App(Config(store=tmp_path / "other", user=USER, cache=tmp_path / "cache"))
    try:
        add(other, "I am learning Portuguese", "goal", **inferred)
        for now in every(DAY1, timedelta(days=3), day30):
            other.consolidation().run(now)
        assert claim(other, 1).confidence == pytest.approx(once, abs=1e-3)
    finally:
        other.close()


def test_evidence_restarts_the_decay_clock(app: App) -> None:
    """An episode supporting a claim raises it, and its decay counts from the episode: runs
    every 5 minutes for 10 more days end where one curve from the evidence does."""
    add(app, "I live in Lyon", "identity", derived_from=["ep-0"])
    day20 = ids.stored(ids.moment_of(DAY1) + timedelta(days=20))
    app.consolidation().run(DAY10)
    episode(app, "ep-1", "I live in Lyon, France", day20)
    app.consolidation().run(day20)
    raised = claim(app, 1)
    assert raised.evidence_count == 1 and raised.confidence > round(0.9 * math.exp(-0.09), 4)
    day30 = ids.stored(ids.moment_of(day20) + timedelta(days=10))
    for now in every(day20, timedelta(minutes=5), day30):
        app.consolidation().run(now)
    expected = round(raised.confidence * math.exp(-0.1), 4)
    assert claim(app, 1).confidence == pytest.approx(expected, abs=1e-4)


def test_undo_puts_back_when_decay_was_last_applied(app: App) -> None:
    """A run's decay moves the claim's ``decayed_at`` with its confidence; undoing the run
    puts both back, so the next run decays the claim as the undone one did."""
    add(app, "I am learning Portuguese", "goal", derived_from=["ep-1"])
    app.consolidation().run(DAY10)
    before = claims_table(app)
    report = app.consolidation().run("2026-01-20T00:00:00.000000Z")
    fields = sorted(c["field"] for c in report.changes)
    assert fields == ["confidence", "decayed_at"]
    assert claims_table(app) != before
    app.consolidation().undo(report.run_id or 0)
    assert claims_table(app) == before
    again = app.consolidation().run("2026-01-20T00:00:00.000000Z")
    assert again.changes == report.changes


def test_what_the_user_stated_outlives_a_year_of_nightly_runs(app: App) -> None:
    """A claim the user wrote is not a guess: a year of nightly consolidations leaves it as it
    was; one extracted from a conversation that nothing confirmed since is deprecated within
    four months (0.01 a day)."""
    stated = add(app, "I'm allergic to penicillin", "identity", confidence=1.0)
    inferred = add(app, "I collect vintage stamps", "preference", derived_from=["ep-1"])
    assert (stated.origin, inferred.origin) == ("stated", "inferred")
    deprecated_on = None
    for day in range(1, 366):
        app.consolidation().run(ids.stored(ids.moment_of(DAY1) + timedelta(days=day)))
        if deprecated_on is None and claim(app, 2).status == "deprecated":
            deprecated_on = day
    penicillin = claim(app, 1)
    assert (penicillin.status, penicillin.confidence) == ("active", 1.0)
    assert deprecated_on is not None and 100 < deprecated_on < 120  # 0.9·e^(−0.01·d) < 0.3


def test_decay_rates_by_origin_and_category_are_a_setting(tmp_path: Path) -> None:
    base = Config(store=tmp_path / "store", user=USER, cache=tmp_path / "cache")
    setting = {"inferred": {"emotional": 0.05}, "stated": {"emotional": 0.02}}
    config, warnings = apply_settings(base, {"decay": setting}, base=tmp_path, origin="test")
    assert warnings == []
    opened = App(config)
    try:
        add(opened, "I feel anxious about the launch", "emotional")
        add(opened, "I'm stressed about the move", "emotional", derived_from=["ep-1"])
        add(opened, "I am learning Portuguese", "goal", derived_from=["ep-2"])
        add(opened, "I live in Lyon", "identity")
        opened.consolidation().run(DAY10)
        found = {n: claim(opened, n).confidence for n in (1, 2, 3, 4)}
    finally:
        opened.close()
    assert found == {
        1: round(0.9 * math.exp(-0.02 * 9), 4),
        2: round(0.9 * math.exp(-0.05 * 9), 4),
        3: round(0.9 * math.exp(-0.01 * 9), 4),
        4: 0.9,
    }
    for bad in ({"inferred": -1}, {"stated": {"feelings": 0.1}}, {"typed": 0}, 0.01):
        kept, warned = apply_settings(base, {"decay": bad}, base=tmp_path, origin="test")
        assert kept.decay == DecayRates() and len(warned) == 1 and "decay" in warned[0]
    assert kept.decay.rate("stated", "identity") == 0.0


def test_contradicting_claims_are_halved_contested_and_raised_for_review(app: App) -> None:
    add(app, "I live in Lyon", "identity")
    add(app, "I no longer live in Lyon", "identity", created_at="2026-01-03T00:00:00Z")
    add(app, "I don't like dark roast coffee", "preference")
    add(app, "I like light roast coffee", "preference")
    report = app.consolidation().run(DAY1)
    assert report.contradictions == 1
    first, second = claim(app, 1), claim(app, 2)
    assert (first.status, second.status) == ("contested", "contested")
    assert first.confidence == pytest.approx(0.45)
    assert second.confidence == pytest.approx(0.45)
    assert (claim(app, 3).status, claim(app, 4).status) == ("active", "active")
    [item] = report.review
    assert (item["kind"], item["claims"], item["proposal"]) == (
        "contradiction",
        ["#2", "#1"],  # the newer first: proposed to replace the older
        "CONTRADICTION",
    )
    assert item["id"] == 1
    assert app.consolidation().run(DAY1).review == []  # never raised twice


def test_paraphrases_merge_with_their_lineage(app: App) -> None:
    winner = add(app, "I like dark roast coffee", "preference", evidence_count=2)
    loser = add(
        app,
        "I really love dark roast coffee",
        "preference",
        confidence=0.8,
        evidence_count=1,
        derived_from=["ep-7"],
    )
    report = app.consolidation().run(DAY1)
    assert report.merged == 1
    merged, kept = claim(app, 2), claim(app, 1)
    assert merged.status == "merged"
    assert merged.merged_into == winner.claim_id
    assert kept.status == "active"
    assert kept.derived_from == (loser.claim_id, "ep-7")
    assert kept.evidence_count == 3


def test_two_values_of_one_slot_are_contested_whatever_their_cosine(app: App) -> None:
    """Claims "I work as a backend developer" and "I work in frontend now" (cosine 0.71,
    neither negated) give two values of one slot; both live (imported), they are contested like a
    contradiction, the newer proposed to replace the older."""
    add(app, "I work as a backend developer", "identity")
    add(app, "I work in frontend now", "identity", created_at="2026-01-03T00:00:00Z")
    add(app, "My sister lives in Porto", "relationship")
    add(app, "I live in Lyon", "identity")  # another slot, another person: no conflict
    report = app.consolidation().run(DAY1)
    assert report.contradictions == 1
    [item] = report.review
    assert (item["kind"], item["claims"], item["proposal"]) == (
        "contradiction",
        ["#2", "#1"],
        "CONTRADICTION",
    )
    assert "gives another value than" in item["reason"]
    assert [claim(app, n).status for n in (1, 2, 3, 4)] == [
        "contested",
        "contested",
        "active",
        "active",
    ]
    assert claim(app, 1).confidence == pytest.approx(0.45)
    assert app.consolidation().run(DAY1).review == []  # never raised twice


def test_a_similar_group_without_a_confident_claim_is_a_review_item(app: App) -> None:
    add(app, "I like dark roast coffee", "preference", confidence=0.6)
    add(app, "I really love dark roast coffee", "preference", confidence=0.55)
    report = app.consolidation().run(DAY1)
    assert report.merged == 0
    [item] = report.review
    assert (item["kind"], item["claims"], item["proposal"]) == ("merge", ["#1", "#2"], "MERGE")
    assert "none has confidence above 0.6" in item["reason"]
    assert app.review().decide(item["id"], "accept").message.startswith("review 1: merged #2")
    assert claim(app, 2).status == "merged"


def test_a_paraphrase_merges_and_archives_and_undo_puts_both_back(app: App) -> None:
    """Inflections and word families are not lost words: "allergic to peanuts" and "an
    allergy to peanuts" are one fact. The winner is updated as of the run, the loser
    archived; undo puts both back."""
    add(app, "I am allergic to peanuts", "constraint")
    add(app, "I have an allergy to peanuts", "constraint", confidence=0.8)
    before = claims_table(app)
    report = app.consolidation().run(DAY10)
    assert report.merged == 1
    assert claim(app, 2).merged_into == claim(app, 1).claim_id
    with sqlite3.connect(app.config.store / STORE_FILE) as db:
        found = db.execute("SELECT number, updated_at, archived_at FROM claims ORDER BY number")
        assert found.fetchall() == [(1, DAY10, None), (2, DAY1, DAY10)]
    fields = {(c["claim"], c["field"]) for c in report.changes}
    assert {("#1", "updated_at"), ("#2", "archived_at")} <= fields
    app.consolidation().undo(report.run_id or 0)
    assert claims_table(app) == before
    # Merged again, then restored by hand: no longer archived.
    app.consolidation().run(DAY10)
    app.records().restore(claim(app, 2))
    with sqlite3.connect(app.config.store / STORE_FILE) as db:
        assert db.execute("SELECT archived_at FROM claims WHERE number = 2").fetchone() == (None,)


def test_a_merge_that_would_lose_a_value_is_a_review_item(app: App) -> None:
    add(app, "I run 5 km before work every morning", "identity")
    add(app, "I run 10 km before work every morning", "identity")
    report = app.consolidation().run(DAY1)
    assert report.merged == 0
    [item] = report.review
    assert (item["kind"], item["proposal"]) == ("merge", "KEEP_BOTH")
    assert "5" in item["reason"] or "10" in item["reason"]
    assert {claim(app, 1).status, claim(app, 2).status} == {"active"}


def test_two_budgets_of_one_trip_are_two_values_of_one_slot(app: App) -> None:
    """The slot is read as supersede on write reads it (``lsp_memory.slots``): a budget
    for a purpose is a slot of its own, and its value keeps its thousands separator."""
    add(app, "My budget for the trip is £1,500", "constraint")
    add(app, "My budget for the trip is £2,000", "constraint")
    report = app.consolidation().run(DAY1)
    assert report.merged == 0
    [item] = report.review
    assert item["kind"] == "contradiction"
    assert "£1,500" in item["reason"] and "£2,000" in item["reason"]


def test_low_confidence_is_deprecated(app: App) -> None:
    add(app, "I once tried skydiving", "identity", confidence=0.31, derived_from=["ep-1"])
    report = app.consolidation().run(DAY10)
    assert report.deprecated == 1
    assert claim(app, 1).status == "deprecated"


def test_a_dry_run_writes_nothing(app: App) -> None:
    add(app, "I live in Lyon", "identity")
    add(app, "I no longer live in Lyon", "identity")
    before = claims_table(app)
    report = app.consolidation().run(DAY10, dry_run=True)
    assert report.run_id is None and report.changes and report.review
    assert claims_table(app) == before
    assert app.store.last_run(USER) is None
    assert app.store.review_items(USER) == []


def test_an_incremental_run_compares_new_claims_with_old_ones(app: App) -> None:
    old = add(app, "I like dark roast coffee", "preference")
    assert app.consolidation().run(DAY1).merged == 0
    add(app, "I really love dark roast coffee", "preference", confidence=0.7)
    assert app.consolidation().run(DAY1).merged == 1
    assert claim(app, 2).merged_into == old.claim_id


def test_undo_puts_back_exactly_what_the_run_changed(app: App) -> None:
    add(app, "I like dark roast coffee", "preference")
    add(app, "I really love dark roast coffee", "preference", confidence=0.8)
    add(app, "I live in Lyon", "identity")
    add(app, "I no longer live in Lyon", "identity")
    add(app, "I once tried skydiving", "identity", confidence=0.31, derived_from=["ep-1"])
    before = claims_table(app)
    report = app.consolidation().run(DAY10)
    assert report.merged and report.contradictions and report.deprecated
    undone = app.consolidation().undo(report.run_id or 0)
    assert undone == [Undone(report.run_id or 0, len(report.changes))]
    assert claims_table(app) == before
    assert app.store.review_items(USER) == []  # the run's items are withdrawn
    with pytest.raises(UserError, match="already undone"):
        app.consolidation().undo(report.run_id or 0)
    with pytest.raises(UserError, match="no run 99"):
        app.consolidation().undo(99)
    # Undone, the run no longer counts: the next one does it all again.
    assert app.consolidation().run(DAY10).merged == 1


def test_runs_and_items_are_per_user(app: App, tmp_path: Path) -> None:
    add(app, "I live in Lyon", "identity")
    add(app, "I no longer live in Lyon", "identity")
    app.consolidation().run(DAY1)
    other = App(Config(store=tmp_path / "store", user="bob", cache=tmp_path / "cache"))
    try:
        assert other.store.review_items("bob") == []
        with pytest.raises(UserError, match="no run 1"):
            other.consolidation().undo(1)
        assert other.consolidation().run(DAY1).run_id == 1  # numbered per user
    finally:
        other.close()
    assert claim(app, 1).status == "contested"


def test_a_run_planned_before_another_was_recorded_writes_nothing(app: App) -> None:
    from lsp_memory.store.sqlite import ConcurrentRun, FieldChange

    add(app, "I am learning Portuguese", "goal", derived_from=["ep-1"])
    app.consolidation().run(DAY10)
    before = claims_table(app)
    row = app.store.claim_states(USER)[0].row
    late = FieldChange(row, "confidence", 0.9, 0.1, "planned before run 1")
    with pytest.raises(ConcurrentRun):
        app.store.record_run(
            USER, kind="consolidate", now=DAY10, created_at=DAY10, changes=[late], follows=0
        )
    assert claims_table(app) == before
    assert app.store.last_run(USER).number == 1  # type: ignore[union-attr]


def test_only_what_retrieval_sees_goes_back_to_the_indexes(app: App) -> None:
    inferred = {"derived_from": ["ep-1"]}
    add(app, "I am learning Portuguese", "goal", confidence=0.9, **inferred)  # stays above 0.5
    add(app, "I am learning Italian", "goal", confidence=0.503, **inferred)  # decays below 0.5
    add(app, "I once tried skydiving", "identity", confidence=0.302, **inferred)  # deprecated
    seen = app.store.last_change()
    report = app.consolidation().run("2026-01-02T00:00:00.000000Z")
    assert len([c for c in report.changes if c["field"] == "confidence"]) == 3
    logged = {
        row
        for change in app.store.changes_since(seen)
        for row in range(change.row, change.last_row + 1)
    }
    rows = {
        s.number: s.row
        for s in app.store.claim_states(USER, [claim(app, n).claim_id for n in (1, 2, 3)])
    }
    assert logged == {rows[2], rows[3]}


def test_a_claim_changed_since_the_last_run_is_compared_again(app: App) -> None:
    """A run compares only claims new or changed since the last one; a claim restored since
    (an old row, a new ``updated_at``) is changed, so its negation and its slot's other value
    are found, though nothing else changed."""
    add(app, "I live in Lyon", "identity")
    add(app, "I no longer live in Lyon", "identity")
    add(app, "I work as a backend developer", "identity")
    add(app, "I work in frontend now", "identity", created_at=DAY10)
    for number in (2, 4):
        app.records().retract(claim(app, number))
    assert app.consolidation().run(DAY10).contradictions == 0
    assert app.consolidation().run(DAY10).changes == []
    for number in (2, 4):
        app.records().restore(claim(app, number))
    report = app.consolidation().run(DAY10)
    assert report.contradictions == 2
    assert {tuple(item["claims"]) for item in report.review} == {("#2", "#1"), ("#4", "#3")}


def test_a_run_that_changes_nothing_writes_nothing_and_gathers_no_vector(
    app: App, tmp_path: Path
) -> None:
    """Run again at the same time with nothing new, a run records itself and nothing else:
    no claim, review item or index change; and with no claim to compare it reads no vector
    (here the vector cache is emptied first: gathering them would embed every claim
    again)."""
    add(app, "I like dark roast coffee", "preference")
    add(app, "I really love dark roast coffee", "preference", confidence=0.8)
    add(app, "I live in Lyon", "identity")
    add(app, "I no longer live in Lyon", "identity")
    add(app, "I once tried skydiving", "identity", confidence=0.31, derived_from=["ep-1"])
    first = app.consolidation().run(DAY10)
    assert first.changes and first.review
    table, logged, items = claims_table(app), app.store.last_change(), app.review().items()
    with sqlite3.connect(tmp_path / "cache" / "vectors.sqlite3") as cache:
        cache.execute("DELETE FROM vectors")
    again = app.consolidation().run(DAY10)
    assert (again.changes, again.review, again.run_id) == ([], [], 2)
    assert claims_table(app) == table
    assert app.store.last_change() == logged
    assert app.review().items() == items
    with sqlite3.connect(tmp_path / "cache" / "vectors.sqlite3") as cache:
        assert cache.execute("SELECT count(*) FROM vectors").fetchone() == (0,)


def test_review_items_of_one_run(app: App) -> None:
    add(app, "I live in Lyon", "identity")
    add(app, "I no longer live in Lyon", "identity")
    app.consolidation().run(DAY1)
    add(app, "I am a vegetarian", "identity")
    add(app, "I am not a vegetarian", "identity")
    assert app.consolidation().run(DAY1).run_id == 2
    assert [i.number for i in app.store.review_items(USER, status=None, run=2)] == [2]
    assert [i.number for i in app.store.review_items(USER, run=1)] == [1]
    assert app.store.review_items(USER, run=3) == []


def test_lookups_by_claim_id_use_its_index(app: App) -> None:
    """A claim's status by id, and the check of open items' statuses, go by the claim_id
    index: on the (user, updated_at) one SQLite walked all the user's claims per call (1.2 s
    at 100k claims, once per open review item in each run)."""
    for n in range(20):
        add(app, f"I visited city number {n}", "identity")
    db = app.store._db
    db.execute("ANALYZE")  # even with statistics that favour the (user, updated_at) index
    ids = [s.claim_id for s in app.store.claim_states(USER)]

    def plan(run: Callable[[], object]) -> list[str]:
        traced: list[str] = []
        db.set_trace_callback(traced.append)
        run()
        db.set_trace_callback(None)
        return [row[3] for row in db.execute("EXPLAIN QUERY PLAN " + traced[0])]

    for steps in (
        plan(lambda: app.store.claim_statuses(USER, ids[:2])),
        plan(lambda: app.store.claim_states(USER, ids[:2])),
        plan(lambda: app.store.stale_items(USER)),
    ):
        assert not any("claims_user_updated" in step for step in steps), steps
        assert any("claim_id=?" in step for step in steps), steps


def test_stale_items_are_those_whose_claims_changed_since(app: App, tmp_path: Path) -> None:
    add(app, "I live in Lyon", "identity")
    add(app, "I no longer live in Lyon", "identity")
    add(app, "I am a vegetarian", "identity")
    add(app, "I am not a vegetarian", "identity")
    assert app.consolidation().run(DAY1).contradictions == 2
    assert app.store.stale_items(USER) == []
    vegetarian = claim(app, 3)
    [item] = [i for i in app.store.review_items(USER) if vegetarian.claim_id in i.claims]
    app.records().retract(vegetarian)
    assert app.store.stale_items(USER) == [item.number]
    assert app.store.stale_items("bob") == []
    app.consolidation().run(DAY1)
    withdrawn = app.store.review_items(USER, status="withdrawn")
    assert [i.number for i in withdrawn] == [item.number]


def test_a_run_after_one_that_settled_everything_still_sees_what_is_left_to_do(
    app: App,
) -> None:
    """With no claim new or changed since the last run, a run still applies a new
    message's evidence, decays at a later time, and deprecates a live claim below 0.3 that
    the last run did not (here one written into the store by hand)."""
    add(app, "I live in Lyon", "identity", confidence=0.8, derived_from=["ep-9"])
    add(app, "I am learning the cello", "goal", confidence=0.8)
    assert app.consolidation().run(DAY10).changes  # decay since DAY1
    assert app.consolidation().run(DAY10).changes == []
    episode(app, "ep-1", "I live in Lyon, France", DAY10)
    evidence = app.consolidation().run(DAY10)
    assert {c["field"] for c in evidence.changes} >= {"evidence_count", "derived_from"}
    later = app.consolidation().run("2026-01-20T00:00:00.000000Z")
    changed = [(c["claim"], c["field"]) for c in later.changes]
    assert changed == [("#1", "confidence"), ("#1", "decayed_at")]
    with sqlite3.connect(app.config.store / STORE_FILE) as db:
        db.execute("UPDATE claims SET confidence = 0.2 WHERE number = 2")
    dropped = app.consolidation().run("2026-01-20T00:00:00.000000Z")
    assert dropped.deprecated == 1
    assert claim(app, 2).status == "deprecated"


def test_a_version_8_store_decays_on_its_next_run_as_before(tmp_path: Path) -> None:
    """Version 9 gives each claim the moment its decay counted from before: its user's last
    consolidation not undone (none: creation or evidence, as before). The next run decays it
    over the days since, as version 8 did."""
    from lsp_memory.store.schema import MIGRATIONS
    from lsp_memory.store.sqlite import open_store

    folder = tmp_path / "store"
    with open_store(folder, migrations=MIGRATIONS[:8]) as old:
        db = old._db
        for number, user in ((1, USER), (2, "bob")):
            db.execute(
                "INSERT INTO claims (claim_id, user, number, friendly_id, statement, confidence, "
                "created_at, updated_at, derived_from, origin) "
                "VALUES (?, ?, 1, ?, 'I am learning Portuguese', 0.9, ?, ?, '[\"ep-1\"]', "
                "'inferred')",
                (f"c-{number}", user, f"learning_{number:04}", DAY1, DAY1),
            )
        for number, now, undone in ((1, DAY10, None), (2, "2026-01-15T00:00:00.000000Z", DAY10)):
            db.execute(
                "INSERT INTO runs (user, number, kind, now, created_at, undone_at) "
                "VALUES (?, ?, 'consolidate', ?, ?, ?)",
                (USER, number, now, now, undone),
            )
    opened = App(Config(store=folder, user=USER, cache=tmp_path / "cache"))
    try:
        decayed = dict(opened.store._db.execute("SELECT user, decayed_at FROM claims"))
        assert decayed == {USER: DAY10, "bob": None}  # the run undone does not count
        opened.consolidation().run("2026-01-20T00:00:00.000000Z")
        assert claim(opened, 1).confidence == round(0.9 * math.exp(-0.1), 4)  # since DAY10
    finally:
        opened.close()
