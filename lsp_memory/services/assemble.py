"""The context assembler (SPEC §6): a document's references plus automatically retrieved
memories → a token-budgeted Markdown block for an LLM, and the same as JSON.

``Assembler.build`` is the one entry point: ``lsp-memory build-context`` and the language
server's ``lspMemory.buildContext`` both call it. It reads the store, the vaults and the
search indexes and writes nothing; keeping the indexes current is the caller's job.

What goes in, in output order (each section left out when empty):

1. **User memory.** Claims the document references (``@id``, ``#N``, ``@claim_N``,
   ``@memory:uuid``; contexts expanded with their descendants, tags, domains, and the claims
   linked to a referenced entity), verbatim, in document order of their references, each
   claim once under the first reference that reached it. Then ``--attach`` claims, global pins
   (live claims with ``pinned``, newest first), ``--pin`` claims and automatic memories. A
   claim appears once, under the highest label: REFERENCED > ATTACHED > GLOBAL PINNED >
   CONV PINNED > AUTO.
2. **Notes pinned by user**: the document's ``[[links]]`` that resolve, at most 5, in order of
   first appearance; each note once. The body is the note's Markdown text without its front
   matter (an LLM reads Markdown well, and headings and lists carry meaning that the plain
   search text of ``Note.body`` loses), read from the file, or from the caller's ``note_text``
   (the language server's unsaved buffers). ``[[Note#Heading]]`` pins that heading's section
   (down to the next heading of the same or a higher level) unless the document also links
   the whole note. Bodies over 4,000 characters are cut with ``…``.
3. **Entity context**: breadth-first from the entities the document references, through
   ``entity_ref`` and ``entity_ref_list`` fields, to depth 2; depth 2 shows name and type only.
   Each entity once (so cycles end). ``computed`` and empty fields are skipped; a trashed
   entity is shown as ``(deleted)`` with no fields and is not followed; a reference to an
   entity that does not exist shows ``(not found)``; a note field shows the note's title and
   path, ``(archived)`` or ``(not found)``.
4. **Notes linked via entity fields**: notes named by ``note_ref`` fields of the entities
   whose fields are shown, at most 3, bodies at most 2,000 characters, never a pinned note.
5. **Referenced documents**: one line per linked note (each note once, in order of first
   appearance, pinned ones too): its path and a summary (the first paragraph that is not a
   heading when it is at most 200 characters, else its first sentence, cut at 200), cached by
   content hash; ``Warning - Document not found`` for a link that resolves to nothing.

Automatic memories come from the tiers in the configuration (core, active, semantic,
recent); only live claims (``active``, ``contested``) of confidence 0.5 or more, none already
shown under another label. They are ranked by ``0.6·similarity + 0.3·confidence +
0.1·recency`` (similarity: cosine between the claim's stored embedding and the query's; with
no embeddings, the semantic hits' BM25 over the best BM25, others 0), ties by claim number;
a claim whose embedding is closer than cosine 0.8 to a live claim already shown (any label),
or whose statement is the same text, is left out (a referenced superseded claim does not hide
its live successor).

Determinism: the same document and store give the same block, byte for byte. So "now" is
not the wall clock but the newest ``updated_at`` among the user's claims: recency is measured
from it and the active tier's window (14 days) ends at it. An unchanged store then gives the
same block tomorrow, and a store left alone for a month still has an "active" tier. Every
ordering breaks ties by claim number (or document order).

Budget: tokens of o200k_base over the whole Markdown block. Items are taken in the filling
priority of SPEC §6: referenced claims (always, even over budget: then ``over_budget`` and a
warning), pinned notes, directly mentioned entities, attached and pinned claims, deeper
entities, entity-linked notes, automatic memories, referenced-documents lines. An item that
does not fit is dropped (listed in ``dropped``), except a note, whose body is first cut to
what fits (when at least 24 tokens of it do); a later, smaller item may still fit after a
larger one was dropped, and an entity-linked note goes with its entity. Pieces are counted
once each; the assembled block is then counted whole and, while it is over (token merges
across piece boundaries), the last item taken is cut or dropped.

Decisions where SPEC §6 is silent: a referenced claim that is not live (a direct reference
to a retracted, superseded, merged or deprecated claim) is shown, because the user asked for
it, with its status after its type (``[fact] [superseded]``) and a warning; ``--attach`` and
``--pin`` take references that name claims (a claim, context, tag, domain or entity) and
refuse notes; more than 5 linked notes: the rest are listed in ``dropped`` (reason
``limit``) and in ``warnings``. A statement over several lines keeps its lines, continued
with two spaces of indent, so a Markdown list item holds it and :func:`referenced_lines`
gives it back whole.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from lsp_memory import refs
from lsp_memory.config import Tiers
from lsp_memory.errors import UnresolvedReference
from lsp_memory.model import (
    LIVE_STATUSES,
    Claim,
    Entity,
    EntityType,
    Heading,
    Note,
    RefKind,
)
from lsp_memory.notes.parse import decode
from lsp_memory.services import lineage
from lsp_memory.services.resolver import Resolution, Resolver, parse_argument
from lsp_memory.services.search import DUPLICATE_COSINE, HybridSearch, recency
from lsp_memory.services.tokens import TokenCounter, o200k
from lsp_memory.store.sqlite import Store
from lsp_memory.text import ELLIPSIS, cut

__all__ = [
    "Assembler",
    "ContextBlock",
    "Filled",
    "Piece",
    "claim_line",
    "cut_piece",
    "fill",
    "note_markdown",
    "referenced_lines",
    "referenced_only",
    "render",
    "summary",
]

# -- the format of SPEC §6 ------------------------------------------------------------------

MEMORY = "User memory"
PINNED_NOTES = "Notes pinned by user"
ENTITIES = "Entity context"
ENTITY_NOTES = "Notes linked via entity fields"
DOCUMENTS = "Referenced documents"
SECTIONS = (MEMORY, PINNED_NOTES, ENTITIES, ENTITY_NOTES, DOCUMENTS)

REFERENCED_HEAD = "**User's explicitly referenced memories (ground truth):**\n"
OTHER_HEAD = "**Other relevant memories:**\n"
_HEADERS: Mapping[str, str] = {
    MEMORY: "## User memory\n",
    PINNED_NOTES: (
        "## Notes pinned by user\n"
        "The user has explicitly attached the following notes to this conversation.\n"
        "Treat them as primary source material.\n"
    ),
    ENTITIES: (
        "## Entity context\n"
        "Entities mentioned or referenced in this conversation.\n"
        "Use [id:...] when assigning tasks or referencing entities.\n"
    ),
    ENTITY_NOTES: (
        "## Notes linked via entity fields\n"
        "These notes were attached because they appear in entity field values.\n"
    ),
    DOCUMENTS: "## Referenced documents\n",
}
_BLOCK_SECTIONS = frozenset({PINNED_NOTES, ENTITIES, ENTITY_NOTES})  # items apart by a blank

NOT_FOUND_DOCUMENT = "Warning - Document not found"
NOT_EXPANDED = "(further references not expanded)"

# -- limits ---------------------------------------------------------------------------------

MAX_PINNED_NOTES = 5
PINNED_NOTE_CHARS = 4000
MAX_ENTITY_NOTES = 3
ENTITY_NOTE_CHARS = 2000
MAX_ENTITY_DEPTH = 2
MIN_CONFIDENCE = 0.5
"""Automatic memories below this confidence are left out (the passive mode)."""
WEIGHTS = (0.6, 0.3, 0.1)
"""Similarity, confidence and recency in an automatic memory's rank."""
MIN_NOTE_TOKENS = 24
"""A note cut to fit keeps at least this many tokens of its body, or is dropped."""
SUMMARY_CHARS = 200
_SUMMARY_CACHE_SIZE = 10_000

# Filling priorities (SPEC §6), lowest first.
P_REFERENCED = 1
P_PINNED_NOTE = 2
P_ENTITY = 3
P_LABELLED = 4  # attached, global pinned, conversation pinned
P_DEEP_ENTITY = 5
P_ENTITY_NOTE = 6
P_AUTO = 7
P_DOCUMENT = 8

_LIVE = tuple(status.value for status in LIVE_STATUSES)


# -- results --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Section:
    """One section of a block: its name (the Markdown heading) and its items as JSON."""

    name: str
    items: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True)
class ContextBlock:
    """A built context block; :meth:`to_json` is SPEC §6's JSON."""

    budget: int
    tokens: int
    tokenizer: str
    over_budget: bool
    sections: tuple[Section, ...]
    dropped: tuple[Mapping[str, Any], ...]
    warnings: tuple[str, ...]
    markdown: str

    def to_json(self) -> dict[str, Any]:
        return {
            "budget": self.budget,
            "tokens": self.tokens,
            "tokenizer": self.tokenizer,
            "over_budget": self.over_budget,
            "sections": [
                {"name": section.name, "items": [dict(item) for item in section.items]}
                for section in self.sections
            ],
            "dropped": [dict(item) for item in self.dropped],
            "warnings": list(self.warnings),
            "markdown": self.markdown,
        }


# -- pieces: candidate items and how they render --------------------------------------------


@dataclass(frozen=True, slots=True)
class Piece:
    """A candidate item: its Markdown (``text``, ending in a newline), where it goes and how
    much it matters. A note's ``text`` is ``head`` + body + ``tail``; its body may be cut."""

    section: str
    priority: int  # filling priority: lower first
    kind: str  # claim, note, entity, document
    key: str  # unique among the pieces: what ``requires`` names
    text: str
    data: Mapping[str, Any] = field(default_factory=dict)  # its JSON, without tokens/markdown
    order: int = 0  # position in its section
    referenced: bool = False  # a REFERENCED claim: never dropped
    requires: str | None = None  # the key of a piece without which this one is pointless
    head: str = ""
    body: str | None = None  # a cuttable note body
    tail: str = ""


def _group(piece: Piece) -> tuple[str, ...]:
    """The headers a piece needs: its section's, and in User memory its group's."""
    if piece.section != MEMORY:
        return (piece.section,)
    return (MEMORY, "referenced" if piece.referenced else "other")


_GROUP_TEXT: Mapping[str, str] = {
    **_HEADERS,
    "referenced": REFERENCED_HEAD,
    "other": "\n" + OTHER_HEAD,
}


def render(pieces: Iterable[Piece]) -> str:
    """The Markdown block of ``pieces``: sections in SPEC order, items in their order."""
    by_section: dict[str, list[Piece]] = {}
    for piece in sorted(pieces, key=lambda p: (SECTIONS.index(p.section), p.order)):
        by_section.setdefault(piece.section, []).append(piece)
    parts: list[str] = []
    for name in SECTIONS:
        items = by_section.get(name)
        if not items:
            continue
        text = _HEADERS[name]
        if name == MEMORY:
            referenced = [p.text for p in items if p.referenced]
            other = [p.text for p in items if not p.referenced]
            if referenced:
                text += REFERENCED_HEAD + "".join(referenced)
            if referenced and other:
                text += "\n"
            if other:
                text += OTHER_HEAD + "".join(other)
        elif name in _BLOCK_SECTIONS:
            text += "".join("\n" + p.text for p in items)
        else:
            text += "".join(p.text for p in items)
        parts.append(text)
    return "\n".join(parts)


def referenced_lines(markdown: str) -> list[str]:
    """The ``[REFERENCED …]`` items of a block, each whole (a statement over several lines
    keeps its continuation lines), for putting the ground truth back verbatim after a cheap
    model has distilled the rest. Only the referenced group is read, so a note body that
    happens to hold such a line is never mistaken for one."""
    lines = markdown.splitlines()
    try:
        start = lines.index(REFERENCED_HEAD.rstrip("\n")) + 1
    except ValueError:
        return []
    items: list[list[str]] = []
    index = start
    while index < len(lines):
        line = lines[index]
        if line.startswith("- [REFERENCED"):
            items.append([line])
        elif items and line.startswith("  "):
            items[-1].append(line)
        elif items and not line.strip():
            following = next((n for n in lines[index + 1 :] if n.strip()), "")
            if not following.startswith("  "):
                break
            items[-1].append(line)
        else:
            break
        index += 1
    return ["\n".join(item) for item in items]


def referenced_only(markdown: str) -> str:
    """The ``[REFERENCED …]`` items of a block as Markdown lines (empty when there are none)."""
    found = referenced_lines(markdown)
    return "".join(item + "\n" for item in found)


# -- claims ---------------------------------------------------------------------------------


def _fold(text: str) -> str:
    return " ".join(text.split())


def claim_line(label: str, claim: Claim) -> str:
    """``- [LABEL] [claim_type] statement (answers: Q1; Q2)`` and a newline; a statement's
    further lines follow indented by two spaces; a claim that is not live says its status."""
    lines = [line.rstrip() for line in claim.statement.strip().splitlines()]
    status = "" if claim.status in LIVE_STATUSES else f" [{claim.status.value}]"
    statement = "\n".join("  " + line if line else "" for line in lines)[2:]
    questions = [_fold(q) for q in claim.possible_questions if q.strip()]
    answers = f" (answers: {'; '.join(questions)})" if questions else ""
    return f"- [{label}] [{claim.claim_type}]{status} {statement}{answers}\n"


def _claim_data(label: str, ref: str | None, claim: Claim) -> dict[str, Any]:
    return {
        "kind": "claim",
        "label": label,
        "ref": ref,
        "number": claim.number,
        "friendly_id": claim.friendly_id,
        "claim_id": claim.claim_id,
        "claim_type": claim.claim_type,
        "status": claim.status.value,
        "confidence": claim.confidence,
        "statement": claim.statement,
        "possible_questions": list(claim.possible_questions),
    }


# -- notes ----------------------------------------------------------------------------------

_NEWLINE = re.compile(r"\r\n|\r|\n")
_FRONT_OPEN = re.compile(r"---[ \t]*")
_FRONT_CLOSE = re.compile(r"(?:---|\.\.\.)[ \t]*")
_SENTENCE = re.compile(r".+?[.!?](?=\s|$)", re.DOTALL)


def read_note(note: Note) -> str:
    """A note's text as its file holds it now (the parsed body when it cannot be read)."""
    try:
        return decode((Path(note.vault) / note.path).read_bytes())
    except OSError:
        return note.body


def note_markdown(text: str, heading: Heading | None = None) -> str:
    """A note's Markdown without its front matter, or with ``heading`` just that heading's
    section (the heading line to the next heading of the same or a higher level)."""
    lines = _NEWLINE.split(text)
    if heading is not None and heading.line < len(lines):
        end = len(lines)
        in_fence = False
        for number in range(heading.line + 1, len(lines)):
            stripped = lines[number].lstrip(" ")
            if stripped.startswith(("```", "~~~")):
                in_fence = not in_fence
            level = len(stripped) - len(stripped.lstrip("#"))
            if (
                not in_fence
                and 1 <= level <= heading.level
                and stripped[level : level + 1] in (" ", "\t", "")
            ):
                end = number
                break
        lines = lines[heading.line : end]
    elif lines and _FRONT_OPEN.fullmatch(lines[0]):
        for number in range(1, len(lines)):
            if _FRONT_CLOSE.fullmatch(lines[number]):
                lines = lines[number + 1 :]
                break
    return "\n".join(line.rstrip() for line in lines).strip("\n")


_SUMMARIES: dict[str, str] = {}


def summary(note: Note) -> str:
    """A note's first paragraph that is not a heading when it is short, else its first
    sentence, at most :data:`SUMMARY_CHARS` characters; cached by content hash."""
    found = _SUMMARIES.get(note.content_hash)
    if found is not None:
        return found
    headings = {_fold(h.text) for h in note.headings} | {_fold(note.title)}
    text = ""
    for paragraph in note.body.split("\n\n"):
        lines = [_fold(line) for line in paragraph.splitlines()]
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


def _note_handle(note: Note, heading: Heading | None = None) -> str:
    """``[[Title]] [id:path]``, with ``#Heading`` and ``(archived)`` when they apply."""
    section = f"#{heading.text}" if heading is not None else ""
    archived = " (archived)" if note.archived else ""
    return f"[[{note.title}{section}]] [id:{note.path}]{archived}"


# -- entities -------------------------------------------------------------------------------


def _entity_ids(value: object) -> list[str]:
    """Entity friendly ids in a field value: a string (comma-separated) or a list."""
    if isinstance(value, str):
        items: list[object] = list(value.split(","))
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        return []
    ids = [str(item).strip().removeprefix("@") for item in items]
    return list(dict.fromkeys(i for i in ids if i))


def _empty(value: object) -> bool:
    return (
        value is None
        or (isinstance(value, str | list | tuple | dict) and not value)
        or (isinstance(value, str) and not value.strip())
    )


def _scalar(value: object) -> str:
    if isinstance(value, str):
        return _fold(value)
    import json

    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# -- the assembler --------------------------------------------------------------------------


@dataclass(slots=True)
class _Build:
    """The state of one build."""

    warnings: list[str] = field(default_factory=list)
    limited: list[Piece] = field(default_factory=list)  # over a count limit: never shown
    pieces: list[Piece] = field(default_factory=list)
    shown: dict[str, Claim] = field(default_factory=dict)  # claim id → claim, any label
    order: int = 0

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def add(self, piece: Piece) -> None:
        self.pieces.append(replace(piece, order=self.order))
        self.order += 1


class Assembler:
    """Builds context blocks for one user over one store, its vaults and its indexes."""

    def __init__(
        self,
        store: Store,
        resolver: Resolver,
        search: Callable[[], HybridSearch | None] | None = None,
        *,
        user: str,
        tiers: Tiers | None = None,
        budget: int = 1500,
        counter: Callable[[], TokenCounter] = o200k,
        note_text: Callable[[Note], str] = read_note,
    ) -> None:
        """``search`` gives the hybrid search when first needed (loading the model is not
        free); without it the semantic tier is empty. ``note_text`` reads a note's text (the
        language server passes its open buffers)."""
        self.store = store
        self.resolver = resolver
        self.user = user
        self.tiers = tiers or Tiers()
        self.budget = budget
        self._search = search
        self._counter = counter
        self._note_text = note_text

    # -- entry point ------------------------------------------------------------------------

    def build(
        self,
        text: str,
        *,
        language_id: str | None = None,
        path: str | None = None,
        budget: int | None = None,
        attach: Sequence[str] = (),
        pin: Sequence[str] = (),
        query: str | None = None,
        now: float | None = None,
    ) -> ContextBlock:
        """The context block of the document ``text`` (``language_id``/``path`` tell
        whether it is Markdown, SPEC §1). ``attach`` and ``pin`` are references given
        outside the document (``--attach``, ``--pin``); ``query`` replaces the document's
        clean text as the retrieval query; ``now`` (seconds since the epoch) replaces the
        time of the user's newest claim as the moment recency is measured from.

        Raises ``UnresolvedReference`` when an ``attach`` or ``pin`` reference is not one,
        names nothing or names a note; unresolved references in the document are
        warnings."""
        limit = self.budget if budget is None else budget
        if limit < 1:
            raise ValueError("the budget must be at least 1 token")
        parsed = refs.parse_document(text, language_id=language_id, path=path)
        attached = [self._argument(ref, "--attach") for ref in attach]
        pinned = [self._argument(ref, "--pin") for ref in pin]
        resolutions = self.resolver.resolve_all(parsed.references)
        build = _Build()
        for resolution in resolutions:
            if resolution.error is not None:
                build.warn(f"{resolution.ref}: {resolution.error}")
        self._referenced(build, resolutions)
        for resolution in attached:
            self._labelled(build, "ATTACHED", resolution.claims, resolution.ref)
        self._labelled(build, "GLOBAL PINNED", self.store.pinned_claims(self.user))
        for resolution in pinned:
            self._labelled(build, "CONV PINNED", resolution.claims, resolution.ref)
        pinned_keys = self._pinned_notes(build, resolutions)
        self._entities(build, resolutions, pinned_keys)
        moment = now if now is not None else self._anchor()
        self._automatic(build, parsed.clean_text if query is None else query, moment)
        self._documents(build, resolutions)
        return self._fit(build, limit)

    def _argument(self, text: str, option: str) -> Resolution:
        reference = parse_argument(text)
        if reference.kind is RefKind.NOTE:
            raise UnresolvedReference(f"{option} {text}: a note; link it in the document to pin it")
        resolution = self.resolver.resolve(reference)
        if resolution.error is not None:
            raise UnresolvedReference(f"{option} {text}: {resolution.error}")
        return resolution

    # -- claims -----------------------------------------------------------------------------

    def _referenced(self, build: _Build, resolutions: Sequence[Resolution]) -> None:
        for resolution in resolutions:
            if resolution.error is not None or resolution.kind == "note":
                continue
            reference = resolution.reference
            written = reference.text if reference is not None else resolution.ref
            uuid = reference is not None and reference.kind is RefKind.UUID
            label = "REFERENCED" if uuid else f"REFERENCED {written}"
            self._labelled(build, label, resolution.claims, written, referenced=True)

    def _labelled(
        self,
        build: _Build,
        label: str,
        claims: Iterable[Claim],
        ref: str | None = None,
        *,
        referenced: bool = False,
    ) -> None:
        """Each claim not shown yet, as a line under ``label`` (a referenced one is never
        dropped for the budget)."""
        for claim in claims:
            if ref is not None:
                self._status(build, ref, claim)
            if claim.claim_id in build.shown:
                continue
            build.shown[claim.claim_id] = claim
            build.add(
                Piece(
                    MEMORY,
                    P_REFERENCED if referenced else P_LABELLED,
                    "claim",
                    f"claim:{claim.claim_id}",
                    claim_line(label, claim),
                    _claim_data(label, ref, claim),
                    referenced=referenced,
                )
            )

    def _status(self, build: _Build, ref: str, claim: Claim) -> None:
        """Warn about a claim that is not live, naming its successor when it has one."""
        if claim.status in LIVE_STATUSES:
            return
        successor = ""
        found = lineage.successor(self.store, self.user, claim)
        if found is not None:
            word = "by" if claim.superseded_by else "into"
            successor = f" {word} #{found.number} @{found.friendly_id}"
        build.warn(f"{ref}: claim #{claim.number} is {claim.status.value}{successor}")

    # -- notes ------------------------------------------------------------------------------

    def _pinned_notes(self, build: _Build, resolutions: Sequence[Resolution]) -> set[str]:
        """Pin the first 5 linked notes; return the keys of the notes pinned."""
        found: dict[str, tuple[Note, Heading | None, bool]] = {}
        for resolution in resolutions:
            target = resolution.note
            if resolution.error is not None or target is None or target.note is None:
                continue
            note = target.note
            whole = target.heading is None
            if note.key in found:
                first, heading, was_whole = found[note.key]
                if whole and not was_whole:
                    found[note.key] = (first, None, True)
                continue
            found[note.key] = (note, target.heading, whole)
        pinned: set[str] = set()
        for rank, (key, (note, heading, _)) in enumerate(found.items()):
            piece = self._note_piece(
                PINNED_NOTES,
                P_PINNED_NOTE,
                note,
                heading=heading,
                limit=PINNED_NOTE_CHARS,
                key=f"note:{key}",
            )
            if rank >= MAX_PINNED_NOTES:
                build.limited.append(piece)
                build.warn(f"[[{note.title}]]: not pinned; at most {MAX_PINNED_NOTES} notes are")
                continue
            pinned.add(key)
            build.add(piece)
        return pinned

    def _note_piece(
        self,
        section: str,
        priority: int,
        note: Note,
        *,
        heading: Heading | None,
        limit: int,
        key: str,
        requires: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Piece:
        full = note_markdown(self._note_text(note), heading)
        body = cut(full, limit)
        head = f"### {_note_handle(note, heading)}\n"
        tail = "---\n"
        data = {
            "kind": "note",
            "title": note.title,
            "path": note.path,
            "heading": heading.text if heading is not None else None,
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
            _note_text(head, body, tail),
            data,
            requires=requires,
            head=head,
            body=body,
            tail=tail,
        )

    # -- entities ---------------------------------------------------------------------------

    def _entities(self, build: _Build, resolutions: Sequence[Resolution], pinned: set[str]) -> None:
        types: dict[str, EntityType] = {t.name: t for t in self.store.entity_types(self.user)}
        cache: dict[str, Entity | None] = {}

        def entity(friendly_id: str) -> Entity | None:
            if friendly_id not in cache:
                cache[friendly_id] = self.store.entity_by_friendly_id(self.user, friendly_id)
            return cache[friendly_id]

        queue: deque[tuple[Entity, int, str | None]] = deque()
        visited: set[str] = set()
        for resolution in resolutions:
            found = resolution.entity
            if resolution.error is None and found is not None and found.friendly_id not in visited:
                visited.add(found.friendly_id)
                cache[found.friendly_id] = found
                queue.append((found, 0, None))
        linked: list[tuple[Note, str]] = []  # entity-linked notes and their entity's key
        linked_keys: set[str] = set()
        while queue:
            current, depth, via = queue.popleft()
            kind = types.get(current.type)
            declared = {f.name: f.type for f in kind.fields} if kind is not None else {}
            names = list(dict.fromkeys([*declared, *current.fields]))
            expand = depth < MAX_ENTITY_DEPTH and not current.trashed
            lines: list[str] = []
            shown: dict[str, str] = {}
            for name in names if expand else ():
                value = current.fields.get(name)
                field_type = declared.get(name, "text")
                if field_type == "computed" or _empty(value):
                    continue
                if field_type in ("entity_ref", "entity_ref_list"):
                    parts = []
                    for target_id in _entity_ids(value):
                        target = entity(target_id)
                        parts.append(_entity_handle(target, target_id))
                        if target is not None and target_id not in visited:
                            visited.add(target_id)
                            queue.append((target, depth + 1, f"@{current.name}.{name}"))
                    rendered = ", ".join(parts)
                elif field_type == "note_ref":
                    parts = []
                    for target_text in _note_targets(value):
                        note = self._find_note(target_text)
                        if note is None:
                            parts.append(f"[[{target_text}]] (not found)")
                            continue
                        parts.append(_note_handle(note))
                        if note.key not in pinned and note.key not in linked_keys:
                            linked_keys.add(note.key)
                            linked.append((note, f"entity:{current.friendly_id}.{name}"))
                    rendered = ", ".join(parts)
                elif isinstance(value, list | tuple):
                    rendered = ", ".join(_scalar(v) for v in value if not _empty(v))
                else:
                    rendered = _scalar(value)
                if rendered:
                    lines.append(f"  {name}: {rendered}\n")
                    shown[name] = rendered
            where = "directly mentioned" if via is None else f"referenced via {via}"
            deleted = " (deleted)" if current.trashed else ""
            further = f" {NOT_EXPANDED}" if depth >= MAX_ENTITY_DEPTH else ""
            heading = (
                f"### @{current.name} ({current.type}) [id:{current.friendly_id}]{deleted}"
                f"  ← {where}{further}\n"
            )
            build.add(
                Piece(
                    ENTITIES,
                    P_ENTITY if depth == 0 else P_DEEP_ENTITY,
                    "entity",
                    f"entity:{current.friendly_id}",
                    heading + "".join(lines),
                    {
                        "kind": "entity",
                        "friendly_id": current.friendly_id,
                        "name": current.name,
                        "type": current.type,
                        "trashed": current.trashed,
                        "depth": depth,
                        "via": via,
                        "fields": shown,
                    },
                )
            )
        for note, source in linked[:MAX_ENTITY_NOTES]:
            entity_key, _, field_name = source.partition(".")
            build.add(
                self._note_piece(
                    ENTITY_NOTES,
                    P_ENTITY_NOTE,
                    note,
                    heading=None,
                    limit=ENTITY_NOTE_CHARS,
                    key=f"linked:{note.key}",
                    requires=entity_key,
                    extra={"entity": entity_key.removeprefix("entity:"), "field": field_name},
                )
            )

    def _find_note(self, target: str) -> Note | None:
        title, _, _ = target.partition("#")
        for vault in self.resolver.vaults:
            found = vault.resolve(title.strip()).note
            if found is not None:
                return found
        return None

    # -- automatic memories -----------------------------------------------------------------

    def _anchor(self) -> float:
        """The moment recency is measured from: the user's newest claim update (the wall
        clock only for a user with no claims, when there is nothing to rank)."""
        stamp = self.store.last_update(self.user)
        if stamp is None:
            return datetime.now(UTC).timestamp()
        return _epoch(stamp)

    def _automatic(self, build: _Build, query: str, now: float) -> None:
        tiers = self.tiers
        shown = build.shown
        extra = min(len(shown), 50)
        candidates: dict[str, tuple[Claim, str]] = {}

        def take(tier: str, claims: Iterable[Claim], limit: int) -> None:
            taken = 0
            for claim in claims:
                if taken >= limit:
                    break
                if claim.claim_id in shown:
                    continue
                taken += 1
                candidates.setdefault(claim.claim_id, (claim, tier))

        store, user = self.store, self.user
        take(
            "core",
            store.claims_of_types(
                user,
                tiers.core.types,
                limit=tiers.core.max + extra,
                min_confidence=MIN_CONFIDENCE,
            ),
            tiers.core.max,
        )
        since = None
        if tiers.active.days is not None:
            since = _stamp(now - tiers.active.days * 86_400)
        take(
            "active",
            store.claims_of_types(
                user,
                tiers.active.types,
                limit=tiers.active.max + extra,
                min_confidence=MIN_CONFIDENCE,
                since=since,
            ),
            tiers.active.max,
        )
        # Built even without a query: its vectors also find near-duplicates.
        search = self._search() if self._search is not None else None
        text_scores: dict[str, float] = {}
        query_vector = None
        if query.strip() and search is not None and search.semantic:
            assert search.embedder is not None
            query_vector = search.embedder.embed([query])[0]  # once, for the search and below
        if search is not None and query.strip() and tiers.semantic.max > 0:
            hits = search.search(
                query,
                user=user,
                kinds=("claim",),
                statuses=_LIVE,
                k=tiers.semantic.max + extra,
                min_confidence=MIN_CONFIDENCE,
                now=now,
                query_vector=query_vector,
            )
            claims = []
            for hit in hits:
                claim = store.claim_by_uuid(user, hit.id.removeprefix("claim:"))
                if claim is not None:
                    claims.append(claim)
                    text_scores[claim.claim_id] = hit.bm25
            take("semantic", claims, tiers.semantic.max)
        take(
            "recent",
            store.newest_claims(
                user, limit=tiers.recent.max + extra, min_confidence=MIN_CONFIDENCE
            ),
            tiers.recent.max,
        )
        if not candidates:
            return
        ids = [f"claim:{claim_id}" for claim_id in candidates]
        similarity: dict[str, float] = {}
        vectors: dict[str, Any] = {}
        if query_vector is not None and search is not None and search.vectors is not None:
            similarity = search.vectors.similarity(ids, query_vector)
        elif text_scores:
            best = max(text_scores.values()) or 1.0
            similarity = {f"claim:{k}": v / best for k, v in text_scores.items()}
        if search is not None and search.vectors is not None:
            vectors = search.vectors.vectors([*ids, *(f"claim:{c}" for c in shown)])
        weight_sim, weight_conf, weight_rec = WEIGHTS
        ranked: list[tuple[float, int, Claim, str, float, float]] = []
        for claim_id, (claim, tier) in candidates.items():
            sim = similarity.get(f"claim:{claim_id}", 0.0)
            rec = recency(int(_epoch(claim.updated_at)), now)
            score = weight_sim * sim + weight_conf * claim.confidence + weight_rec * rec
            ranked.append((round(score, 9), claim.number, claim, tier, sim, rec))
        ranked.sort(key=lambda row: (-row[0], row[1]))
        # A claim shown for not being live (a referenced superseded claim) must not hide
        # its live successor, however alike their texts.
        live = [c for c in shown.values() if c.status in LIVE_STATUSES]
        kept_vectors = [vectors[k] for c in live if (k := f"claim:{c.claim_id}") in vectors]
        kept_texts = {_fold(c.statement).lower() for c in live}
        for score, _, claim, tier, sim, rec in ranked:
            text = _fold(claim.statement).lower()
            vector = vectors.get(f"claim:{claim.claim_id}")
            if text in kept_texts or (
                vector is not None
                and any(float(np.dot(vector, other)) > DUPLICATE_COSINE for other in kept_vectors)
            ):
                continue
            kept_texts.add(text)
            if vector is not None:
                kept_vectors.append(vector)
            shown[claim.claim_id] = claim
            data = _claim_data("AUTO", None, claim)
            data.update(
                tier=tier, score=round(score, 4), similarity=round(sim, 4), recency=round(rec, 4)
            )
            build.add(
                Piece(
                    MEMORY,
                    P_AUTO,
                    "claim",
                    f"claim:{claim.claim_id}",
                    claim_line("AUTO", claim),
                    data,
                )
            )

    # -- referenced documents ---------------------------------------------------------------

    def _documents(self, build: _Build, resolutions: Sequence[Resolution]) -> None:
        seen: set[str] = set()
        for resolution in resolutions:
            reference = resolution.reference
            if reference is None or reference.kind is not RefKind.NOTE:
                continue
            target = resolution.note
            note = target.note if target is not None and resolution.error is None else None
            if note is None:
                key = f"missing:{reference.target.casefold()}"
                handle = f"[[{reference.target}]]"
                line = f"- {handle}: {NOT_FOUND_DOCUMENT}\n"
                data: dict[str, Any] = {
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
            build.add(Piece(DOCUMENTS, P_DOCUMENT, "document", key, line, data))

    # -- the budget -------------------------------------------------------------------------

    def _fit(self, build: _Build, budget: int) -> ContextBlock:
        counter = self._counter()
        filled = fill(build.pieces, budget, counter)
        warnings = list(build.warnings)
        if filled.over_budget:
            warnings.append(
                f"the referenced claims alone take {filled.tokens} tokens, over the budget of "
                f"{budget}; nothing else was added"
            )
        sections = []
        for name in SECTIONS:
            items = sorted((p for p in filled.pieces if p.section == name), key=lambda p: p.order)
            if items:
                sections.append(
                    Section(
                        name,
                        tuple(
                            {**p.data, "tokens": filled.costs[p.key], "markdown": p.text}
                            for p in items
                        ),
                    )
                )
        listed = [_dropped(p, "limit", counter.count("\n" + p.text)) for p in build.limited]
        listed += [_dropped(*entry) for entry in filled.dropped]
        return ContextBlock(
            budget=budget,
            tokens=filled.tokens,
            tokenizer=counter.name,
            over_budget=filled.over_budget,
            sections=tuple(sections),
            dropped=tuple(listed),
            warnings=tuple(warnings),
            markdown=filled.markdown,
        )


# -- filling the budget ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Filled:
    """What :func:`fill` kept (in filling order, notes perhaps cut), what it dropped (with
    the reason and the tokens it would have taken) and the block it made."""

    pieces: tuple[Piece, ...]
    costs: Mapping[str, int]  # piece key → its tokens, counted alone
    dropped: tuple[tuple[Piece, str, int], ...]
    markdown: str
    tokens: int
    budget: int

    @property
    def over_budget(self) -> bool:
        return self.tokens > self.budget


def fill(pieces: Sequence[Piece], budget: int, counter: TokenCounter) -> Filled:
    """Take ``pieces`` in filling priority (then their order) while they fit in ``budget``
    tokens of the rendered block. Referenced claims are always taken. A note that does not
    fit whole is cut to what fits; anything else that does not fit is dropped, as is a piece
    whose ``requires`` was not taken. Each piece and header is counted once; the block is
    then counted whole, and while it is over (token merges across piece edges) the last
    piece taken is cut or dropped. Over budget only when the referenced claims alone are."""
    header_cost = {
        name: counter.count(text) + (1 if name in _HEADERS else 0)
        for name, text in _GROUP_TEXT.items()
    }

    def cost(piece: Piece) -> int:
        prefix = "\n" if piece.section in _BLOCK_SECTIONS else ""
        return counter.count(prefix + piece.text)

    taken: list[Piece] = []
    taken_keys: set[str] = set()
    costs: dict[str, int] = {}
    opened: set[str] = set()
    used = 0
    dropped: list[tuple[Piece, str, int]] = []
    for piece in sorted(pieces, key=lambda p: (p.priority, p.order)):
        size = cost(piece)
        if piece.requires is not None and piece.requires not in taken_keys:
            dropped.append((piece, "budget", size))
            continue
        headers = sum(header_cost[g] for g in _group(piece) if g not in opened)
        fitted: Piece | None = piece
        if not piece.referenced and used + headers + size > budget:
            fitted = cut_piece(piece, budget - used - headers, counter)
            if fitted is None:
                dropped.append((piece, "budget", size))
                continue
            size = cost(fitted)
        assert fitted is not None
        taken.append(fitted)
        taken_keys.add(fitted.key)
        costs[fitted.key] = size
        opened.update(_group(fitted))
        used += headers + size
    markdown = render(taken)
    tokens = counter.count(markdown)
    while tokens > budget:
        victims = [i for i, p in enumerate(taken) if not p.referenced]
        if not victims:
            break
        index = victims[-1]
        victim = taken[index]
        smaller = cut_piece(victim, costs[victim.key] - (tokens - budget) - 1, counter)
        if smaller is not None and smaller.text != victim.text:
            taken[index] = smaller
            costs[victim.key] = cost(smaller)
        else:
            del taken[index]
            dropped.append((victim, "budget", costs.pop(victim.key)))
        markdown = render(taken)
        tokens = counter.count(markdown)
    dropped.sort(key=lambda entry: (entry[0].priority, entry[0].order))
    return Filled(tuple(taken), costs, tuple(dropped), markdown, tokens, budget)


def cut_piece(piece: Piece, room: int, counter: TokenCounter) -> Piece | None:
    """``piece`` with its note body cut (ending in ``…``) so that it takes at most ``room``
    tokens with the blank line before it; None when it is not a note or cannot keep
    :data:`MIN_NOTE_TOKENS` of its body."""
    if not piece.body:
        return None
    frame = counter.count("\n" + piece.head + piece.tail) + 2  # + "…" and a line break
    allowed = room - frame
    for _ in range(4):
        if allowed < MIN_NOTE_TOKENS:
            return None
        body = counter.head(piece.body, allowed).rstrip()
        if not body:
            return None
        body = body.removesuffix(ELLIPSIS).rstrip() + ELLIPSIS
        text = _note_text(piece.head, body, piece.tail)
        over = counter.count("\n" + text) - room
        if over <= 0:
            data = {**piece.data, "chars": len(body), "truncated": True}
            return replace(piece, text=text, body=body, data=data)
        allowed -= over
    return None


def _note_text(head: str, body: str, tail: str) -> str:
    return head + (body + "\n" if body else "") + tail


def _note_targets(value: object) -> list[str]:
    items = value if isinstance(value, list | tuple) else [value]
    targets = []
    for item in items:
        text = str(item).strip()
        if text.startswith("[[") and text.endswith("]]"):
            text = text[2:-2]
        text = text.partition("|")[0].strip()
        if text:
            targets.append(text)
    return targets


def _entity_handle(found: Entity | None, friendly_id: str) -> str:
    if found is None:
        return f"@{friendly_id} (not found)"
    deleted = " (deleted)" if found.trashed else ""
    return f"@{found.name} [id:{found.friendly_id}]{deleted}"


def _dropped(piece: Piece, reason: str, tokens: int) -> dict[str, Any]:
    """A ``dropped`` entry: section, kind, id (claim or entity friendly id, note path or
    link), a claim's label, tokens and reason (``budget`` or ``limit``)."""
    entry: dict[str, Any] = {"section": piece.section, "kind": piece.kind}
    data = piece.data
    if piece.kind == "claim":
        entry["id"] = data["friendly_id"]
        entry["label"] = data["label"]
    elif piece.kind in ("note", "document"):
        entry["id"] = data.get("path") or data.get("ref")
    else:
        entry["id"] = data["friendly_id"]
    entry["tokens"] = tokens
    entry["reason"] = reason
    return entry


def _epoch(stamp: str) -> float:
    text = stamp.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _stamp(seconds: float) -> str:
    """Seconds since the epoch as a stored timestamp (UTC, microseconds, ``Z``)."""
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=math.floor(seconds))
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
