"""The format of a context block (docs/reference.md, The context block): its sections and headers,
the candidate items
(:class:`Piece`) and their filling priorities, the state of one build, the Markdown a set
of pieces renders to, the built block (:class:`ContextBlock`, its JSON) and the helper that
reads the ``[REFERENCED …]`` items back out of a block."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lsp_memory.model import Claim

# -- the format of docs/reference.md, The context block
# ------------------------------------------------------------------

MEMORY = "User memory"
PINNED_NOTES = "Notes pinned by user"
ENTITIES = "Entity context"
ENTITY_NOTES = "Notes linked via entity fields"
DOCUMENTS = "Referenced documents"
RECENT = "Recent conversation"
EPISODES = "Relevant past messages"
SEARCHED = "Searched memory"
SECTIONS = (RECENT, SEARCHED, MEMORY, EPISODES, PINNED_NOTES, ENTITIES, ENTITY_NOTES, DOCUMENTS)

REFERENCED_HEAD = "**User's explicitly referenced memories (ground truth):**\n"
OTHER_HEAD = "**Other relevant memories:**\n"
HEADERS: Mapping[str, str] = {
    RECENT: "## Recent conversation\nThe last messages of this conversation, oldest first.\n",
    SEARCHED: (
        "## Searched memory\n"
        "What the assistant found with search_memory in this conversation's last turn.\n"
    ),
    MEMORY: "## User memory\n",
    EPISODES: (
        "## Relevant past messages\n"
        "Earlier messages of the user's conversations that bear on this one.\n"
    ),
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
BLOCK_SECTIONS = frozenset({PINNED_NOTES, ENTITIES, ENTITY_NOTES})  # items apart by a blank

# Filling priorities (docs/reference.md, The budget), lowest first. What the user asked for
# comes before what was found for them: the referenced claims and the references that name
# nothing (an LLM must know what it was not given), then the claims the user attached or
# pinned, then pinned notes and entities, then automatic memories.
P_REFERENCED = 1  # referenced claims; "not found" lines of references and links
P_LABELLED = 2  # attached, global pinned, conversation pinned; search_memory's results
P_PINNED_NOTE = 3
P_ENTITY = 4
P_DEEP_ENTITY = 5
P_ENTITY_NOTE = 6
P_AUTO = 7
P_DOCUMENT = 8


# -- results --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Section:
    """One section of a block: its name (the Markdown heading) and its items as JSON."""

    name: str
    items: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True)
class ContextBlock:
    """A built context block; :meth:`to_json` is the JSON of docs/reference.md, The context
    block."""

    budget: int
    tokens: int
    tokenizer: str
    over_budget: bool
    sections: tuple[Section, ...]
    dropped: tuple[Mapping[str, Any], ...]
    warnings: tuple[str, ...]
    markdown: str
    recall: str | None = None  # with a conversation: "precomputed" or "computed"

    def to_json(self) -> dict[str, Any]:
        extra = {} if self.recall is None else {"recall": self.recall}
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
            **extra,
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


def in_referenced_group(piece: Piece) -> bool:
    """Whether a User memory piece goes under the referenced group's header: a referenced
    claim, or a reference that names nothing (``[NOT FOUND …]``)."""
    return piece.referenced or piece.kind == "unresolved"


def group(piece: Piece) -> tuple[str, ...]:
    """The headers a piece needs: its section's, and in User memory its group's."""
    if piece.section != MEMORY:
        return (piece.section,)
    return (MEMORY, "referenced" if in_referenced_group(piece) else "other")


GROUP_TEXT: Mapping[str, str] = {
    **HEADERS,
    "referenced": REFERENCED_HEAD,
    "other": "\n" + OTHER_HEAD,
}


def render(pieces: Iterable[Piece]) -> str:
    """The Markdown block of ``pieces``: sections in the order docs/reference.md gives, items in
    their order."""
    by_section: dict[str, list[Piece]] = {}
    for piece in sorted(pieces, key=lambda p: (SECTIONS.index(p.section), p.order)):
        by_section.setdefault(piece.section, []).append(piece)
    parts: list[str] = []
    for name in SECTIONS:
        items = by_section.get(name)
        if not items:
            continue
        text = HEADERS[name]
        if name == MEMORY:
            referenced = [p.text for p in items if in_referenced_group(p)]
            other = [p.text for p in items if not in_referenced_group(p)]
            if referenced:
                text += REFERENCED_HEAD + "".join(referenced)
            if referenced and other:
                text += "\n"
            if other:
                text += OTHER_HEAD + "".join(other)
        elif name in BLOCK_SECTIONS:
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


# -- shared by the steps --------------------------------------------------------------------


def note_text(head: str, body: str, tail: str) -> str:
    """A note piece's ``text``: ``head``, the body on its own lines (if any), ``tail``."""
    return head + (body + "\n" if body else "") + tail


def fold(text: str) -> str:
    """``text`` on one line, its white space runs folded to single spaces."""
    return " ".join(text.split())


@dataclass(slots=True)
class Build:
    """The state of one build."""

    warnings: list[str] = field(default_factory=list)
    limited: list[Piece] = field(default_factory=list)  # over a count limit: never shown
    pieces: list[Piece] = field(default_factory=list)
    shown: dict[str, Claim] = field(default_factory=dict)  # claim id → claim, any label
    order: int = 0
    as_of: str | None = None  # a block as of a date: its moment (``kernel.asof``)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def add(self, piece: Piece) -> None:
        self.pieces.append(replace(piece, order=self.order))
        self.order += 1
