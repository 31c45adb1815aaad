"""A vault's note set: its notes at one moment and their link index (per resolution step of
docs/reference.md, Notes — path, title, alias, file name — casefolded key → paths).

A note set is never changed once published: :meth:`NoteSet.updated` copies what it changes,
so readers on other threads keep a consistent view while the vault's one writer moves on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lsp_memory.model import Note
from lsp_memory.notes.walk import NOTE_SUFFIXES

__all__ = ["ALIAS", "EMPTY", "NAME", "PATH", "TITLE", "NoteSet", "fold", "index_keys"]

# Resolution steps of docs/reference.md, Notes, in order; each has its own index.
PATH, TITLE, ALIAS, NAME = range(4)


@dataclass(frozen=True, slots=True)
class NoteSet:
    """The notes by path and, per resolution step, casefolded key → paths (never mutated
    once published)."""

    notes: dict[str, Note]
    keys: tuple[dict[str, tuple[str, ...]], ...]
    files: frozenset[str] = frozenset()  # the vault's other files (attachments), by path

    def with_files(self, files: frozenset[str]) -> NoteSet:
        """This note set with the vault's other files ``files`` (itself if they are those)."""
        return self if files == self.files else NoteSet(self.notes, self.keys, files)

    def updated(self, put: Mapping[str, Note], removed: Sequence[str]) -> NoteSet:
        """A new note set with the notes of ``put`` set and those of ``removed`` gone; the
        index keys of notes whose content did not change are kept as they are."""
        old = self
        new_keys = {path: index_keys(note) for path, note in put.items()}
        moved = [
            path
            for path, note in put.items()
            if path not in old.notes or index_keys(old.notes[path]) != new_keys[path]
        ]
        notes = dict(old.notes)
        keys = tuple(dict(step) for step in old.keys) if moved or removed else old.keys
        for path in [*removed, *moved]:
            previous = old.notes.get(path)
            if previous is not None:
                _unindex(keys, path, index_keys(previous))
        for path in removed:
            notes.pop(path, None)
        for path, note in put.items():
            notes[path] = note
        for path in moved:
            _index(keys, path, new_keys[path])
        return NoteSet(notes, keys, old.files)


EMPTY = NoteSet({}, ({}, {}, {}, {}))


def fold(text: str) -> str:
    """A lookup key: case-folded, white space runs folded to one space, stripped."""
    return " ".join(text.casefold().split())


def _without_suffix(path: str) -> str | None:
    """``path`` without its ``.md``/``.markdown`` ending, or None if it has neither."""
    lowered = path.lower()
    for suffix in NOTE_SUFFIXES:
        if lowered.endswith(suffix):
            return path[: -len(suffix)]
    return None


def index_keys(note: Note) -> tuple[frozenset[str], ...]:
    """The keys of ``note`` for each resolution step."""
    path = note.path.casefold()
    name = path.rpartition("/")[2]
    stem = _without_suffix(name) or name
    return (
        frozenset({path, _without_suffix(path) or path}),
        frozenset({fold(note.title)}),
        frozenset(fold(alias) for alias in note.aliases),
        frozenset({name, fold(stem)}),
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
