"""One real editor end to end: Debian's headless Neovim 0.7 starts ``python -m lsp_memory
serve`` through its built-in LSP client, opens a note in a vault and checks diagnostics,
completion, hover, definition, an incremental edit, commands, related-note code actions and
shutdown (``client.lua``).

Without ``nvim`` on PATH the test is skipped, unless ``LSP_MEMORY_REQUIRE_NVIM=1`` (CI)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_memory.services.memory.interchange import import_records
from lsp_memory.store.sqlite import open_store
from tests.conftest import DATA, KB, USER

ROOT = Path(__file__).parents[2]
SCRIPT = Path(__file__).with_name("client.lua")
MIN_PASSES = 34
"""The checks client.lua makes: fewer PASS lines means it stopped early without a FAIL."""

# The note client.lua opens and edits; it finds its positions by these texts, so change both
# together. The emojis make UTF-16 positions differ from byte and code point columns.
NOTE = """\
# Headless check

Database: @leaf_active_a001 and #42 here
Plan 🚀 see [[Project Plan]] soon
Broken 🚀 @no_such_thing_xyz here

Complete a claim: @pre
Complete a number: #4
Complete a note: [[Proj
Remember me: I cycle to work on Mondays 🚲

Steps: I try to walk 8000 steps every day, even when it rains, by going out after lunch.
"""


def prepare(work: Path) -> tuple[Path, Path]:
    """A store holding kb.jsonl for ``USER`` and a copy of the fixture vault, in ``work``."""
    store, vault = work / "store", work / "vault"
    with open_store(store) as opened:
        import_records(opened, KB.read_bytes(), user=USER, source="kb")
    shutil.copytree(DATA / "notes", vault)
    return store, vault


def nvim_env(tmp_path: Path, store: Path, **paths: Path) -> dict[str, str]:
    """A headless Neovim's environment in ``tmp_path``: the server's store and user, and
    ``LSP_MEMORY_NVIM_<NAME>`` for each of ``paths`` (``doc=…``: LSP_MEMORY_NVIM_DOC)."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "LSP_MEMORY_STORE": str(store),
        "LSP_MEMORY_USER": USER,
        "PYTHONPATH": str(ROOT),
        "LSP_MEMORY_NVIM_PYTHON": sys.executable,
        **{f"LSP_MEMORY_NVIM_{name.upper()}": str(path) for name, path in paths.items()},
    }


def nvim_or_skip() -> str:
    found = shutil.which("nvim")
    if found is not None:
        return found
    reason = "nvim is not on PATH (Debian: apt-get install neovim)"
    if os.environ.get("LSP_MEMORY_REQUIRE_NVIM") == "1":
        pytest.fail(f"{reason}, and LSP_MEMORY_REQUIRE_NVIM=1 requires it")
    pytest.skip(reason)


def text(stream: str | bytes | None) -> str:
    """Output caught by ``TimeoutExpired``, which may be bytes even with ``text=True``."""
    return stream.decode(errors="replace") if isinstance(stream, bytes) else stream or ""


def test_headless_neovim_drives_the_server(tmp_path: Path) -> None:
    nvim = nvim_or_skip()
    store, vault = prepare(tmp_path)
    doc = vault / "headless.md"
    doc.write_text(NOTE, encoding="utf-8")
    env = nvim_env(tmp_path, store, doc=doc, vault=vault)
    run_checks([nvim, "--headless", "-u", "NONE", "-i", "NONE", "-c", f"luafile {SCRIPT}"], env)


def lsp_log(env: dict[str, str], lines: int = 150) -> str:
    """The end of Neovim's LSP log (``lsp.log``: the servers' stderr, where a crashed server's
    stacks are), for a failure's message."""
    found = ""
    for folder in (env.get("XDG_CACHE_HOME"), env.get("XDG_STATE_HOME")):
        log = Path(folder or "/nonexistent") / "nvim" / "lsp.log"
        if log.is_file():
            tail = log.read_text(errors="replace").splitlines()[-lines:]
            found += f"\n--- {log} (last {len(tail)} lines)\n" + "\n".join(tail)
    return found


def run_checks(command: list[str], env: dict[str, str], min_passes: int = MIN_PASSES) -> None:
    """Run a headless Neovim check script (PASS/FAIL lines) and assert it passed whole: no
    FAIL, exit 0, at least ``min_passes`` checks (fewer means it stopped early)."""
    # The script quits by itself; `cq 2` runs only when it could not even be loaded, which
    # would otherwise leave Neovim waiting until the timeout.
    try:
        result = subprocess.run(
            [*command, "-c", "cq 2"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            timeout=120,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        pytest.fail(
            f"nvim timed out after {error.timeout} s\n--- stdout\n{text(error.stdout)}"
            f"\n--- stderr\n{text(error.stderr)}{lsp_log(env)}"
        )
    output = (
        f"nvim exited with {result.returncode}\n--- stdout\n{result.stdout}"
        f"\n--- stderr\n{result.stderr}{lsp_log(env)}"
    )
    lines = result.stdout.splitlines()
    failed = [line for line in lines if line.startswith("FAIL ")]
    passed = [line for line in lines if line.startswith("PASS ")]
    assert not failed, output
    assert result.returncode == 0, output
    assert len(passed) >= min_passes, output
