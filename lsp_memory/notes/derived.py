"""What is computed from a vault snapshot once and then read by every request on it (the
names ``[[`` completion searches, the reverse links hover shows): kept beside the snapshot
it came from, for the few latest snapshots. A snapshot never changes, so neither does what
was derived from it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from lsp_memory.notes.snapshot import Snapshot

T = TypeVar("T")

_LOCK = threading.Lock()
_KEPT: list[tuple[Snapshot, Callable[[Snapshot], Any], Any]] = []
_KEEP = 8  # a few vaults, each with its latest snapshot and the one before, two kinds each


def derived(snapshot: Snapshot, build: Callable[[Snapshot], T]) -> T:
    """``build(snapshot)``, computed on first use and then remembered (two threads asking
    at once may both build it; either result is the same)."""
    with _LOCK:
        for kept, builder, value in _KEPT:
            if kept is snapshot and builder is build:
                found: T = value
                return found
    value = build(snapshot)
    with _LOCK:
        _KEPT.insert(0, (snapshot, build, value))
        del _KEPT[_KEEP:]
    return value
