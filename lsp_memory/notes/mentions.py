"""Unlinked mentions: where a text names a note by its title or one of its aliases, as whole
words and ignoring case, without linking it (docs/reference.md, Unlinked mentions).

A note set's :class:`MentionIndex` is built once (at 10 000 notes, ~60 ms) and read by every
request on it: each name a note can be mentioned by, split into words (``\\w+`` runs,
casefolded), filed under its first word. A text is scanned once, word by word: one dictionary
lookup a word, and only the names starting with that word are compared — no per-name regex,
no alternation of thousands of names for the regex engine to try at every position.

What counts as a name is the quiet rule (:func:`matchable`, measured on Obsidian's help
vault in docs/benchmarks.md): a one-word title is matched only as the title writes it
("Search", "Canvas": the feature, not "search the notes"), and not at all below
:data:`MIN_WORD_TITLE` characters; an alias is a name the note chose, and matches in any
case. Where a text may mention anything is the caller's to say (the segments outside links,
code, comments, front matter).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lsp_memory.notes.derived import derived
from lsp_memory.notes.noteset import ALIAS, NAME, TITLE, NoteSet, fold
from lsp_memory.notes.resolve import resolve_link

__all__ = [
    "MIN_WORD_TITLE",
    "NOT_A_TARGET",
    "Mention",
    "MentionIndex",
    "Name",
    "build_index",
    "matchable",
    "mentions_of",
]

MIN_WORD_TITLE = 3
"""A one-word title shorter than this is not matched at all ("AI", "Go"); an alias is."""

_WORD = re.compile(r"\w+")
NOT_A_TARGET = re.compile(r"[\[\]|#^\r\n]")
"""A character no ``[[link]]`` target can hold (the link's own brackets, label, heading)."""


@dataclass(frozen=True, slots=True)
class Name:
    """A name a note can be mentioned by: as written (its title or alias), its words
    casefolded, and the path of the note ``[[written]]`` names in the note set."""

    written: str
    words: tuple[str, ...]
    core: str  # from its first word to its last, folded
    lead: str  # what comes before its first word, casefolded ("" for most names)
    trail: str  # what comes after its last word, casefolded
    path: str
    alias: bool
    exact: bool  # a one-word title: matched only as written, case included


@dataclass(frozen=True, slots=True)
class Mention:
    """``text[start:end]`` names the note of ``name``."""

    start: int
    end: int
    name: Name


def matchable(written: str, *, alias: bool) -> bool:
    """The quiet rule's first half: whether a title or alias is looked for in prose at all
    (the second: a one-word title matches only as written, :attr:`Name.exact`)."""
    words = _WORD.findall(written)
    if not words:
        return False
    return alias or len(words) > 1 or len(written.strip()) >= MIN_WORD_TITLE


@functools.lru_cache(maxsize=65536)
def _name(written: str, path: str, alias: bool, quiet: bool = True) -> Name | None:
    """The :class:`Name` of a title or alias (remembered: most names are the same from one
    note set to the next, and splitting 10 000 of them took half the build)."""
    found = list(_WORD.finditer(written))
    if not found:
        return None
    first, last = found[0].start(), found[-1].end()
    return Name(
        written=written,
        words=tuple(m.group().casefold() for m in found),
        core=fold(written[first:last]),
        lead=written[:first].casefold(),
        trail=written[last:].casefold(),
        path=path,
        alias=alias,
        exact=quiet and not alias and len(found) == 1,
    )


class MentionIndex:
    """Names by their first word, longest first: what :meth:`find` looks a text's words up
    in."""

    def __init__(self, names: Iterable[Name]) -> None:
        self.names = tuple(names)
        by_first: dict[str, list[Name]] = {}
        for name in self.names:
            by_first.setdefault(name.words[0], []).append(name)
        for found in by_first.values():
            found.sort(key=lambda n: (-len(n.words), -len(n.core), n.path))
        self._by_first = by_first

    def of(self, path: str) -> MentionIndex:
        """An index of only the names that name the note at ``path``."""
        return MentionIndex(n for n in self.names if n.path == path)

    def find(
        self,
        text: str,
        segments: Sequence[tuple[int, int]],
        *,
        skip: frozenset[str] = frozenset(),
    ) -> list[Mention]:
        """The mentions in ``text`` within ``segments`` (sorted, disjoint ``(start, end)``),
        none of a note whose path is in ``skip`` nor by a name of those notes (``fold``ed, in
        ``skip`` too), by position; at one place the longest name wins, and mentions never
        overlap. A mention stays on one line and inside one segment."""
        by_first = self._by_first
        if not by_first:
            return []
        ascii_text = text.isascii()
        folded_text = text.lower() if ascii_text else text
        found: list[Mention] = []
        for seg_start, seg_end in segments:
            words = [
                (m.start(), m.end(), m.group() if ascii_text else m.group().casefold())
                for m in _WORD.finditer(folded_text, seg_start, seg_end)
            ]
            count = len(words)
            index = 0
            while index < count:
                candidates = by_first.get(words[index][2])
                hit = None
                if candidates is not None:
                    hit = _first_fit(
                        text, words, index, candidates, segment=(seg_start, seg_end), skip=skip
                    )
                if hit is None:
                    index += 1
                    continue
                found.append(hit[0])
                index += hit[1]
        return found


def _first_fit(
    text: str,
    words: list[tuple[int, int, str]],
    index: int,
    candidates: list[Name],
    *,
    segment: tuple[int, int],
    skip: frozenset[str],
) -> tuple[Mention, int] | None:
    """The longest of ``candidates`` written at ``words[index]``, and its word count."""
    count = len(words)
    seg_start, seg_end = segment
    for name in candidates:
        size = len(name.words)
        if index + size > count or name.path in skip:
            continue
        if size > 1 and tuple(w[2] for w in words[index : index + size]) != name.words:
            continue
        start, end = words[index][0], words[index + size - 1][1]
        if size > 1:
            between = text[start:end]
            if "\n" in between or "\r" in between or fold(between) != name.core:
                continue
        if name.lead:
            start -= len(name.lead)
            if start < seg_start or text[start : start + len(name.lead)].casefold() != name.lead:
                continue
            if start > 0 and _WORD.match(text, start - 1):
                continue
        if name.trail:
            if end + len(name.trail) > seg_end or text[end : end + len(name.trail)].casefold() != (
                name.trail
            ):
                continue
            end += len(name.trail)
            if _WORD.match(text, end):
                continue
        if name.exact and text[start:end] != name.written:
            continue
        if fold(name.written) in skip:
            continue
        return Mention(start, end, name), size
    return None


def mentions_of(noteset: NoteSet) -> MentionIndex:
    """The mention index of ``noteset``, built on first use."""
    return derived(noteset, build_index)


def build_index(noteset: NoteSet, *, quiet: bool = True) -> MentionIndex:
    """The mention index of ``noteset``; ``quiet=False`` leaves the quiet rule out (every
    title and alias with a word, in any case: what ``benchmarks/mentions_quiet.py`` compares
    with)."""
    names: list[Name] = []
    meaning: dict[str, str | None] = {}  # folded name → the path it names
    for path in sorted(noteset.notes, key=lambda p: (len(p), p)):
        note = noteset.notes[path]
        for written, alias in ((note.title, False), *((a, True) for a in note.aliases)):
            if quiet and not matchable(written, alias=alias):
                continue
            key = fold(written)
            if key not in meaning:
                meaning[key] = _named(noteset, written, path)
            if meaning[key] != path:
                continue  # the name is another note's: it is filed under that note
            name = _name(written, path, alias, quiet)
            if name is not None:
                names.append(name)
                meaning[key] = None  # filed once
    return MentionIndex(names)


def _named(noteset: NoteSet, written: str, path: str) -> str | None:
    """The path of the note the name ``written`` (declared by the note at ``path``) names:
    the one ``[[written]]`` resolves to, or its own note when no link can be written so."""
    if NOT_A_TARGET.search(written):
        return path
    if "/" in written or "\\" in written:
        found = resolve_link(noteset, written, None).note
        return None if found is None else found.path
    # resolve_link's steps for a target without "/", read straight from the keys (10 000
    # calls of resolve_link took a third of the build).
    key = fold(written)
    for step in (TITLE, ALIAS, NAME):
        paths = noteset.keys[step].get(key)
        if paths:
            return min(paths, key=lambda p: (len(p), p))
    return None
