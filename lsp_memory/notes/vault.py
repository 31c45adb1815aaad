"""A vault: the notes under one folder, kept current by cheap rescans, and ``[[link]]``
resolution (docs/reference.md, Notes).

Which files are notes, and how excludes and symlinks count: :mod:`lsp_memory.notes.walk`.
The notes and their link index live in an immutable :mod:`~lsp_memory.notes.noteset`;
links resolve over one with :mod:`lsp_memory.notes.resolve`.

One writer at a time (scan, update, update_text); readers (``notes``, ``resolve``,
``backlinks``) may run on other threads: every write publishes a new note set instead of
changing the one readers hold. A request reads a ``VaultView``: one note set for all of it.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

from lsp_memory.model import Note, NoteTarget, Reference
from lsp_memory.notes.derived import derived
from lsp_memory.notes.mentions import MentionIndex, mentions_of
from lsp_memory.notes.names import NameIndex, names_of
from lsp_memory.notes.noteset import EMPTY, NoteSet
from lsp_memory.notes.parse import build_note
from lsp_memory.notes.resolve import resolve_link
from lsp_memory.notes.saved import SavedScan
from lsp_memory.notes.walk import Folder, Found, Unreadable
from lsp_memory.runtime import collector_paused

__all__ = ["ScanResult", "Vault", "VaultView"]


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


class VaultView:
    """The notes of one vault as one note set has them, their ``[[link]]`` resolution and
    backlinks: what a request reads (``Vault.view``), unchanged by later scans."""

    def __init__(
        self, root: Path, folder: Folder, noteset: NoteSet, *, loaded: bool = True
    ) -> None:
        self.root = root
        self._folder = folder
        self._noteset = noteset
        # False until the vault's notes were first published (from the saved scan or a
        # scan): an empty view then means "not known yet", not "no notes".
        self.loaded = loaded

    @property
    def notes(self) -> Mapping[str, Note]:
        """Every note, by vault-relative POSIX path (read-only)."""
        return MappingProxyType(self._noteset.notes)

    def names(self) -> NameIndex:
        """The notes' names, searchable as a user types ``[[`` (built once per note set)."""
        return names_of(self._noteset)

    def is_note(self, relative: str) -> bool:
        """Whether the vault-relative ``relative`` names a note by its name alone (Markdown,
        no hidden part, not excluded): what a new note's path must be."""
        return self._folder.is_candidate(relative)

    def mentions(self) -> MentionIndex:
        """The names notes can be mentioned by, for unlinked mentions (built once per note
        set)."""
        return mentions_of(self._noteset)

    def resolve(self, target: str, heading: str | None = None) -> NoteTarget:
        """What ``[[target#heading]]`` names (docs/reference.md, Notes), first hit wins.

        A target with ``/`` is first tried as a vault-relative path (with or without its
        extension); then every target is tried as a title, an alias, a file name (with or
        without extension); each compared case-insensitively. Several notes matching at the
        winning step are all in ``candidates``, shorter path first, then alphabetical;
        ``note`` is the first. ``..`` segments and absolute paths never resolve. A heading
        that the note lacks leaves ``heading`` None and says so in ``error``; the note is
        still returned.
        """
        return resolve_link(self._noteset, target, heading, str(self.root))

    def relative(self, path: Path) -> str | None:
        """``path`` (absolute, or relative to the vault) as a vault-relative POSIX path;
        None when it is outside the vault. The file need not exist."""
        return self._folder.relative(path)

    def admits(self, relative: str) -> bool:
        """Whether a note at the vault-relative ``relative`` would be one of the vault's
        notes (Markdown, not hidden, not excluded)."""
        return self._folder.is_candidate(relative)

    def moved(self, put: Mapping[str, Note], gone: Iterable[str]) -> VaultView:
        """What this view would be with the notes of ``put`` at their paths and those at
        ``gone`` removed: a file rename planned before it happens. The vault is unchanged."""
        noteset = self._noteset.updated(put, list(gone))
        return VaultView(self.root, self._folder, noteset, loaded=self.loaded)

    def note_at(self, path: Path) -> Note | None:
        """The note indexed for the file ``path`` (absolute, or relative to the vault), or
        None when it is outside the vault or not a note."""
        relative = self._folder.relative(path)
        return None if relative is None else self._noteset.notes.get(relative)

    def backlinks(self, path: str) -> list[tuple[Note, Reference]]:
        """The links of other notes that resolve to the note at ``path``, by source path and
        position. From the note set's reverse links, built on first use: resolving every
        link of 10 000 notes per hover took 55 ms."""
        notes = self._noteset.notes
        return [
            (notes[source], link)
            for source, link in derived(self._noteset, _reverse_links).get(path, ())
            if source != path
        ]


Links = dict[str, list[tuple[str, Reference]]]

_RECENT_LOCK = threading.Lock()
_RECENT: list[tuple[NoteSet, Links]] = []  # the latest reverse links built, a few vaults'
_RECENT_KEEP = 4
_INCREMENTAL_MAX = 64
"""At most this many changed notes are updated in place of building every link again."""


def _reverse_links(noteset: NoteSet) -> Links:
    """Target path → (source path, link) of every link that resolves, by source path and
    position. From the reverse links of an earlier note set of the vault when no note's
    names changed since (an edit that moves no title, alias or path: what typing in an open
    note publishes), so only the changed notes' links are resolved again: building them
    all took ~0.5 s per keystroke on 10 000 notes (docs/benchmarks.md)."""
    with _RECENT_LOCK:
        base = next(((n, v) for n, v in _RECENT if n.keys is noteset.keys), None)
    found = _all_links(noteset) if base is None else _updated_links(noteset, *base)
    with _RECENT_LOCK:
        rest = [(n, v) for n, v in _RECENT if n.keys is not noteset.keys]
        _RECENT[:] = [(noteset, found), *rest[: _RECENT_KEEP - 1]]
    return found


def _all_links(noteset: NoteSet) -> Links:
    """Every link of the note set that resolves, by target; each distinct link text
    resolved once."""
    resolved: dict[str, str | None] = {}
    found: Links = {}
    for source_path in sorted(noteset.notes):
        for link in noteset.notes[source_path].links:
            if link.target not in resolved:
                note = resolve_link(noteset, link.target, None).note
                resolved[link.target] = note.path if note is not None else None
            target = resolved[link.target]
            if target is not None:
                found.setdefault(target, []).append((source_path, link))
    return found


def _updated_links(noteset: NoteSet, base: NoteSet, links: Links) -> Links:
    """``links`` of ``base`` with the links of the notes changed since it replaced. The
    same index keys mean every target resolves as it did (no note was added, removed or
    renamed), so only the changed notes' own links move."""
    changed = {path for path, note in noteset.notes.items() if base.notes.get(path) is not note}
    if len(changed) > _INCREMENTAL_MAX:
        return _all_links(noteset)
    resolved: dict[str, str | None] = {}

    def target(link: Reference) -> str | None:
        if link.target not in resolved:
            note = resolve_link(noteset, link.target, None).note
            resolved[link.target] = note.path if note is not None else None
        return resolved[link.target]

    found = dict(links)
    touched: set[str] = set()
    for path in changed:
        before = base.notes.get(path)
        for link in (*(before.links if before is not None else ()), *noteset.notes[path].links):
            named = target(link)
            if named is not None:
                touched.add(named)
    for named in touched:  # a new list for each target touched: ``links`` stays as it was
        found[named] = [entry for entry in found.get(named, ()) if entry[0] not in changed]
    for path in sorted(changed):
        for link in noteset.notes[path].links:
            named = target(link)
            if named is not None:
                found[named].append((path, link))
    for named in touched:
        if found[named]:
            found[named].sort(key=lambda entry: (entry[0], entry[1].offset))
        else:
            del found[named]
    return found


class Vault(VaultView):
    """The notes of one folder, kept current; reading it reads its latest note set."""

    def __init__(
        self, root: Path, *, excludes: Sequence[str] = (), saved: Path | None = None
    ) -> None:
        """The vault at ``root``; ``saved``: a file where its scans are kept between
        processes (see :mod:`lsp_memory.notes.saved`), so a first scan reads only the
        files that changed since."""
        super().__init__(Path(root).resolve(), Folder(root, excludes=excludes), EMPTY, loaded=False)
        self.excludes = tuple(excludes)
        self._root = str(self.root)
        # Paths whose note comes from an editor buffer (update_text), not from the disk.
        self._buffers: set[str] = set()
        self._saved = None if saved is None else SavedScan(saved, self._root, self.excludes)
        self._unsaved = False  # the notes read from disk changed since the last save
        self._first_scan = True
        self._preloaded: tuple[set[str] | None, list[str]] | None = None

    def preload(self) -> None:
        """Publish the saved scan now, before the first scan walks the folder, and build its
        name index here: a language server does this first on its indexing thread, so the
        first ``[[`` after a start answers from the saved notes (and does not build the index
        of 10 000 names, 70-160 ms, on the event loop). The first scan then goes on from it.
        Nothing happens after the first scan or without a saved scan."""
        if not self._first_scan or self._preloaded is not None:
            return
        warnings: list[str] = []
        # As in a first scan: 66 000 link objects made at once, for the process's life.
        with collector_paused(keep=True):
            self._preloaded = (self._load_saved(warnings, names=True), warnings)

    def view(self) -> VaultView:
        """The vault as it is now, for one request: later scans publish new note sets and
        leave this one as it was."""
        return VaultView(self.root, self._folder, self._noteset, loaded=self.loaded)

    def scan(self) -> ScanResult:
        """Bring the vault up to date with the disk.

        The first call reads every note, or, with a saved scan, starts from its notes as the
        later calls do from the last scan's: they stat every file, read only those whose
        size or mtime changed, and parse only those whose content hash changed (a note whose
        file did not change stays the very same object). A scan that changed anything is
        saved. Never raises: problems become warnings.
        """
        started = time.perf_counter()
        warnings: list[str] = []
        with collector_paused(keep=self._first_scan):
            if self._preloaded is not None:
                loaded, early = self._preloaded
                warnings += early
                self._preloaded = None
            else:
                loaded = self._load_saved(warnings)
            files: list[str] = []
            found = self._folder.walk(warnings, files)
            result = self._refresh(found, None, warnings, started, loaded or ())
            self._noteset = self._noteset.with_files(frozenset(files))
            self.loaded = True
            if loaded is not None:
                # A first scan reports every note's warnings, read now or before.
                current = self._noteset.notes
                again = {*result.added, *result.changed}
                kept = [w for p in sorted(current) if p not in again for w in current[p].warnings]
                result = replace(result, warnings=(*result.warnings, *kept))
            if self._saved is not None and self._unsaved:
                # The link index is saved with the notes when it is theirs alone (no buffer's).
                keys = None if self._buffers else self._noteset.keys
                self._saved.save(
                    {p: n for p, n in self.notes.items() if p not in self._buffers}, keys
                )
                self._unsaved = False
            return result

    def _load_saved(self, warnings: list[str], *, names: bool = False) -> set[str] | None:
        """On the first scan, publish the saved scan's notes (so readers have them at once)
        and return the paths to read again whatever their stat says; None without one.
        ``names``: their name index is built before they are published."""
        first, self._first_scan = self._first_scan, False
        if self._saved is None or not first or self._noteset is not EMPTY:
            return None
        found = self._saved.load(warnings)
        if found is None:
            self._unsaved = True  # nothing usable on disk: save this scan
            return None
        notes, racy, keys = found
        if keys is not None:
            noteset = NoteSet(notes, keys, self._noteset.files)  # the saved link index
        else:
            noteset = self._noteset.updated(notes, ()) if notes else self._noteset
        if names:
            # Before the notes are published: a `[[` that sees them finds the index built
            # (else it builds one too, on the event loop, beside this thread).
            names_of(noteset)
        self._noteset = noteset
        self.loaded = True
        return racy

    def update(self, path: Path) -> ScanResult:
        """Bring one file up to date: changed, created or deleted (an editor's save, a file
        watcher's event).

        ``path`` is absolute or vault-relative. Its editor buffer text, if any
        (:meth:`update_text`), is dropped: the disk is the truth again, so this is also what
        to call when an unsaved buffer is closed. A folder, or a path under a symlinked
        folder, triggers a full :meth:`scan`.
        """
        started = time.perf_counter()
        relative = self._folder.relative(path)
        if relative is None:
            return ScanResult(warnings=(f"{path}: not in the vault {self._root}",))
        reread = relative in self._buffers
        self._buffers.discard(relative)
        full = self.root / relative
        prefix = relative + "/"
        if full.is_dir() or any(p.startswith(prefix) for p in self._noteset.notes):
            return self.scan()
        warnings: list[str] = []
        found: dict[str, Found] = {}
        if self._folder.is_candidate(relative):
            if full.parent.resolve() != full.parent:
                # A symlinked folder on the way: only a walk knows which path is canonical.
                return self.scan()
            entry = self._folder.stat_file(relative, str(full))
            if entry is not None:
                found[relative] = entry
        elif self._folder.is_other_file(relative):
            files = set(self._noteset.files)
            if full.is_file() and (not full.is_symlink() or self._folder.inside(str(full))):
                files.add(relative)
            else:
                files.discard(relative)
            self._noteset = self._noteset.with_files(frozenset(files))
        force = {relative} if reread else set()
        return self._refresh(found, {relative}, warnings, started, force)

    def update_text(self, path: Path, text: str) -> Note:
        """Index an open editor buffer's unsaved ``text`` in place of the file's content.

        The buffer wins over the disk until :meth:`update` is called for the path. A path
        inside the vault that is not a note (hidden, excluded, not Markdown) gives a parsed
        note that is not indexed. A path outside the vault raises ValueError.
        """
        relative = self._folder.relative(path)
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
        if self._folder.is_candidate(relative):
            self._buffers.add(relative)
            known = self._noteset.notes.get(relative)
            if known is None or known.content_hash != note.content_hash:
                self._publish({relative: note}, ())  # the same text: the same note set
        return note

    # Reading and indexing ----------------------------------------------------------------

    def _refresh(
        self,
        found: dict[str, Found],
        scope: set[str] | None,
        warnings: list[str],
        started: float,
        force: Iterable[str] = (),
    ) -> ScanResult:
        """Make the notes under ``scope`` (every path when None) those of ``found``: read
        what changed on disk (and every path in ``force``), parse what changed in content."""
        old = self._noteset.notes
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
                if self._folder.binary.get(path) == (entry.size, entry.mtime_ns):
                    continue
            try:
                note = self._folder.read(entry, known)
            except Unreadable as problem:
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
        if put or removed:
            self._unsaved = True
        self._publish(put, removed)
        return ScanResult(
            added=tuple(sorted(added)),
            changed=tuple(sorted(changed)),
            removed=tuple(removed),
            warnings=tuple(warnings),
            seconds=time.perf_counter() - started,
        )

    def _publish(self, put: Mapping[str, Note], removed: Iterable[str]) -> None:
        """Publish a new note set with the notes of ``put`` set and those of ``removed``
        gone."""
        removed = list(removed)
        if not put and not removed:
            return
        self._noteset = self._noteset.updated(put, removed)
