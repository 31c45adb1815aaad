"""Which documents have vectors and which still wait to be embedded: the embedding queue.

A small SQLite file in the cache folder, so the queue survives a restart (the seeds'
``pending_embed → active``): a document is pending while its ``text`` is set, embedded once
the text is cleared and its content hash recorded. Derived data: an unreadable file is deleted
and recreated, and the caller rebuilds from the store.

Every change is stamped with a generation (one per transaction): a document's row with the
generation that last changed it, a removed document's id (table ``gone``) with the one that
removed it. A vector file (``store.vectorfile``) records the generation it was written at and
the queue's token (new whenever the queue starts afresh), so a reader knows it is current and
finds what changed since in two indexed queries (``changes``).
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path

from lsp_memory.cachefiles import replace_distrusted

_SCHEMA = """
CREATE TABLE IF NOT EXISTS docs (
    doc_id TEXT PRIMARY KEY,
    user TEXT NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    hash TEXT NOT NULL,
    text TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS docs_pending ON docs (doc_id) WHERE text IS NOT NULL;
CREATE TABLE IF NOT EXISTS gone (doc_id TEXT PRIMARY KEY, gen INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
"""
_GENERATIONS = """
CREATE INDEX IF NOT EXISTS docs_gen ON docs (gen);
CREATE INDEX IF NOT EXISTS gone_gen ON gone (gen);
"""


@dataclass(frozen=True, slots=True)
class Entry:
    """One document as the vector side knows it."""

    doc_id: str
    user: str
    kind: str
    status: str
    hash: str
    text: str | None = None  # set while waiting to be embedded


_LOOKUP = 500
"""Ids looked up in one query (SQLite allows 32 766 parameters since 3.32, 999 before)."""

BROKEN = frozenset({"SQLITE_CORRUPT", "SQLITE_NOTADB"})
"""The SQLite errors that say a file itself is broken: only then is a cache file deleted (a
full disk or a read-only folder says SQLITE_FULL, SQLITE_READONLY, SQLITE_IOERR…)."""


def _by_id(entries: Iterable[Entry]) -> list[Entry]:
    """In id order, each id's entries in their given order (a stable sort)."""
    return sorted(entries, key=attrgetter("doc_id"))


def corrupt(error: sqlite3.DatabaseError) -> bool:
    return getattr(error, "sqlite_errorname", "") in BROKEN


class VectorCatalog:
    """The queue and the list of embedded documents. One connection, one thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.recreated = False
        path.parent.mkdir(parents=True, exist_ok=True)
        # A FIFO, a symlink or another user's file in its place is deleted: SQLite would
        # hang on the first or write through the others.
        self.distrusted = replace_distrusted(
            *(Path(f"{path}{suffix}") for suffix in ("", "-wal", "-shm", "-journal"))
        )
        self.recreated = self.distrusted is not None
        # The generations this object's own transactions made (see ``covered``).
        self._mine: set[int] = set()
        try:
            self._db = self._open()
        except sqlite3.DatabaseError as error:
            if not corrupt(error):  # a full disk or a read-only folder: keep the file
                raise
            path.unlink(missing_ok=True)
            self.recreated = True
            self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=5, isolation_level=None)
        db.execute("PRAGMA journal_mode = WAL")
        db.executescript(_SCHEMA)
        columns = {row[1] for row in db.execute("PRAGMA table_info(docs)")}
        if "gen" not in columns:  # a queue written before generations: every row is gen 0
            db.execute("ALTER TABLE docs ADD COLUMN gen INTEGER NOT NULL DEFAULT 0")
        db.executescript(_GENERATIONS)
        db.execute(
            "INSERT OR IGNORE INTO meta VALUES ('token', ?), ('generation', 0)",
            (secrets.token_hex(8),),
        )
        db.execute("SELECT count(*) FROM docs").fetchone()
        return db

    @contextmanager
    def _writing(self) -> Iterator[int]:
        """One write transaction and its new generation, which is recorded as this
        object's own once committed (rolled back on any error)."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            (gen,) = db.execute(
                "UPDATE meta SET value = value + 1 WHERE key = 'generation' RETURNING value"
            ).fetchone()
            yield int(gen)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        self._mine.add(int(gen))

    def covered(self, seen: int) -> int:
        """The generation an index reflects that had read the queue up to generation
        ``seen`` and since then only followed this object's own writes: ``seen`` carried
        on through this object's next generations, up to the first one another process
        (another connection) made. A vector file written from that index must be stamped
        with it, not with the queue's latest: the other process's changes are not in the
        index, and a reader of the file must apply them itself."""
        while seen + 1 in self._mine:
            seen += 1
        self._mine = {gen for gen in self._mine if gen > seen}
        return seen

    def state(self) -> tuple[str, int]:
        """(token, generation): the queue's identity and its last generation."""
        rows = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        return str(rows["token"]), int(rows["generation"])

    def changes(
        self, since: int
    ) -> tuple[tuple[str, int], list[tuple[str, str, str, str, str, bool]], list[str]]:
        """In one snapshot: ``state()``, the documents changed after generation ``since``
        as (doc id, user, kind, status, hash, embedded), and the ids removed after it."""
        db = self._db
        db.execute("BEGIN")
        try:
            state = self.state()
            changed = [
                (doc_id, user, kind, status, key, bool(embedded))
                for doc_id, user, kind, status, key, embedded in db.execute(
                    "SELECT doc_id, user, kind, status, hash, text IS NULL FROM docs WHERE gen > ?",
                    (since,),
                )
            ]
            gone = [row[0] for row in db.execute("SELECT doc_id FROM gone WHERE gen > ?", (since,))]
        finally:
            db.execute("COMMIT")
        return state, changed, gone

    def changed_since(self, since: int) -> int:
        """How many documents changed or were removed after generation ``since``."""
        (changed,) = self._db.execute(
            "SELECT (SELECT count(*) FROM docs WHERE gen > ?) + "
            "(SELECT count(*) FROM gone WHERE gen > ?)",
            (since, since),
        ).fetchone()
        return int(changed)

    def close(self) -> None:
        self._db.close()

    def enqueue(self, entries: Iterable[Entry]) -> list[Entry]:
        """Record documents as they are now. Text that changed goes to the queue; a document
        whose text did not change only takes its new status. Returns the status-only ones.

        In a few statements whatever the count, each given its rows in id order: row by row,
        in the caller's order (random ids), the 117 000 documents of a full build took 3 s of
        CPU, 2.5 s of it SQLite inserting into its B-trees at random places."""
        entries = list(entries)
        db = self._db
        with self._writing() as gen:
            ids = sorted({entry.doc_id for entry in entries})
            embedded = self._embedded_hashes(ids)
            status_only: list[Entry] = []
            queued: dict[str, Entry] = {}  # the last entry of each id whose text changed
            for entry in entries:
                if embedded.get(entry.doc_id) == entry.hash:
                    status_only.append(entry)
                else:  # queued now: a later entry of the same id is queued too
                    embedded.pop(entry.doc_id, None)
                    queued[entry.doc_id] = entry
            db.executemany("DELETE FROM gone WHERE doc_id = ?", ((i,) for i in ids))
            db.executemany(
                "UPDATE docs SET status = ?, user = ?, gen = ? WHERE doc_id = ?",
                ((e.status, e.user, gen, e.doc_id) for e in _by_id(status_only)),
            )
            db.executemany(
                "INSERT OR REPLACE INTO docs (doc_id, user, kind, status, hash, text, gen)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    (e.doc_id, e.user, e.kind, e.status, e.hash, e.text, gen)
                    for e in _by_id(queued.values())
                ),
            )
        return status_only

    def _embedded_hashes(self, doc_ids: Sequence[str]) -> dict[str, str]:
        """The content hash of each of ``doc_ids`` that is embedded (its text cleared)."""
        if not doc_ids:
            return {}
        (some,) = self._db.execute("SELECT EXISTS (SELECT 1 FROM docs)").fetchone()
        if not some:  # a queue just emptied (a full build): nothing to look up
            return {}
        found: dict[str, str] = {}
        for start in range(0, len(doc_ids), _LOOKUP):
            chunk = doc_ids[start : start + _LOOKUP]
            found.update(
                self._db.execute(
                    "SELECT doc_id, hash FROM docs WHERE text IS NULL AND doc_id IN "
                    f"({', '.join('?' * len(chunk))})",
                    chunk,
                ).fetchall()
            )
        return found

    def remove(self, doc_ids: Iterable[str]) -> None:
        ids = [(doc_id,) for doc_id in doc_ids]
        if not ids:
            return
        db = self._db
        with self._writing() as gen:
            db.executemany("DELETE FROM docs WHERE doc_id = ?", ids)
            db.executemany("INSERT OR REPLACE INTO gone VALUES (?, ?)", ((d, gen) for (d,) in ids))

    def clear(self) -> int:
        """Empty the queue; a new token makes every vector file written before stale.
        Returns the generation of the empty queue."""
        db = self._db
        with self._writing() as gen:
            db.execute("DELETE FROM docs")
            db.execute("DELETE FROM gone")
            db.execute("UPDATE meta SET value = ? WHERE key = 'token'", (secrets.token_hex(8),))
        return gen

    def pending(self, limit: int) -> list[Entry]:
        rows = self._db.execute(
            "SELECT doc_id, user, kind, status, hash, text FROM docs WHERE text IS NOT NULL "
            "ORDER BY doc_id LIMIT ?",
            (limit,),
        )
        return [Entry(*row) for row in rows]

    def mark_embedded(self, entries: Sequence[Entry]) -> None:
        # One transaction: row by row, a full drain spent 16 s committing.
        db = self._db
        with self._writing() as gen:
            db.executemany(
                "UPDATE docs SET text = NULL, gen = ? WHERE doc_id = ? AND hash = ?",
                ((gen, e.doc_id, e.hash) for e in entries),
            )

    def embedded(self) -> list[tuple[str, str, str, str, str]]:
        """(doc id, user, kind, status, hash) of every embedded document: plain tuples, as
        ``Entry`` objects 207k of them took 0.6 s to build at start."""
        return self._db.execute(
            "SELECT doc_id, user, kind, status, hash FROM docs WHERE text IS NULL"
        ).fetchall()

    def counts(self) -> tuple[int, int]:
        """(embedded, pending)."""
        pending = self.pending_count()
        (total,) = self._db.execute("SELECT count(*) FROM docs").fetchone()
        return int(total) - pending, pending

    def pending_count(self) -> int:
        """How many documents wait for their vector: through the partial index of the
        queue, so an empty queue costs nothing (counting both sides scanned every row: 30 ms
        at 207k documents, three times per MCP search)."""
        (pending,) = self._db.execute(
            "SELECT count(*) FROM docs INDEXED BY docs_pending WHERE text IS NOT NULL"
        ).fetchone()
        return int(pending)
