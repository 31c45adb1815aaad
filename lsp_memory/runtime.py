"""Process-level helpers for bulk work (stdlib only)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector around bulk work that allocates many objects and makes
    no cycles: its passes over the growing heap cost a fifth of an import (30k claims) and a
    tenth of a first vault scan (10 000 notes), measured."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
