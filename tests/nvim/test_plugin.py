"""The Neovim plugin in ``editors/nvim`` as a user runs it: headless Neovim puts the plugin on
its runtimepath, calls ``require("lsp_memory").setup(...)`` with ``python -m lsp_memory
serve``, opens a note of a vault and runs the plugin's commands against the real server, then
crashes the server, points the plugin at a missing one and checks the help file
(``plugin_check.lua``).

Without ``nvim`` on PATH the test is skipped, unless ``LSP_MEMORY_REQUIRE_NVIM=1`` (CI)."""

from __future__ import annotations

from pathlib import Path

from tests.nvim.test_headless import nvim_env, nvim_or_skip, prepare, run_checks

ROOT = Path(__file__).parents[2]
PLUGIN = ROOT / "editors" / "nvim"
SCRIPT = Path(__file__).with_name("plugin_check.lua")
MIN_PASSES = 40
"""The checks plugin_check.lua makes: fewer PASS lines means it stopped early without a FAIL."""

# The note plugin_check.lua opens; it finds its lines by these texts, so change both together.
NOTE = """\
# Plugin check

Database: @leaf_active_a001 and #42 here
Plan: see [[Project Plan]]
Search result:
Remember me: I cycle to work on Mondays 🚲
"""


def test_the_plugin_drives_the_server(tmp_path: Path) -> None:
    nvim = nvim_or_skip()
    store, vault = prepare(tmp_path)
    # The root marker sits in the vault, the note one folder below it.
    (vault / "lsp-memory.toml").write_text("# the vault's root\n", encoding="utf-8")
    doc = vault / "sub" / "plugin-check.md"
    doc.write_text(NOTE, encoding="utf-8")
    mentions = vault / "mentions-check.md"  # :LspMemoryUnlinkedMentions lists its line 3
    mentions.write_text("# Mentions check\n\nThe plugin check note, not linked.\n", "utf-8")
    # Another root, marked by .git, for the missing-server case: nothing is started there.
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    (other / "sub").mkdir()
    (other / "a.md").write_text("# A\n", encoding="utf-8")
    (other / "sub" / "b.md").write_text("# B\n", encoding="utf-8")
    help_dir = tmp_path / "help"
    help_dir.mkdir()
    env = nvim_env(tmp_path, store, doc=doc, vault=vault, other=other, help=help_dir)
    # What a user's `set rtp+=…` does.
    command = [nvim, "--headless", "-u", "NONE", "-i", "NONE", "--cmd", f"set rtp+={PLUGIN}"]
    run_checks([*command, "-c", f"luafile {SCRIPT}"], env, MIN_PASSES)
