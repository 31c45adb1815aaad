"""``lsp-memory consolidate`` and ``review`` as a user runs them: the JSON report, the
lines a person reads, undo, decisions, and bad input (an unknown or undone run, a bad
``--now``, a decision without an item, an unknown claim type or setting) — one line each,
nothing lost. A consolidation killed with SIGKILL leaves the store as before or as after."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

from lsp_memory.store.sqlite import STORE_FILE
from tests.cli.test_cli import ROOT, Run, one_error_line, run, store_dir  # noqa: F401

DAY1 = "2026-01-01T00:00:00Z"


def claims_file(
    tmp_path: Path, statements: list[tuple[str, str, float]], *, inferred: bool = False
) -> Path:
    """The claims as an import file; ``inferred``: each extracted from a message (so it
    decays), else written by the user."""
    path = tmp_path / "claims.jsonl"
    lines = [
        json.dumps(
            {
                "kind": "claim",
                "statement": statement,
                "claim_type": claim_type,
                "confidence": confidence,
                "created_at": DAY1,
                **({"derived_from": [f"message-{n}"]} if inferred else {}),
            }
        )
        for n, (statement, claim_type, confidence) in enumerate(statements)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


MEMORY = [
    ("I like dark roast coffee", "preference", 0.9),
    ("I really love dark roast coffee", "preference", 0.8),
    ("I live in Lyon", "identity", 0.9),
    ("I no longer live in Lyon", "identity", 0.9),
    ("I once tried skydiving", "identity", 0.302),
    ("I am learning the cello", "goal", 0.45),
]


def claims_rows(store: Path) -> list[tuple[object, ...]]:
    """The store's claims, read on a connection closed at once: Python frees an unclosed
    connection only when its garbage collector runs, and its close then deletes the store's
    log and shared-memory file, under whatever copies the folder at that moment."""
    with closing(sqlite3.connect(store / STORE_FILE)) as db:
        return db.execute("SELECT * FROM claims ORDER BY id").fetchall()


def test_consolidate_json_then_undo(run: Run, tmp_path: Path, store_dir: Path) -> None:  # noqa: F811
    assert run("import", str(claims_file(tmp_path, MEMORY, inferred=True))).returncode == 0
    before = claims_rows(store_dir)
    dry = json.loads(run("consolidate", "--dry-run", "--now", "2026-01-02", "--json").stdout)
    assert dry["dry_run"] is True and dry["run_id"] is None
    assert claims_rows(store_dir) == before
    done = run("consolidate", "--now", "2026-01-02", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert set(report) >= {
        "run_id",
        "now",
        "dry_run",
        "changes",
        "merged",
        "contradictions",
        "deprecated",
        "review",
    }
    assert (report["run_id"], report["now"]) == (1, "2026-01-02T00:00:00.000000Z")
    assert (report["merged"], report["contradictions"], report["deprecated"]) == (1, 1, 1)
    assert dry["changes"] == report["changes"]
    assert set(report["changes"][0]) == {"claim", "field", "before", "after", "reason"}
    merged = [c for c in report["changes"] if c["field"] == "status" and c["after"] == "merged"]
    assert [c["claim"] for c in merged] == ["#2"]
    again = json.loads(run("consolidate", "--now", "2026-01-02", "--json").stdout)
    assert again["changes"] == [] and again["run_id"] == 2
    undo = run("consolidate", "--undo", "1")
    assert undo.stdout == f"undid run 1: {len(report['changes'])} changes put back\n"
    assert claims_rows(store_dir) == before
    assert "run 1 was already undone" in one_error_line(run("consolidate", "--undo", "1"))
    assert "no run 7" in one_error_line(run("consolidate", "--undo", "7"))


def test_consolidate_and_review_for_a_person(run: Run, tmp_path: Path) -> None:  # noqa: F811
    run("import", str(claims_file(tmp_path, MEMORY, inferred=True)))
    out = run("consolidate", "--now", "2026-01-02").stdout.splitlines()
    assert out[0].startswith("run 1: ")
    assert "1 merged, 1 contradiction, 1 deprecated" in out[0]
    assert "  #2: merge: #2 into #1 (nothing lost)" in out
    assert any(
        line.startswith("  review 1: #4 “I no longer live in Lyon” contradicts") for line in out
    )
    assert out[-1] == "undo with `lsp-memory consolidate --undo 1`"
    listed = run("review").stdout.splitlines()
    assert listed[0] == "1. [contradiction] proposed CONTRADICTION"
    assert json.loads(run("review", "--json").stdout)[0]["claims"][0]["claim"] == "#4"
    decided = run("review", "accept", "1")
    assert decided.stdout.startswith("review 1: #4 stands; #3 superseded by it (run 2)")
    assert json.loads(run("claim", "show", "3", "--json").stdout)["status"] == "superseded"
    assert run("review").stdout == "nothing to review\n"
    assert "already closed" in one_error_line(run("review", "keep-both", "1"))
    assert "needs the item's ID" in one_error_line(run("review", "accept"))
    assert "no review item 100000000000000000000" in one_error_line(
        run("review", "accept", str(10**20))
    )


def test_retrieval_honours_confidence_and_status(run: Run, tmp_path: Path) -> None:  # noqa: F811
    run("import", str(claims_file(tmp_path, MEMORY, inferred=True)))
    run("consolidate", "--now", "2026-01-02")
    # Deprecated: in no search; 0.3–0.5: in explicit search, not in automatic memories.
    assert "skydiving" not in run("search", "skydiving", "--kind", "claim", "--json").stdout
    assert "cello" in run("search", "learning the cello", "--kind", "claim").stdout
    block = run("build-context", "-", "--query", "learning the cello", stdin="cello lessons\n")
    assert block.returncode == 0, block.stderr
    assert "cello" not in block.stdout


def test_what_the_user_wrote_does_not_fade_but_what_was_inferred_does(
    run: Run,  # noqa: F811
    tmp_path: Path,
) -> None:
    """A year of consolidations, a season apart: the claim the user typed stays as it was; the
    one extracted from a conversation, never confirmed since, is deprecated."""
    assert run("claim", "add", "I'm allergic to penicillin").returncode == 0
    message = {
        "contentSessionId": "chat",
        "timestamp": "2026-01-01T00:00:00Z",
        "userMessage": "Hi! btw I moved to Berlin last month",
        "assistantResponse": "Congratulations on the move!",
    }
    (tmp_path / "chat.jsonl").write_text(json.dumps(message) + "\n", encoding="utf-8")
    ingested = run("ingest", str(tmp_path / "chat.jsonl"))
    assert "added #2" in ingested.stdout, ingested.stderr
    for month in ("04", "07", "10"):
        assert run("consolidate", "--now", f"2027-{month}-01").returncode == 0
    last = json.loads(run("consolidate", "--now", "2028-01-01", "--json").stdout)
    assert last["deprecated"] == 0  # Berlin went a run earlier, below 0.3
    typed = json.loads(run("claim", "show", "1", "--json").stdout)
    assert (typed["status"], typed["confidence"]) == ("active", 1.0)
    assert json.loads(run("claim", "show", "2", "--json").stdout)["status"] == "deprecated"


def test_bad_input_is_one_line(run: Run, tmp_path: Path) -> None:  # noqa: F811
    assert "not an ISO 8601" in one_error_line(run("consolidate", "--now", "yesterday"))
    typo = one_error_line(run("claim", "add", "I like tea", "--type", "prefrence"))
    assert "unknown claim type 'prefrence' (did you mean 'preference'?)" in typo
    assert run("claim", "list").stdout == ""
    assert run("claim", "add", "Use ruff", "--type", "decision").returncode == 0
    (tmp_path / "lsp-memory.toml").write_text(
        'consolidate_every = "soon"\n[supersede]\nprefrence = "none"\n', encoding="utf-8"
    )
    warned = run("claim", "list").stderr.splitlines()
    assert len(warned) == 2
    assert "setting 'consolidate_every': expected seconds or a period" in warned[0]
    assert "setting 'supersede': unknown claim type 'prefrence'" in warned[1]


def size(path: Path) -> int:
    """``path``'s size, 0 when it is not there: SQLite removes its write-ahead log when the
    last connection closes, between any look and the next (a look then a stat failed once)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def test_a_consolidation_killed_halfway_leaves_the_store_before_or_after(
    tmp_path: Path,
) -> None:
    """SIGKILL at moments spread over the run, the write transaction included (the kill
    comes as soon as the store's write-ahead log grows): each time the store is whole and
    holds either none of the run or all of it."""
    many = [(f"I keep note {n} about the garden plot {n % 97}", "goal", 0.9) for n in range(4000)]
    pristine = tmp_path / "pristine"
    env = {
        **os.environ,
        "LSP_MEMORY_USER": "ann",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPATH": str(ROOT),
    }
    # No embedding model: decay and deprecation over 4 000 claims, nothing to embed.
    (tmp_path / "lsp-memory.toml").write_text('model = "no-model-here"\n', encoding="utf-8")

    def cli(store: Path, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "lsp_memory", "--store", str(store), *args],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

    assert (
        cli(pristine, "import", str(claims_file(tmp_path, many, inferred=True))).wait(timeout=120)
        == 0
    )
    before = claims_rows(pristine)
    finished = tmp_path / "finished"
    shutil.copytree(pristine, finished)
    assert cli(finished, "consolidate", "--now", "2026-03-01").wait(timeout=120) == 0
    after = claims_rows(finished)
    assert after != before
    killed = 0
    for attempt in range(4):
        store = tmp_path / f"attempt{attempt}"
        shutil.copytree(pristine, store)
        wal = store / (STORE_FILE + "-wal")
        start = size(wal)
        process = cli(store, "consolidate", "--now", "2026-03-01")
        deadline = time.monotonic() + 60
        delay = 0.3 * attempt  # 0: at the write; later attempts: planning or earlier
        while process.poll() is None and time.monotonic() < deadline:
            grew = size(wal) > start
            if (attempt == 0 and grew) or (attempt and time.monotonic() > deadline - 60 + delay):
                break
            time.sleep(0.001)
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            killed += 1
        process.wait(timeout=30)
        with closing(sqlite3.connect(store / STORE_FILE)) as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert claims_rows(store) in (before, after)
    assert killed >= 1
