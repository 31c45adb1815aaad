"""A user's conversations — the ones their episodes belong to — with the references each
message made or was given (``conversation list``, ``conversation show``, ``conversation
pin|unpin``), and passive recall from one (``build-context --conversation``).

A message's references are ``direct`` (the ``@…``, ``#N`` and ``[[…]]`` tokens in its text,
resolved when it was stored; a broken ``[[link]]`` is kept), ``search`` (what
``build-context --conversation`` gave the conversation) or ``tool`` (what ``search_memory``
gave it), kept on its latest message. A conversation's pins are claims or notes it should
always see.

Passive recall (the claims and earlier messages related to a conversation's last two
messages) is made ahead when a server sees new messages (:class:`RecallCache`, seed 001's
mode A) and a block asked for afterwards uses it.

(A conversation was called a conversation before; the store's tables and the JSON field
``session_id`` keep that name.)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from lsp_memory import refs
from lsp_memory.errors import UserError
from lsp_memory.ids import now
from lsp_memory.model import Note
from lsp_memory.services.block.conversation import Streamed, ToolResult, Turn
from lsp_memory.services.block.notes import summary
from lsp_memory.services.conversations.ingest import ref_target
from lsp_memory.services.kernel.resolver import Resolver
from lsp_memory.store.sqlite import Episode, EpisodeRef, Store
from lsp_memory.text import cut, one_line

if TYPE_CHECKING:
    from lsp_memory.services.block import Assembler, ContextBlock

RECENT_TURNS = 10
"""How many of a conversation's last messages the block may show (its recent budget picks)."""
TOOL_TURNS = 3
"""How many of a conversation's last messages hold the search results a block shows: the
last exchange, and the message before it, which a search made before that exchange was
stored was kept on."""
KEPT_RECALLS = 16
"""How many conversations' recalls a :class:`RecallCache` keeps."""


@dataclass(frozen=True, slots=True)
class Recall:
    """What a conversation adds to a context block: its pins (claims as conversation pins,
    notes as references), its last messages and the search results they were given."""

    claim_pins: tuple[str, ...]
    note_pins: tuple[str, ...]
    recent: tuple[Turn, ...] = ()
    tools: tuple[ToolResult, ...] = ()


class RecallCache:
    """Passive recall made ahead: each conversation's last recall (:class:`Streamed`), kept
    while the conversation's newest message, the store and the block's shares are the same
    (its key). Shared by the threads of one server."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, tuple[Hashable, Streamed]] = OrderedDict()

    def get(self, conversation_id: str, key: Hashable) -> Streamed | None:
        with self._lock:
            kept = self._kept.get(conversation_id)
        return kept[1] if kept is not None and kept[0] == key else None

    def put(self, conversation_id: str, key: Hashable, streamed: Streamed) -> None:
        with self._lock:
            self._kept.pop(conversation_id, None)
            self._kept[conversation_id] = (key, streamed)
            while len(self._kept) > KEPT_RECALLS:
                self._kept.popitem(last=False)


RECENT_TEXT = 300
"""The most characters of a message ``Conversations.recent`` gives: enough to tell what it
was about, and the conversation's id to read it whole."""


class Conversations:
    """One user's conversations."""

    def __init__(
        self,
        store: Store,
        user: str,
        resolver: Callable[[], Resolver],
        cache: RecallCache | None = None,
    ) -> None:
        self.store = store
        self.user = user
        self.resolver = resolver
        self.cache = cache

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

    def recent(self, start: str, limit: int) -> dict[str, Any]:
        """The messages since ``start`` (their time, not when they were stored): how many,
        and the newest ``limit``, newest first, each with its conversation and its text cut
        to ``RECENT_TEXT`` characters (MCP ``recent_activity``)."""
        count, episodes = self.store.episodes_since(self.user, start, limit)
        return {
            "count": count,
            "latest": [
                {
                    "episode_id": e.episode_id,
                    "session_id": e.conversation_id,
                    "role": e.role,
                    "timestamp": e.occurred_at,
                    "text": cut(e.text, RECENT_TEXT),
                }
                for e in episodes
            ],
        }

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
        tools = self.store.tool_refs([e.row for e in episodes[-TOOL_TURNS:]])
        return Recall(
            claim_pins=tuple(label for kind, _, label in pins if kind == "claim"),
            note_pins=tuple(label for kind, _, label in pins if kind == "note"),
            recent=tuple(
                Turn(e.episode_id, e.role, e.text, e.occurred_at) for e in episodes[-RECENT_TURNS:]
            ),
            tools=tuple(ToolResult(r.kind, r.target, r.label) for r in tools),
        )

    def given(
        self, conversation_id: str, found: Iterable[tuple[str, str, str]], *, via: str = "search"
    ) -> None:
        """Record that ``found`` (kind, target, label) was given to the conversation, on its
        latest message: by a block (``search``) or by ``search_memory`` (``tool``)."""
        rows = [
            EpisodeRef(self._episodes(conversation_id)[-1].row, via, kind, target, label)
            for kind, target, label in found
        ]
        if rows:
            self.store.add_episode_refs(rows)

    def prepare(self, assembler: Assembler, conversation_id: str) -> bool:
        """Make the conversation's passive recall ahead (a server calls this when its new
        messages arrive); False when it was made already, or there is no cache."""
        if self.cache is None:
            return False
        recent = self.recall(conversation_id).recent
        key = self._key(assembler, recent)
        if self.cache.get(conversation_id, key) is not None:
            return False
        streamed = assembler.recall(recent)
        self.cache.put(conversation_id, key, replace(streamed, precomputed=True))
        return True

    def streamed(
        self, assembler: Assembler, conversation_id: str, recent: Sequence[Turn]
    ) -> Streamed | None:
        """The conversation's recall made ahead, if it still holds."""
        if self.cache is None or not recent:
            return None
        return self.cache.get(conversation_id, self._key(assembler, recent))

    def _key(self, assembler: Assembler, recent: Sequence[Turn]) -> Hashable:
        newest = recent[-1].episode_id if recent else ""
        return (newest, self.store.last_change(), assembler.turn_budget, assembler.min_similarity)


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
    """The context block of ``text`` serving conversation ``conversation_id``: its last
    messages are shown first (as many as its recent budget holds), then what
    ``search_memory`` gave its last turn; the claims and earlier messages related to its last
    two messages are recalled (made ahead if a server did, else now); its pinned claims are
    conversation pins, its pinned notes are referenced. The automatic memories the block
    shows are recorded as the conversation's ``search`` references."""
    recall = conversations.recall(conversation_id)
    made = conversations.streamed(assembler, conversation_id, recall.recent)
    base = query
    if base is None:
        base = refs.parse_document(text, language_id=language_id, path=path).clean_text
    if recall.note_pins:
        text = text.rstrip("\n") + "\n\n" + " ".join(recall.note_pins) + "\n"
    block = assembler.build(
        text,
        language_id=language_id,
        path=path,
        query=base,
        pin=[*pin, *recall.claim_pins],
        turns=recall.recent,
        streamed=made or assembler.recall(recall.recent),
        tool_results=recall.tools,
        **options,
    )
    block = replace(block, recall="precomputed" if made is not None else "computed")
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
