"""The change log: which rows of claims, contexts and entities were written, in order, so the
derived indexes (full text, vectors) can follow the store; and those records read by row."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lsp_memory.model import Claim, Context, Entity
from lsp_memory.store.sqlite.connection import _translated
from lsp_memory.store.sqlite.rows import (
    _CLAIM_SELECT,
    _CONTEXT_SELECT,
    _ENTITY_SELECT,
    _IDS,
    ClaimLoader,
    _context,
    _entity,
)


@dataclass(frozen=True, slots=True)
class Change:
    """One logged write: the row changed, and for a deletion the record's id."""

    seq: int
    kind: str  # claim, context, entity, episode
    row: int  # the first row of the range
    last_row: int
    record_id: str | None  # set for a deletion


class ChangeLog(ClaimLoader):
    """Following the store (derived indexes)."""

    @_translated
    def store_id(self) -> str:
        """A random id made with the store: an index built from another store is stale."""
        row = self._db.execute("SELECT value FROM store_meta WHERE key = 'store_id'").fetchone()
        return str(row[0])

    @_translated
    def last_change(self) -> int:
        row = self._db.execute("SELECT coalesce(max(seq), 0) FROM changes").fetchone()
        return int(row[0])

    @_translated
    def changes_since(self, seq: int, limit: int = 100_000) -> list[Change]:
        """Writes to claims, contexts and entities after ``seq``, oldest first."""
        rows = self._db.execute(
            "SELECT seq, kind, row, last_row, record_id FROM changes WHERE seq > ? "
            "ORDER BY seq LIMIT ?",
            (seq, limit),
        )
        return [Change(*row) for row in rows]

    @_translated
    def rows(self, kind: str) -> list[int]:
        """Every row id of ``claims``, ``contexts`` or ``entities``, all users."""
        table = {
            "claim": "claims",
            "context": "contexts",
            "entity": "entities",
            "episode": "episodes",
        }[kind]
        return [int(row[0]) for row in self._db.execute(f"SELECT id FROM {table} ORDER BY id")]

    @_translated
    def claims_by_rows(self, rows: Sequence[int]) -> list[Claim]:
        """Claims of any user by row id, with their links (for indexing)."""
        return self._load(_CLAIM_SELECT + f"WHERE c.id IN {_IDS}", (json.dumps(list(rows)),))

    @_translated
    def contexts_by_rows(self, rows: Sequence[int]) -> list[Context]:
        sql = _CONTEXT_SELECT + f"WHERE x.id IN {_IDS}"
        return [_context(row) for row in self._db.execute(sql, (json.dumps(list(rows)),))]

    @_translated
    def entities_by_rows(self, rows: Sequence[int]) -> list[Entity]:
        sql = _ENTITY_SELECT + f"WHERE e.id IN {_IDS}"
        return [_entity(row) for row in self._db.execute(sql, (json.dumps(list(rows)),))]


def _log_rows(db: sqlite3.Connection, kind: str, rows: Iterable[int]) -> None:
    """Record that ``rows`` of ``kind`` changed, one change-log range per run of
    consecutive rows."""
    ordered = sorted(set(rows))
    start = 0
    for index in range(1, len(ordered) + 1):
        if index == len(ordered) or ordered[index] != ordered[index - 1] + 1:
            _log(db, kind, ordered[start], ordered[index - 1])
            start = index


def _log(db: sqlite3.Connection, kind: str, first: int, last: int | None = None) -> None:
    """Record in the change log that rows ``first``..``last`` of ``kind`` changed."""
    db.execute(
        "INSERT INTO changes (kind, row, last_row) VALUES (?, ?, ?)",
        (kind, first, first if last is None else last),
    )


WRITTEN = (
    "status",
    "pinned",
    "superseded_by",
    "merged_into",
    "valid_to",
    "archived_at",
    "updated_at",
)
"""The claim fields a single write may change, kept in ``claim_writes`` before and after
(``updated_at`` too: a claim as of a date is ranked by its recency then)."""


def _written(db: sqlite3.Connection, rows: Iterable[int]) -> dict[int, list[object]]:
    """The ``WRITTEN`` fields of the claims ``rows``, by row: what a write is about to change."""
    found = db.execute(
        f"SELECT id, {', '.join(WRITTEN)} FROM claims WHERE id IN {_IDS}",
        (json.dumps(list(rows)),),
    )
    return {row[0]: list(row[1:]) for row in found}


def _log_writes(
    db: sqlite3.Connection, what: str, when: str, before: dict[int, list[object]]
) -> None:
    """Record in ``claim_writes`` each field ``what`` (a retract, a pin…) changed at ``when``
    on the claims of ``before`` (their ``_written`` fields before the write)."""
    after = _written(db, before)
    pinned = WRITTEN.index("pinned")
    for values in (*before.values(), *after.values()):
        values[pinned] = bool(values[pinned])
    db.executemany(
        "INSERT INTO claim_writes (claim, at, what, field, before, after) VALUES (?,?,?,?,?,?)",
        [
            (row, when, what, name, json.dumps(old), json.dumps(new))
            for row, values in before.items()
            for name, old, new in zip(WRITTEN, values, after.get(row, values), strict=True)
            if old != new
        ],
    )


_LINKED = {True: "added to a context", False: "removed from a context"}
"""What ``claim_writes`` calls a link made or undone."""


def _log_link(db: sqlite3.Connection, claim: int, when: str, context: str, linked: bool) -> None:
    """Record in ``claim_writes`` that the claim was added to (or removed from) the context
    whose friendly id is ``context``."""
    db.execute(
        "INSERT INTO claim_writes (claim, at, what, field, before, after) VALUES (?,?,?,?,?,?)",
        (
            claim,
            when,
            _LINKED[linked],
            "context",
            json.dumps(None if linked else context),
            json.dumps(context if linked else None),
        ),
    )
