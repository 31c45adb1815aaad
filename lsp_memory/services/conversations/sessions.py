"""Sessions: the conversations a user's episodes belong to, with the references each message
made or was given (``session list``, ``session show``, ``session pin``), and passive recall's
inputs for ``build-context --session``.

A message's references are ``direct`` (the ``@…``, ``#N`` and ``[[…]]`` tokens in its text,
resolved when it was stored; a broken ``[[link]]`` is kept) or ``search`` (what
``search_memory`` or ``build-context --session`` gave the session, kept on its latest
message). A session's pins are claims or notes it should always see.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsp_memory import refs
from lsp_memory.errors import UserError
from lsp_memory.ids import now
from lsp_memory.services.conversations.ingest import ref_target
from lsp_memory.services.kernel.resolver import Resolver
from lsp_memory.store.sqlite import Episode, EpisodeRef, Store

if TYPE_CHECKING:
    from lsp_memory.services.block import Assembler, ContextBlock

RECALL_TURNS = 2
"""How many of a session's last messages join the query of passive recall."""


@dataclass(frozen=True, slots=True)
class Recall:
    """What passive recall adds to a context block: the session's last turns (for the
    query) and its pins (claims as conversation pins, notes as references)."""

    turns: tuple[str, ...]
    claim_pins: tuple[str, ...]
    note_pins: tuple[str, ...]


class Sessions:
    """One user's sessions."""

    def __init__(self, store: Store, user: str, resolver: Callable[[], Resolver]) -> None:
        self.store = store
        self.user = user
        self.resolver = resolver

    def summaries(self) -> list[dict[str, Any]]:
        return [
            {"session_id": s.session_id, "messages": s.messages, "first": s.first, "last": s.last}
            for s in self.store.sessions(self.user)
        ]

    def _episodes(self, session_id: str) -> list[Episode]:
        episodes = self.store.session_episodes(self.user, session_id)
        if not episodes:
            raise UserError(f"no session {session_id!r}: `lsp-memory session list` shows yours")
        return episodes

    def show(self, session_id: str) -> dict[str, Any]:
        """The session's messages with their references, and its pins."""
        episodes = self._episodes(session_id)
        found: dict[int, list[EpisodeRef]] = {}
        for ref in self.store.episode_refs([e.row for e in episodes]):
            found.setdefault(ref.episode_row, []).append(ref)
        return {
            "session_id": session_id,
            "messages": [
                {
                    "episode_id": e.episode_id,
                    "role": e.role,
                    "timestamp": e.occurred_at,
                    "source": e.source,
                    "channel": e.channel,
                    "text": e.text,
                    "references": [_ref_json(r) for r in found.get(e.row, [])],
                }
                for e in episodes
            ],
            "pins": [
                {"kind": kind, "label": label, **_where(kind, target)}
                for kind, target, label in self.store.session_pins(self.user, session_id)
            ],
        }

    def pin(self, session_id: str, ref: str) -> str:
        """Pin a claim or note to the session; one line saying what happened."""
        self._episodes(session_id)
        parsed = refs.parse(ref).references
        if len(parsed) != 1:
            raise UserError(f"{ref!r} is not one reference (#12, @friendly_id, [[Note]])")
        resolution = self.resolver().resolve(parsed[0])
        if resolution.error is not None:
            raise UserError(resolution.error)
        kind, target = ref_target(resolution)
        if kind not in ("claim", "note"):
            raise UserError(f"{ref} is a {kind}: a session pins a claim or a note")
        label = ref
        if kind == "claim":
            label = f"@{resolution.claims[0].friendly_id}"
        added = self.store.pin_to_session(
            self.user, session_id, kind=kind, target=target, label=label, when=now()
        )
        return f"{'pinned' if added else 'already pinned'}: {label} to session {session_id}"

    def recall(self, session_id: str) -> Recall:
        """Passive recall's inputs for ``build-context --session``."""
        episodes = self._episodes(session_id)
        pins = self.store.session_pins(self.user, session_id)
        return Recall(
            turns=tuple(e.text for e in episodes[-RECALL_TURNS:]),
            claim_pins=tuple(label for kind, _, label in pins if kind == "claim"),
            note_pins=tuple(label for kind, _, label in pins if kind == "note"),
        )

    def given(self, session_id: str, found: Iterable[tuple[str, str, str]]) -> None:
        """Record that ``found`` (kind, target, label) was given to the session by search,
        on its latest message."""
        rows = [
            EpisodeRef(self._episodes(session_id)[-1].row, "search", kind, target, label)
            for kind, target, label in found
        ]
        if rows:
            self.store.add_episode_refs(rows)


def recalled(
    assembler: Assembler,
    sessions: Sessions,
    session_id: str,
    text: str,
    *,
    language_id: str | None = None,
    path: str | None = None,
    query: str | None = None,
    pin: Sequence[str] = (),
    **options: Any,
) -> ContextBlock:
    """The context block of ``text`` with passive recall from session ``session_id``: its
    last two messages join the retrieval query, its pinned claims are conversation pins, its
    pinned notes are referenced; the automatic memories the block shows are recorded as the
    session's ``search`` references."""
    recall = sessions.recall(session_id)
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
        **options,
    )
    shown = [
        ("claim", item["claim_id"], f"@{item['friendly_id']}")
        for section in block.sections
        for item in section.items
        if item.get("kind") == "claim" and item.get("label") == "AUTO"
    ]
    sessions.given(session_id, shown)
    return block


def _where(kind: str, target: str) -> dict[str, Any]:
    if kind == "note":
        return {"path": target.split("::", 1)[-1]}
    return {"target": target or None}


def _ref_json(ref: EpisodeRef) -> dict[str, Any]:
    found: dict[str, Any] = {"label": ref.label, "kind": ref.kind, "via": ref.via}
    found.update(_where(ref.kind, ref.target))
    if ref.kind == "unresolved":
        found["warning"] = (
            "Warning - Document not found"
            if ref.label.startswith("[[")
            else "Warning - no memory found"
        )
    return found
