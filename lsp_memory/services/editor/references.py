"""Find references: every place in the vaults' notes and the open documents that names the
same claim, context, entity, tag, domain or note as a given reference, whatever form each
place writes it in (``@friendly_id``, ``#42``, ``@claim_42`` and ``@memory:<uuid>`` name one
claim; ``[[Title]]``, ``[[alias]]``, ``[[path/file]]``, ``[[file#Heading|label]]`` one note).

Places are compared by what they resolve to (docs/reference.md, Resolution), never by
their text. An open document's text wins over its file on disk. Results are string offsets
into the texts they carry; the LSP layer turns them into client positions.

Staying fast on a large vault: a record can only be named by a few token texts (its friendly
id, its number, its UUID, a context's name key), so tokens are filtered by text first and
only the candidates are resolved, each distinct token once per request; every distinct
``[[link]]`` target is resolved once (a few dictionary lookups). A note file is read only
when its indexed tokens (``Note.links``, ``Note.mentions``) hold a candidate, and then parsed
afresh, so ranges match the file as it is now.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lsp_memory import refs
from lsp_memory.ids import name_key
from lsp_memory.model import Note, Reference, RefKind, doc_id
from lsp_memory.notes.parse import decode, title_spot
from lsp_memory.refs import reference_at
from lsp_memory.services.kernel.resolver import Resolution, Resolver

__all__ = [
    "Document",
    "Place",
    "ReferenceFinder",
    "Target",
    "identity",
    "link_target_span",
    "note_target",
    "read_note",
    "target_of",
]


@dataclass(frozen=True, slots=True, eq=False)
class Document:
    """A text to search: an open editor buffer (``uri`` set) or a note file as it is on
    disk (``uri`` None). Compared by identity: one object per document and request."""

    uri: str | None
    path: Path | None  # the file, when there is one
    text: str
    language_id: str | None = None

    def references(self) -> tuple[Reference, ...]:
        """Its reference tokens, as Markdown when it is Markdown (docs/reference.md, Reference
        grammar)."""
        return refs.parse_document(self.text, self.language_id, _name(self)).references


@dataclass(frozen=True, slots=True)
class Place:
    """A range of a document as string offsets, and the reference token there, if any."""

    document: Document
    start: int
    end: int
    reference: Reference | None = None


@dataclass(frozen=True, slots=True)
class Target:
    """The record or note whose references are wanted, with what a token's text must be to
    possibly name it (checked before anything is resolved)."""

    kind: str  # claim, context, entity, tag, domain, note
    key: str  # "claim:<uuid>", "context:<uuid>", "entity:<uuid>", "tag:<id>", "domain:<d>",
    # "note:<vault>::<path>"
    friendly_id: str | None = None  # what @<id> names it by (a domain: "<d>_domain")
    number: int | None = None  # a claim's number
    uuid: str | None = None  # a claim's UUID
    # A context's name as resolution compares it (docs/reference.md, Resolution).
    name_key: str | None = None
    note: Note | None = None

    def could_name(self, reference: Reference) -> bool:
        """Whether ``reference`` may resolve to this target; only such tokens are resolved."""
        if reference.kind is RefKind.NOTE or self.kind == "note":
            return reference.kind is RefKind.NOTE and self.kind == "note"
        if reference.kind is RefKind.UUID:
            return reference.target == self.uuid
        number = reference.claim_number
        if number is not None:
            return number == self.number
        if reference.target == self.friendly_id:
            return True
        return self.name_key is not None and name_key(reference.target) == self.name_key


def link_target_span(link: Reference) -> tuple[int, int]:
    """The string offsets of the target of a ``[[Target#Heading|Label]]`` token, without
    brackets, heading, label or the white space around it."""
    # The target is the written one stripped: its first occurrence after "[[" is it.
    start = link.offset + link.text.index(link.target, 2)
    return start, start + len(link.target)


class ReferenceFinder:
    """Finds the places naming a target, for one user over the store and the vaults."""

    def __init__(self, resolver: Resolver) -> None:
        self.resolver = resolver

    # -- what the cursor is on ---------------------------------------------------------------

    def target_at(self, document: Document, offset: int) -> tuple[Target, Reference | None] | None:
        """The target at ``offset`` of ``document`` and the reference there: the record or
        note a reference names; off any reference in a vault note, the note itself. None on
        plain text elsewhere, and for a reference that does not resolve."""
        reference = reference_at(document.text, offset, document.language_id, _name(document))
        if reference is None:
            note = self.note_of(document)
            return None if note is None else (note_target(note), None)
        target = target_of(self.resolver.resolve(reference))
        return None if target is None else (target, reference)

    def note_of(self, document: Document) -> Note | None:
        """The vault note ``document`` is the file of, if any."""
        if document.path is None:
            return None
        for vault in self.resolver.vaults:
            note = vault.note_at(document.path)
            if note is not None:
                return note
        return None

    # -- where it is named ---------------------------------------------------------------------

    def find(
        self, target: Target, documents: Sequence[Document], *, notes: bool = True
    ) -> list[Place]:
        """Every token in ``documents`` (open buffers) and, with ``notes``, in the vaults'
        notes (from disk, unless open) that resolves to ``target``, by document then
        position."""
        resolved: dict[tuple[RefKind, str], str | None] = {}
        mentioned: dict[str, bool] = {}

        def names(reference: Reference) -> bool:
            if not target.could_name(reference):
                return False
            key = (reference.kind, reference.target)
            if key not in resolved:
                resolved[key] = identity(self.resolver.resolve(reference))
            return resolved[key] == target.key

        def may_name(note: Note) -> bool:
            if target.kind == "note":
                return any(names(link) for link in note.links)
            for text in note.mentions:
                if text not in mentioned:
                    # A token's text parses back to that token alone.
                    token = refs.parse(text).references
                    mentioned[text] = len(token) == 1 and names(token[0])
                if mentioned[text]:
                    return True
            return False

        return self._scan(names, may_name if notes else None, documents)

    def links_to(self, targets: Collection[str], documents: Sequence[Document]) -> list[Place]:
        """Every ``[[link]]`` token whose target is one of ``targets`` (as written, white
        space around it dropped), in ``documents`` (open buffers) and the vaults' notes (from
        disk, unless open), by document then position. A file is read only when its indexed
        links hold one."""

        def names(reference: Reference) -> bool:
            return reference.kind is RefKind.NOTE and reference.target in targets

        return self._scan(names, lambda note: any(names(link) for link in note.links), documents)

    def _scan(
        self,
        names: Callable[[Reference], bool],
        may_name: Callable[[Note], bool] | None,
        documents: Sequence[Document],
    ) -> list[Place]:
        """The tokens ``names`` accepts in ``documents``, then (with ``may_name``) in the
        notes it says may hold one, each read from disk unless open."""
        places: list[Place] = []
        for document in documents:
            places += _places(document, document.references(), names)
        if may_name is None:
            return places
        opened = {os.path.realpath(d.path) for d in documents if d.path is not None}
        for note in self._notes():
            if not may_name(note):
                continue
            path = Path(note.vault) / note.path
            if os.path.realpath(path) in opened:
                continue
            read = read_note(path)
            if read is not None:
                places += _places(read, read.references(), names)
        return places

    def declaration(self, target: Target, documents: Sequence[Document]) -> Place | None:
        """Where a note's title is given: its front-matter ``title`` value, its title
        heading, or the top of its file when the title is its file name. None for records:
        they are declared in the store, not in any document."""
        note = target.note
        if note is None:
            return None
        document = self.text_of(note, documents)
        if document is None:
            return None
        spot = title_spot(document.text)
        return Place(document, spot.start, spot.end)

    def text_of(self, note: Note, documents: Sequence[Document]) -> Document | None:
        """The note's text: its open buffer in ``documents`` if any, else its file."""
        path = Path(note.vault) / note.path
        real = os.path.realpath(path)
        for document in documents:
            if document.path is not None and os.path.realpath(document.path) == real:
                return document
        return read_note(path)

    def _notes(self) -> Iterable[Note]:
        for vault in self.resolver.vaults:
            notes = vault.notes  # one snapshot: the indexing thread publishes new ones
            for path in sorted(notes):
                yield notes[path]


def target_of(resolution: Resolution) -> Target | None:
    """The target a resolved reference names; None when it does not resolve."""
    key = identity(resolution)
    if key is None:
        return None
    if resolution.note is not None and resolution.note.note is not None:
        return note_target(resolution.note.note)
    if resolution.kind == "claim":
        claim = resolution.claims[0]
        return Target("claim", key, claim.friendly_id, claim.number, claim.claim_id)
    if resolution.context is not None:
        context = resolution.context
        return Target("context", key, context.friendly_id, name_key=name_key(context.name))
    if resolution.kind == "domain":
        return Target("domain", key, f"{resolution.id}_domain")
    return Target(resolution.kind or "", key, resolution.id)


def note_target(note: Note) -> Target:
    return Target("note", doc_id("note", note.key), note=note)


def identity(resolution: Resolution) -> str | None:
    """What a resolution names, as a key equal for every form of reference to it."""
    if not resolution.resolved:
        return None
    if resolution.kind == "note":
        found = resolution.note.note if resolution.note is not None else None
        return None if found is None else doc_id("note", found.key)
    if resolution.kind == "claim" and resolution.claims:
        return doc_id("claim", resolution.claims[0].claim_id)
    if resolution.context is not None:
        return doc_id("context", resolution.context.context_id)
    if resolution.entity is not None:
        return doc_id("entity", resolution.entity.entity_id)
    if resolution.tag is not None:
        return doc_id("tag", resolution.tag.friendly_id)
    if resolution.kind == "domain":
        return doc_id("domain", resolution.id or "")
    return None


def read_note(path: Path) -> Document | None:
    """A note file as a document, or None when it cannot be read now."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return Document(None, path, decode(data), "markdown")


def _places(
    document: Document, tokens: Iterable[Reference], names: Callable[[Reference], bool]
) -> list[Place]:
    return [Place(document, t.offset, t.end, t) for t in tokens if names(t)]


def _name(document: Document) -> str | None:
    return document.uri or _str(document.path)


def _str(path: Path | None) -> str | None:
    return None if path is None else str(path)
