"""Cutting text for display (lsp_memory/text.py): the one rule behind inlay hints, symbol
names, page lines and the command line's listings."""

from __future__ import annotations

from lsp_memory.text import ELLIPSIS, one_line


def test_one_line_folds_white_space_and_cuts_to_the_width_with_an_ellipsis() -> None:
    assert one_line("  I prefer\n\tdeep   work ", 40) == "I prefer deep work"
    assert one_line("x" * 10, 10) == "x" * 10
    cut = one_line("x" * 11, 10)
    assert cut == "x" * 9 + ELLIPSIS and len(cut) == 10
    assert one_line("", 5) == ""
