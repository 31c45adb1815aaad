"""benchmarks/peer_basic_memory.py's parts that run without basic-memory: the one-line skip
when it is not installed, and the process-tree memory it reads for an MCP server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.peer_basic_memory import bm_index, main, tree, tree_memory


def test_without_basic_memory_it_says_so_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--basic-memory", "/nonexistent/basic-memory"]) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert "basic-memory is not installed" in err
    assert "--basic-memory" in err


def test_no_executable_given_is_the_same_skip(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BASIC_MEMORY_BIN", raising=False)
    assert main([]) == 0
    assert "basic-memory is not installed" in capsys.readouterr().err


def test_a_process_tree_counts_its_children() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in tree(os.getpid())
        memory = tree_memory(os.getpid())
        assert memory["processes"] >= 2
        assert memory["vmrss_mib"] > 0
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--sizes", "5000"], "--sizes: 1000 and/or 10000"),
        (["--sizes", "1000", "10000"], "--cache"),
    ],
)
def test_bad_sizes_and_a_missing_corpus_stop_before_any_work(
    arguments: list[str], said: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Checked before anything is generated or indexed (the 10k notes are the server
    corpus's: without --cache there is none to search)."""
    with pytest.raises(SystemExit) as stopped:
        main(["--basic-memory", "/bin/true", "--workdir", str(tmp_path), *arguments])
    assert stopped.value.code == 2
    assert said in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_an_unfinished_basic_memory_index_is_redone_and_a_finished_one_reused(
    tmp_path: Path,
) -> None:
    """A killed ``project add`` leaves a database behind: only the marker written after a
    finished build makes a later run reuse it."""
    calls = tmp_path / "calls"
    fake = tmp_path / "basic-memory"
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {calls}\n'
        'mkdir -p "$HOME/.basic-memory" && touch "$HOME/.basic-memory/memory.db"\n'
    )
    fake.chmod(0o755)
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n")
    folder = tmp_path / "bm1k"
    (folder / "home" / ".basic-memory").mkdir(parents=True)
    (folder / "home" / ".basic-memory" / "memory.db").touch()  # what a killed build leaves
    (folder / "vault").mkdir()

    _, figures = bm_index(str(fake), vault, folder)
    assert figures["reused"] is False
    assert calls.read_text().splitlines() == [f"project add bench {folder / 'vault'} --default"]
    assert (folder / "vault" / "a.md").exists()

    _, again = bm_index(str(fake), vault, folder)
    assert again["reused"] is True
    assert again["wall_s"] == figures["wall_s"]
    assert len(calls.read_text().splitlines()) == 1
