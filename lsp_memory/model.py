"""The domain's value types: references, claims, contexts, entities, tags (stdlib only)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol


class RefKind(StrEnum):
    """What a reference token names (docs/reference.md, Reference grammar)."""

    UUID = "uuid"  # @memory:<uuid>, @mem:<uuid>: a claim by UUID
    NUMBER = "number"  # #<N>: a claim by number
    ID = "id"  # @<id>: claim_<N>, a friendly id, or a context name
    NOTE = "note"  # [[Target#Heading|Label]]


@dataclass(frozen=True, slots=True)
class Position:
    """An LSP position: 0-based line and character in UTF-16 code units."""

    line: int
    character: int


@dataclass(frozen=True, slots=True)
class Span:
    """An LSP range, end exclusive."""

    start: Position
    end: Position


_CLAIM_NUMBER_ID = re.compile(r"claim_([0-9]+)")
MAX_NUMBER_DIGITS = 19
NO_CLAIM_NUMBER = 2**63
"""What a claim number of more than ``MAX_NUMBER_DIGITS`` digits reads as: above every
number a claim can have (SQLite's integers stop at 2**63 - 1), so it names no claim."""


@dataclass(frozen=True, slots=True)
class Reference:
    """One reference token found in a document.

    ``offset``/``end`` index the Python string; ``span`` is the LSP range of the same text.
    """

    kind: RefKind
    text: str  # exactly as written, e.g. "@claim_42", "#42", "[[Note|label]]"
    target: str  # "claim_42", "42", the UUID, the friendly id, or the note target
    span: Span
    offset: int
    end: int
    heading: str | None = None  # [[Target#Heading]]
    label: str | None = None  # [[Target|Label]]
    embed: bool = False  # ![[Target]]: an embed (the "!" is not part of ``text``)

    @property
    def claim_number(self) -> int | None:
        """The claim number for ``#N`` and ``@claim_N``, else None. Digits too many for any
        claim (SQLite's integers stop at 19) give ``NO_CLAIM_NUMBER``: Python refuses to
        read an int of more than 4,300 digits, and ``#`` + 5,000 digits failed every request
        on its document."""
        digits = None
        if self.kind is RefKind.NUMBER:
            digits = self.target
        elif self.kind is RefKind.ID:
            match = _CLAIM_NUMBER_ID.fullmatch(self.target)
            digits = match.group(1) if match else None
        if digits is None:
            return None
        return int(digits) if len(digits) <= MAX_NUMBER_DIGITS else NO_CLAIM_NUMBER


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """The reference tokens of a document, in document order, and its clean text."""

    references: tuple[Reference, ...]
    clean_text: str


class ClaimStatus(StrEnum):
    """The claim lifecycle (docs/reference.md, Lifecycle)."""

    ACTIVE = "active"
    CONTESTED = "contested"
    RETRACTED = "retracted"
    SUPERSEDED = "superseded"
    MERGED = "merged"
    DEPRECATED = "deprecated"


CATEGORIES = (
    "identity",
    "preference",
    "relationship",
    "emotional",
    "project-active",
    "goal",
    "constraint",
    "technical",
)
"""The categories the classifier chooses from: claim types."""

KNOWN_TYPES = (*CATEGORIES, "fact", "decision")
"""Claim types every store knows (a claim may also carry a type its user's claims already
have; a new one comes in by ``import``)."""

LIVE_STATUSES: tuple[ClaimStatus, ...] = (ClaimStatus.ACTIVE, ClaimStatus.CONTESTED)
"""Statuses returned by contexts, tags, domains and automatic retrieval."""

ORIGINS = ("stated", "inferred")
"""Where a claim came from: the user wrote it (``claim add``, Remember selection, MCP
``remember``, an import without ``derived_from``), or it was extracted from a conversation
(``ingest``: its ``derived_from`` names the message)."""

MAX_STATEMENT = 5000
"""The most characters a new claim's statement may have: a claim is one fact, and a longer
text belongs in a note."""

MIN_CONFIDENCE = 0.5
"""Claims below this confidence are left out of the automatic memories (the passive mode);
consolidation's deprecation threshold is measured against it."""


@dataclass(frozen=True, slots=True)
class Claim:
    """One atomic fact, preference or decision about the user."""

    claim_id: str
    user: str
    number: int
    friendly_id: str
    statement: str
    claim_types: tuple[str, ...]  # the first is the primary ``claim_type``
    domains: tuple[str, ...]  # the first is the primary ``context_domain``
    status: ClaimStatus
    confidence: float
    possible_questions: tuple[str, ...]
    pinned: bool
    created_at: str
    updated_at: str
    valid_from: str | None = None
    valid_to: str | None = None
    superseded_by: str | None = None
    merged_into: str | None = None
    # What the claim rests on: ids of the episodes and merged claims behind it, and how many
    # pieces of evidence support it. Stored and carried through export; consolidation fills
    # them in.
    derived_from: tuple[str, ...] = ()
    evidence_count: int = 0
    meta: dict[str, Any] = field(default_factory=dict)
    # Where the claim came from: ``stated`` (the user wrote it) or ``inferred`` (extracted
    # from a conversation). Consolidation's decay follows it (``ORIGINS``).
    origin: str = "stated"
    # Links, by friendly id. None when not loaded: results of a context, tag, entity or domain
    # (hundreds of claims) leave them out; single-claim lookups and listings fill them in.
    contexts: tuple[str, ...] | None = None
    tags: tuple[str, ...] | None = None
    entities: tuple[str, ...] | None = None

    @property
    def claim_type(self) -> str:
        return self.claim_types[0] if self.claim_types else "fact"


class ClaimLine(Protocol):
    """What a claim's line in a listing shows: a whole ``Claim``, or the store's lighter
    listing row (``store.sqlite.Listed``: a group's listing, ``claim list``)."""

    @property
    def number(self) -> int: ...
    @property
    def friendly_id(self) -> str: ...
    @property
    def status(self) -> ClaimStatus: ...
    @property
    def statement(self) -> str: ...
    @property
    def claim_type(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Context:
    """A named group of claims in a tree."""

    context_id: str
    user: str
    friendly_id: str
    name: str
    description: str
    parent: str | None  # the parent's friendly id
    created_at: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class EntityField:
    """A typed field of an entity type."""

    name: str
    type: str


ENTITY_FIELD_TYPES: frozenset[str] = frozenset(
    {
        "text",
        "email",
        "date",
        "select",
        "text_list",
        "entity_ref",
        "entity_ref_list",
        "note_ref",
        "computed",
    }
)


@dataclass(frozen=True, slots=True)
class EntityType:
    """A kind of entity (Person, Team, Project) and its fields."""

    user: str
    name: str
    fields: tuple[EntityField, ...]


@dataclass(frozen=True, slots=True)
class Entity:
    """A person, project or topic with typed fields."""

    entity_id: str
    user: str
    friendly_id: str
    name: str
    type: str
    fields: dict[str, Any]
    trashed: bool
    created_at: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class Tag:
    """A tag in a tree of tags."""

    user: str
    friendly_id: str
    name: str
    parent: str | None


@dataclass(frozen=True, slots=True)
class ContextNode:
    """A context with its children, for ``context tree``."""

    context: Context
    claim_count: int
    children: tuple[ContextNode, ...]


@dataclass(frozen=True, slots=True)
class Heading:
    """A Markdown heading of a note: its text, level (1–6) and 0-based line."""

    text: str
    level: int
    line: int


@dataclass(frozen=True, slots=True)
class Block:
    """A block of a note that has an id (``… ^id`` ending a paragraph or list item, or
    ``^id`` on the line after it, as Obsidian writes them): the id, without ``^``, and the
    0-based line that holds it."""

    id: str
    line: int


@dataclass(frozen=True, slots=True)
class Note:
    """A Markdown note in a vault (docs/reference.md, Notes), as parsed from its file."""

    vault: str  # the vault folder, absolute
    path: str  # vault-relative, POSIX separators: "projects/alpha-kickoff.md"
    title: str  # front-matter title, else the first "# " heading, else the file stem
    aliases: tuple[str, ...]
    tags: tuple[str, ...]
    archived: bool
    headings: tuple[Heading, ...]
    links: tuple[Reference, ...]  # its [[links]], with ranges
    body: str  # plain text, Markdown stripped, front matter left out
    size: int
    mtime_ns: int
    content_hash: str  # sha256 hex of the file's bytes
    warnings: tuple[str, ...] = ()  # e.g. broken front matter: the note is still indexed
    # The distinct texts of its other reference tokens (@id, #N, @memory:uuid), interned:
    # find-references and rename read a file only when one of these (or a link) may name
    # what they look for. Texts, not References: a third of the memory per note.
    mentions: tuple[str, ...] = ()
    blocks: tuple[Block, ...] = ()  # the blocks with an id, in order

    @property
    def key(self) -> str:
        """A stable id across vaults: ``<vault>::<path>``."""
        return note_key(self.vault, self.path)


@dataclass(frozen=True, slots=True)
class NoteTarget:
    """What a ``[[Target#Heading]]`` resolved to (docs/reference.md, Notes)."""

    note: Note | None
    heading: Heading | None = None
    candidates: tuple[Note, ...] = ()  # every note that matched, best first (ties, ambiguity)
    error: str | None = None  # why it did not resolve
    file: str | None = None  # no note but another file of the vault: its absolute path
    block: Block | None = None  # for [[Target#^id]]: the block of that id


# -- search index document ids -----------------------------------------------------------------
# One scheme for every index (full text, vectors, the embedding queue): ``<kind>:<key>``, the
# key being a claim's, context's or entity's UUID, a tag's friendly id, a domain's name, or a
# note's ``<vault>::<path>``.


def note_key(vault: object, path: str) -> str:
    """A note's id across vaults: ``<vault root>::<path in the vault>``."""
    return f"{vault}::{path}"


def doc_id(kind: str, key: str) -> str:
    """The index document id of a record or a note: ``claim:<uuid>``, ``note:<vault>::<path>``."""
    return f"{kind}:{key}"


def doc_key(document_id: str) -> str:
    """The key of an index document id (``claim:<uuid>`` → ``<uuid>``)."""
    return document_id.partition(":")[2]
