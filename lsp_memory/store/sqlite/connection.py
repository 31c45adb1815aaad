"""The connection every part of the store shares: opening the file, migrating its schema,
turning SQLite failures into one-line errors, and the write transaction.

One file, ``memory.sqlite3``, in the store folder. WAL so readers never wait for the writer,
a busy timeout so two writers take turns, foreign keys on, the schema versioned with
``PRAGMA user_version`` and migrated forward on open. A store written by a newer version is
refused before anything is written to it.
"""

from __future__ import annotations

import functools
import shutil
import sqlite3
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Concatenate, ParamSpec, Self, TypeVar

from lsp_memory.errors import StoreError
from lsp_memory.store.schema import (
    MIGRATIONS,
    Migration,
    refresh_slot_keys,
    slot_keys_stale,
    write_lookups,
)

STORE_FILE = "memory.sqlite3"
DEFAULT_BUSY_TIMEOUT_MS = 5000
REMEMBERED = 256
"""Values ``StoreBase.remembered`` keeps per connection; a record page is one of them (up to
~20 kB), so a session that opens thousands of pages keeps the latest 256."""

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound="StoreBase")


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
    if ("disk" in lowered and "full" in lowered) or _no_space(path):
        return StoreError(f"store {path}: the disk is full; nothing was written")
    return StoreError(f"store {path}: {text}")


def _no_space(path: Path) -> bool:
    """Whether the store's disk has no byte left (SQLite then often says only "disk I/O
    error": it cannot create the store's shared-memory file)."""
    try:
        return shutil.disk_usage(path.parent).free == 0
    except OSError:
        return False


def _translated(
    method: Callable[Concatenate[S, P], R],
) -> Callable[Concatenate[S, P], R]:
    """Turn SQLite operational failures inside a store method into one-line ``StoreError``s."""

    @functools.wraps(method)
    def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        except (sqlite3.OperationalError, sqlite3.DatabaseError) as error:
            if isinstance(error, sqlite3.IntegrityError):
                raise
            raise describe(error, self.path, self.busy_timeout_ms) from error

    return wrapper


class StoreBase:
    """The open connection, its file and busy timeout: what every part of ``Store`` shares."""

    def __init__(self, connection: sqlite3.Connection, path: Path, busy_timeout_ms: int) -> None:
        self._db = connection
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self._remembered: dict[Hashable, tuple[tuple[int, int], object]] = {}

    def stamp(self) -> tuple[int, int]:
        """Differs whenever the store may have changed since it was taken: a commit through
        any other connection (``PRAGMA data_version``) or a change through this one."""
        version = int(self._db.execute("PRAGMA data_version").fetchone()[0])
        return version, self._db.total_changes

    def remembered(self, key: Hashable, compute: Callable[[], R]) -> R:
        """``compute()``, computed again only once the store has changed (``stamp``): for
        what every keystroke would otherwise read in full. Per connection, so per thread."""
        stamp = self.stamp()
        found = self._remembered.get(key)
        if found is not None and found[0] == stamp:
            return found[1]  # type: ignore[return-value]
        value = compute()
        self._remembered.pop(key, None)
        self._remembered[key] = (stamp, value)
        while len(self._remembered) > REMEMBERED:
            # The least recently computed goes: record pages are kept per record.
            del self._remembered[next(iter(self._remembered))]
        return value

    # -- life cycle -------------------------------------------------------------------------

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Several writes as one transaction: each write method called inside is a part of
        it, and they are committed together or not at all (ingest stores a message with its
        references and claims this way)."""
        try:
            with self._write():
                yield
        except (sqlite3.OperationalError, sqlite3.DatabaseError) as error:
            if isinstance(error, sqlite3.IntegrityError):
                raise
            raise describe(error, self.path, self.busy_timeout_ms) from error

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: taken at once (so waiting for a writer happens up front,
        under the busy timeout), committed whole or rolled back whole. Inside
        ``transaction`` a savepoint of it instead: undone alone when it fails."""
        if self._db.in_transaction:
            self._db.execute("SAVEPOINT write")
            try:
                yield self._db
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK TO write")
                    self._db.execute("RELEASE write")
                raise
            self._db.execute("RELEASE write")
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            if self._db.in_transaction:  # SQLite rolls back by itself on a full disk
                self._db.execute("ROLLBACK")
            raise
        try:
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise

    @property
    def schema_version(self) -> int:
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])


# -- opening and migrating --------------------------------------------------------------------


def migrate(db: sqlite3.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """Apply the migrations the store has not had yet, each in its own transaction with its
    version bump, so a failure leaves the store at the last good version. Returns the
    version reached."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    for target in range(version + 1, len(migrations) + 1):
        db.execute("BEGIN IMMEDIATE")
        try:
            step = migrations[target - 1]
            if callable(step):
                step(db)
            else:
                for statement in _statements(step):
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {target}")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        version = target
    return version


def _refreshed(db: sqlite3.Connection) -> None:
    """The claims' slot keys read again (``refresh_slot_keys``) in one transaction."""
    db.execute("BEGIN IMMEDIATE")
    try:
        refresh_slot_keys(db)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


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


def connect(
    folder: Path,
    *,
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    migrations: Sequence[Migration] = MIGRATIONS,
) -> tuple[sqlite3.Connection, Path]:
    """The connection to the store file in ``folder`` (created if needed), its schema brought
    up to date, and the file's path; ``open_store`` wraps it in a ``Store``.

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
        if write_lookups in migrations and slot_keys_stale(db):
            _refreshed(db)
    except sqlite3.Error as error:
        db.close()
        raise describe(error, path, busy_timeout_ms) from error
    except BaseException:
        db.close()
        raise
    return db, path
