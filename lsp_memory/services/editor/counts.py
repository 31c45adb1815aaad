"""Reference counts of a note (docs/reference.md, Code lenses): how many links of other
notes and of the open documents name the note — shown on its title — and each of its
headings, and, when asked, where they are.

Counting reads no file: the links of the vault's notes come from its note set's reverse
links (built once per note set, the index hover's backlinks read), an open note's unsaved
links from the text the editor handed to the vault; only the open documents that are not
notes of a vault are parsed. Listing the places (what a click on a count shows) is find
references on the note, narrowed to the heading.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from lsp_memory.model import Heading, Note, Reference, RefKind
from lsp_memory.notes.resolve import heading_named
from lsp_memory.services.editor.references import (
    Document,
    Place,
    ReferenceFinder,
    identity,
    note_target,
)

__all__ = ["Count", "LinkCounts"]


@dataclass(frozen=True, slots=True)
class Count:
    """The links to a note's title (``heading`` None: to the note, whatever heading they
    name) or to one of its headings, and the 0-based line it is on."""

    line: int
    heading: Heading | None
    links: int


class LinkCounts:
    """Counts of links to the notes of the vaults a finder reads."""

    def __init__(self, finder: ReferenceFinder) -> None:
        self.finder = finder

    def counts(self, document: Document, opened: Sequence[Document]) -> list[Count]:
        """For the note ``document`` is (none: an empty list), its title's count — on its
        first ``# `` heading, or line 0 — then those of its other headings that are linked,
        in order. ``opened``: the open documents (their links count too)."""
        note = self.finder.note_of(document)
        if note is None:
            return []
        title = _title_heading(note)
        per_line: dict[int, int] = {}
        total = 0
        for link in self._links(note, document, opened):
            total += 1
            found = heading_named(note, link.heading) if link.heading is not None else None
            if found is not None and found is not title:
                per_line[found.line] = per_line.get(found.line, 0) + 1
        shown = [Count(title.line if title is not None else 0, None, total)]
        for heading in note.headings:
            if heading is not title and heading.line in per_line:
                shown.append(Count(heading.line, heading, per_line.pop(heading.line)))
        return shown

    def places(self, document: Document, line: int, opened: Sequence[Document]) -> list[Place]:
        """Where the links counted on ``line`` of the note ``document`` are (its title's
        line: every link to the note), from the files as they are now and the open
        documents. Empty for a document that is no note."""
        note = self.finder.note_of(document)
        if note is None:
            return []
        title = _title_heading(note)
        heading = next((h for h in note.headings if h.line == line and h is not title), None)
        own = os.path.realpath(document.path) if document.path is not None else None
        found = []
        for place in self.finder.find(note_target(note), opened):
            path = place.document.path
            if path is not None and os.path.realpath(path) == own:
                continue  # the note's links to itself are not references to it
            link = place.reference
            if heading is not None and (
                link is None
                or link.heading is None
                or heading_named(note, link.heading) is not heading
            ):
                continue
            found.append(place)
        return found

    def _links(self, note: Note, document: Document, opened: Sequence[Document]) -> list[Reference]:
        """The links to ``note`` from the other notes of its vault and from the open
        documents that are no note of a vault."""
        vault = next((v for v in self.finder.resolver.vaults if str(v.root) == note.vault), None)
        links = [link for _source, link in vault.backlinks(note.path)] if vault else []
        key = note_target(note).key
        resolver = self.finder.resolver
        for other in opened:
            if other.uri == document.uri or self.finder.note_of(other) is not None:
                continue
            for reference in other.references():
                if reference.kind is RefKind.NOTE and identity(resolver.resolve(reference)) == key:
                    links.append(reference)
        return links


def _title_heading(note: Note) -> Heading | None:
    """The note's first level-1 heading, where its title's count is shown."""
    return next((h for h in note.headings if h.level == 1), None)
