"""What is computed from a note set once and then read by every request on it (the
names ``[[`` completion searches, the reverse links hover shows): kept beside the note set
it came from, for the few latest note sets. A note set never changes, so neither does what
was derived from it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from lsp_memory.notes.noteset import NoteSet

T = TypeVar("T")

_LOCK = threading.Lock()
_KEPT: list[tuple[object, Callable[[NoteSet], Any], Any]] = []
_KEEP = 8  # a few vaults, each with its latest note set and the one before, two kinds each


def derived(noteset: NoteSet, build: Callable[[NoteSet], T], *, notes_only: bool = False) -> T:
    """``build(noteset)``, computed on first use and then remembered (two threads asking
    at once may both build it; either result is the same). ``notes_only``: ``build`` reads
    the notes alone, so a note set that differs only in the vault's other files (the first
    scan's, after the saved scan was published) shares the value."""
    key: object = noteset.notes if notes_only else noteset
    with _LOCK:
        for kept, builder, value in _KEPT:
            if kept is key and builder is build:
                found: T = value
                return found
    value = build(noteset)
    with _LOCK:
        _KEPT.insert(0, (key, build, value))
        del _KEPT[_KEEP:]
    return value
