"""The command line end to end, as a user runs it: a subprocess, exit codes, one-line errors,
and nothing lost on bad input."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_memory.store.schema import SCHEMA_VERSION
from lsp_memory.store.sqlite import STORE_FILE
from tests.conftest import BAD, KB, snapshot

ROOT = Path(__file__).parents[2]
DEMO = ROOT / "examples" / "demo"
Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def run(tmp_path: Path, store_dir: Path) -> Run:
    """Run ``python -m lsp_memory ARGS`` with a private store, home and working folder."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "LSP_MEMORY_STORE": str(store_dir),
        "LSP_MEMORY_USER": "ann",
        "PYTHONPATH": str(ROOT),
    }

    def run(
        *args: str, stdin: str | None = None, **extra_env: str
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "lsp_memory", *args],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**env, **extra_env},
            timeout=60,
            check=False,
        )
        assert "Traceback" not in result.stderr, result.stderr
        return result

    return run


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("lsp-memory: error: ")
    return lines[0]


def test_import_export_round_trip(run: Run, tmp_path: Path) -> None:
    imported = run("import", str(KB))
    assert imported.returncode == 0, imported.stderr
    assert "21 claims" in imported.stderr
    first = run("export")
    assert first.returncode == 0
    other = tmp_path / "other"
    assert run("--store", str(other), "import", "-", stdin=first.stdout).returncode == 0
    second = run("--store", str(other), "export", str(tmp_path / "out.jsonl"))
    assert second.returncode == 0
    assert (tmp_path / "out.jsonl").read_text(encoding="utf-8") == first.stdout


@pytest.mark.parametrize("name", ["malformed_json", "not_utf8", "parent_cycle", "multiple_errors"])
def test_bad_import_names_lines_and_changes_nothing(run: Run, store_dir: Path, name: str) -> None:
    assert run("import", str(KB)).returncode == 0
    before = snapshot(store_dir)
    result = run("import", str(BAD / f"{name}.jsonl"))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith(f"lsp-memory: error: {BAD / name}.jsonl: ")
    assert lines[0].endswith("nothing imported")
    assert all(line.startswith("  line ") for line in lines[1:]) and len(lines) > 1
    assert snapshot(store_dir) == before


def test_missing_import_file_is_one_line(run: Run) -> None:
    line = one_error_line(run("import", "no/such/file.jsonl"))
    assert "cannot read no/such/file.jsonl: No such file or directory" in line


def test_claim_add_show_list_retract(run: Run) -> None:
    assert run("context", "add", "Work", "--id", "work").returncode == 0
    added = run(
        "claim", "add", "I prefer morning meetings", "--type", "preference", "--context", "@work"
    )
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("added #1 @prefer_morning_meetings_")
    shown = run("claim", "show", "#1", "--json")
    record = json.loads(shown.stdout)
    assert record["statement"] == "I prefer morning meetings"
    assert record["claim_type"] == "preference" and record["contexts"] == ["work"]
    human = run("claim", "show", f"@{record['friendly_id']}")
    assert "I prefer morning meetings" in human.stdout and "contexts:" in human.stdout
    assert run("claim", "retract", "@claim_1").stdout.startswith("retracted #1")
    assert "already retracted" in run("claim", "retract", "1").stdout
    listed = json.loads(run("claim", "list", "--json").stdout)
    assert [(c["claim_number"], c["status"]) for c in listed] == [(1, "retracted")]
    assert run("claim", "list", "--status", "active").stdout == ""
    assert "(retracted)" in run("claim", "list").stdout


def test_claim_show_gives_the_lineage_fields_when_set(run: Run) -> None:
    lines = [
        {
            "kind": "claim",
            "statement": "Drinks tea",
            "derived_from": ["episode-1"],
            "evidence_count": 2,
        },
        {"kind": "claim", "statement": "Plain"},
    ]
    stdin = "\n".join(json.dumps(line) for line in lines)
    assert run("import", "-", stdin=stdin).returncode == 0
    record = json.loads(run("claim", "show", "#1", "--json").stdout)
    assert (record["derived_from"], record["evidence_count"]) == (["episode-1"], 2)
    human = run("claim", "show", "#1").stdout
    assert "  derived from:  episode-1\n" in human and "  evidence:      2\n" in human
    plain = json.loads(run("claim", "show", "#2", "--json").stdout)
    assert "derived_from" not in plain and "evidence_count" not in plain
    human = run("claim", "show", "#2").stdout
    assert "derived from:" not in human and "evidence:" not in human


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("claim", "show", "#404"), "No memory or context found with ID: claim_404"),
        (("claim", "show", "@work"), "@work is a context, not a claim"),
        (("claim", "retract", "@nothing_here"), "No memory or context found with ID"),
        (("claim", "add", "x", "--context", "nowhere"), "refers to unknown context 'nowhere'"),
        (("claim", "add", "   "), "the text is empty"),
        (("context", "add", "Child", "--parent", "ghost"), "parent 'ghost' is not a known"),
        (("context", "add", "Again", "--id", "work"), "duplicate friendly id 'work'"),
        (("claim", "show", "two words"), "not a reference"),
    ],
)
def test_user_errors_are_one_line_and_change_nothing(
    run: Run, store_dir: Path, args: tuple[str, ...], expected: str
) -> None:
    assert run("context", "add", "Work", "--id", "work").returncode == 0
    before = snapshot(store_dir)
    assert expected in one_error_line(run(*args))
    assert snapshot(store_dir) == before


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("frobnicate",),
        ("claim",),
        ("claim", "list", "--limit", "x"),
        ("claim", "list", "--limit", "-1"),
        ("claim", "list", "--limit", "0"),
        ("search", "-k", "0", "x"),
        ("search", "-k", "-1", "x"),
        ("search", "-k", "1001", "x"),
        ("resolve", "-z"),
    ],
)
def test_usage_errors_exit_2(run: Run, args: tuple[str, ...]) -> None:
    result = run(*args)
    assert result.returncode == 2
    assert "usage:" in result.stderr


def test_context_tree(run: Run) -> None:
    assert run("import", str(KB)).returncode == 0
    tree = run("context", "tree").stdout.splitlines()
    assert "Root Context  @root_ctx  (1 claim)" in tree
    assert "├── Mid Context  @mid_ctx  (1 claim)" in tree
    assert "│   └── Leaf Context  @leaf_ctx  (3 claims)" in tree
    assert "└── Other Context  @other_ctx  (2 claims)" in tree


def test_refs_json(run: Run, tmp_path: Path) -> None:
    doc = tmp_path / "prompt.md"
    doc.write_text("Hi 😀 @ssdva and #42\n`@code` [[Note#Top|label]] me@x.org\n", "utf-8")
    tokens = json.loads(run("refs", str(doc), "--json").stdout)
    assert tokens == [
        {
            "kind": "id",
            "text": "@ssdva",
            "target": "ssdva",
            "range": {"start": {"line": 0, "character": 6}, "end": {"line": 0, "character": 12}},
        },
        {
            "kind": "number",
            "text": "#42",
            "target": "42",
            "range": {"start": {"line": 0, "character": 17}, "end": {"line": 0, "character": 20}},
        },
        {
            "kind": "note",
            "text": "[[Note#Top|label]]",
            "target": "Note",
            "range": {"start": {"line": 1, "character": 8}, "end": {"line": 1, "character": 26}},
        },
    ]
    plain = json.loads(run("refs", "-", "--json", stdin="` @code `").stdout)
    assert [t["text"] for t in plain] == ["@code"]  # not Markdown: code spans count


def test_resolve_json_and_exit_codes(run: Run) -> None:
    assert run("import", str(KB)).returncode == 0
    ok = run("resolve", "@leaf_ctx", "#42", "--json")
    assert ok.returncode == 0
    found = json.loads(ok.stdout)
    assert [(r["ref"], r["resolved"], r["kind"], r["id"]) for r in found] == [
        ("@leaf_ctx", True, "context", "leaf_ctx"),
        ("#42", True, "claim", "prefer_morning_a3f2"),
    ]
    assert [c["claim_number"] for c in found[0]["claims"]] == [2, 7, 1]
    assert set(found[0]) >= {"ref", "resolved", "kind", "id", "claims", "error"}
    missing = run("resolve", "@leaf_ctx", "@nope", "--json")
    assert missing.returncode == 1
    assert json.loads(missing.stdout)[1]["error"] == "No memory or context found with ID: nope"
    assert missing.stderr.strip() == (
        "lsp-memory: error: @nope: No memory or context found with ID: nope"
    )


def test_other_user_sees_nothing(run: Run) -> None:
    assert run("import", str(KB)).returncode == 0
    assert run("--user", "zed", "claim", "list").stdout == ""
    assert run("claim", "list", "--user", "zed").stdout == ""
    assert run("claim", "--user", "zed", "list").stdout == ""  # between command and action
    result = run("resolve", "#1", "--json", LSP_MEMORY_USER="mallory")
    assert json.loads(result.stdout)[0]["claims"][0]["friendly_id"] == "leaf_active_a001"
    assert json.loads(result.stdout)[0]["claims"][0]["user"] == "mallory"


def test_global_options_between_the_command_and_its_action(run: Run, tmp_path: Path) -> None:
    other = tmp_path / "other store"
    added = run("claim", "--store", str(other), "--user", "bob", "add", "Bob rides a bike")
    assert added.returncode == 0, added.stderr
    assert "Bob rides a bike" in run("--store", str(other), "--user", "bob", "claim", "list").stdout
    assert run("claim", "list").stdout == ""  # nothing in the default store
    assert run("context", "--store", str(other), "--user", "bob", "tree").returncode == 0


def test_newer_store_is_refused_untouched(run: Run, store_dir: Path) -> None:
    assert run("claim", "add", "keep me").returncode == 0
    db = sqlite3.connect(store_dir / STORE_FILE)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    before = (store_dir / STORE_FILE).read_bytes()
    line = one_error_line(run("claim", "list"))
    assert "written by a newer lsp-memory" in line
    assert (store_dir / STORE_FILE).read_bytes() == before


def test_locked_store_is_one_line(run: Run, store_dir: Path) -> None:
    assert run("claim", "add", "first").returncode == 0
    before = snapshot(store_dir)
    holder = sqlite3.connect(store_dir / STORE_FILE, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        result = run("claim", "add", "second", LSP_MEMORY_BUSY_TIMEOUT_MS="200")
        assert "is locked by another process (waited 0.2 s)" in one_error_line(result)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert snapshot(store_dir) == before


def test_read_only_store_is_one_line(run: Run) -> None:
    # A store that others can read but not write, outside pytest's private (0700) folders.
    shared = Path(tempfile.mkdtemp(prefix="lsp-memory-ro-"))
    store_dir = shared / "store"
    try:
        shared.chmod(0o755)
        assert run("--store", str(store_dir), "import", str(KB)).returncode == 0
        before = snapshot(store_dir)
        if os.geteuid() == 0:
            # root ignores file modes: run the command as an unprivileged user instead.
            result = subprocess.run(
                [
                    "setpriv",
                    "--reuid=65534",
                    "--regid=65534",
                    "--clear-groups",
                    sys.executable,
                    "-m",
                    "lsp_memory",
                    "--store",
                    str(store_dir),
                    "--user",
                    "ann",
                    "claim",
                    "add",
                    "blocked",
                ],
                capture_output=True,
                text=True,
                cwd="/",
                timeout=60,
                check=False,
                env={
                    "PATH": os.environ["PATH"],
                    "PYTHONPATH": str(ROOT),
                    "HOME": "/nonexistent",
                    "XDG_CONFIG_HOME": "/nonexistent",
                },
            )
        else:
            store_dir.chmod(0o555)
            try:
                result = run("--store", str(store_dir), "claim", "add", "blocked")
            finally:
                store_dir.chmod(0o755)
        assert "Traceback" not in result.stderr
        line = one_error_line(result)
        assert "read-only or cannot be opened" in line
        assert snapshot(store_dir) == before
    finally:
        shutil.rmtree(shared)


def test_bad_config_setting_warns_and_uses_the_default(run: Run, tmp_path: Path) -> None:
    (tmp_path / "lsp-memory.toml").write_text('budget = "lots"\ncolour = 1\n', "utf-8")
    result = run("claim", "list")
    assert result.returncode == 0
    assert "setting 'budget': expected a positive whole number" in result.stderr
    assert "unknown setting 'colour' ignored" in result.stderr


def test_demo_prompt_resolves(run: Run) -> None:
    assert run("import", str(DEMO / "memory.jsonl")).returncode == 0
    result = run(
        "--vault", str(DEMO / "vault"), "resolve", "--file", str(DEMO / "prompt.md"), "--json"
    )
    assert result.returncode == 0, result.stderr
    found = {r["ref"]: r for r in json.loads(result.stdout)}
    assert found["@project_alpha"]["kind"] == "context"
    assert len(found["@project_alpha"]["claims"]) == 8
    assert found["@my_health_goals"]["id"] == "hgoals"
    assert found["@no_such_thing"]["error"].startswith("No memory or context found")
    assert "@not_a_ref" not in found
    assert found["[[Project Alpha Kickoff]]"]["note"]["path"] == "projects/alpha-kickoff.md"
    assert found["[[Alice Profile#Working style]]"]["note"]["heading"] == "Working style"
    assert found["[[Missing Note]]"]["error"] == "Note not found: Missing Note"


NOTES = ROOT / "tests" / "data" / "notes"


def test_index_then_search(run: Run) -> None:
    assert run("import", str(KB)).returncode == 0
    indexed = run("--vault", str(NOTES), "index")
    assert indexed.returncode == 0, indexed.stderr
    assert indexed.stdout.startswith("rebuilt the search index: ")
    assert "0 waiting to be embedded" in indexed.stdout
    found = json.loads(
        run("search", "which database does Leaf use", "--kind", "claim", "--json").stdout
    )
    assert (found[0]["reference"], found[0]["number"]) == ("@leaf_active_a001", 1)
    assert {"score", "bm25", "similarity", "confidence", "recency"} <= set(found[0])
    assert all(hit["status"] in ("active", "contested") for hit in found)
    notes = json.loads(run("search", "milestones", "--kind", "note", "--json").stdout)
    assert notes and notes[0]["path"] == "project-plan.md"
    words = run("search", "PostgreSQL", "--mode", "bm25", "-k", "1")
    assert words.stdout.startswith(" 1. [claim] #1 @leaf_active_a001")
    assert run("search", "zzzzqqq", "--mode", "bm25").stdout.strip() == ("no matches for 'zzzzqqq'")


def test_search_sees_a_claim_added_by_the_cli_at_once(run: Run) -> None:
    assert run("import", str(KB)).returncode == 0
    assert run("index").returncode == 0
    assert run("claim", "add", "Kombucha brewing on Sundays").returncode == 0
    found = run("search", "kombucha", "--mode", "bm25", "--json")
    assert [hit["title"] for hit in json.loads(found.stdout)] == ["Kombucha brewing on Sundays"]


def test_a_bad_model_setting_warns_and_text_search_works(run: Run, tmp_path: Path) -> None:
    (tmp_path / "lsp-memory.toml").write_text('model = "no-such-model"\n', "utf-8")
    assert run("import", str(KB)).returncode == 0
    result = run("search", "PostgreSQL", "--kind", "claim", "-k", "1")
    assert result.returncode == 0
    assert "warning: model:" in result.stderr and "searching by text only" in result.stderr
    assert "#1 @leaf_active_a001" in result.stdout


def test_index_while_another_process_writes_it(run: Run, tmp_path: Path, store_dir: Path) -> None:
    from dataclasses import replace

    from lsp_memory.app import App
    from lsp_memory.config import Config

    assert run("import", str(KB)).returncode == 0
    assert run("index", "--text-only").returncode == 0
    holder = App(replace(Config(), store=store_dir, cache=tmp_path / "cache" / "lsp-memory"))
    try:
        assert holder.text_index.writable  # this process now holds the writer
        line = one_error_line(run("index"))
        assert "another lsp-memory process is writing the index" in line
        reader = run("search", "PostgreSQL", "--mode", "bm25", "--json")
        assert reader.returncode == 0 and json.loads(reader.stdout)
    finally:
        holder.close()
    assert run("index").returncode == 0  # handed over once the holder is gone


def test_a_first_search_answers_by_text_and_says_how_to_embed(run: Run, tmp_path: Path) -> None:
    """A store never indexed (or after an interrupted ``index``) has every record waiting
    to be embedded: ``search`` answers from the text index at once and says how to finish,
    rather than embedding them all in silence first."""
    lines = [
        json.dumps({"kind": "claim", "statement": f"Fact {n}: the {w} garden has {n} trees"})
        for n, w in enumerate(["north", "south", "east", "west"] * 80)
    ]
    (tmp_path / "many.jsonl").write_text("\n".join(lines) + "\n")
    assert run("import", str(tmp_path / "many.jsonl")).returncode == 0
    found = run("search", "north garden", "--json")
    assert found.returncode == 0, found.stderr
    assert any("north garden" in hit["title"] for hit in json.loads(found.stdout)), found.stdout
    assert "320 records and notes are not embedded yet" in found.stderr, found.stderr
    assert "lsp-memory index" in found.stderr
    status = json.loads(run("status", "--json").stdout)
    assert status["index"] == {"embedded": 0, "pending": 320}


def test_claims_added_by_processes_at_once_all_land(
    run: Run, tmp_path: Path, store_dir: Path
) -> None:
    """Two processes adding claims at the same moment: each claim lands, with its own
    number (the number was chosen before the write, and the second writer failed with an
    internal error)."""
    assert run("claim", "add", "first", "--type", "fact").returncode == 0
    env = {**os.environ, "LSP_MEMORY_STORE": str(store_dir), "LSP_MEMORY_USER": "ann"}
    env["PYTHONPATH"] = str(ROOT)
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, name],
            cwd=tmp_path,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("A", "B")
    ]
    for writer in writers:
        _, errors = writer.communicate(timeout=120)
        assert writer.returncode == 0, errors
    listed = json.loads(run("claim", "list", "--json").stdout)
    numbers = [claim["claim_number"] for claim in listed]
    assert len(listed) == 1 + 2 * 8 and len(set(numbers)) == len(numbers), numbers


_WRITER = """
import sys
from lsp_memory.cli import main
for n in range(8):
    code = main(["claim", "add", f"{sys.argv[1]} wrote claim {n}", "--type", "fact"])
    if code:
        raise SystemExit(code)
"""


@pytest.mark.parametrize(
    ("statement", "reason"),
    [
        ("\u200b\u2028 ", "a claim needs a statement; the text is empty"),
        (
            "I like " + "tea " * 1500,
            "a claim is one fact of at most 5,000 characters; this text has 6,007 "
            "(keep a longer text in a note)",
        ),
        (
            "I like \x1b[31mred\x1b[0m tea",
            "a claim cannot hold the control character U+001B (character 8)",
        ),
    ],
)
def test_a_statement_that_cannot_be_a_claim_is_refused(
    run: Run, store_dir: Path, statement: str, reason: str
) -> None:
    """A blank-looking, a 10 MB or an escape-sequence statement was stored (and the last
    printed raw to the terminal by every listing)."""
    assert run("claim", "add", "I live in Rome").returncode == 0
    before = snapshot(store_dir)
    assert one_error_line(run("claim", "add", statement)) == f"lsp-memory: error: {reason}"
    assert snapshot(store_dir) == before


def test_import_reads_a_bom_and_refuses_a_control_character(run: Run, tmp_path: Path) -> None:
    good = {"kind": "claim", "statement": "I live in Rome", "claim_type": "identity"}
    bad = {**good, "statement": "I live in \x07Rome"}
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(good).encode() + b"\n")
    assert run("import", str(path)).returncode == 0, run("import", str(path)).stderr
    path.write_text(json.dumps(bad) + "\n", encoding="utf-8")
    failed = run("import", str(path))
    assert failed.returncode == 1
    assert failed.stderr.splitlines()[1:] == [
        "  line 1: claim: statement: "
        "a claim cannot hold the control character U+0007 (character 11)"
    ]
    assert [c["statement"] for c in json.loads(run("claim", "list", "--json").stdout)] == [
        "I live in Rome"
    ]


def test_a_name_with_a_control_character_is_refused(run: Run, store_dir: Path) -> None:
    """Context, tag, entity and entity type names took NUL and escape sequences as they came."""
    assert run("claim", "add", "I live in Rome").returncode == 0
    before = snapshot(store_dir)
    line = one_error_line(run("context", "add", "Work\x1b[31m"))
    assert line == (
        "lsp-memory: error: field 'name' cannot hold the control character U+001B (character 5)"
    )
    assert snapshot(store_dir) == before
