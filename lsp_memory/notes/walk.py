"""The note files of a vault folder on disk: which files are notes, listing them (stat,
symlinks, excludes) and reading one (docs/reference.md, Notes).

Which files are notes: ``.md`` and ``.markdown`` files (any case), outside hidden files and
folders (a name starting with ``.``) and ``node_modules``, not matched by an exclude pattern.
A symlinked file or folder is followed only when its real path stays inside the vault's real
root; folders are walked once each (by device and inode), so symlink loops end, and a folder
reachable both directly and through a symlink is indexed under its real path.

Exclude patterns are :func:`fnmatch.fnmatchcase` globs over the vault-relative POSIX path:
``*`` also matches ``/`` (``drafts/*`` drops everything under ``drafts``, ``*.tmp.md`` drops
such files at any depth), a folder matching a pattern is skipped whole (``drafts`` works as
well), and a leading ``**/`` also matches at the top level. Matching is case-sensitive.

A file or folder whose name is not valid UTF-8, or holds a line break or a control character,
is skipped with a warning: no link could name it, and the index cannot hold it.

Problems never raise out of a walk: they become warnings. A file that cannot be indexed
raises :class:`Unreadable` from :meth:`Folder.read`, its message the warning.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from lsp_memory.model import Note
from lsp_memory.notes.parse import BINARY_PROBE, MAX_NOTE_BYTES, build_note, is_binary
from lsp_memory.text import first_control

__all__ = ["NOTE_SUFFIXES", "Folder", "Found", "Unreadable"]

NOTE_SUFFIXES = (".md", ".markdown")
"""File name endings of notes, compared case-insensitively."""

_SKIPPED_FOLDERS = frozenset({"node_modules"})
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class Found:
    """A note file found on disk: vault-relative POSIX path, OS path, size and mtime."""

    path: str
    full: str
    size: int
    mtime_ns: int


_LINE_BREAKS = frozenset("\n\r\u2028\u2029")


def unusable_name(name: str) -> str | None:
    """Why a file or folder name cannot be a note's (not valid UTF-8: it cannot be stored
    or indexed; a line break or control character: no ``[[link]]`` can name it), or None."""
    if name.isascii() and name.isprintable():
        # Nearly every name: checked at C speed (the loops below took ~0.1-0.27 s of every
        # command's walk of 10 000 notes, at load ~5).
        return None
    if any("\udc80" <= char <= "\udcff" for char in name):
        return "is not valid UTF-8"
    if first_control(name) is not None or not _LINE_BREAKS.isdisjoint(name):
        return "holds a line break or a control character"
    return None


def _is_note_name(relative: str) -> bool:
    return relative.rpartition("/")[2].lower().endswith(NOTE_SUFFIXES)


class Unreadable(Exception):
    """A file that exists but cannot be indexed; the message is the warning."""


class Folder:
    """The note files under one vault root: found by a walk or one by one, and read."""

    def __init__(self, root: Path, *, excludes: Sequence[str] = ()) -> None:
        self.root = Path(root).resolve()
        self._given_root = Path(root).absolute()
        self._root = str(self.root)
        self._excluded = _exclude_matcher(excludes)
        # Binary files by path, with the size and mtime they had: not read again until changed.
        self.binary: dict[str, tuple[int, int]] = {}

    def walk(self, warnings: list[str], files: list[str] | None = None) -> dict[str, Found]:
        """Every note file under the root, by vault-relative path; the vault-relative paths of
        its other files (attachments: images, PDFs, …) go to ``files`` when given."""
        found: dict[str, Found] = {}
        try:
            root_stat = self.root.stat()
        except OSError as error:
            warnings.append(f"{self._root}: the vault folder cannot be read ({_reason(error)})")
            return found
        visited = {(root_stat.st_dev, root_stat.st_ino)}
        folders: list[tuple[str, str]] = [("", self._root)]
        # Symlinked folders wait until every real folder is walked, so that a folder reached
        # both ways is indexed under its real path, whatever the names sort like.
        linked: list[tuple[str, str]] = []
        while folders or linked:
            if folders:
                relative, full = folders.pop()
            else:
                relative, full = linked.pop(0)
                if not self._inside(full):
                    continue
                try:
                    folder_stat = Path(full).stat()
                except OSError:
                    continue
                identity = (folder_stat.st_dev, folder_stat.st_ino)
                if identity in visited:
                    continue
                visited.add(identity)
            subfolders = self._list(
                relative,
                full,
                found=found,
                linked=linked,
                visited=visited,
                warnings=warnings,
                files=files,
            )
            folders.extend(reversed(subfolders))
        return found

    def _list(
        self,
        relative: str,
        full: str,
        *,
        found: dict[str, Found],
        linked: list[tuple[str, str]],
        visited: set[tuple[int, int]],
        warnings: list[str],
        files: list[str] | None = None,
    ) -> list[tuple[str, str]]:
        """Add the note files of one folder to ``found`` (its other files to ``files``); its
        real subfolders to walk (and its symlinked ones to ``linked``)."""
        subfolders: list[tuple[str, str]] = []
        try:
            with os.scandir(full) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except FileNotFoundError:
            return subfolders  # deleted while we walked
        except OSError as error:
            warnings.append(f"{relative or '.'}/: the folder cannot be listed ({_reason(error)})")
            return subfolders
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            child = f"{relative}/{name}" if relative else name
            if self._excluded(child):
                continue
            unusable = unusable_name(name)
            if unusable:
                shown = os.fsencode(child).decode("utf-8", "backslashreplace")
                shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in shown)
                warnings.append(f"{shown}: skipped, the name {unusable}")
                continue
            try:
                is_link = entry.is_symlink()
                is_folder = entry.is_dir()  # follows symlinks
            except OSError:
                continue
            if is_folder:
                if name in _SKIPPED_FOLDERS:
                    continue
                if is_link:
                    linked.append((child, entry.path))
                    continue
                try:
                    folder_stat = entry.stat()
                except OSError:
                    continue
                identity = (folder_stat.st_dev, folder_stat.st_ino)
                if identity not in visited:
                    visited.add(identity)
                    subfolders.append((child, entry.path))
            elif name.lower().endswith(NOTE_SUFFIXES):
                if is_link and not self._inside(entry.path):
                    continue
                try:
                    file_stat = entry.stat()
                except OSError:
                    continue  # deleted since the listing, or a broken symlink
                if stat.S_ISREG(file_stat.st_mode):
                    found[child] = Found(
                        child, entry.path, file_stat.st_size, file_stat.st_mtime_ns
                    )
            elif files is not None and (not is_link or self._inside(entry.path)):
                try:
                    if entry.is_file():  # no stat: the folder listing says what it is
                        files.append(child)
                except OSError:
                    continue
        return subfolders

    def stat_file(self, relative: str, full: str) -> Found | None:
        """The note file at ``relative``, if it exists and may be indexed."""
        if Path(full).is_symlink() and not self._inside(full):
            return None
        try:
            file_stat = Path(full).stat()
        except OSError:
            return None
        if not stat.S_ISREG(file_stat.st_mode):
            return None
        return Found(relative, full, file_stat.st_size, file_stat.st_mtime_ns)

    def inside(self, full: str) -> bool:
        """Whether the real path of ``full`` is inside the vault's real root."""
        return self._inside(full)

    def _inside(self, full: str) -> bool:
        """Whether the real path of ``full`` is inside the vault's real root."""
        real = os.path.realpath(full)
        return real == self._root or real.startswith(self._root.rstrip(os.sep) + os.sep)

    def is_candidate(self, relative: str) -> bool:
        """Whether a vault-relative path names a note by its name alone: Markdown, no hidden
        part, no ``node_modules`` folder, not excluded (nor any of its folders)."""
        return _is_note_name(relative) and self._listed(relative)

    def is_other_file(self, relative: str) -> bool:
        """Whether a vault-relative path names one of the vault's other files (attachments)
        by its name alone: not Markdown, and listed as a note would be."""
        return not _is_note_name(relative) and self._listed(relative)

    def _listed(self, relative: str) -> bool:
        """No hidden part, no ``node_modules`` folder, not excluded (nor any of its folders),
        a usable name."""
        parts = relative.split("/")
        if unusable_name(relative):
            return False
        if any(part.startswith(".") or part in _SKIPPED_FOLDERS for part in parts):
            return False
        return not any(self._excluded("/".join(parts[:n])) for n in range(1, len(parts) + 1))

    def relative(self, path: Path) -> str | None:
        """``path`` (absolute, or relative to the vault) as a vault-relative POSIX path;
        None when it is outside the vault."""
        path = Path(path)
        if path.is_absolute():
            candidates = (
                Path(os.path.normpath(path)),
                Path(os.path.realpath(path.parent)) / path.name,
            )
            for candidate in candidates:
                for base in (self.root, self._given_root):
                    if candidate.is_relative_to(base) and candidate != base:
                        return candidate.relative_to(base).as_posix()
            return None
        relative = os.path.normpath(path).replace(os.sep, "/")
        if relative in (".", "") or relative == ".." or relative.startswith("../"):
            return None
        return relative

    def read(self, entry: Found, known: Note | None) -> Note | None:
        """The note of a file, or None when it is gone; ``known`` (with a new mtime) when
        the content hash did not change. Raises Unreadable for a file that is no note."""
        path = entry.path
        try:
            with Path(entry.full).open("rb") as file:
                file_stat = os.fstat(file.fileno())
                head = file.read(BINARY_PROBE)
                if is_binary(head):
                    self.binary[path] = (file_stat.st_size, file_stat.st_mtime_ns)
                    raise Unreadable(f"{path}: a binary file (a NUL byte), not indexed")
                digest = hashlib.sha256(head)
                chunks = [head]
                size = len(head)
                # Stream the rest: the hash covers the whole file, memory holds the cut.
                while chunk := file.read(_CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
                    if size - len(chunk) <= MAX_NOTE_BYTES:
                        chunks.append(chunk)
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            return None
        except OSError as error:
            raise Unreadable(f"{path}: cannot be read ({_reason(error)})") from error
        self.binary.pop(path, None)
        content_hash = digest.hexdigest()
        mtime_ns = file_stat.st_mtime_ns
        if known is not None and known.content_hash == content_hash:
            return known if known.mtime_ns == mtime_ns else replace(known, mtime_ns=mtime_ns)
        return build_note(
            self._root,
            path,
            b"".join(chunks),
            size=size,
            content_hash=content_hash,
            mtime_ns=mtime_ns,
        )


def _reason(error: OSError) -> str:
    """The short reason of an OS error: "Permission denied", "No such file or directory"."""
    return error.strerror or type(error).__name__


def _exclude_matcher(patterns: Sequence[str]) -> _Matcher:
    """A test of vault-relative paths against exclude globs (see the module docstring)."""
    expanded: list[str] = []
    for written in patterns:
        pattern = written.strip().removeprefix("./").rstrip("/")
        while pattern:
            expanded.append(pattern)
            if not pattern.startswith("**/"):
                break
            pattern = pattern[3:]
    if not expanded:
        return _Matcher(None)
    return _Matcher(re.compile("|".join(fnmatch.translate(p) for p in expanded)))


class _Matcher:
    """Calls ``pattern.match`` (the fnmatch translations are anchored), or says no."""

    __slots__ = ("_pattern",)

    def __init__(self, pattern: re.Pattern[str] | None) -> None:
        self._pattern = pattern

    def __call__(self, path: str) -> bool:
        return self._pattern is not None and self._pattern.match(path) is not None
