"""The cache folder is not trusted: a file there is read only when it is a regular file (not
a FIFO, a device or a symlink), owned by the user and not writable by anyone else, and only
up to a size. Anything else is ``Distrusted``; the caller ignores the file, rebuilds what it
held, and warns once.

Why: every file in the cache is derived data (docs/reliability.md, The cache folder), so
refusing one costs a rebuild, while trusting one could hang a command (a FIFO), exhaust
memory (a symlink to ``/dev/zero``) or put another user's text into this user's context
blocks (a file they own, or may write).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from pathlib import Path

__all__ = [
    "Distrusted",
    "check",
    "open_trusted",
    "read_bytes",
    "remove",
    "replace_distrusted",
    "write_bytes",
]


class Distrusted(Exception):
    """A cache file that may not be read; the message says which and why, in one line."""


def _why(found: os.stat_result, limit: int | None) -> str | None:
    if stat.S_ISLNK(found.st_mode):
        return "is a symbolic link"
    if not stat.S_ISREG(found.st_mode):
        return "is not a regular file"
    if found.st_uid != os.getuid():
        return f"belongs to another user (uid {found.st_uid})"
    if found.st_mode & stat.S_IWOTH or (
        found.st_mode & stat.S_IWGRP and found.st_gid != os.getgid()
    ):
        return "may be written by other users"
    if limit is not None and found.st_size > limit:
        return f"is larger than {limit:,} bytes"
    return None


def check(path: Path, *, limit: int | None = None) -> None:
    """``Distrusted`` when the file at ``path`` may not be read; nothing when it may or when
    there is no file there."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return
    why = _why(found, limit)
    if why:
        raise Distrusted(f"{path} {why}")


def open_trusted(path: Path) -> int:
    """A read-only descriptor of the cache file at ``path`` (the caller closes it), for a
    file read in place rather than whole; ``Distrusted`` and ``OSError`` as ``read_bytes``,
    the checks made on the opened file."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ELOOP:  # the last part is a symbolic link
            raise Distrusted(f"{path} is a symbolic link") from None
        raise
    why = _why(os.fstat(handle), None)
    if why:
        os.close(handle)
        raise Distrusted(f"{path} {why}")
    return handle


def read_bytes(path: Path, *, limit: int) -> bytes:
    """The bytes of the cache file at ``path``, at most ``limit`` of them; ``Distrusted``
    when it may not be read, ``OSError`` when it cannot (missing included). The checks are
    made on the opened file, so it cannot be swapped between check and read."""
    handle = open_trusted(path)
    with os.fdopen(handle, "rb") as file:
        why = _why(os.fstat(handle), limit)
        if why:
            raise Distrusted(f"{path} {why}")
        data = file.read(limit + 1)
    if len(data) > limit:  # grew since the check
        raise Distrusted(f"{path} is larger than {limit:,} bytes")
    return data


def remove(path: Path) -> None:
    """Delete the cache file (or symlink, FIFO, folder) at ``path`` so that it can be
    written anew; nothing when it is gone already."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        pass


def replace_distrusted(*paths: Path) -> str | None:
    """Delete whichever of ``paths`` may not be read (they are rebuilt by their owner);
    the first reason, for the one warning, or None when all may be read."""
    reason = None
    for path in paths:
        try:
            check(path)
        except Distrusted as error:
            reason = reason or str(error)
            remove(path)
    return reason


def write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to the cache file at ``path`` atomically (a new file renamed over the
    old, so a reader sees one or the other), readable by this user only; ``OSError`` when it
    cannot."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
