"""Block references and embeds in a real editor: Debian's headless Neovim 0.7 completes a
note's blocks after ``[[Blocks#^``, applies the edit that writes a new ``^id`` into the note,
and shows an embedded block on hover (``blocks.lua``). Skipped without ``nvim``, as
test_headless.py is."""

from __future__ import annotations

from pathlib import Path

from tests.nvim.test_headless import nvim_env, nvim_or_skip, prepare, run_checks

SCRIPT = Path(__file__).with_name("blocks.lua")
BLOCKS = "# Blocks\n\nFirst paragraph\ngoes on. 🚀 ^para1\n\n- item one\n- item two\n"
PROMPT = "Quote [[Blocks#^\nEmbed ![[Blocks#^para1]] here\n"


def test_headless_neovim_completes_blocks_and_hovers_an_embed(tmp_path: Path) -> None:
    nvim = nvim_or_skip()
    store, vault = prepare(tmp_path)
    (vault / "blocks.md").write_text(BLOCKS, encoding="utf-8")
    doc = vault / "blocks-prompt.md"
    doc.write_text(PROMPT, encoding="utf-8")
    env = nvim_env(tmp_path, store, doc=doc, vault=vault)
    command = [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-c", f"luafile {SCRIPT}"]
    run_checks(command, env, min_passes=8)
    # The server asked the editor to edit; Neovim changed its buffer, not the file.
    assert (vault / "blocks.md").read_text(encoding="utf-8") == BLOCKS
