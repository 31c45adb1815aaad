"""The notes a document links: reading a note's text, its Markdown without front matter (or
one heading's section, or one block), its summary and its handle; the note pieces, and the
steps that pin the linked notes and list them under Referenced documents.

An embed (``![[Note]]``, ``![[Note#Heading]]``, ``![[Note#^id]]``) inside a pinned note's text
is replaced by the part it embeds (:func:`with_embeds`), as a reader of the note sees it,
before the note is cut to its limit: embedded text counts against the note's share of the
budget like the rest of it."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lsp_memory import refs
from lsp_memory.model import Block, Heading, Note, Reference, RefKind, doc_id
from lsp_memory.notes.parts import embedded_part, read_text
from lsp_memory.services.block.pieces import (
    DOCUMENTS,
    P_DOCUMENT,
    P_PINNED_NOTE,
    P_REFERENCED,
    PINNED_NOTES,
    Build,
    Piece,
    fold,
    note_text,
)
from lsp_memory.services.kernel.resolver import Resolution
from lsp_memory.text import cut

NOT_FOUND_DOCUMENT = "Warning - Document not found"
ATTACHED_FILE = "an attached file (not a note), not included"

MAX_PINNED_NOTES = 5
PINNED_NOTE_CHARS = 4000
SUMMARY_CHARS = 200
_SUMMARY_CACHE_SIZE = 10_000

MAX_EMBED_DEPTH = 3
"""Embeds inside embedded parts are followed this deep (and never back into a note that
embeds them)."""

_SENTENCE = re.compile(r".+?[.!?](?=\s|$)", re.DOTALL)


# -- a note's text --------------------------------------------------------------------------


read_note = read_text
"""A note's text as its file holds it now (the parsed body when it cannot be read)."""


_SUMMARIES: dict[str, str] = {}


def summary(note: Note) -> str:
    """A note's first paragraph that is not a heading when it is short, else its first
    sentence, at most :data:`SUMMARY_CHARS` characters; cached by content hash."""
    found = _SUMMARIES.get(note.content_hash)
    if found is not None:
        return found
    headings = {fold(h.text) for h in note.headings} | {fold(note.title)}
    text = ""
    for paragraph in note.body.split("\n\n"):
        lines = [fold(line) for line in paragraph.splitlines()]
        while lines and (not lines[0] or lines[0] in headings):
            lines.pop(0)
        if lines:
            text = " ".join(line for line in lines if line)
            break
    if len(text) > SUMMARY_CHARS:
        sentence = _SENTENCE.match(text)
        text = cut(sentence.group() if sentence else text, SUMMARY_CHARS)
    if len(_SUMMARIES) >= _SUMMARY_CACHE_SIZE:
        _SUMMARIES.clear()
    _SUMMARIES[note.content_hash] = text
    return text


def with_embeds(
    text: str,
    note: Note,
    resolve: Callable[[Reference], Resolution],
    read: Callable[[Note], str],
    seen: frozenset[str] = frozenset(),
) -> str:
    """``text`` (Markdown of ``note``) with each embed of a note replaced by the part it
    embeds, itself with its embeds, :data:`MAX_EMBED_DEPTH` deep; an embed of a file, of
    nothing, or back into a note already being embedded is left as written."""
    seen = seen | {note.key}
    if "![[" not in text or len(seen) > MAX_EMBED_DEPTH:
        return text
    pieces: list[str] = []
    start = 0
    for reference in refs.parse(text, markdown=True).references:
        if not reference.embed:
            continue
        found = resolve(reference)
        target = found.note
        if found.error is not None or target is None or target.note is None:
            continue
        if target.note.key in seen:
            continue
        part = embedded_part(read(target.note), target.heading, target.block)
        pieces += [
            text[start : reference.offset - 1],
            with_embeds(part, target.note, resolve, read, seen),
        ]
        start = reference.end
    return "".join(pieces) + text[start:] if pieces else text


def note_handle(note: Note, heading: Heading | None = None, block: Block | None = None) -> str:
    """``[[Title]] [id:path]``, with ``#Heading`` (or ``#^id``) and ``(archived)`` when they
    apply."""
    section = f"#{heading.text}" if heading is not None else ""
    section = f"#^{block.id}" if block is not None else section
    archived = " (archived)" if note.archived else ""
    return f"[[{note.title}{section}]] [id:{note.path}]{archived}"


# -- note pieces ----------------------------------------------------------------------------


def note_piece(
    read: Callable[[Note], str],
    section: str,
    priority: int,
    note: Note,
    *,
    heading: Heading | None,
    limit: int,
    key: str,
    requires: str | None = None,
    extra: Mapping[str, Any] | None = None,
    block: Block | None = None,
    resolve: Callable[[Reference], Resolution] | None = None,
) -> Piece:
    """``note`` (or its ``heading``'s section, or its ``block``), its text given by
    ``read``, as a piece of ``section`` whose body is cut to ``limit`` characters; with
    ``resolve``, its embeds replaced by what they embed (:func:`with_embeds`)."""
    full = embedded_part(read(note), heading, block)
    if resolve is not None:
        full = with_embeds(full, note, resolve, read)
    body = cut(full, limit)
    head = f"### {note_handle(note, heading, block)}\n"
    tail = "---\n"
    data = {
        "kind": "note",
        "title": note.title,
        "path": note.path,
        "heading": heading.text if heading is not None else None,
        "block": block.id if block is not None else None,
        "archived": note.archived,
        "chars": len(body),
        "truncated": body != full,
        **(extra or {}),
    }
    return Piece(
        section,
        priority,
        "note",
        key,
        note_text(head, body, tail),
        data,
        requires=requires,
        head=head,
        body=body,
        tail=tail,
    )


def pin_notes(
    build: Build,
    resolutions: Sequence[Resolution],
    read: Callable[[Note], str],
    resolve: Callable[[Reference], Resolution] | None = None,
) -> set[str]:
    """Pin the first 5 linked (or embedded) notes — a link's heading section or block
    alone, unless the whole note is linked too — with ``resolve``, their embeds replaced by
    what they embed; return the keys of the notes pinned."""
    found: dict[str, tuple[Note, Heading | None, Block | None]] = {}
    for resolution in resolutions:
        target = resolution.note
        if resolution.error is not None or target is None or target.note is None:
            continue
        note = target.note
        whole = target.heading is None and target.block is None
        if note.key in found:
            if whole:
                found[note.key] = (found[note.key][0], None, None)
            continue
        found[note.key] = (note, target.heading, target.block)
    pinned: set[str] = set()
    for rank, (key, (note, heading, block)) in enumerate(found.items()):
        piece = note_piece(
            read,
            PINNED_NOTES,
            P_PINNED_NOTE,
            note,
            heading=heading,
            block=block,
            limit=PINNED_NOTE_CHARS,
            key=doc_id("note", key),
            resolve=resolve,
        )
        if rank >= MAX_PINNED_NOTES:
            build.limited.append(piece)
            build.warn(f"[[{note.title}]]: not pinned; at most {MAX_PINNED_NOTES} notes are")
            continue
        pinned.add(key)
        build.add(piece)
    return pinned


# -- referenced documents -------------------------------------------------------------------


def add_documents(build: Build, resolutions: Sequence[Resolution]) -> None:
    """One line per linked note (each once, pinned ones too), in order of first appearance."""
    seen: set[str] = set()
    for resolution in resolutions:
        reference = resolution.reference
        if reference is None or reference.kind is not RefKind.NOTE:
            continue
        target = resolution.note
        note = target.note if target is not None and resolution.error is None else None
        attached = target.file if target is not None and resolution.error is None else None
        data: dict[str, Any]
        if attached is not None:  # an image, a PDF: there, but not text to include
            key = f"file:{attached}"
            line = f"- [[{reference.target}]] ({resolution.id}): {ATTACHED_FILE}\n"
            data = {
                "kind": "document",
                "ref": reference.text,
                "title": None,
                "path": resolution.id,
                "found": True,
                "summary": ATTACHED_FILE,
            }
        elif note is None:
            key = f"missing:{reference.target.casefold()}"
            handle = f"[[{reference.target}]]"
            line = f"- {handle}: {NOT_FOUND_DOCUMENT}\n"
            data = {
                "kind": "document",
                "ref": reference.text,
                "title": None,
                "path": None,
                "found": False,
                "summary": NOT_FOUND_DOCUMENT,
            }
        else:
            key = f"document:{note.key}"
            heading = target.heading if target is not None else None
            section = f"#{heading.text}" if heading is not None else ""
            archived = " (archived)" if note.archived else ""
            about = summary(note)
            line = f"- [[{note.title}{section}]] ({note.path}){archived}"
            line += f": {about}\n" if about else "\n"
            data = {
                "kind": "document",
                "ref": reference.text,
                "title": note.title,
                "path": note.path,
                "archived": note.archived,
                "found": True,
                "summary": about,
            }
        if key in seen:
            continue
        seen.add(key)
        # A link to nothing is kept as long as a referenced claim is: the LLM must know.
        priority = P_DOCUMENT if note is not None or attached is not None else P_REFERENCED
        build.add(Piece(DOCUMENTS, priority, "document", key, line, data))
