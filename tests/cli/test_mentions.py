"""``lsp-memory mentions NOTE``: the notes that mention a note without linking it, as lines
and as JSON; a NOTE that names no note is one error line and exit 1, like every command's
wrong reference."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import Run, run, store_dir  # noqa: F401


def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / "sub").mkdir(parents=True)
    (root / "plan.md").write_text("# Project Plan\n\nThe plan.\n", encoding="utf-8")
    (root / "a.md").write_text("# A\n\nWe follow the project plan.\n", encoding="utf-8")
    (root / "sub" / "b.md").write_text("# B\n\nSee [[Project Plan]]: project plan.\n", "utf-8")
    (root / "c.md").write_text("# C\n\n`Project Plan` and %% project plan %%\n", "utf-8")
    return root


def test_mentions_lists_each_unlinked_mention(run: Run, tmp_path: Path) -> None:  # noqa: F811
    root = vault(tmp_path)
    result = run("--vault", str(root), "mentions", "[[Project Plan]]")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["a.md:3:15  We follow the project plan."]
    as_json = run("--vault", str(root), "mentions", "vault/plan.md", "--json")
    assert as_json.returncode == 0, as_json.stderr
    [record] = json.loads(as_json.stdout)
    assert record["note"] == "a.md" and record["title"] == "A"
    assert record["text"] == "project plan"
    assert record["range"]["start"] == {"line": 2, "character": 14}


def test_a_note_no_one_mentions(run: Run, tmp_path: Path) -> None:  # noqa: F811
    root = vault(tmp_path)
    result = run("--vault", str(root), "mentions", "A")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "no unlinked mentions of 'A'\n"


def test_a_bad_note_is_one_error_line(run: Run, tmp_path: Path) -> None:  # noqa: F811
    root = vault(tmp_path)
    result = run("--vault", str(root), "mentions", "Nope")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == "lsp-memory: error: Note not found: Nope\n"
    assert run("mentions", "Nope").stderr.startswith("lsp-memory: error: no vault")
