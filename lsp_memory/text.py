"""Cutting text for display, one rule everywhere: a hint, a picker's label, a page's line, a
command-line listing. Pure functions."""

from __future__ import annotations

ELLIPSIS = "…"


def one_line(text: str, width: int) -> str:
    """``text`` on one line (white space runs folded to a space), cut to ``width``
    characters at most, the last being ``…`` when it was cut."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + ELLIPSIS


def cut(text: str, limit: int) -> str:
    """``text`` when it has at most ``limit`` characters, else its start cut before the last
    word that fits and ended with ``…``, ``limit`` characters at most in all (a note's body
    in a context block keeps its lines)."""
    if len(text) <= limit:
        return text
    head = text[: max(0, limit - 1)]
    space = max(head.rfind(" "), head.rfind("\n"))
    if space >= len(head) * 0.9:
        head = head[:space]  # end on a word boundary when one is near
    return head.rstrip() + ELLIPSIS
