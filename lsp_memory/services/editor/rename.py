"""Rename: a note's title, or a claim's, context's, entity's or tag's friendly id, and every
reference to it in the vaults' notes and the open documents.

What a rename does, and when:

- **A friendly id** (``@old_id`` → ``@new_id``). The new id must be a valid id (see
  docs/reference.md, Reference grammar and Interchange format: a letter, then 2 to 59 letters,
  digits, ``_`` or ``-``, read back as exactly one ``@<id>`` token), not ``claim_<N>``
  (numbers name claims), not ``…_domain`` (resolution
  keeps those for domains), and must not already name anything for the user (any kind, a
  context's name included). The store is renamed, in one transaction that logs the change
  for the full-text index, **when the server answers the request**: LSP has no "edit
  applied" callback to wait for, so an editor that then drops the edit leaves the store
  renamed and its ``@old_id`` texts unresolved (renaming back repairs it). Every
  ``@old_id`` token that resolves to the record is rewritten; ``#N``, ``@claim_N``,
  ``@memory:<uuid>`` and a context named by its name still resolve and are left as they
  are. ``#N`` and ``@claim_N`` cannot be renamed: numbers are permanent.
- **A note** (on a ``[[link]]`` to it, or on its title in its own file). The new name is
  its new title, written where the title comes from: the front-matter ``title``, else the
  first ``# `` heading; a note titled by its file name gets a front-matter ``title`` unless
  its file is renamed to the title. Links naming it by title are rewritten, ``#Heading``
  and ``|label`` kept; links by alias are kept (the alias still resolves). The file is
  renamed only when the client can (``documentChanges`` with the ``rename`` resource
  operation) **and** its name follows the old title (``Project Plan`` in
  ``project-plan.md`` or ``Project Plan.md``; not ``alice.md`` titled "Alice Notes"): it
  becomes the new title in the same style, and links by file name or path follow it.
  Otherwise the file keeps its name, so those links still resolve and are left alone.
  Entities' ``note_ref`` fields naming the note follow it the same way, in the store, when
  the server answers; everything else is in the edit.
- **A block id** (on the ``^id`` ending a block in its note, or on the ``^id`` of a
  ``[[Note#^id]]`` link). The new id is letters, digits and hyphens, not another block's
  id in that note; the ``^id`` in the note and every ``[[…#^id]]`` link to that block (embeds
  too) are rewritten.

Files that cannot be written (the read-only generated record pages) are left out of edits.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_memory import ids, refs
from lsp_memory.errors import UserError
from lsp_memory.model import Note, Reference, RefKind
from lsp_memory.notes import link_form
from lsp_memory.notes.parse import BLOCK_ID, front_matter_scalar, loose_key, title_spot
from lsp_memory.notes.walk import NOTE_SUFFIXES
from lsp_memory.refs import reference_at
from lsp_memory.services.editor.references import (
    Document,
    Place,
    ReferenceFinder,
    Target,
    identity,
    link_target_span,
    note_target,
    target_of,
)
from lsp_memory.services.kernel.resolver import Resolver

__all__ = [
    "BadName",
    "CannotRename",
    "Edit",
    "Move",
    "Plan",
    "Renameable",
    "Renamer",
    "note_stem",
    "without_overlaps",
    "writable",
]

_NOT_IN_TITLES = re.compile(r"[\[\]|#/\\\r\n\t\x00-\x1f]")
_UNSAFE_IN_FILE_NAMES = re.compile(r'[<>:"|?*\x00-\x1f]')
_WORDS = re.compile(r"[^\W_]+")
_BLOCK_ID = re.compile(r"[A-Za-z0-9-]+")


class CannotRename(UserError):
    """What is under the cursor cannot be renamed (a claim number, a domain, an unresolved
    reference); the message says why."""


class BadName(UserError):
    """The new name is not acceptable; the message says why. Nothing was changed."""


@dataclass(frozen=True, slots=True)
class Renameable:
    """What a rename at the cursor would rename: the range the editor shows and the name
    it offers to change."""

    place: Place
    placeholder: str
    target: Target
    block: str | None = None  # renaming a block id of ``target.note``: the old id


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace ``place`` with ``new_text``."""

    place: Place
    new_text: str


@dataclass(frozen=True, slots=True)
class Move:
    """Rename a note's file, after the edits."""

    source: Path
    destination: Path


@dataclass(frozen=True, slots=True)
class Plan:
    """A rename: text edits by document, in order, then at most one file move.
    ``store_changed`` says the store was renamed already."""

    edits: tuple[Edit, ...] = ()
    move: Move | None = None
    store_changed: bool = False


class Renamer:
    """Renames for one user over the store and the vaults."""

    def __init__(self, resolver: Resolver) -> None:
        self.resolver = resolver
        self.finder = ReferenceFinder(resolver)

    def prepare(self, document: Document, offset: int) -> Renameable | None:
        """What a rename at ``offset`` would rename; None on plain text (outside a note's
        title). Raises ``CannotRename`` for a reference that cannot be renamed."""
        name = document.uri or (str(document.path) if document.path else None)
        reference = reference_at(document.text, offset, document.language_id, name)
        if reference is None:
            return self._block_at(document, offset) or self._title_at(document, offset)
        if reference.kind is RefKind.UUID:
            raise CannotRename(
                f"{reference.text}: a claim's UUID is permanent; rename its friendly id instead"
            )
        resolution = self.resolver.resolve(reference)
        target = target_of(resolution)
        if target is None:
            raise CannotRename(f"{reference.text}: {resolution.error or 'does not resolve'}")
        if target.note is not None and reference.heading and reference.heading.startswith("^"):
            found = _link_block_span(reference)
            if found[0] <= offset <= found[1]:
                block = resolution.note.block if resolution.note is not None else None
                if block is None:
                    error = resolution.note.error if resolution.note is not None else None
                    raise CannotRename(f"{reference.text}: {error or 'no such block'}")
                return Renameable(Place(document, *found, reference), block.id, target, block.id)
        if target.note is not None:
            start, end = link_target_span(reference)
            return Renameable(Place(document, start, end, reference), target.note.title, target)
        if reference.claim_number is not None:
            raise CannotRename(
                f"{reference.text}: claim numbers are permanent; rename the claim's id "
                f"@{target.friendly_id} instead"
            )
        if target.kind == "domain":
            raise CannotRename(
                f"{reference.text} is a domain, a word on claims, not a record with an id; "
                "it cannot be renamed"
            )
        if reference.target != target.friendly_id:
            raise CannotRename(
                f"{reference.text} names the {target.kind} by its name; rename its id "
                f"@{target.friendly_id} instead"
            )
        place = Place(document, reference.offset + 1, reference.end, reference)
        return Renameable(place, reference.target, target)

    def rename(
        self,
        document: Document,
        offset: int,
        new_name: str,
        documents: Sequence[Document],
        *,
        move_files: bool,
    ) -> Plan | None:
        """Rename what is at ``offset`` to ``new_name`` across the vaults and ``documents``
        (the open ones). None on plain text. Raises ``CannotRename``, ``BadName`` (nothing
        changed) or ``StoreError`` (the store is locked or read-only; nothing changed).
        For a friendly id the store is renamed before this returns."""
        found = self.prepare(document, offset)
        if found is None:
            return None
        target = found.target
        if target.note is not None and found.block is not None:
            return self._rename_block(target.note, found.block, new_name, documents)
        if target.note is not None:
            return self._rename_note(target.note, new_name, documents, move_files=move_files)
        return self._rename_id(target, found.placeholder, new_name, documents)

    # -- friendly ids --------------------------------------------------------------------------

    def _rename_id(
        self, target: Target, old: str, new_name: str, documents: Sequence[Document]
    ) -> Plan:
        new = valid_id(new_name)
        if new == old:
            return Plan()
        taken = self.resolver.resolve(refs.parse(f"@{new}").references[0])
        if taken.resolved and identity(taken) != target.key:
            if taken.id == new:
                raise BadName(f"@{new} is already the id of a {taken.kind}; choose another id")
            raise BadName(f"@{new} already names the {taken.kind} @{taken.id} by its name")
        edits = tuple(
            Edit(Place(p.document, p.start + 1, p.end, p.reference), new)
            for p in self.finder.find(target, documents)
            if p.reference is not None
            and p.reference.kind is RefKind.ID
            and p.reference.target == old
            and writable(p.document)
        )
        # Last: a store that refuses (locked, read-only) leaves nothing half done.
        self.resolver.store.rename(self.resolver.user, target.kind, old, new)
        return Plan(edits, store_changed=True)

    # -- notes ---------------------------------------------------------------------------------

    def _title_at(self, document: Document, offset: int) -> Renameable | None:
        """The note's title when ``offset`` is on it in the note's own file."""
        note = self.finder.note_of(document)
        if note is None:
            return None
        spot = title_spot(document.text)
        if spot.source == "file" or not spot.start <= offset <= spot.end:
            return None
        if not spot.editable:
            raise CannotRename(
                f"{note.path}: the front-matter title is not a one-line value; edit it there"
            )
        place = Place(document, spot.start, spot.end)
        return Renameable(place, spot.title or note.title, note_target(note))

    def _block_at(self, document: Document, offset: int) -> Renameable | None:
        """A block's ``^id`` when ``offset`` is on it in the note's own file."""
        start = document.text.rfind("\n", 0, offset) + 1
        end = document.text.find("\n", offset)
        line = document.text[start : len(document.text) if end < 0 else end].rstrip("\r")
        found = BLOCK_ID.search(line)
        if found is None or not start + found.start() <= offset <= start + found.end(1):
            return None
        note = self.finder.note_of(document)
        if note is None or not any(b.id == found.group(1) for b in note.blocks):
            return None
        place = Place(document, start + found.start(1), start + found.end(1))
        return Renameable(place, found.group(1), note_target(note), found.group(1))

    def _rename_block(
        self, note: Note, old: str, new_name: str, documents: Sequence[Document]
    ) -> Plan:
        new = new_name.strip().removeprefix("^")
        if not _BLOCK_ID.fullmatch(new):
            raise BadName(f"{new_name.strip()!r} is not a block id: letters, digits and hyphens")
        if new == old:
            return Plan()
        if any(b.id == new for b in note.blocks):
            raise BadName(f"^{new} is already a block id in {note.path}; choose another")
        own = self.finder.text_of(note, documents)
        if own is None:
            raise CannotRename(f"{note.path} cannot be read")
        if own not in documents:
            documents = [*documents, own]
        edits: list[Edit] = []
        start = 0
        for line in own.text.splitlines(keepends=True):
            found = BLOCK_ID.search(line.rstrip("\r\n"))
            if found is not None and found.group(1) == old:
                edits.append(Edit(Place(own, start + found.start(1), start + found.end(1)), new))
            start += len(line)
        for place in self.finder.find(note_target(note), documents):
            link = place.reference
            if (
                link is not None
                and link.heading is not None
                and link.heading[1:].strip() == old
                and link.heading.startswith("^")
                and writable(place.document)
            ):
                first, last = _link_block_span(link)
                edits.append(Edit(Place(place.document, first, last, link), new))
        return Plan(without_overlaps(edits))

    def _rename_note(
        self, note: Note, new_name: str, documents: Sequence[Document], *, move_files: bool
    ) -> Plan:
        title = valid_title(new_name)
        if title == note.title:
            return Plan()
        self._check_free(note, title)
        own = self.finder.text_of(note, documents)
        if own is None:
            raise CannotRename(f"{note.path} cannot be read")
        if own not in documents:
            documents = [*documents, own]  # searched as it was read, not read again
        spot = title_spot(own.text)
        if spot.source == "front-matter" and not spot.editable:
            raise CannotRename(
                f"{note.path}: the front-matter title is not a one-line value; edit it there"
            )
        move = self._move(note, title) if move_files else None
        edits: list[Edit] = []
        if spot.source == "front-matter":
            edits.append(Edit(Place(own, spot.start, spot.end), front_matter_scalar(title)))
        elif spot.source == "heading":
            edits.append(Edit(Place(own, spot.start, spot.end), title))
        elif move is None or note_stem(move.destination.name) != title:
            edits.append(_front_matter_title(own, spot.front_matter, spot.broken, title, note))
        for place in self.finder.find(note_target(note), documents):
            link = place.reference
            if link is None or not writable(place.document):
                continue
            form = link_form(note, link.target)
            if form == "title":
                written = title
            elif form in ("path", "name") and move is not None:
                written = _moved(link.target, form, move.destination.name)
            else:
                continue  # by alias, or by a file name that does not change: still resolves
            start, end = link_target_span(link)
            edits.append(Edit(Place(place.document, start, end, link), written))
        fields = self._note_fields(note, title, move)
        if fields:
            # Last: a store that refuses (locked, read-only) leaves nothing half done.
            self.resolver.store.set_entity_fields(self.resolver.user, fields)
        return Plan(without_overlaps(edits), move, store_changed=bool(fields))

    def _note_fields(self, note: Note, title: str, move: Move | None) -> dict[str, dict[str, Any]]:
        """The entities' ``note_ref`` fields naming the note, rewritten as its links are:
        friendly id → field → new value."""
        store, user = self.resolver.store, self.resolver.user
        kinds = {t.name: {f.name: f.type for f in t.fields} for t in store.entity_types(user)}
        updates: dict[str, dict[str, Any]] = {}
        for entity in store.entities(user):
            declared = kinds.get(entity.type, {})
            for field, value in entity.fields.items():
                if declared.get(field) != "note_ref" or not isinstance(value, str):
                    continue
                written = value.strip().removeprefix("[[").removesuffix("]]")
                name = written.split("|", 1)[0].split("#", 1)[0].strip()
                if not name or not self._names(name, note):
                    continue
                form = link_form(note, name)
                if form == "title":
                    new = title
                elif form in ("path", "name") and move is not None:
                    new = _moved(name, form, move.destination.name)
                else:
                    continue
                start = value.index(name)
                new_value = value[:start] + new + value[start + len(name) :]
                updates.setdefault(entity.friendly_id, {})[field] = new_value
        return updates

    def _names(self, target: str, note: Note) -> bool:
        """Whether the link target ``target`` resolves to ``note`` (the first vault that
        has it wins, as for links)."""
        for vault in self.resolver.vaults:
            found = vault.resolve(target).note
            if found is not None:
                return found.key == note.key
        return False

    def _check_free(self, note: Note, title: str) -> None:
        """Raise ``BadName`` when ``[[title]]`` already names another note."""
        for vault in self.resolver.vaults:
            other = vault.resolve(title).note
            if other is not None and other.key != note.key:
                raise BadName(f"[[{title}]] already names the note {other.path}")

    def _move(self, note: Note, title: str) -> Move | None:
        """The file rename that keeps the file name following the title, if it follows it."""
        folder, _, name = note.path.rpartition("/")
        new_name = follow_name(name, note.title, title)
        if new_name is None or new_name == name:
            return None
        if new_name.startswith("."):
            raise BadName(f"the file would be named {new_name}, a hidden file the vault skips")
        source = Path(note.vault) / note.path
        destination = source.with_name(new_name)
        if destination.exists() and not _same_file(source, destination):
            shown = f"{folder}/{new_name}" if folder else new_name
            raise BadName(f"cannot rename the file of {note.path}: {shown} already exists")
        for vault in self.resolver.vaults:
            other = vault.resolve(note_stem(new_name)).note
            if other is not None and other.key != note.key:
                raise BadName(f"[[{note_stem(new_name)}]] already names the note {other.path}")
        return Move(source, destination)


def _link_block_span(link: Reference) -> tuple[int, int]:
    """The string offsets of the id in a ``[[Target#^id]]`` token (without the ``^``)."""
    assert link.heading is not None
    block_id = link.heading[1:].strip()
    at = link.text.index("^", link.text.index("#", 2)) + 1
    at = link.text.index(block_id, at) if block_id else at
    return link.offset + at, link.offset + at + len(block_id)


def valid_id(new_name: str) -> str:
    """``new_name`` (a leading ``@`` and surrounding white space dropped) when it can be a
    friendly id; else ``BadName`` saying why."""
    new = new_name.strip().removeprefix("@")
    rule = "an id is 3 to 60 letters, digits, _ or -, starting with a letter"
    if not ids.FRIENDLY_ID.fullmatch(new) or len(new) > ids.MAX_FRIENDLY_ID:
        raise BadName(f"{new_name.strip()!r} is not a valid id: {rule}")
    found = refs.parse(f"@{new}").references
    if len(found) != 1 or found[0].kind is not RefKind.ID or found[0].text != f"@{new}":
        raise BadName(f"@{new} would not be read as one reference (it cannot end in '-')")
    if found[0].claim_number is not None:
        raise BadName(f"@{new} names claim {found[0].claim_number} by its number")
    if new.endswith("_domain"):
        raise BadName(f"@{new}: ids ending in _domain name domains")
    return new


def valid_title(new_name: str) -> str:
    """``new_name`` stripped when it can be a note title that ``[[...]]`` links to; else
    ``BadName``."""
    title = new_name.strip()
    if not title:
        raise BadName("a note title cannot be empty")
    bad = _NOT_IN_TITLES.search(title)
    if bad is not None:
        raise BadName(
            f"{title!r}: a note title cannot hold {bad.group()!r} "
            "([[links]] would not reach it; / names a path)"
        )
    if not title.strip("."):
        raise BadName(f"{title!r}: a note title cannot be only dots ([[..]] never resolves)")
    return title


def follow_name(name: str, old_title: str, new_title: str) -> str | None:
    """The file name that follows ``new_title`` as ``name`` followed ``old_title``, or None
    when it did not follow it. ``Project Plan.md`` → ``New Title.md``; ``project-plan.md``
    → ``new-title.md``; ``project_plan.md`` → ``new_title.md``."""
    stem = note_stem(name)
    suffix = name[len(stem) :]
    if stem == old_title:
        new_stem = _UNSAFE_IN_FILE_NAMES.sub("-", new_title)
    elif loose_key(stem) and loose_key(stem) == loose_key(old_title):
        if stem == stem.lower():
            separator = "_" if "_" in stem and "-" not in stem else "-"
            new_stem = separator.join(_WORDS.findall(new_title.lower()))
        else:
            new_stem = _UNSAFE_IN_FILE_NAMES.sub("-", new_title)
    else:
        return None
    new_stem = new_stem.strip(" .")
    return f"{new_stem}{suffix}" if new_stem else None


def _front_matter_title(
    own: Document, insert: int | None, broken: bool, title: str, note: Note
) -> Edit:
    """The edit giving a note titled by its file name a front-matter ``title``."""
    if broken:
        raise CannotRename(f"{note.path}: its front matter cannot be read; fix it first")
    text = own.text
    newline = "\r\n" if "\r\n" in text else "\n"
    line = f"title: {front_matter_scalar(title)}{newline}"
    if insert is not None:
        return Edit(Place(own, insert, insert), line)
    return Edit(Place(own, 0, 0), f"---{newline}{line}---{newline}")


def _moved(written: str, form: str, new_name: str) -> str:
    """A link target by path or file name, made to name the renamed file: with or without
    the extension as it was written, in the same folder as written."""
    leaf = new_name if written.lower().endswith(NOTE_SUFFIXES) else note_stem(new_name)
    if form == "path":
        cut = max(written.rfind("/"), written.rfind("\\"))
        return written[: cut + 1] + leaf
    return leaf


def note_stem(name: str) -> str:
    """``name`` without its ``.md``/``.markdown`` ending (any case), if it has one."""
    lowered = name.lower()
    for suffix in NOTE_SUFFIXES:
        if lowered.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths are one file (a change of case on a case-insensitive disk)."""
    try:
        return a.samefile(b)
    except OSError:
        return False


def writable(document: Document) -> bool:
    """Whether an edit can go to ``document``: an unsaved buffer, or a file that may be
    written (the generated record pages are read-only)."""
    path = document.path
    if path is None:
        return True
    try:
        mode = path.stat().st_mode
    except OSError:
        return True  # not saved yet
    # The mode too: os.access says yes to root for any file.
    return bool(mode & 0o222) and os.access(path, os.W_OK)


def without_overlaps(edits: list[Edit]) -> tuple[Edit, ...]:
    """The edits by document and position, any that overlaps the one before it in the same
    document left out (a link inside the title heading goes with the title's edit)."""

    def key(edit: Edit) -> tuple[str, int, int]:
        document = edit.place.document
        return document.uri or str(document.path), edit.place.start, -edit.place.end

    kept: list[Edit] = []
    for edit in sorted(edits, key=key):
        last = kept[-1].place if kept else None
        place = edit.place
        if last is not None and last.document is place.document and place.start < last.end:
            continue
        kept.append(edit)
    return tuple(kept)
