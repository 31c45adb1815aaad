"""``lsp-memory consolidate --undo`` in every order of two consolidations and a review
decision: A raises a contradiction about Lyon; B, after two claims about green tea arrive,
raises one about tea; a decision (accept or reject) on the item of A or of B; and the undoing
of each. After every step the claims, the review items and what ``claim list`` and ``claim
show`` print are what the runs not undone make of them. An undo that a later run depends
on is refused with one line naming that run and leaves the store byte for byte as it was;
``--cascade`` ends where undoing the later runs one by one, newest first, ends. Also: a later
consolidation that decayed the run's claims, a claim changed outside any run since, and an
item whose run was undone out of order by an earlier version."""

from __future__ import annotations

import copy
import itertools
import json
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lsp_memory.cli import main
from lsp_memory.store.sqlite import STORE_FILE
from lsp_memory.store.vectors import Embedder
from tests.conftest import snapshot

DAY1 = "2026-01-01T00:00:00Z"  # when every claim was made and every run is as of: no decay
LYON = [("I live in Lyon", "identity"), ("I no longer live in Lyon", "identity")]
TEA = [("I like green tea", "preference"), ("I don't like green tea", "preference")]
GROUPS = {"L": (1, 2), "T": (3, 4)}  # claim numbers, the older first
HALF = 0.45  # a contested claim's confidence (0.9 halved)


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder.load()


@pytest.fixture(autouse=True)
def one_model(embedder: Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each command runs in this process, as ``python -m lsp_memory`` would, with the model
    loaded once for the module (it takes 0.2 s a command otherwise), and a home of its own."""
    monkeypatch.setattr(Embedder, "load", classmethod(lambda cls, *_, **__: embedder))
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.setenv("LSP_MEMORY_USER", "ann")
    monkeypatch.delenv("LSP_MEMORY_STORE", raising=False)
    monkeypatch.chdir(tmp_path)


@dataclass
class Cli:
    """The command line over one store."""

    store: Path
    capsys: pytest.CaptureFixture[str]

    def __call__(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = main(["--store", str(self.store), *args])
        out, err = self.capsys.readouterr()
        return code, out, err

    def ok(self, *args: str) -> str:
        code, out, err = self(*args)
        assert code == 0, (args, out, err)
        return out

    def refused(self, *args: str) -> str:
        """The one line a refused command prints (exit status 1, nothing on stdout)."""
        code, out, err = self(*args)
        assert (code, out) == (1, ""), (args, code, out, err)
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("lsp-memory: error: "), err
        return lines[0]

    def add(
        self,
        claims: list[tuple[str, str]],
        tmp_path: Path,
        confidence: float = 0.9,
        *,
        inferred: bool = False,
    ) -> None:
        """Import ``claims``; ``inferred``: each extracted from a message (so it decays)."""
        path = tmp_path / "claims.jsonl"
        path.write_text(
            "".join(
                json.dumps(
                    {
                        "kind": "claim",
                        "statement": statement,
                        "claim_type": claim_type,
                        "confidence": confidence,
                        "created_at": DAY1,
                        **({"derived_from": [f"message-{statement}"]} if inferred else {}),
                    }
                )
                + "\n"
                for statement, claim_type in claims
            ),
            encoding="utf-8",
        )
        self.ok("import", str(path))

    def consolidate(self, now: str = DAY1) -> int:
        return int(json.loads(self.ok("consolidate", "--now", now, "--json"))["run_id"])

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        db = sqlite3.connect(self.store / STORE_FILE)
        try:
            return db.execute(sql, params).fetchall()
        finally:
            db.close()

    def claims(self) -> dict[int, tuple[str, float, str | None, str | None, str | None, str]]:
        """Claim number → status, confidence, superseded_by, valid_to, merged_into, id."""
        rows = self.query(
            "SELECT number, status, confidence, superseded_by, valid_to, merged_into, claim_id "
            "FROM claims ORDER BY number"
        )
        return {row[0]: row[1:] for row in rows}

    def items(self) -> list[tuple[int, int, tuple[int, ...], str]]:
        """Every review item: number, its run's number, its claims' numbers, status."""
        number = {row[5]: n for n, row in self.claims().items()}
        rows = self.query(
            "SELECT i.number, r.number, i.claims, i.status FROM review_items i "
            "JOIN runs r ON r.id = i.run ORDER BY i.number"
        )
        return [
            (item, run, tuple(sorted(number[c] for c in json.loads(ids))), status)
            for item, run, ids, status in rows
        ]


def tables(store: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table of the store, row by row; when a run was undone counts, not the time."""
    db = sqlite3.connect(store / STORE_FILE)
    try:
        names = [
            row[0]
            for row in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        found = {
            name: db.execute(f"SELECT * FROM {name} ORDER BY 1, 2").fetchall() for name in names
        }
        found["runs"] = db.execute(
            "SELECT id, user, number, kind, now, created_at, episode_mark, claim_mark, summary, "
            "undone_at IS NOT NULL FROM runs ORDER BY id"
        ).fetchall()
        return found
    finally:
        db.close()


# -- the model: what the user should end up with ------------------------------------------


@dataclass
class Group:
    """Two claims that contradict each other, as the runs not undone left them."""

    phase: str = "absent"  # absent, fresh, contested, accepted, rejected
    raiser: str | None = None  # the run (A or B) whose item is about them


@dataclass
class Model:
    groups: dict[str, Group] = field(default_factory=lambda: {"L": Group("fresh"), "T": Group()})
    runs: dict[str, int] = field(default_factory=dict)  # A, B, D → run number
    undone: set[str] = field(default_factory=set)
    decided: str | None = None  # the run whose item D decided (None: D refused, or not yet)


def orders(raiser: str) -> Iterator[tuple[str, ...]]:
    """Every order of B, D (a decision on an item of ``raiser``) and the undoing of A, B and
    D after A: B after A, D after the run that raised its item, each undo after its run."""
    for rest in itertools.permutations(("B", "D", "uA", "uB", "uD")):
        order = ("A", *rest)
        at = {event: position for position, event in enumerate(order)}
        if at["B"] < at["uB"] and at["D"] < at["uD"] and at[raiser] < at["D"]:
            yield order


@pytest.mark.parametrize("verb", ["accept", "reject"])
@pytest.mark.parametrize("raiser", ["A", "B"])
def test_undo_in_every_order(
    raiser: str, verb: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert len(list(orders(raiser))) == {"A": 30, "B": 15}[raiser]
    for number, order in enumerate(orders(raiser)):
        folder = tmp_path / f"order{number}"
        folder.mkdir()
        try:
            _play(order, raiser, verb, Cli(folder / "store", capsys), folder)
        except AssertionError as failure:
            failure.add_note(f"order: {' '.join(order)} (decision: {verb} on {raiser}'s item)")
            raise


def _play(order: tuple[str, ...], raiser: str, verb: str, cli: Cli, folder: Path) -> None:
    model = Model()
    cli.add(LYON, folder)
    for event in order:
        if event in ("A", "B"):
            model.runs[event] = cli.consolidate()
            for group in model.groups.values():
                if group.phase == "fresh":
                    group.phase, group.raiser = "contested", event
            if event == "A":
                cli.add(TEA, folder)
                model.groups["T"].phase = "fresh"
        elif event == "D":
            _decide(model, cli, raiser, verb)
        elif event == "uD":
            if "D" in model.runs:
                _undo(model, cli, "D", folder)
        else:
            _undo(model, cli, event[1], folder)
        _check(model, cli)
    _check_printed(model, cli)


def _decide(model: Model, cli: Cli, raiser: str, verb: str) -> None:
    target = model.groups["L" if raiser == "A" else "T"]
    claims = GROUPS["L" if raiser == "A" else "T"]
    (item, status) = next(
        (n, status)
        for n, run, numbers, status in cli.items()
        if run == model.runs[raiser] and numbers == claims
    )
    if status != "open":  # its run was undone
        assert raiser in model.undone
        assert "is already closed (withdrawn)" in cli.refused("review", verb, str(item))
        return
    assert target.raiser == raiser and target.phase == "contested"
    said = cli.ok("review", verb, str(item))
    model.runs["D"] = int(said.rsplit("(run ", 1)[1].split(")")[0])
    model.decided = raiser
    target.phase = "accepted" if verb == "accept" else "rejected"


def _undo(model: Model, cli: Cli, run: str, folder: Path) -> None:
    number = model.runs[run]
    if run != "D" and model.decided == run and "D" not in model.undone:
        _refused(model, cli, run, folder)
        return
    out = cli.ok("consolidate", "--undo", str(number))
    assert out.startswith(f"undid run {number}: ") and out.count("\n") == 1, out
    _undone(model, run)


def _undone(model: Model, run: str) -> None:
    """The model once ``run`` is undone."""
    model.undone.add(run)
    for group in model.groups.values():
        if run == "D" and group.phase in ("accepted", "rejected"):
            group.phase = "contested"
        elif run != "D" and group.raiser == run:
            group.phase, group.raiser = "fresh", None
    if run == "D":
        model.decided = None


def _refused(model: Model, cli: Cli, run: str, folder: Path) -> None:
    """The undo of ``run`` is refused because of the decision D on its item; with
    ``--cascade`` it ends as undoing D and then it does."""
    number, decision = model.runs[run], model.runs["D"]
    before = snapshot(cli.store)
    line = cli.refused("consolidate", "--undo", str(number))
    assert (
        f"run {number} cannot be undone on its own: run {decision} (the decision on review item "
    ) in line
    assert f"`lsp-memory consolidate --undo {number} --cascade`" in line
    assert snapshot(cli.store) == before
    cascade = Cli(folder / "cascade", cli.capsys)
    by_hand = Cli(folder / "by-hand", cli.capsys)
    for other in (cascade, by_hand):
        shutil.rmtree(other.store, ignore_errors=True)
        shutil.copytree(cli.store, other.store)
    together = cascade.ok("consolidate", "--undo", str(number), "--cascade")
    one_by_one = by_hand.ok("consolidate", "--undo", str(decision))
    one_by_one += by_hand.ok("consolidate", "--undo", str(number))
    assert together == one_by_one
    assert together.startswith(f"undid run {decision}: ") and together.count("\n") == 2
    assert tables(cascade.store) == tables(by_hand.store)
    after = copy.deepcopy(model)
    _undone(after, "D")
    _undone(after, run)
    _check(after, cascade)


EXPECTED = {  # (status, confidence) of the older claim and the newer
    "fresh": (("active", 0.9), ("active", 0.9)),
    "contested": (("contested", HALF), ("contested", HALF)),
    "rejected": (("contested", HALF), ("contested", HALF)),
    "accepted": (("superseded", HALF), ("active", 0.9)),
}


def _check(model: Model, cli: Cli) -> None:
    """The claims and review items are what the model says."""
    claims = cli.claims()
    items = cli.items()
    live = {number for run, number in model.runs.items() if run not in model.undone}
    for item, run, _, status in items:
        assert status != "open" or run in live, f"open item {item} of undone run {run}"
    for name, group in model.groups.items():
        older, newer = GROUPS[name]
        if group.phase == "absent":
            assert older not in claims
            continue
        assert (claims[older][:2], claims[newer][:2]) == EXPECTED[group.phase], (group, claims)
        if group.phase == "accepted":  # superseded by the newer, until the decision
            assert claims[older][2] == claims[newer][5] and claims[older][3] is not None
        else:
            assert claims[older][2:5] == (None, None, None), (group, claims[older])
        assert claims[newer][2:5] == (None, None, None), (group, claims[newer])
        about = [(run, status) for _, run, numbers, status in items if numbers == GROUPS[name]]
        opened = [run for run, status in about if status == "open"]
        if group.phase == "contested":
            assert opened == [model.runs[group.raiser or ""]], (group, items)
        else:
            assert opened == [], (group, items)
        if group.phase in ("accepted", "rejected"):
            assert (model.runs[model.decided or ""], group.phase) in about, (group, items)


def _check_printed(model: Model, cli: Cli) -> None:
    """What ``claim list``, ``claim show`` and ``review --json`` print."""
    listed = cli.ok("claim", "list").splitlines()
    claims = cli.claims()
    for numbers in GROUPS.values():
        for claim in numbers:
            status = claims[claim][0]
            line = next(row for row in listed if row.startswith(f"#{claim} "))
            marker = "" if status == "active" else f" ({status})"
            assert f"]{marker} I " in line, line
            shown = cli.ok("claim", "show", str(claim))
            assert f"status:        {status}\n" in shown
            superseded = status == "superseded"
            assert ("superseded by: #" in shown) is superseded, shown
            assert ("valid:" in shown) is superseded, shown
    expected = sum(group.phase == "contested" for group in model.groups.values())
    assert len(json.loads(cli.ok("review", "--json"))) == expected


# -- beyond the two runs and a decision ----------------------------------------------------


def test_later_consolidations_that_changed_the_same_claims(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A later consolidation decays what the first contested; a decision follows: each undo
    but the last is refused naming the runs after it, ``--cascade`` undoes all three, and
    the claims are as imported."""
    cli = Cli(tmp_path / "store", capsys)
    cli.add(LYON, tmp_path, inferred=True)
    imported = tables(cli.store)["claims"]
    assert cli.consolidate() == 1
    assert cli.consolidate("2026-01-11") == 2  # ten days of decay for every claim
    assert cli.ok("review", "accept", "1").endswith("(run 3)\n")
    before = snapshot(cli.store)
    line = cli.refused("consolidate", "--undo", "1")
    assert line == (
        "lsp-memory: error: run 1 cannot be undone on its own: runs 2 (a consolidation) and 3 "
        "(the decision on review item 1) changed the same claims or review items after it; "
        "undo them first, newest first, or all at once with "
        "`lsp-memory consolidate --undo 1 --cascade`"
    )
    assert "run 3 (the decision on review item 1)" in cli.refused("consolidate", "--undo", "2")
    assert "goes with --undo" in cli.refused("consolidate", "--cascade")
    assert snapshot(cli.store) == before
    assert cli.ok("consolidate", "--undo", "1", "--cascade").splitlines() == [
        "undid run 3: 5 changes put back",
        "undid run 2: 4 changes put back",  # two confidences decayed, and when
        "undid run 1: 4 changes put back",
    ]
    assert tables(cli.store)["claims"] == imported
    assert [status for *_, status in cli.items()] == ["withdrawn"]
    assert "run 3 was already undone" in cli.refused("consolidate", "--undo", "3")


def test_a_claim_changed_outside_any_run_since(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Undoing a run would overwrite what the user did since (a retract): refused, with or
    without ``--cascade``, saying what; a change back to the value before the run (restoring
    a claim the run deprecated) is no obstacle."""
    cli = Cli(tmp_path / "store", capsys)
    cli.add(LYON, tmp_path)
    cli.add([("I once tried skydiving", "identity")], tmp_path, confidence=0.29)
    assert cli.consolidate() == 1  # #1 and #2 contested, #3 deprecated
    cli.ok("claim", "retract", "1")
    before = snapshot(cli.store)
    for cascade in ((), ("--cascade",)):
        line = cli.refused("consolidate", "--undo", "1", *cascade)
        assert line == (
            "lsp-memory: error: run 1 cannot be undone: #1 “I live in Lyon” was changed after "
            "run 1 by something other than a run (claim retract or restore, a newer claim): its "
            "status is retracted where the run left contested; nothing was undone"
        )
        assert snapshot(cli.store) == before
    cli.ok("claim", "restore", "1")  # active: as before the run
    cli.ok("claim", "restore", "3")
    assert cli.ok("consolidate", "--undo", "1") == "undid run 1: 5 changes put back\n"
    claims = cli.claims()
    assert [claims[n][:2] for n in (1, 2, 3)] == [
        ("active", 0.9),
        ("active", 0.9),
        ("active", 0.29),
    ]


def test_undoing_a_decision_never_reopens_an_item_of_an_undone_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store where an earlier version undid a run before the decision on its item (as
    issue 27 found): undoing the decision leaves the item closed."""
    cli = Cli(tmp_path / "store", capsys)
    cli.add(LYON, tmp_path)
    cli.consolidate()
    assert cli.ok("review", "reject", "1").endswith("(run 2)\n")
    db = sqlite3.connect(cli.store / STORE_FILE)
    with db:  # run 1 undone as that version did: its claims put back, its decided item left
        db.execute("UPDATE runs SET undone_at = ? WHERE number = 1", (DAY1,))
        db.execute("UPDATE claims SET status = 'active', confidence = 0.9")
    db.close()
    assert cli.ok("consolidate", "--undo", "2") == "undid run 2: 0 changes put back\n"
    assert [status for *_, status in cli.items()] == ["withdrawn"]
    assert cli.ok("review") == "nothing to review\n"
