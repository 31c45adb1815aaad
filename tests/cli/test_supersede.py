"""Supersede on write and ``claim restore`` from the command line: what ``claim add`` says,
``--no-supersede``, ``import`` leaving statuses alone, the ``supersede`` setting, restoring a
superseded claim and an active one, the slot rule (a person's other facts stay, a new budget
replaces the old), and a rewording caught in the next process, before any ``index``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from lsp_memory.store.vectors import content_hash
from tests.cli.test_cli import Run, run, store_dir  # noqa: F401


def listed(run: Run) -> list[tuple[int, str]]:  # noqa: F811
    claims = json.loads(run("claim", "list", "--json").stdout)
    return [(c["claim_number"], c["status"]) for c in claims]


def test_claim_add_says_what_it_supersedes_and_show_links_the_new_claim(
    run: Run,  # noqa: F811
) -> None:
    run("claim", "add", "I live in Lyon", "--type", "identity")
    added = run("claim", "add", "I moved to Berlin", "--type", "identity")
    assert added.returncode == 0
    assert added.stdout.startswith("added #2 @")
    assert added.stdout.rstrip().endswith("[identity] I moved to Berlin (supersedes #1)")
    shown = json.loads(run("claim", "show", "1", "--json").stdout)
    assert shown["status"] == "superseded"
    assert shown["valid_to"]
    new = json.loads(run("claim", "show", "2", "--json").stdout)
    assert shown["superseded_by"] == new["claim_id"]
    assert "superseded by: #2" in run("claim", "show", "1").stdout


def test_no_supersede_and_import_keep_older_claims_live(run: Run, tmp_path: Path) -> None:  # noqa: F811
    run("claim", "add", "I feel tired", "--type", "emotional")
    kept = run("claim", "add", "I feel great", "--type", "emotional", "--no-supersede")
    assert "supersedes" not in kept.stdout
    line = {"kind": "claim", "statement": "I feel calm", "claim_type": "emotional"}
    (tmp_path / "more.jsonl").write_text(json.dumps(line) + "\n")
    assert run("import", str(tmp_path / "more.jsonl")).returncode == 0
    assert listed(run) == [(1, "active"), (2, "active"), (3, "active")]


def test_the_setting_turns_a_type_s_rule_off(run: Run, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "lsp-memory.toml").write_text('[supersede]\npreference = "none"\n')
    run("claim", "add", "My favourite tea is sencha", "--type", "preference")
    added = run("claim", "add", "My favourite tea is oolong", "--type", "preference")
    assert "supersedes" not in added.stdout
    assert added.stderr == ""
    assert listed(run) == [(1, "active"), (2, "active")]


def test_restore_a_superseded_claim_then_an_active_one(run: Run) -> None:  # noqa: F811
    run("claim", "add", "I work at Acme", "--type", "identity")
    run("claim", "add", "I joined Globex", "--type", "identity")
    restored = run("claim", "restore", "#1")
    assert restored.returncode == 0
    assert restored.stdout.startswith("restored #1 @")
    assert restored.stdout.rstrip().endswith("(was superseded)")
    shown = json.loads(run("claim", "show", "1", "--json").stdout)
    assert shown["status"] == "active"
    assert shown.get("superseded_by") is None
    assert shown.get("valid_to") is None
    again = run("claim", "restore", "1")
    assert again.returncode == 0
    assert again.stdout.rstrip().endswith("is already active")
    assert len(again.stdout.splitlines()) == 1


def test_a_person_s_other_facts_stay_and_the_same_slot_is_replaced(run: Run) -> None:  # noqa: F811
    run("claim", "add", "My sister Ana lives in Porto", "--type", "relationship")
    added = run("claim", "add", "My sister Ana is a doctor", "--type", "relationship")
    assert added.returncode == 0
    assert "supersedes" not in added.stdout
    moved = run("claim", "add", "My sister Ana moved to Lisbon", "--type", "relationship")
    assert moved.stdout.rstrip().endswith("(supersedes #1)")
    assert listed(run) == [(1, "superseded"), (2, "active"), (3, "active")]


def test_a_rewording_written_right_after_supersedes_the_first(
    run: Run,  # noqa: F811
    tmp_path: Path,
) -> None:
    first = "I prefer concise responses"
    run("claim", "add", first, "--type", "preference")
    added = run("claim", "add", "I prefer concise answers", "--type", "preference")
    assert added.returncode == 0
    assert added.stdout.rstrip().endswith("(supersedes #1)")
    assert listed(run) == [(1, "superseded"), (2, "active")]
    # Both statements' vectors are kept in the vector cache: `index` embeds neither again.
    cache = tmp_path / "cache" / "lsp-memory" / "vectors.sqlite3"
    with sqlite3.connect(cache) as db:
        kept = {row[0] for row in db.execute("SELECT hash FROM vectors")}
    assert {content_hash(first), content_hash("I prefer concise answers")} <= kept


def test_a_new_budget_supersedes_the_old_one(run: Run) -> None:  # noqa: F811
    run("claim", "add", "My budget is £1,500", "--type", "constraint")
    run("claim", "add", "I can only travel by train", "--type", "constraint")
    added = run("claim", "add", "My budget is now £2,000", "--type", "constraint")
    assert added.stdout.rstrip().endswith("(supersedes #1)")
    assert listed(run) == [(1, "superseded"), (2, "active"), (3, "active")]
