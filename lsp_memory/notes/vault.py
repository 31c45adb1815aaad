"""A vault: the notes under one folder, kept current by cheap rescans, and ``[[link]]``
resolution (SPEC §4).

Which files are notes: ``.md`` and ``.markdown`` files (any case), outside hidden files and
folders (a name starting with ``.``) and ``node_modules``, not matched by an exclude pattern.
A symlinked file or folder is followed only when its real path stays inside the vault's real
root; folders are walked once each (by device and inode), so symlink loops end, and a folder
reachable both directly and through a symlink is indexed under its real path.

Exclude patterns are :func:`fnmatch.fnmatchcase` globs over the vault-relative POSIX path:
``*`` also matches ``/`` (``drafts/*`` drops everything under ``drafts``, ``*.tmp.md`` drops
such files at any depth), a folder matching a pattern is skipped whole (``drafts`` works as
well), and a leading ``**/`` also matches at the top level. Matching is case-sensitive.

One writer at a time (scan, update, update_text); readers (``notes``, ``resolve``,
``backlinks``) may run on other threads: every write publishes a new snapshot instead of
changing the one readers hold.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import stat
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

from lsp_memory.model import Heading, Note, NoteTarget, Reference
from lsp_memory.notes.parse import (
    BINARY_PROBE,
    MAX_NOTE_BYTES,
    build_note,
    is_binary,
    loose_key,
)
from lsp_memory.runtime import collector_paused

__all__ = ["NOTE_SUFFIXES", "ScanResult", "Vault", "link_form"]

NOTE_SUFFIXES = (".md", ".markdown")
"""File name endings of notes, compared case-insensitively."""

_SKIPPED_FOLDERS = frozenset({"node_modules"})
_CHUNK = 1 << 20
# An absolute target: "/x", "\\x" or a Windows drive ("C:/x", "c:\\x").
_ABSOLUTE = re.compile(r"[/\\]|[A-Za-z]:[/\\]")
_SEGMENT_SEPARATORS = re.compile(r"[/\\]")

# Resolution steps of SPEC §4, in order; each has its own index.
_PATH, _TITLE, _ALIAS, _NAME = range(4)


@dataclass(frozen=True, slots=True)
class ScanResult:
    """What a scan or update changed: vault-relative paths, sorted, and its warnings.

    ``warnings`` are about the files read by this call (each starts with the file's path);
    a file that has not changed since is not read again, so its warnings are not repeated
    (they stay in its ``Note.warnings``).
    """

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class _Found:
    """A note file found on disk: vault-relative POSIX path, OS path, size and mtime."""

    path: str
    full: str
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """The notes by path and, per resolution step, casefolded key → paths (never mutated
    once published)."""

    notes: dict[str, Note]
    keys: tuple[dict[str, tuple[str, ...]], ...]


_EMPTY = _Snapshot({}, ({}, {}, {}, {}))


class _Unreadable(Exception):
    """A file that exists but cannot be indexed; the message is the warning."""


class Vault:
    """The notes of one folder, their ``[[link]]`` resolution and backlinks."""

    def __init__(self, root: Path, *, excludes: Sequence[str] = ()) -> None:
        self.root = Path(root).resolve()
        self.excludes = tuple(excludes)
        self._given_root = Path(root).absolute()
        self._root = str(self.root)
        self._excluded = _exclude_matcher(self.excludes)
        self._snapshot = _EMPTY
        # Paths whose note comes from an editor buffer (update_text), not from the disk.
        self._buffers: set[str] = set()
        # Binary files by path, with the size and mtime they had: not read again until changed.
        self._binary: dict[str, tuple[int, int]] = {}

    @property
    def notes(self) -> Mapping[str, Note]:
        """Every note, by vault-relative POSIX path (a read-only snapshot)."""
        return MappingProxyType(self._snapshot.notes)

    def scan(self) -> ScanResult:
        """Bring the vault up to date with the disk.

        The first call reads every note. Later calls stat every file, read only those whose
        size or mtime changed, and parse only those whose content hash changed (a note whose
        file did not change stays the very same object). Never raises: problems become
        warnings.
        """
        started = time.perf_counter()
        warnings: list[str] = []
        with collector_paused():
            found = self._walk(warnings)
            return self._refresh(found, None, warnings, started)

    def update(self, path: Path) -> ScanResult:
        """Bring one file up to date: changed, created or deleted (an editor's save, a file
        watcher's event).

        ``path`` is absolute or vault-relative. Its editor buffer text, if any
        (:meth:`update_text`), is dropped: the disk is the truth again, so this is also what
        to call when an unsaved buffer is closed. A folder, or a path under a symlinked
        folder, triggers a full :meth:`scan`.
        """
        started = time.perf_counter()
        relative = self._relative(path)
        if relative is None:
            return ScanResult(warnings=(f"{path}: not in the vault {self._root}",))
        reread = relative in self._buffers
        self._buffers.discard(relative)
        full = self.root / relative
        prefix = relative + "/"
        if full.is_dir() or any(p.startswith(prefix) for p in self._snapshot.notes):
            return self.scan()
        warnings: list[str] = []
        found: dict[str, _Found] = {}
        if self._is_candidate(relative):
            if full.parent.resolve() != full.parent:
                # A symlinked folder on the way: only a walk knows which path is canonical.
                return self.scan()
            entry = self._stat_file(relative, str(full))
            if entry is not None:
                found[relative] = entry
        force = {relative} if reread else set()
        return self._refresh(found, {relative}, warnings, started, force)

    def update_text(self, path: Path, text: str) -> Note:
        """Index an open editor buffer's unsaved ``text`` in place of the file's content.

        The buffer wins over the disk until :meth:`update` is called for the path. A path
        inside the vault that is not a note (hidden, excluded, not Markdown) gives a parsed
        note that is not indexed. A path outside the vault raises ValueError.
        """
        relative = self._relative(path)
        if relative is None:
            raise ValueError(f"{path} is not in the vault {self._root}")
        try:
            mtime_ns = (self.root / relative).stat().st_mtime_ns
        except OSError:
            mtime_ns = 0  # a buffer not saved yet
        # "replace": a lone surrogate (possible in JSON text) becomes "?", still one column.
        data = text.encode("utf-8", errors="replace")
        note = build_note(
            self._root,
            relative,
            data,
            size=len(data),
            content_hash=hashlib.sha256(data).hexdigest(),
            mtime_ns=mtime_ns,
        )
        if self._is_candidate(relative):
            self._buffers.add(relative)
            self._publish({relative: note}, ())
        return note

    def resolve(self, target: str, heading: str | None = None) -> NoteTarget:
        """What ``[[target#heading]]`` names (SPEC §4), first hit wins.

        A target with ``/`` is first tried as a vault-relative path (with or without its
        extension); then every target is tried as a title, an alias, a file name (with or
        without extension); each compared case-insensitively. Several notes matching at the
        winning step are all in ``candidates``, shorter path first, then alphabetical;
        ``note`` is the first. ``..`` segments and absolute paths never resolve. A heading
        that the note lacks leaves ``heading`` None and says so in ``error``; the note is
        still returned.
        """
        return _resolve(self._snapshot, target, heading)

    def note_at(self, path: Path) -> Note | None:
        """The note indexed for the file ``path`` (absolute, or relative to the vault), or
        None when it is outside the vault or not a note."""
        relative = self._relative(path)
        return None if relative is None else self._snapshot.notes.get(relative)

    def backlinks(self, path: str) -> list[tuple[Note, Reference]]:
        """The links of other notes that resolve to the note at ``path``, by source path and
        position.

        Resolves every link of every note (linear in the number of links, each resolution a
        few dictionary lookups): fine for thousands of notes; a reverse index would be the
        next step.
        """
        snapshot = self._snapshot
        resolved: dict[str, str | None] = {}
        found: list[tuple[Note, Reference]] = []
        for source_path in sorted(snapshot.notes):
            if source_path == path:
                continue
            source = snapshot.notes[source_path]
            for link in source.links:
                if link.target not in resolved:
                    note = _resolve(snapshot, link.target, None).note
                    resolved[link.target] = note.path if note is not None else None
                if resolved[link.target] == path:
                    found.append((source, link))
        return found

    # Walking the folder ------------------------------------------------------------------

    def _walk(self, warnings: list[str]) -> dict[str, _Found]:
        """Every note file under the root, by vault-relative path."""
        found: dict[str, _Found] = {}
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
                relative, full, found=found, linked=linked, visited=visited, warnings=warnings
            )
            folders.extend(reversed(subfolders))
        return found

    def _list(
        self,
        relative: str,
        full: str,
        *,
        found: dict[str, _Found],
        linked: list[tuple[str, str]],
        visited: set[tuple[int, int]],
        warnings: list[str],
    ) -> list[tuple[str, str]]:
        """Add the note files of one folder to ``found``; its real subfolders to walk (and
        its symlinked ones to ``linked``)."""
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
                    found[child] = _Found(
                        child, entry.path, file_stat.st_size, file_stat.st_mtime_ns
                    )
        return subfolders

    def _stat_file(self, relative: str, full: str) -> _Found | None:
        """The note file at ``relative``, if it exists and may be indexed."""
        if Path(full).is_symlink() and not self._inside(full):
            return None
        try:
            file_stat = Path(full).stat()
        except OSError:
            return None
        if not stat.S_ISREG(file_stat.st_mode):
            return None
        return _Found(relative, full, file_stat.st_size, file_stat.st_mtime_ns)

    def _inside(self, full: str) -> bool:
        """Whether the real path of ``full`` is inside the vault's real root."""
        real = os.path.realpath(full)
        return real == self._root or real.startswith(self._root.rstrip(os.sep) + os.sep)

    def _is_candidate(self, relative: str) -> bool:
        """Whether a vault-relative path names a note by its name alone: Markdown, no hidden
        part, no ``node_modules`` folder, not excluded (nor any of its folders)."""
        parts = relative.split("/")
        if not parts[-1].lower().endswith(NOTE_SUFFIXES):
            return False
        if any(part.startswith(".") or part in _SKIPPED_FOLDERS for part in parts):
            return False
        return not any(self._excluded("/".join(parts[:n])) for n in range(1, len(parts) + 1))

    def _relative(self, path: Path) -> str | None:
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

    # Reading and indexing ----------------------------------------------------------------

    def _refresh(
        self,
        found: dict[str, _Found],
        scope: set[str] | None,
        warnings: list[str],
        started: float,
        force: Iterable[str] = (),
    ) -> ScanResult:
        """Make the notes under ``scope`` (every path when None) those of ``found``: read
        what changed on disk (and every path in ``force``), parse what changed in content."""
        old = self._snapshot.notes
        forced = set(force)
        put: dict[str, Note] = {}
        vanished: set[str] = set()
        added: list[str] = []
        changed: list[str] = []
        for path, entry in found.items():
            if path in self._buffers:
                continue  # an open editor buffer wins over the disk
            known = old.get(path)
            if path not in forced:
                if known is not None and (known.size, known.mtime_ns) == (
                    entry.size,
                    entry.mtime_ns,
                ):
                    continue
                if self._binary.get(path) == (entry.size, entry.mtime_ns):
                    continue
            try:
                note = self._read(entry, known)
            except _Unreadable as problem:
                warnings.append(str(problem))
                continue
            except Exception as error:
                # One broken file must never stop the scan of the others.
                warnings.append(f"{path}: cannot be indexed: {error!r}")
                continue
            if note is None:
                vanished.add(path)  # deleted between the listing and the read
                continue
            put[path] = note
            if known is None or note.content_hash != known.content_hash:
                (added if known is None else changed).append(path)
                warnings.extend(note.warnings)
        in_scope = old.keys() if scope is None else scope & old.keys()
        removed = sorted(
            path
            for path in in_scope
            if path not in self._buffers and (path not in found or path in vanished)
        )
        self._publish(put, removed)
        return ScanResult(
            added=tuple(sorted(added)),
            changed=tuple(sorted(changed)),
            removed=tuple(removed),
            warnings=tuple(warnings),
            seconds=time.perf_counter() - started,
        )

    def _read(self, entry: _Found, known: Note | None) -> Note | None:
        """The note of a file, or None when it is gone; ``known`` (with a new mtime) when
        the content hash did not change. Raises _Unreadable for a file that is no note."""
        path = entry.path
        try:
            with Path(entry.full).open("rb") as file:
                file_stat = os.fstat(file.fileno())
                head = file.read(BINARY_PROBE)
                if is_binary(head):
                    self._binary[path] = (file_stat.st_size, file_stat.st_mtime_ns)
                    raise _Unreadable(f"{path}: a binary file (a NUL byte), not indexed")
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
            raise _Unreadable(f"{path}: cannot be read ({_reason(error)})") from error
        self._binary.pop(path, None)
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

    def _publish(self, put: Mapping[str, Note], removed: Iterable[str]) -> None:
        """Publish a new snapshot with the notes of ``put`` set and those of ``removed``
        gone; the index keys of notes whose content did not change are kept as they are."""
        removed = list(removed)
        if not put and not removed:
            return
        old = self._snapshot
        new_keys = {path: _index_keys(note) for path, note in put.items()}
        moved = [
            path
            for path, note in put.items()
            if path not in old.notes or _index_keys(old.notes[path]) != new_keys[path]
        ]
        notes = dict(old.notes)
        keys = tuple(dict(step) for step in old.keys) if moved or removed else old.keys
        for path in [*removed, *moved]:
            previous = old.notes.get(path)
            if previous is not None:
                _unindex(keys, path, _index_keys(previous))
        for path in removed:
            notes.pop(path, None)
        for path, note in put.items():
            notes[path] = note
        for path in moved:
            _index(keys, path, new_keys[path])
        self._snapshot = _Snapshot(notes, keys)


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


# Resolution ----------------------------------------------------------------------------------


def _fold(text: str) -> str:
    """A lookup key: case-folded, white space runs folded to one space, stripped."""
    return " ".join(text.casefold().split())


def _without_suffix(path: str) -> str | None:
    """``path`` without its ``.md``/``.markdown`` ending, or None if it has neither."""
    lowered = path.lower()
    for suffix in NOTE_SUFFIXES:
        if lowered.endswith(suffix):
            return path[: -len(suffix)]
    return None


def _index_keys(note: Note) -> tuple[frozenset[str], ...]:
    """The keys of ``note`` for each resolution step."""
    path = note.path.casefold()
    name = path.rpartition("/")[2]
    stem = _without_suffix(name) or name
    return (
        frozenset({path, _without_suffix(path) or path}),
        frozenset({_fold(note.title)}),
        frozenset(_fold(alias) for alias in note.aliases),
        frozenset({name, _fold(stem)}),
    )


def _index(
    keys: tuple[dict[str, tuple[str, ...]], ...], path: str, of: tuple[frozenset[str], ...]
) -> None:
    for step, step_keys in zip(keys, of, strict=True):
        for key in step_keys:
            step[key] = (*step.get(key, ()), path)


def _unindex(
    keys: tuple[dict[str, tuple[str, ...]], ...], path: str, of: tuple[frozenset[str], ...]
) -> None:
    for step, step_keys in zip(keys, of, strict=True):
        for key in step_keys:
            rest = tuple(p for p in step.get(key, ()) if p != path)
            if rest:
                step[key] = rest
            else:
                step.pop(key, None)


def link_form(note: Note, target: str) -> str | None:
    """Which rule of SPEC §4 makes the link target ``target`` name ``note``: ``path``,
    ``title``, ``alias`` or ``name`` (its file name), the first that holds, in the order
    resolution tries them; None when none does."""
    wanted = target.strip()
    keys = _index_keys(note)
    if "/" in wanted:
        segments = _SEGMENT_SEPARATORS.split(wanted)
        path = "/".join(s for s in segments if s not in ("", "."))
        if path.casefold() in keys[_PATH]:
            return "path"
    folded = _fold(wanted)
    for step, form in ((_TITLE, "title"), (_ALIAS, "alias"), (_NAME, "name")):
        if folded in keys[step]:
            return form
    return None


def _resolve(snapshot: _Snapshot, target: str, heading: str | None) -> NoteTarget:
    """:meth:`Vault.resolve` over one snapshot."""
    wanted = target.strip()
    segments = _SEGMENT_SEPARATORS.split(wanted)
    if _ABSOLUTE.match(wanted) or ".." in segments:
        return NoteTarget(note=None, error=f"Outside the vault: {target}")
    lookups: list[tuple[int, str]] = []
    if "/" in wanted:
        path = "/".join(s for s in segments if s not in ("", "."))
        lookups.append((_PATH, path.casefold()))
    folded = _fold(wanted)
    lookups += [(_TITLE, folded), (_ALIAS, folded), (_NAME, folded)]
    for step, key in lookups:
        paths = snapshot.keys[step].get(key)
        if paths:
            ranked = sorted(paths, key=lambda p: (len(p), p))
            candidates = tuple(snapshot.notes[p] for p in ranked)
            return _with_heading(candidates, heading)
    return NoteTarget(note=None, error=f"Note not found: {target}")


def _with_heading(candidates: tuple[Note, ...], heading: str | None) -> NoteTarget:
    """The first candidate, with ``heading`` found in it (or an error saying it is not)."""
    note = candidates[0]
    if heading is None or not heading.strip():
        return NoteTarget(note=note, candidates=candidates)
    found = _find_heading(note, heading)
    if found is None:
        return NoteTarget(
            note=note,
            candidates=candidates,
            error=f"Heading not found in {note.path}: {heading}",
        )
    return NoteTarget(note=note, heading=found, candidates=candidates)


def _find_heading(note: Note, heading: str) -> Heading | None:
    """The first heading of ``note`` whose text is ``heading`` ignoring case, else ignoring
    punctuation and white space too (``working-style``); for ``A#B`` (a sub-heading path,
    as Obsidian writes it) the last part."""
    wanted = _fold(heading)
    for candidate in note.headings:
        if _fold(candidate.text) == wanted:
            return candidate
    loose = loose_key(heading)
    if loose:
        for candidate in note.headings:
            if loose_key(candidate.text) == loose:
                return candidate
    if "#" in heading:
        return _find_heading(note, heading.rsplit("#", 1)[1])
    return None
