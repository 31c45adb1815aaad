"""A document's lines as an LSP client counts them: broken at ``\\n``, ``\\r\\n`` and ``\\r``
only, not where ``str.splitlines`` also breaks (U+2028, U+0085, form feed, …)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsp_memory.lsp.documents import lsp_lines

BREAKS = "\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", []),
        ("a", ["a"]),
        ("a\n", ["a\n"]),
        ("a\r\nb\rc\n\nd", ["a\r\n", "b\r", "c\n", "\n", "d"]),
        ("one\u2029two\x0c \nend", ["one\u2029two\x0c \n", "end"]),
        ("x\u2028y\x85z\x1c", ["x\u2028y\x85z\x1c"]),
    ],
)
def test_lines_break_where_lsp_breaks_them(text: str, lines: list[str]) -> None:
    assert lsp_lines(text) == lines


@given(st.text(st.sampled_from([*BREAKS, "a", "é", " "]), max_size=40))
def test_the_lines_are_the_text_and_end_only_at_lsp_breaks(text: str) -> None:
    lines = lsp_lines(text)
    assert "".join(lines) == text
    for line in lines[:-1]:
        assert line.endswith(("\n", "\r"))
    for line in lines:
        body = line.rstrip("\r\n")
        assert "\n" not in body and "\r" not in body
