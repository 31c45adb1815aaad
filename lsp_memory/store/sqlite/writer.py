"""Bulk writes (an import): the keys a user already holds, which ids are taken, and a batch
of new records written in one transaction."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lsp_memory.ids import name_key
from lsp_memory.model import Claim, Context, Entity, EntityField, EntityType, Tag
from lsp_memory.slots import slot_key
from lsp_memory.store.schema import FILL_GROUP_SIZES, index_entity_names
from lsp_memory.store.sqlite.changes import _log
from lsp_memory.store.sqlite.claims import _supersede
from lsp_memory.store.sqlite.connection import _statements, _translated
from lsp_memory.store.sqlite.entities import Entities


@dataclass(slots=True)
class Batch:
    """New records to write in one transaction; they refer to each other (and to records
    already stored for the same user) by friendly id, entity-type name and claim id."""

    entity_types: list[EntityType] = field(default_factory=list)
    tags: list[Tag] = field(default_factory=list)
    contexts: list[Context] = field(default_factory=list)
    entities: list[Entity] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)


class StoredKeys(Collection[Any]):
    """One user's keys of a table — claim friendly ids or numbers, context, tag or entity
    friendly ids — asked one at a time through the table's unique ``(user, column)`` index,
    plus those ``add``-ed here: what a single write checks and draws a new friendly id
    against. Loading every claim key was 47 ms a write at 14 000 claims, 80 % of ingesting
    a message; the contexts' and entities' 15 ms a ``claim add`` on the 100 000-claim corpus
    (``benchmarks/ingest.py``, ``benchmarks/supersede.py --writes``)."""

    def __init__(self, db: sqlite3.Connection, user: str, table: str, column: str) -> None:
        self._db = db
        self._user = user
        self._sql = f"SELECT 1 FROM {table} WHERE user = ? AND {column} = ?"
        self._added: set[Any] = set()

    def __contains__(self, key: object) -> bool:
        if key in self._added:
            return True
        return self._db.execute(self._sql, (self._user, key)).fetchone() is not None

    def __or__(self, more: Iterable[Any]) -> StoredKeys:
        """These keys and ``more``, as a new collection (``add`` on it leaves this one)."""
        union = StoredKeys.__new__(StoredKeys)
        union._db, union._user, union._sql = self._db, self._user, self._sql
        union._added = self._added | set(more)
        return union

    def add(self, key: Any) -> None:
        self._added.add(key)

    def __iter__(self) -> Iterator[Any]:
        raise TypeError("stored keys are probed one at a time, not listed")

    def __len__(self) -> int:
        raise TypeError("stored keys are probed one at a time, not counted")


class StoredParents(Mapping[str, "str | None"]):
    """Friendly id → parent friendly id of one user's contexts (or tags), each asked for
    through the ``(user, friendly_id)`` index when looked up."""

    def __init__(self, db: sqlite3.Connection, user: str, table: str) -> None:
        self._db = db
        self._user = user
        self._sql = (
            f"SELECT p.friendly_id FROM {table} x LEFT JOIN {table} p ON p.id = x.parent "
            "WHERE x.user = ? AND x.friendly_id = ?"
        )

    def __getitem__(self, fid: str) -> str | None:
        row = self._db.execute(self._sql, (self._user, fid)).fetchone()
        if row is None:
            raise KeyError(fid)
        return row[0]  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[str]:
        raise TypeError("stored parents are probed one at a time, not listed")

    def __len__(self) -> int:
        raise TypeError("stored parents are probed one at a time, not counted")


@dataclass(slots=True)
class UserKeys:
    """What one user already has: the keys an import must not duplicate or may refer to.
    Loaded whole for an import; probed one at a time (``StoredKeys``, ``StoredParents``)
    for a single write."""

    claim_friendly_ids: set[str] | StoredKeys
    claim_numbers: set[int] | StoredKeys
    last_number: int
    context_parents: Mapping[str, str | None]  # friendly id → parent friendly id
    tag_parents: Mapping[str, str | None]
    entity_types: dict[str, tuple[EntityField, ...]]
    entity_friendly_ids: set[str] | StoredKeys
    context_friendly_ids: set[str] | StoredKeys
    tag_friendly_ids: set[str] | StoredKeys


class BulkWrites(Entities):
    """Writing batches of new records. An ``Entities``: ``keys`` reads the entity types."""

    @_translated
    def keys(self, user: str, *, probed: bool = False) -> UserKeys:
        """The keys one user's records already hold, for validating an import. With
        ``probed`` (a single write) none is loaded: each is looked up when asked for
        (``StoredKeys``, ``StoredParents``), so a write reads as much of a memory of 100 000
        claims, 2 000 contexts and 5 000 entities as of an empty one."""
        db = self._db
        last = db.execute("SELECT last FROM claim_numbers WHERE user = ?", (user,)).fetchone()
        types = {t.name: t.fields for t in self.entity_types(user)}  # already translated
        if probed:
            (highest,) = db.execute(
                "SELECT coalesce(max(number), 0) FROM claims WHERE user = ?", (user,)
            ).fetchone()
            return UserKeys(
                claim_friendly_ids=StoredKeys(db, user, "claims", "friendly_id"),
                claim_numbers=StoredKeys(db, user, "claims", "number"),
                last_number=max(last[0] if last else 0, highest),
                context_parents=StoredParents(db, user, "contexts"),
                tag_parents=StoredParents(db, user, "tags"),
                entity_types=types,
                entity_friendly_ids=StoredKeys(db, user, "entities", "friendly_id"),
                context_friendly_ids=StoredKeys(db, user, "contexts", "friendly_id"),
                tag_friendly_ids=StoredKeys(db, user, "tags", "friendly_id"),
            )
        fids: set[str] = set()
        numbers: set[int] = set()
        for fid, number in db.execute(
            "SELECT friendly_id, number FROM claims WHERE user = ?", (user,)
        ):
            fids.add(fid)
            numbers.add(number)
        contexts = dict(
            db.execute(
                "SELECT x.friendly_id, p.friendly_id FROM contexts x "
                "LEFT JOIN contexts p ON p.id = x.parent WHERE x.user = ?",
                (user,),
            ).fetchall()
        )
        tags = dict(
            db.execute(
                "SELECT t.friendly_id, p.friendly_id FROM tags t "
                "LEFT JOIN tags p ON p.id = t.parent WHERE t.user = ?",
                (user,),
            ).fetchall()
        )
        return UserKeys(
            claim_friendly_ids=fids,
            claim_numbers=numbers,
            last_number=max(last[0] if last else 0, max(numbers, default=0)),
            context_parents=contexts,
            tag_parents=tags,
            entity_types=types,
            entity_friendly_ids={
                row[0]
                for row in db.execute("SELECT friendly_id FROM entities WHERE user = ?", (user,))
            },
            context_friendly_ids=set(contexts),
            tag_friendly_ids=set(tags),
        )

    @_translated
    def uuid_owners(self, table: str, candidates: Iterable[str]) -> dict[str, str]:
        """Which of ``candidates`` are already ids of ``table`` (claims, contexts, entities),
        and whose: an id is unique in the store, across users."""
        column = {"claims": "claim_id", "contexts": "context_id", "entities": "entity_id"}[table]
        wanted = list(candidates)
        found: dict[str, str] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            sql = (
                f"SELECT {column}, user FROM {table} "
                f"WHERE {column} IN ({', '.join('?' * len(chunk))})"
            )
            found.update((row[0], row[1]) for row in self._db.execute(sql, chunk))
        return found

    @_translated
    def claim_owner(self, claim_id: str) -> str | None:
        row = self._db.execute("SELECT user FROM claims WHERE claim_id = ?", (claim_id,)).fetchone()
        return row[0] if row else None

    @_translated
    def write(self, batch: Batch, *, supersedes: Sequence[str] = (), when: str = "") -> None:
        """Write ``batch`` in one transaction: all of it or, on any failure, none of it.
        ``supersedes``: claims the batch's one claim supersedes (a single write), marked in
        the same transaction, valid until ``when``."""
        with self._write() as db:
            _Writer(db).write(batch)
            if supersedes:
                new = batch.claims[0]
                _supersede(db, new.user, supersedes, new.claim_id, when or new.created_at)


_FILL = tuple(_statements(FILL_GROUP_SIZES))


def _json_text(value: tuple[str, ...] | dict[str, Any], empty: str) -> str:
    """A list or object column's text; most are empty, and dumps costs 3 µs each."""
    if not value:
        return empty
    return json.dumps(
        value if isinstance(value, dict) else list(value), ensure_ascii=False, sort_keys=True
    )


class _Writer:
    """Inserts one batch inside an open transaction, giving new rows explicit ids so links
    between new records need no read-back."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._ids: dict[tuple[str, str, str], int] = {}  # (table, user, key) → row id
        self._added: dict[str, tuple[int, int]] = {}  # table → first and last new row id

    def _next_id(self, table: str) -> int:
        return int(self._db.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0])

    def _id(self, table: str, user: str, key: str) -> int:
        """The row id of a record named by friendly id (or entity-type name)."""
        found = self._ids.get((table, user, key))
        if found is None:
            column = "name" if table == "entity_types" else "friendly_id"
            row = self._db.execute(
                f"SELECT id FROM {table} WHERE user = ? AND {column} = ?", (user, key)
            ).fetchone()
            if row is None:
                raise sqlite3.IntegrityError(f"{table}: no {key!r} for user {user!r}")
            found = self._ids[(table, user, key)] = int(row[0])
        return found

    def _assign(self, table: str, keys: Iterable[tuple[str, str]]) -> list[int]:
        base = self._next_id(table)
        ids = []
        for offset, (user, key) in enumerate(keys, start=1):
            self._ids[(table, user, key)] = base + offset
            ids.append(base + offset)
        self._added[table] = (base + 1, base + len(ids))
        return ids

    def write(self, batch: Batch) -> None:
        bulk = bool(batch.claims)
        if bulk:
            # The group sizes' link triggers cost ~0.5 ms a claim (an import ran 4× slower):
            # they stand aside, and the new claims join the sizes in one pass.
            self._db.execute("INSERT INTO store_meta VALUES ('group_sizes_paused', '1')")
        self._insert(batch)
        if bulk:
            first, last = self._added.get("claims", (0, -1))
            for statement in _FILL:
                self._db.execute(statement, {"first": first, "last": last})
            self._db.execute("DELETE FROM store_meta WHERE key = 'group_sizes_paused'")
        # One change-log range per table for everything this batch added.
        for kind, table in (("context", "contexts"), ("entity", "entities"), ("claim", "claims")):
            first, last = self._added.get(table, (0, -1))
            if last >= first:
                _log(self._db, kind, first, last)

    def _insert(self, batch: Batch) -> None:
        db = self._db
        type_ids = self._assign("entity_types", ((t.user, t.name) for t in batch.entity_types))
        db.executemany(
            "INSERT INTO entity_types (id, user, name, fields) VALUES (?,?,?,?)",
            [
                (
                    i,
                    t.user,
                    t.name,
                    json.dumps([{"name": f.name, "type": f.type} for f in t.fields]),
                )
                for i, t in zip(type_ids, batch.entity_types, strict=True)
            ],
        )
        tag_ids = self._assign("tags", ((t.user, t.friendly_id) for t in batch.tags))
        db.executemany(
            "INSERT INTO tags (id, user, friendly_id, name, parent) VALUES (?,?,?,?,?)",
            [
                (i, t.user, t.friendly_id, t.name, self._parent("tags", t.user, t.parent))
                for i, t in zip(tag_ids, batch.tags, strict=True)
            ],
        )
        context_ids = self._assign("contexts", ((c.user, c.friendly_id) for c in batch.contexts))
        db.executemany(
            "INSERT INTO contexts (id, context_id, user, friendly_id, name, name_key, "
            "description, parent, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            [
                (
                    i,
                    c.context_id,
                    c.user,
                    c.friendly_id,
                    c.name,
                    name_key(c.name),
                    c.description,
                    self._parent("contexts", c.user, c.parent),
                    c.created_at,
                    c.updated_at,
                )
                for i, c in zip(context_ids, batch.contexts, strict=True)
            ],
        )
        entity_ids = self._assign("entities", ((e.user, e.friendly_id) for e in batch.entities))
        entity_rows = [
            (i, e, json.dumps(e.fields, ensure_ascii=False))
            for i, e in zip(entity_ids, batch.entities, strict=True)
        ]
        db.executemany(
            "INSERT INTO entities (id, entity_id, user, friendly_id, name, type, fields, "
            "trashed, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            [
                (
                    i,
                    e.entity_id,
                    e.user,
                    e.friendly_id,
                    e.name,
                    self._id("entity_types", e.user, e.type),
                    fields,
                    int(e.trashed),
                    e.created_at,
                    e.updated_at,
                )
                for i, e, fields in entity_rows
            ],
        )
        index_entity_names(db, [(i, e.user, fields) for i, e, fields in entity_rows])
        self._claims(batch.claims)

    def _parent(self, table: str, user: str, parent: str | None) -> int | None:
        return None if parent is None else self._id(table, user, parent)

    def _claims(self, claims: list[Claim]) -> None:
        db = self._db
        ids = self._assign("claims", ((c.user, c.friendly_id) for c in claims))
        rows, types, domains, contexts, tags, entities = [], [], [], [], [], []
        last: dict[str, int] = {}
        for i, c in zip(ids, claims, strict=True):
            rows.append(
                (
                    i,
                    c.claim_id,
                    c.user,
                    c.number,
                    c.friendly_id,
                    c.statement,
                    str(c.status),
                    c.confidence,
                    _json_text(c.possible_questions, "[]"),
                    int(c.pinned),
                    c.created_at,
                    c.updated_at,
                    c.valid_from,
                    c.valid_to,
                    c.superseded_by,
                    c.merged_into,
                    _json_text(c.meta, "{}"),
                    _json_text(c.derived_from, "[]"),
                    c.evidence_count,
                    c.origin,
                    slot_key(c.statement),
                    c.claim_types[0] if c.claim_types else None,
                )
            )
            types += [(i, pos, t) for pos, t in enumerate(c.claim_types)]
            domains += [(i, pos, d) for pos, d in enumerate(c.domains)]
            contexts += [(self._id("contexts", c.user, x), i) for x in c.contexts or ()]
            tags += [(i, self._id("tags", c.user, t)) for t in c.tags or ()]
            entities += [(i, self._id("entities", c.user, e)) for e in c.entities or ()]
            last[c.user] = max(last.get(c.user, 0), c.number)
        db.executemany(
            "INSERT INTO claims (id, claim_id, user, number, friendly_id, statement, status, "
            "confidence, possible_questions, pinned, created_at, updated_at, valid_from, "
            "valid_to, superseded_by, merged_into, meta, derived_from, evidence_count, origin, "
            "slot_key, claim_type) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            rows,
        )
        db.executemany("INSERT INTO claim_types VALUES (?,?,?)", types)
        db.executemany("INSERT INTO claim_domains VALUES (?,?,?)", domains)
        db.executemany("INSERT OR IGNORE INTO context_claims VALUES (?,?)", contexts)
        db.executemany("INSERT OR IGNORE INTO claim_tags VALUES (?,?)", tags)
        db.executemany("INSERT OR IGNORE INTO claim_entities VALUES (?,?)", entities)
        db.executemany(
            "INSERT INTO claim_numbers (user, last) VALUES (?, ?) "
            "ON CONFLICT (user) DO UPDATE SET last = max(last, excluded.last)",
            sorted(last.items()),
        )
