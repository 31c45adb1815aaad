"""Cutting text for display, one rule everywhere: a hint, a picker's label, a page's line, a
command-line listing; and what counts as blank or as a control character in text a user
writes. Pure functions."""

from __future__ import annotations

import re
import unicodedata

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


_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""Control characters other than tab and the line breaks \\n and \\r: C0, DEL and C1."""
_INVISIBLE = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf", "Cs"})
"""Unicode categories that show nothing: spaces, separators, controls, format characters
(zero-width space, joiners, marks of direction) and lone surrogates."""


def without_controls(text: str) -> str:
    """``text`` without its control characters (tab and line breaks kept)."""
    return _CONTROL.sub("", text)


def first_control(text: str) -> int | None:
    """Where ``text``'s first control character (not tab or a line break) is, or None."""
    found = _CONTROL.search(text)
    return found.start() if found else None


def blank(text: str) -> bool:
    """True when ``text`` shows nothing: only white space, separators, controls and
    zero-width characters (``"\\u200b\\u2028"`` is blank)."""
    return all(unicodedata.category(char) in _INVISIBLE for char in text)
