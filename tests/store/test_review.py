"""Review decisions on consolidation's items: accept, keep-both and reject, each a run that
``undo`` puts back; a decision on claims changed since is refused; a ``review_command``
decides in one batch, and when it crashes, hangs or answers garbage the items wait."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_memory.app import App
from lsp_memory.config import Config
from lsp_memory.errors import UserError
from lsp_memory.model import ClaimStatus
from tests.store.test_consolidate import DAY1, USER, add, claim, claims_table


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    opened = App(Config(store=tmp_path / "store", user=USER, cache=tmp_path / "cache"))
    add(opened, "I live in Lyon", "identity")
    add(opened, "I no longer live in Lyon", "identity", created_at="2026-01-03T00:00:00Z")
    add(opened, "I run 5 km before work every morning", "constraint")
    add(opened, "I run 10 km before work every morning", "constraint", confidence=0.8)
    report = opened.consolidation().run(DAY1)
    assert [item["kind"] for item in report.review] == ["contradiction", "merge"]
    yield opened
    opened.close()


def test_items_list_the_claims_as_they_are_now(app: App) -> None:
    first, second = app.review().items()
    assert (first["id"], first["kind"], first["proposal"], first["stale"]) == (
        1,
        "contradiction",
        "CONTRADICTION",
        False,
    )
    assert [c["claim"] for c in first["claims"]] == ["#2", "#1"]
    assert [c["status"] for c in first["claims"]] == ["contested", "contested"]
    assert [c["claim"] for c in second["claims"]] == ["#3", "#4"]


def test_accepting_a_contradiction_supersedes_the_older_claim(app: App) -> None:
    outcome = app.review().decide(1, "accept")
    assert outcome.message.startswith("review 1: #2 stands; #1 superseded by it (run ")
    newer, older = claim(app, 2), claim(app, 1)
    assert newer.status is ClaimStatus.ACTIVE
    assert newer.confidence == pytest.approx(0.9)  # the dispute's halving ends
    assert older.status is ClaimStatus.SUPERSEDED
    assert older.superseded_by == newer.claim_id and older.valid_to
    assert [i["id"] for i in app.review().items()] == [2]
    with pytest.raises(UserError, match="already closed"):
        app.review().decide(1, "reject")


def test_keep_both_leaves_both_live_and_undo_reopens_the_item(app: App) -> None:
    before = claims_table(app)
    outcome = app.review().decide(1, "keep-both")
    assert (claim(app, 1).status, claim(app, 2).status) == ("active", "active")
    app.consolidation().undo(outcome.run_id or 0)
    assert claims_table(app) == before
    assert [i["id"] for i in app.review().items()] == [1, 2]


def test_reject_changes_no_claim(app: App) -> None:
    before = claims_table(app)
    outcome = app.review().decide(2, "reject")
    assert outcome.message.startswith("review 2: rejected")
    assert claims_table(app) == before
    assert [i["id"] for i in app.review().items()] == [1]


def test_a_decision_on_claims_changed_since_is_refused(app: App) -> None:
    app.records().retract(claim(app, 1))
    before = claims_table(app)
    assert app.review().items()[0]["stale"] is True
    with pytest.raises(UserError) as refused:
        app.review().decide(1, "accept")
    message = str(refused.value)
    assert message.startswith("review item 1 is out of date: #1 ")
    assert "is now retracted (it was contested" in message
    assert "\n" not in message
    assert claims_table(app) == before
    # The next consolidation withdraws it.
    app.consolidation().run(DAY1)
    assert [i["id"] for i in app.review().items()] == [2]


def test_unknown_items_and_decisions(app: App) -> None:
    with pytest.raises(UserError, match="no review item 9"):
        app.review().decide(9, "accept")
    with pytest.raises(UserError, match="unknown review decision 'merge'"):
        app.review().decide(1, "merge")


def _command(tmp_path: Path, body: str) -> str:
    script = tmp_path / "decide.py"
    script.write_text("import json, sys, time\n" + body, encoding="utf-8")
    return f"{sys.executable} {script}"


def _with_command(app: App, command: str, timeout_s: float = 10.0) -> App:
    from dataclasses import replace

    return App(replace(app.config, review_command=command, review_timeout_s=timeout_s))


def test_a_review_command_decides_every_item_in_one_batch(app: App, tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    command = _command(
        tmp_path,
        f"items = json.load(sys.stdin)\nopen({str(calls)!r}, 'a').write('x')\n"
        "print(json.dumps([{'id': i['id'], 'decision': 'KEEP_BOTH'} for i in items]))\n",
    )
    decider = _with_command(app, command)
    try:
        outcomes, failed = decider.review().ask_command()
    finally:
        decider.close()
    assert failed is None
    assert calls.read_text() == "x"  # one call for both items
    assert [o.item for o in outcomes] == [1, 2]
    assert app.review().items() == []
    assert (claim(app, 1).status, claim(app, 2).status) == ("active", "active")


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("sys.exit('model not loaded')", "exit status 1: model not loaded"),
        ("time.sleep(30)", "no answer within 1 s"),
        ("print('MERGE them all')", "output is not JSON"),
        ("print(json.dumps([{'id': 1, 'decision': 'PERHAPS'}]))", "unknown decision 'PERHAPS'"),
        ("print(json.dumps([{'id': 7, 'decision': 'MERGE'}]))", "item 7, which was not asked"),
    ],
)
def test_a_failing_review_command_leaves_the_items_waiting(
    app: App, tmp_path: Path, body: str, why: str
) -> None:
    before = claims_table(app)
    decider = _with_command(app, _command(tmp_path, body), timeout_s=1.0)
    try:
        outcomes, failed = decider.review().ask_command()
    finally:
        decider.close()
    assert outcomes == []
    assert failed is not None and why in failed
    assert failed.startswith("review_command failed (")
    assert claims_table(app) == before
    assert [i["id"] for i in app.review().items()] == [1, 2]
