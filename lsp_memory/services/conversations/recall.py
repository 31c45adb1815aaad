"""A user's conversations — the ones their episodes belong to — with the references each
message made or was given (``conversation list``, ``conversation show``, ``conversation
pin|unpin``), and passive recall from one (``build-context --conversation``).

A message's references are ``direct`` (the ``@…``, ``#N`` and ``[[…]]`` tokens in its text,
resolved when it was stored; a broken ``[[link]]`` is kept) or ``search`` (what
``search_memory`` or ``build-context --conversation`` gave the conversation, kept on its
latest message). A conversation's pins are claims or notes it should always see.

(A conversation was called a conversation before; the store's tables and the JSON field
``session_id`` keep that name.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsp_memory import refs
from lsp_memory.errors import UserError
from lsp_memory.ids import now
from lsp_memory.model import Note
from lsp_memory.services.block.conversation import Turn
from lsp_memory.services.block.notes import summary
from lsp_memory.services.conversations.ingest import ref_target
from lsp_memory.services.kernel.resolver import Resolver
from lsp_memory.store.sqlite import Episode, EpisodeRef, Store
from lsp_memory.text import one_line

if TYPE_CHECKING:
    from lsp_memory.services.block import Assembler, ContextBlock

RECALL_TURNS = 2
"""How many of a conversation's last messages join the query of passive recall."""
RECENT_TURNS = 10
"""How many of a conversation's last messages the block may show (its recent budget picks)."""


@dataclass(frozen=True, slots=True)
class Recall:
    """What passive recall adds to a context block: the conversation's last turns (for the
    query) and its pins (claims as conversation pins, notes as references)."""

    turns: tuple[str, ...]
    claim_pins: tuple[str, ...]
    note_pins: tuple[str, ...]
    recent: tuple[Turn, ...] = ()


class Conversations:
    """One user's conversations."""

    def __init__(self, store: Store, user: str, resolver: Callable[[], Resolver]) -> None:
        self.store = store
        self.user = user
        self.resolver = resolver

    def summaries(self) -> list[dict[str, Any]]:
        return [
            {
                "session_id": s.conversation_id,
                "messages": s.messages,
                "first": s.first,
                "last": s.last,
            }
            for s in self.store.conversations(self.user)
        ]

    def _episodes(self, conversation_id: str) -> list[Episode]:
        episodes = self.store.conversation_episodes(self.user, conversation_id)
        if not episodes:
            raise UserError(
                f"no conversation {conversation_id!r}: `lsp-memory conversation list` shows yours"
            )
        return episodes

    def show(self, conversation_id: str) -> dict[str, Any]:
        """The conversation's messages with their references, and its pins."""
        episodes = self._episodes(conversation_id)
        found: dict[int, list[EpisodeRef]] = {}
        for ref in self.store.episode_refs([e.row for e in episodes]):
            found.setdefault(ref.episode_row, []).append(ref)
        notes = _NoteLookup(self.resolver)
        return {
            "session_id": conversation_id,
            "messages": [
                {
                    "episode_id": e.episode_id,
                    "role": e.role,
                    "timestamp": e.occurred_at,
                    "source": e.source,
                    "channel": e.channel,
                    "text": e.text,
                    "references": [_ref_json(r, e.text, notes) for r in found.get(e.row, [])],
                }
                for e in episodes
            ],
            "pins": [
                {"kind": kind, "label": label, **_where(kind, target)}
                for kind, target, label in self.store.conversation_pins(self.user, conversation_id)
            ],
        }

    def pin(self, conversation_id: str, ref: str) -> str:
        """Pin a claim or note to the conversation; one line saying what happened."""
        kind, target, label = self._pinnable(conversation_id, ref)
        added = self.store.pin_to_conversation(
            self.user, conversation_id, kind=kind, target=target, label=label, when=now()
        )
        return (
            f"{'pinned' if added else 'already pinned'}: {label} to conversation {conversation_id}"
        )

    def unpin(self, conversation_id: str, ref: str) -> str:
        """Take a claim or note off the conversation's pins; one line saying what happened."""
        kind, target, label = self._pinnable(conversation_id, ref)
        removed = self.store.unpin_from_conversation(
            self.user, conversation_id, kind=kind, target=target
        )
        if removed:
            return f"unpinned: {label} from conversation {conversation_id}"
        return f"not pinned: {label} to conversation {conversation_id}"

    def _pinnable(self, conversation_id: str, ref: str) -> tuple[str, str, str]:
        """``(kind, target, label)`` of the claim or note ``ref`` names, for the user's
        conversation ``conversation_id``; ``UserError`` otherwise."""
        self._episodes(conversation_id)
        parsed = refs.parse(ref).references
        if len(parsed) != 1:
            raise UserError(f"{ref!r} is not one reference (#12, @friendly_id, [[Note]])")
        resolution = self.resolver().resolve(parsed[0])
        if resolution.error is not None:
            raise UserError(resolution.error)
        kind, target = ref_target(resolution)
        if kind not in ("claim", "note"):
            raise UserError(f"{ref} is a {kind}: a conversation pins a claim or a note")
        label = ref
        if kind == "claim":
            label = f"@{resolution.claims[0].friendly_id}"
        return kind, target, label

    def recall(self, conversation_id: str) -> Recall:
        """Passive recall's inputs for ``build-context --conversation``."""
        episodes = self._episodes(conversation_id)
        pins = self.store.conversation_pins(self.user, conversation_id)
        return Recall(
            turns=tuple(e.text for e in episodes[-RECALL_TURNS:]),
            claim_pins=tuple(label for kind, _, label in pins if kind == "claim"),
            note_pins=tuple(label for kind, _, label in pins if kind == "note"),
            recent=tuple(
                Turn(e.episode_id, e.role, e.text, e.occurred_at) for e in episodes[-RECENT_TURNS:]
            ),
        )

    def given(self, conversation_id: str, found: Iterable[tuple[str, str, str]]) -> None:
        """Record that ``found`` (kind, target, label) was given to the conversation by search,
        on its latest message."""
        rows = [
            EpisodeRef(self._episodes(conversation_id)[-1].row, "search", kind, target, label)
            for kind, target, label in found
        ]
        if rows:
            self.store.add_episode_refs(rows)


def recalled(
    assembler: Assembler,
    conversations: Conversations,
    conversation_id: str,
    text: str,
    *,
    language_id: str | None = None,
    path: str | None = None,
    query: str | None = None,
    pin: Sequence[str] = (),
    **options: Any,
) -> ContextBlock:
    """The context block of ``text`` with passive recall from conversation ``conversation_id``: its
    last messages are shown first (as many as its recent budget holds), its last two join the
    retrieval query, earlier related messages are searched, its pinned claims are
    conversation pins, its pinned notes are referenced; the automatic memories the block
    shows are recorded as the conversation's ``search`` references."""
    recall = conversations.recall(conversation_id)
    base = query
    if base is None:
        base = refs.parse_document(text, language_id=language_id, path=path).clean_text
    if recall.note_pins:
        text = text.rstrip("\n") + "\n\n" + " ".join(recall.note_pins) + "\n"
    block = assembler.build(
        text,
        language_id=language_id,
        path=path,
        query="\n".join([base, *recall.turns]).strip(),
        pin=[*pin, *recall.claim_pins],
        turns=recall.recent,
        **options,
    )
    shown = [
        ("claim", item["claim_id"], f"@{item['friendly_id']}")
        for section in block.sections
        for item in section.items
        if item.get("kind") == "claim" and item.get("label") == "AUTO"
    ]
    conversations.given(conversation_id, shown)
    return block


def _where(kind: str, target: str) -> dict[str, Any]:
    if kind == "note":
        return {"path": target.split("::", 1)[-1]}
    return {"target": target or None}


class _NoteLookup:
    """The notes of the vaults as they are now, by key, read once when first asked."""

    def __init__(self, resolver: Callable[[], Resolver]) -> None:
        self._resolver = resolver
        self._notes: dict[str, Note] | None = None

    def __call__(self, key: str) -> Note | None:
        if self._notes is None:
            self._notes = {
                note.key: note for view in self._resolver().vaults for note in view.notes.values()
            }
        return self._notes.get(key)


SNIPPET_CHARS = 160
"""Characters of a message shown around a reference it makes (``snippet``)."""


def _ref_json(ref: EpisodeRef, text: str, notes: Callable[[str], Note | None]) -> dict[str, Any]:
    """A message's reference as ``conversation show --json`` gives it: for a note, its
    summary (as the context block's referenced documents have it); for a direct reference,
    the words of the message around it (``snippet``)."""
    found: dict[str, Any] = {"label": ref.label, "kind": ref.kind, "via": ref.via}
    found.update(_where(ref.kind, ref.target))
    if ref.kind == "note":
        note = notes(ref.target)
        found["summary"] = summary(note) if note is not None else None
    if ref.via == "direct":
        at = text.find(ref.label)
        if at >= 0:
            start = max(0, at - SNIPPET_CHARS // 2)
            found["snippet"] = one_line(text[start : start + SNIPPET_CHARS], SNIPPET_CHARS)
    if ref.kind == "unresolved":
        found["warning"] = (
            "Warning - Document not found"
            if ref.label.startswith("[[")
            else "Warning - no memory found"
        )
    return found
