"""How a failed write to the cache is told apart from other errors, on the messages SQLite and
tantivy really give (the full-disk fault suite meets them in whatever order the disk fills)."""

from __future__ import annotations

import sqlite3

import pytest

from lsp_memory.app import unwritable

WRITER_KILLED = (
    "An error occurred in a thread: 'An index writer was killed.. A worker thread encountered "
    "an error (io::Error most likely) or panicked.'"
)
WORKER_FAILED = (
    "An error occurred in a thread: 'Worker thread failed.. A worker thread encountered an "
    "error (io::Error most likely) or panicked.'"
)


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (OSError(28, "No space left on device"), "the disk is full"),
        (sqlite3.OperationalError("database or disk is full"), "the disk is full"),
        (ValueError(WRITER_KILLED), "its writer failed (most likely the disk is full)"),
        (ValueError(WORKER_FAILED), "its writer failed (most likely the disk is full)"),
        (sqlite3.OperationalError("attempt to write a readonly database"), "it is read-only"),
        (OSError(30, "Read-only file system"), "it is read-only"),
        (PermissionError(13, "Permission denied"), "it cannot be written"),
    ],
)
def test_a_refused_write_is_named(error: BaseException, said: str) -> None:
    assert unwritable(error) == said


@pytest.mark.parametrize(
    "error",
    [ValueError("Syntax Error: title:("), sqlite3.OperationalError("no such table: claims")],
)
def test_other_errors_are_not_taken_for_the_disk(error: BaseException) -> None:
    assert unwritable(error) is None
