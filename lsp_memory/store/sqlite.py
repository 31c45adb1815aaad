"""The store of record: claims, contexts, tags and entities in SQLite, scoped by user.

One file, ``memory.sqlite3``, in the store folder. WAL so readers never wait for the writer,
a busy timeout so two writers take turns, foreign keys on, the schema versioned with
``PRAGMA user_version`` and migrated forward on open. A store written by a newer version is
refused before anything is written to it.

Every method that reads or writes records takes the user and never returns another user's.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from lsp_memory.errors import StoreError
from lsp_memory.ids import name_key
from lsp_memory.model import (
    LIVE_STATUSES,
    Claim,
    ClaimStatus,
    Context,
    ContextNode,
    Entity,
    EntityField,
    EntityType,
    Tag,
)
from lsp_memory.store.schema import MIGRATIONS

STORE_FILE = "memory.sqlite3"
DEFAULT_BUSY_TIMEOUT_MS = 5000
MAX_TREE_DEPTH = 10
"""How deep below a context (or tag) its claims are gathered; also stops hand-made cycles."""

_SEP = "\x1f"  # joins list values in one column; never part of an id, type or domain
_LIVE = "('" + "', '".join(LIVE_STATUSES) + "')"
_NEWEST = "ORDER BY c.updated_at DESC, c.number DESC"

P = ParamSpec("P")
R = TypeVar("R")


def describe(error: sqlite3.Error, path: Path, busy_ms: int) -> StoreError:
    """One line for a SQLite failure, naming the store and what the user can do."""
    text = str(error)
    lowered = text.lower()
    if "locked" in lowered or "busy" in lowered:
        return StoreError(
            f"store {path} is locked by another process (waited {busy_ms / 1000:g} s); "
            "try again when it finishes"
        )
    if "readonly" in lowered or "read-only" in lowered or "unable to open" in lowered:
        return StoreError(f"store {path} is read-only or cannot be opened: {text}")
    if "not a database" in lowered or "malformed" in lowered:
        return StoreError(f"{path} is not a readable lsp-memory store: {text}")
    if "disk" in lowered and "full" in lowered:
        return StoreError(f"store {path}: the disk is full; nothing was written")
    return StoreError(f"store {path}: {text}")


def _translated(
    method: Callable[Concatenate[Store, P], R],
) -> Callable[Concatenate[Store, P], R]:
    """Turn SQLite operational failures inside a store method into one-line ``StoreError``s."""

    @functools.wraps(method)
    def wrapper(self: Store, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        except (sqlite3.OperationalError, sqlite3.DatabaseError) as error:
            if isinstance(error, sqlite3.IntegrityError):
                raise
            raise describe(error, self.path, self.busy_timeout_ms) from error

    return wrapper


_CLAIM_COLUMNS = """
    c.id, c.claim_id, c.user, c.number, c.friendly_id, c.statement, c.status, c.confidence,
    c.possible_questions, c.pinned, c.created_at, c.updated_at, c.valid_from, c.valid_to,
    c.superseded_by, c.merged_into, c.meta
"""
_CLAIM_SELECT = f"SELECT {_CLAIM_COLUMNS} FROM claims c "

# A claim's list-valued fields, fetched for a whole result at once (one query per table, not
# one subquery per row: a 500-claim context would otherwise run 2 500 of them). `?` is the
# JSON array of the claims' row ids.
_IDS = "(SELECT value FROM json_each(?))"
_LINK_QUERIES = (
    f"SELECT claim, type FROM claim_types WHERE claim IN {_IDS} ORDER BY claim, pos",
    f"SELECT claim, domain FROM claim_domains WHERE claim IN {_IDS} ORDER BY claim, pos",
    "SELECT l.claim, x.friendly_id FROM context_claims l JOIN contexts x ON x.id = l.context "
    f"WHERE l.claim IN {_IDS} ORDER BY l.claim, x.friendly_id",
    "SELECT l.claim, t.friendly_id FROM claim_tags l JOIN tags t ON t.id = l.tag "
    f"WHERE l.claim IN {_IDS} ORDER BY l.claim, t.friendly_id",
    "SELECT l.claim, e.friendly_id FROM claim_entities l JOIN entities e ON e.id = l.entity "
    f"WHERE l.claim IN {_IDS} ORDER BY l.claim, e.friendly_id",
)


def _grouped_claims(hits: str) -> str:
    """Live claims whose row ids the CTE ``hits(id)`` lists, newest first. The CROSS JOIN
    makes SQLite start from the hits; left to itself it walks the user's whole
    ``(user, updated_at)`` index to skip the sort, which costs as much for 3 hits as for
    100 000."""
    return (
        f"{hits} SELECT {_CLAIM_COLUMNS} FROM hits CROSS JOIN claims c ON c.id = hits.id "
        f"WHERE c.user = ? AND c.status IN {_LIVE} ORDER BY c.updated_at DESC, c.number DESC"
    )


_first = itemgetter(0)
_STATUS = {status.value: status for status in ClaimStatus}


def _claim(row: Sequence[Any], found: Sequence[dict[int, tuple[str, ...]]]) -> Claim:
    key = row[0]
    types, domains, *links = (values.get(key, ()) for values in found)
    contexts, tags, entities = links if links else (None, None, None)
    return Claim(
        claim_id=row[1],
        user=row[2],
        number=row[3],
        friendly_id=row[4],
        statement=row[5],
        status=_STATUS[row[6]],
        confidence=row[7],
        possible_questions=tuple(json.loads(row[8])) if row[8] != "[]" else (),
        pinned=bool(row[9]),
        created_at=row[10],
        updated_at=row[11],
        valid_from=row[12],
        valid_to=row[13],
        superseded_by=row[14],
        merged_into=row[15],
        meta=json.loads(row[16]) if row[16] != "{}" else {},
        claim_types=types,
        domains=domains,
        contexts=contexts,
        tags=tags,
        entities=entities,
    )


_CONTEXT_SELECT = """
SELECT x.context_id, x.user, x.friendly_id, x.name, x.description, p.friendly_id,
    x.created_at, x.updated_at, x.id
FROM contexts x LEFT JOIN contexts p ON p.id = x.parent
"""


def _context(row: Sequence[Any]) -> Context:
    return Context(*row[:8])


_ENTITY_SELECT = """
SELECT e.entity_id, e.user, e.friendly_id, e.name, t.name, e.fields, e.trashed,
    e.created_at, e.updated_at
FROM entities e JOIN entity_types t ON t.id = e.type
"""


def _entity(row: Sequence[Any]) -> Entity:
    return Entity(
        entity_id=row[0],
        user=row[1],
        friendly_id=row[2],
        name=row[3],
        type=row[4],
        fields=json.loads(row[5]),
        trashed=bool(row[6]),
        created_at=row[7],
        updated_at=row[8],
    )


_TAG_SELECT = """
SELECT t.user, t.friendly_id, t.name, p.friendly_id FROM tags t LEFT JOIN tags p ON p.id = t.parent
"""


@dataclass(frozen=True, slots=True)
class Change:
    """One logged write: the row changed, and for a deletion the record's id."""

    seq: int
    kind: str  # claim, context, entity
    row: int  # the first row of the range
    last_row: int
    record_id: str | None  # set for a deletion


@dataclass(slots=True)
class Batch:
    """New records to write in one transaction; they refer to each other (and to records
    already stored for the same user) by friendly id, entity-type name and claim id."""

    entity_types: list[EntityType] = field(default_factory=list)
    tags: list[Tag] = field(default_factory=list)
    contexts: list[Context] = field(default_factory=list)
    entities: list[Entity] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)


@dataclass(slots=True)
class UserKeys:
    """What one user already has: the keys an import must not duplicate or may refer to."""

    claim_friendly_ids: set[str]
    claim_numbers: set[int]
    last_number: int
    context_parents: dict[str, str | None]  # friendly id → parent friendly id
    tag_parents: dict[str, str | None]
    entity_types: dict[str, tuple[EntityField, ...]]
    entity_friendly_ids: set[str]


class Store:
    """An open store. Not shared between threads; open one per thread or process."""

    def __init__(self, connection: sqlite3.Connection, path: Path, busy_timeout_ms: int) -> None:
        self._db = connection
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms

    # -- life cycle -------------------------------------------------------------------------

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: taken at once (so waiting for a writer happens up front,
        under the busy timeout), committed whole or rolled back whole."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    @property
    def schema_version(self) -> int:
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    # -- claims -----------------------------------------------------------------------------

    def _load(self, sql: str, params: Sequence[Any], *, links: bool = True) -> list[Claim]:
        """Run a query of claim rows and attach each claim's types and domains, and with
        ``links`` its contexts, tags and entities."""
        rows = self._db.execute(sql, params).fetchall()
        if not rows:
            return []
        ids = json.dumps([row[0] for row in rows])
        queries = _LINK_QUERIES if links else _LINK_QUERIES[:2]
        found = [
            {claim: tuple(value for _, value in group) for claim, group in groupby(cursor, _first)}
            for cursor in (self._db.execute(query, (ids,)) for query in queries)
        ]
        return [_claim(row, found) for row in rows]

    def _one(self, sql: str, params: Sequence[Any]) -> Claim | None:
        found = self._load(sql, params)
        return found[0] if found else None

    @_translated
    def claim_by_number(self, user: str, number: int) -> Claim | None:
        return self._one(_CLAIM_SELECT + "WHERE c.user = ? AND c.number = ?", (user, number))

    @_translated
    def claim_by_friendly_id(self, user: str, friendly_id: str) -> Claim | None:
        sql = _CLAIM_SELECT + "WHERE c.user = ? AND c.friendly_id = ?"
        return self._one(sql, (user, friendly_id))

    @_translated
    def claim_by_uuid(self, user: str, claim_id: str) -> Claim | None:
        return self._one(_CLAIM_SELECT + "WHERE c.claim_id = ? AND c.user = ?", (claim_id, user))

    @_translated
    def claims(
        self,
        user: str,
        *,
        statuses: Iterable[ClaimStatus] | None = None,
        limit: int | None = None,
    ) -> list[Claim]:
        """The user's claims by number, optionally only those with one of ``statuses``."""
        sql = _CLAIM_SELECT + "WHERE c.user = ?"
        params: list[Any] = [user]
        if statuses is not None:
            wanted = [str(status) for status in statuses]
            sql += f" AND c.status IN ({', '.join('?' * len(wanted))})"
            params += wanted
        sql += " ORDER BY c.number"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return self._load(sql, params)

    @_translated
    def claims_in_context(self, user: str, context_id: str) -> list[Claim]:
        """Live claims linked to the context or any descendant (depth ≤ 10, cycle-safe),
        each once, newest first."""
        hits = f"""
        WITH RECURSIVE tree(id, depth) AS (
            SELECT id, 0 FROM contexts WHERE context_id = ? AND user = ?
            UNION
            SELECT x.id, tree.depth + 1 FROM tree JOIN contexts x ON x.parent = tree.id
            WHERE tree.depth < {MAX_TREE_DEPTH} AND x.user = ?
        ),
        hits(id) AS (
            SELECT DISTINCT l.claim FROM tree CROSS JOIN context_claims l ON l.context = tree.id
        )"""
        return self._load(_grouped_claims(hits), (context_id, user, user, user), links=False)

    @_translated
    def claims_with_tag(self, user: str, friendly_id: str) -> list[Claim]:
        """Live claims carrying the tag or any descendant tag, newest first."""
        hits = f"""
        WITH RECURSIVE tree(id, depth) AS (
            SELECT id, 0 FROM tags WHERE friendly_id = ? AND user = ?
            UNION
            SELECT t.id, tree.depth + 1 FROM tree JOIN tags t ON t.parent = tree.id
            WHERE tree.depth < {MAX_TREE_DEPTH} AND t.user = ?
        ),
        hits(id) AS (
            SELECT DISTINCT l.claim FROM tree CROSS JOIN claim_tags l ON l.tag = tree.id
        )"""
        return self._load(_grouped_claims(hits), (friendly_id, user, user, user), links=False)

    @_translated
    def claims_of_entity(self, user: str, entity_id: str) -> list[Claim]:
        """Live claims linked to the entity, newest first."""
        hits = """
        WITH hits(id) AS (
            SELECT l.claim FROM entities e CROSS JOIN claim_entities l ON l.entity = e.id
            WHERE e.entity_id = ? AND e.user = ?
        )"""
        return self._load(_grouped_claims(hits), (entity_id, user, user), links=False)

    @_translated
    def domain_exists(self, user: str, domain: str) -> bool:
        row = self._db.execute(
            "SELECT 1 FROM claim_domains d CROSS JOIN claims c ON c.id = d.claim "
            "WHERE d.domain = ? AND c.user = ? LIMIT 1",
            (domain, user),
        ).fetchone()
        return row is not None

    @_translated
    def claims_in_domain(self, user: str, domain: str) -> list[Claim]:
        """Live claims whose domains include ``domain``, newest first."""
        hits = "WITH hits(id) AS (SELECT DISTINCT claim FROM claim_domains WHERE domain = ?)"
        return self._load(_grouped_claims(hits), (domain, user), links=False)

    @_translated
    def set_status(self, user: str, claim_id: str, status: ClaimStatus, when: str) -> None:
        with self._write() as db:
            row = db.execute(
                "SELECT id FROM claims WHERE claim_id = ? AND user = ?", (claim_id, user)
            ).fetchone()
            if row is not None:
                db.execute(
                    "UPDATE claims SET status = ?, updated_at = ? WHERE id = ?",
                    (str(status), when, row[0]),
                )
                _log(db, "claim", row[0])

    @_translated
    def rename(self, user: str, kind: str, old: str, new: str) -> None:
        """Give the user's claim, context, entity or tag ``old`` the friendly id ``new``, in
        one transaction: all of it or, on any failure, none of it.

        Entity fields that name an entity (``entity_ref``, ``entity_ref_list``) follow it.
        The change log lists every record whose search document shows the id, so the
        full-text index re-indexes them: the record itself (claims, contexts, entities), the
        claims linked directly to a renamed context, entity or tag, and the entities whose
        fields changed. ``updated_at`` is left alone: an id is a handle, not content, and a
        renamed claim keeps its place in "newest first" orders.

        Raises ``StoreError`` when the user has no such record, when ``new`` is already a
        friendly id of any of the user's claims, contexts, entities or tags, and (one line)
        when the store is locked past the busy timeout or read-only.
        """
        table = _RENAMEABLE[kind]
        with self._write() as db:
            row = db.execute(
                f"SELECT id FROM {table} WHERE user = ? AND friendly_id = ?", (user, old)
            ).fetchone()
            if row is None:
                raise StoreError(f"no {kind} @{old} to rename")
            for other_kind, other in _RENAMEABLE.items():
                taken = db.execute(
                    f"SELECT 1 FROM {other} WHERE user = ? AND friendly_id = ?", (user, new)
                ).fetchone()
                if taken is not None:
                    raise StoreError(f"@{new} is already the id of a {other_kind}")
            record = int(row[0])
            db.execute(f"UPDATE {table} SET friendly_id = ? WHERE id = ?", (new, record))
            if kind in ("claim", "context", "entity"):
                _log(db, kind, record)
            if kind == "entity":
                _log_rows(db, "entity", _rename_entity_refs(db, user, old, new))
            links = _LINKS_OF.get(kind)
            if links is not None:
                table_name, column = links
                claims = db.execute(
                    f"SELECT claim FROM {table_name} WHERE {column} = ?", (record,)
                ).fetchall()
                _log_rows(db, "claim", [int(claim) for (claim,) in claims])

    @_translated
    def set_entity_fields(self, user: str, updates: Mapping[str, Mapping[str, Any]]) -> None:
        """Set fields of the user's entities (friendly id → field name → value), in one
        transaction, logging each entity changed; other fields are kept. Raises
        ``StoreError`` when an entity is gone (nothing is written then)."""
        with self._write() as db:
            for friendly_id, values in updates.items():
                row = db.execute(
                    "SELECT id, fields FROM entities WHERE user = ? AND friendly_id = ?",
                    (user, friendly_id),
                ).fetchone()
                if row is None:
                    raise StoreError(f"no entity @{friendly_id}")
                fields = {**json.loads(row[1]), **values}
                db.execute(
                    "UPDATE entities SET fields = ? WHERE id = ?",
                    (json.dumps(fields, ensure_ascii=False), row[0]),
                )
                _log(db, "entity", int(row[0]))

    @_translated
    def claims_by_number_prefix(self, user: str, digits: str, limit: int = 50) -> list[Claim]:
        """Claims whose number starts with ``digits`` (``#4`` → 4, 40–49, 400…), by number."""
        sql = (
            _CLAIM_SELECT + "WHERE c.user = ? AND CAST(c.number AS TEXT) LIKE ? "
            "ORDER BY length(CAST(c.number AS TEXT)), c.number LIMIT ?"
        )
        return self._load(sql, (user, f"{digits}%", limit), links=False)

    @_translated
    def recent_claims(self, user: str, limit: int = 20) -> list[Claim]:
        """The user's live claims, most recently updated first."""
        sql = (
            _CLAIM_SELECT + f"WHERE c.user = ? AND c.status IN {_LIVE} "
            "ORDER BY c.updated_at DESC, c.number DESC LIMIT ?"
        )
        return self._load(sql, (user, limit), links=False)

    @_translated
    def domains(self, user: str) -> list[str]:
        """The domains of the user's live claims, alphabetically.

        Runs on every ``@`` keystroke: it walks the distinct domains through the index (a
        loose index scan) and checks each has one live claim of the user, instead of grouping
        every claim (134 ms on 100k claims)."""
        rows = self._db.execute(
            f"""
            WITH RECURSIVE d(domain) AS (
                SELECT min(domain) FROM claim_domains
                UNION ALL
                SELECT (SELECT min(domain) FROM claim_domains WHERE domain > d.domain)
                FROM d WHERE d.domain IS NOT NULL
            )
            SELECT d.domain FROM d WHERE d.domain IS NOT NULL AND EXISTS (
                SELECT 1 FROM claim_domains x CROSS JOIN claims c ON c.id = x.claim
                WHERE x.domain = d.domain AND c.user = ? AND c.status IN {_LIVE}
            )
            """,
            (user,),
        )
        return [str(row[0]) for row in rows]

    # -- contexts, tags, entities -----------------------------------------------------------

    @_translated
    def context_by_friendly_id(self, user: str, friendly_id: str) -> Context | None:
        row = self._db.execute(
            _CONTEXT_SELECT + "WHERE x.user = ? AND x.friendly_id = ?", (user, friendly_id)
        ).fetchone()
        return _context(row) if row else None

    @_translated
    def context_by_name_key(self, user: str, key: str) -> Context | None:
        """The context whose name matches ``key`` (SPEC §2 step 4); the oldest when several
        share a name."""
        row = self._db.execute(
            _CONTEXT_SELECT
            + "WHERE x.user = ? AND x.name_key = ? ORDER BY x.created_at, x.id LIMIT 1",
            (user, key),
        ).fetchone()
        return _context(row) if row else None

    @_translated
    def contexts(self, user: str) -> list[Context]:
        rows = self._db.execute(_CONTEXT_SELECT + "WHERE x.user = ? ORDER BY x.id", (user,))
        return [_context(row) for row in rows]

    @_translated
    def context_tree(self, user: str) -> tuple[list[ContextNode], list[Context]]:
        """The user's contexts as a forest, each with its count of live claims linked
        directly; and any contexts caught in a parent cycle (which no root reaches)."""
        rows = self._db.execute(
            f"""
            SELECT x.context_id, x.user, x.friendly_id, x.name, x.description, p.friendly_id,
                x.created_at, x.updated_at, x.id, x.parent,
                (SELECT count(*) FROM context_claims l JOIN claims c ON c.id = l.claim
                 WHERE l.context = x.id AND c.status IN {_LIVE})
            FROM contexts x LEFT JOIN contexts p ON p.id = x.parent
            WHERE x.user = ? ORDER BY x.name_key, x.friendly_id
            """,
            (user,),
        ).fetchall()
        by_id = {row[8]: row for row in rows}
        children: dict[int | None, list[int]] = {}
        for row in rows:
            parent = row[9] if row[9] in by_id else None
            children.setdefault(parent, []).append(row[8])
        seen: set[int] = set()

        def build(row_id: int) -> ContextNode:
            seen.add(row_id)
            row = by_id[row_id]
            kids = tuple(build(kid) for kid in children.get(row_id, []) if kid not in seen)
            return ContextNode(context=_context(row), claim_count=row[10], children=kids)

        roots = [build(row_id) for row_id in children.get(None, [])]
        stranded = [_context(by_id[row_id]) for row_id in by_id if row_id not in seen]
        return roots, stranded

    @_translated
    def tag_by_friendly_id(self, user: str, friendly_id: str) -> Tag | None:
        row = self._db.execute(
            _TAG_SELECT + "WHERE t.user = ? AND t.friendly_id = ?", (user, friendly_id)
        ).fetchone()
        return Tag(*row) if row else None

    @_translated
    def tags(self, user: str) -> list[Tag]:
        return [Tag(*row) for row in self._db.execute(_TAG_SELECT + "WHERE t.user = ?", (user,))]

    @_translated
    def entity_by_friendly_id(self, user: str, friendly_id: str) -> Entity | None:
        row = self._db.execute(
            _ENTITY_SELECT + "WHERE e.user = ? AND e.friendly_id = ?", (user, friendly_id)
        ).fetchone()
        return _entity(row) if row else None

    @_translated
    def entities(self, user: str) -> list[Entity]:
        rows = self._db.execute(_ENTITY_SELECT + "WHERE e.user = ? ORDER BY e.id", (user,))
        return [_entity(row) for row in rows]

    @_translated
    def entity_types(self, user: str) -> list[EntityType]:
        rows = self._db.execute(
            "SELECT user, name, fields FROM entity_types WHERE user = ? ORDER BY id", (user,)
        )
        return [
            EntityType(
                user=row[0],
                name=row[1],
                fields=tuple(EntityField(f["name"], f["type"]) for f in json.loads(row[2])),
            )
            for row in rows
        ]

    # -- following the store (derived indexes) ----------------------------------------------

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
        table = {"claim": "claims", "context": "contexts", "entity": "entities"}[kind]
        return [int(row[0]) for row in self._db.execute(f"SELECT id FROM {table} ORDER BY id")]

    # -- the context assembler's automatic memories (SPEC §6): live claims only, newest
    # ``updated_at`` first, ties by the higher number, so results are deterministic.

    @_translated
    def pinned_claims(self, user: str) -> list[Claim]:
        """The user's live, globally pinned claims."""
        sql = _CLAIM_SELECT + f"WHERE c.user = ? AND c.pinned = 1 AND c.status IN {_LIVE} "
        # "+": sort the few pinned claims found through the partial index rather than walk
        # every claim of the user in date order (321 ms → 5 ms on 100 000 claims).
        return self._load(sql + "ORDER BY +c.updated_at DESC, c.number DESC", (user,))

    @_translated
    def claims_of_types(
        self,
        user: str,
        types: Collection[str],
        *,
        limit: int,
        min_confidence: float = 0.0,
        since: str | None = None,
    ) -> list[Claim]:
        """Up to ``limit`` live claims with any of ``types`` among their types, of confidence
        at least ``min_confidence`` and, with ``since`` (a stored timestamp), updated then or
        later."""
        if not types or limit <= 0:
            return []
        wanted = sorted(set(types))
        # Newest first through (user, updated_at), checking each claim's types, until LIMIT:
        # joining every claim of the types first sorted tens of thousands (80 ms → 1 ms).
        sql = (
            _CLAIM_SELECT + f"WHERE c.user = ? AND c.status IN {_LIVE} AND c.confidence >= ? "
            "AND c.updated_at >= ? AND EXISTS (SELECT 1 FROM claim_types t "
            f"WHERE t.claim = c.id AND t.type IN ({', '.join('?' * len(wanted))})) "
            f"{_NEWEST} LIMIT ?"
        )
        return self._load(sql, [user, min_confidence, since or "", *wanted, limit])

    @_translated
    def newest_claims(self, user: str, *, limit: int, min_confidence: float = 0.0) -> list[Claim]:
        """Up to ``limit`` live claims of confidence at least ``min_confidence``."""
        if limit <= 0:
            return []
        sql = (
            _CLAIM_SELECT + f"WHERE c.user = ? AND c.status IN {_LIVE} AND c.confidence >= ? "
            f"{_NEWEST} LIMIT ?"
        )
        return self._load(sql, (user, min_confidence, limit))

    @_translated
    def last_update(self, user: str) -> str | None:
        """The newest ``updated_at`` among the user's claims of any status, or None."""
        row = self._db.execute(
            "SELECT max(updated_at) FROM claims WHERE user = ?", (user,)
        ).fetchone()
        return str(row[0]) if row and row[0] is not None else None

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

    # -- bulk writes ------------------------------------------------------------------------

    @_translated
    def keys(self, user: str) -> UserKeys:
        """The keys one user's records already hold, for validating an import."""
        db = self._db
        fids: set[str] = set()
        numbers: set[int] = set()
        for fid, number in db.execute(
            "SELECT friendly_id, number FROM claims WHERE user = ?", (user,)
        ):
            fids.add(fid)
            numbers.add(number)
        last = db.execute("SELECT last FROM claim_numbers WHERE user = ?", (user,)).fetchone()
        return UserKeys(
            claim_friendly_ids=fids,
            claim_numbers=numbers,
            last_number=max([last[0] if last else 0, *numbers]),
            context_parents=dict(
                db.execute(
                    "SELECT x.friendly_id, p.friendly_id FROM contexts x "
                    "LEFT JOIN contexts p ON p.id = x.parent WHERE x.user = ?",
                    (user,),
                ).fetchall()
            ),
            tag_parents=dict(
                db.execute(
                    "SELECT t.friendly_id, p.friendly_id FROM tags t "
                    "LEFT JOIN tags p ON p.id = t.parent WHERE t.user = ?",
                    (user,),
                ).fetchall()
            ),
            entity_types={
                t.name: t.fields
                for t in self.entity_types(user)  # already translated
            },
            entity_friendly_ids={
                row[0]
                for row in db.execute("SELECT friendly_id FROM entities WHERE user = ?", (user,))
            },
        )

    @_translated
    def taken_uuids(self, table: str, candidates: Iterable[str]) -> set[str]:
        """Which of ``candidates`` are already ids of ``table`` (claims, contexts, entities),
        for any user: ids are unique across users."""
        column = {"claims": "claim_id", "contexts": "context_id", "entities": "entity_id"}[table]
        wanted = list(candidates)
        found: set[str] = set()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            sql = f"SELECT {column} FROM {table} WHERE {column} IN ({', '.join('?' * len(chunk))})"
            found.update(row[0] for row in self._db.execute(sql, chunk))
        return found

    @_translated
    def claim_owner(self, claim_id: str) -> str | None:
        row = self._db.execute("SELECT user FROM claims WHERE claim_id = ?", (claim_id,)).fetchone()
        return row[0] if row else None

    @_translated
    def write(self, batch: Batch) -> None:
        """Write ``batch`` in one transaction: all of it or, on any failure, none of it."""
        with self._write() as db:
            _Writer(db).write(batch)


def _json_text(value: tuple[str, ...] | dict[str, Any], empty: str) -> str:
    """A list or object column's text; most are empty, and dumps costs 3 µs each."""
    if not value:
        return empty
    return json.dumps(
        value if isinstance(value, dict) else list(value), ensure_ascii=False, sort_keys=True
    )


_RENAMEABLE = {"claim": "claims", "context": "contexts", "entity": "entities", "tag": "tags"}
"""Records with a friendly id, by kind: their tables."""
_LINKS_OF = {
    "context": ("context_claims", "context"),
    "entity": ("claim_entities", "entity"),
    "tag": ("claim_tags", "tag"),
}
"""The link table (and its column) joining a context, entity or tag to its claims."""


def _rename_entity_refs(db: sqlite3.Connection, user: str, old: str, new: str) -> list[int]:
    """Rewrite the user's entity fields that name the entity ``old`` to name ``new``; the
    rows of the entities changed. A comma-separated ``entity_ref_list`` keeps its spacing."""
    kinds: dict[int, dict[str, str]] = {
        int(type_id): {f["name"]: f["type"] for f in json.loads(fields)}
        for type_id, fields in db.execute(
            "SELECT id, fields FROM entity_types WHERE user = ?", (user,)
        )
    }
    changed: list[int] = []
    rows = db.execute("SELECT id, type, fields FROM entities WHERE user = ?", (user,)).fetchall()
    for row, type_id, text in rows:
        fields = json.loads(text)
        declared = kinds.get(int(type_id), {})
        touched = False
        for name, value in fields.items():
            kind = declared.get(name)
            if kind == "entity_ref" and value == old:
                fields[name] = new
                touched = True
            elif kind == "entity_ref_list" and isinstance(value, list):
                if old in value:
                    fields[name] = [new if item == old else item for item in value]
                    touched = True
            elif kind == "entity_ref_list" and isinstance(value, str):
                parts = value.split(",")
                if any(part.strip() == old for part in parts):
                    fields[name] = ",".join(
                        part.replace(old, new) if part.strip() == old else part for part in parts
                    )
                    touched = True
        if touched:
            db.execute(
                "UPDATE entities SET fields = ? WHERE id = ?",
                (json.dumps(fields, ensure_ascii=False), row),
            )
            changed.append(int(row))
    return changed


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
        self._insert(batch)
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
                    json.dumps(e.fields, ensure_ascii=False),
                    int(e.trashed),
                    e.created_at,
                    e.updated_at,
                )
                for i, e in zip(entity_ids, batch.entities, strict=True)
            ],
        )
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
            "valid_to, superseded_by, merged_into, meta) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
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


# -- opening and migrating --------------------------------------------------------------------


def migrate(db: sqlite3.Connection, migrations: Sequence[str] = MIGRATIONS) -> int:
    """Apply the migrations the store has not had yet, each in its own transaction with its
    version bump, so a failure leaves the store at the last good version. Returns the
    version reached."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    for target in range(version + 1, len(migrations) + 1):
        db.execute("BEGIN IMMEDIATE")
        try:
            for statement in _statements(migrations[target - 1]):
                db.execute(statement)
            db.execute(f"PRAGMA user_version = {target}")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        version = target
    return version


def _statements(script: str) -> Iterator[str]:
    """Split a migration script into statements (``executescript`` would commit early).
    ``complete_statement`` tells a terminating ``;`` from one inside a string or trigger."""
    buffer = ""
    for piece in script.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            if buffer.strip(" \n\t;"):
                yield buffer.strip()
            buffer = ""


def open_store(
    folder: Path,
    *,
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    migrations: Sequence[str] = MIGRATIONS,
) -> Store:
    """Open (creating if needed) the store in ``folder`` and bring its schema up to date.

    Raises ``StoreError`` with one line when the folder or file cannot be used, the store is
    locked past the busy timeout, or it was written by a newer version (left untouched).
    """
    path = folder / STORE_FILE
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StoreError(f"cannot create store folder {folder}: {error.strerror}") from error
    if folder.is_file():
        raise StoreError(f"store {folder} is a file; --store takes a folder")
    try:
        # One thread uses a connection (App gives each thread its own), but the one that
        # closes them all at shutdown may be another.
        db = sqlite3.connect(
            path, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as error:
        raise describe(error, path, busy_timeout_ms) from error
    try:
        # Read the version before anything that writes (journal_mode=WAL rewrites the header).
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        newest = len(migrations)
        if version > newest:
            raise StoreError(
                f"store {path} has schema version {version}, written by a newer lsp-memory; "
                f"this version reads up to {newest}. Upgrade lsp-memory; the store was not "
                "changed"
            )
        db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        db.execute("PRAGMA foreign_keys = ON")
        if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        if version < newest:
            migrate(db, migrations)
    except sqlite3.Error as error:
        db.close()
        raise describe(error, path, busy_timeout_ms) from error
    except BaseException:
        db.close()
        raise
    return Store(db, path, busy_timeout_ms)
