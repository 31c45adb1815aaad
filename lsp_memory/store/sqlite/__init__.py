"""The store of record: claims, contexts, tags and entities in SQLite, scoped by user.

One file, ``memory.sqlite3``, in the store folder (see ``connection``). ``Store`` is composed
of one part per record kind, each in its module, all sharing the connection:

- ``connection``: opening, migrations, error translation, the write transaction
- ``rows``: the shared SQL fragments and row → model converters
- ``claims``, ``tiers`` (the context block's automatic memories), ``contexts`` (and tags),
  ``entities``: reads, and the few in-place updates
- ``groups``: the sizes of contexts, tags and domains, kept at write time by triggers
- ``changes``: the change log the derived indexes follow, and records read by row
- ``rename``: a new friendly id for any record; ``writer``: batches of new records (imports)
- ``lifecycle``: consolidation's reads, runs (changes with before/after, undone exactly),
  review items, episodes
- ``history``: every change made to a claim, by a single write (``claim_writes``) or a run

Every method that reads or writes records takes the user and never returns another user's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lsp_memory.store.schema import MIGRATIONS, Migration
from lsp_memory.store.sqlite.changes import Change, ChangeLog
from lsp_memory.store.sqlite.claims import MAX_TREE_DEPTH, Claims
from lsp_memory.store.sqlite.connection import (
    DEFAULT_BUSY_TIMEOUT_MS,
    STORE_FILE,
    connect,
    describe,
    migrate,
)
from lsp_memory.store.sqlite.contexts import Contexts
from lsp_memory.store.sqlite.entities import Entities
from lsp_memory.store.sqlite.groups import Groups, GroupSize, Listed
from lsp_memory.store.sqlite.history import TYPES_SEP, ClaimEvent, History, LiveRow, Standing
from lsp_memory.store.sqlite.lifecycle import (
    ChangedSince,
    ClaimState,
    ConcurrentRun,
    Conversation,
    Episode,
    EpisodeRef,
    FieldChange,
    LaterRuns,
    Lifecycle,
    NewItem,
    ReviewItem,
    Run,
    StaleError,
    Undone,
)
from lsp_memory.store.sqlite.rename import Renames
from lsp_memory.store.sqlite.tiers import TierQueries
from lsp_memory.store.sqlite.writer import Batch, BulkWrites, StoredKeys, UserKeys

__all__ = [
    "DEFAULT_BUSY_TIMEOUT_MS",
    "MAX_TREE_DEPTH",
    "STORE_FILE",
    "TYPES_SEP",
    "Batch",
    "Change",
    "ChangedSince",
    "ClaimEvent",
    "ClaimState",
    "ConcurrentRun",
    "Conversation",
    "Episode",
    "EpisodeRef",
    "FieldChange",
    "GroupSize",
    "LaterRuns",
    "Listed",
    "LiveRow",
    "NewItem",
    "ReviewItem",
    "Run",
    "StaleError",
    "Standing",
    "Store",
    "StoredKeys",
    "Undone",
    "UserKeys",
    "describe",
    "migrate",
    "open_store",
]


# BulkWrites comes before Entities: it is one (its ``keys`` reads the entity types).
class Store(
    Claims,
    TierQueries,
    Contexts,
    Groups,
    BulkWrites,
    Entities,
    ChangeLog,
    Renames,
    Lifecycle,
    History,
):
    """An open store. Not shared between threads; open one per thread or process."""


def open_store(
    folder: Path,
    *,
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    migrations: Sequence[Migration] = MIGRATIONS,
) -> Store:
    """Open (creating if needed) the store in ``folder`` and bring its schema up to date.

    Raises ``StoreError`` with one line when the folder or file cannot be used, the store is
    locked past the busy timeout, or it was written by a newer version (left untouched).
    """
    db, path = connect(folder, busy_timeout_ms=busy_timeout_ms, migrations=migrations)
    return Store(db, path, busy_timeout_ms)
