"""The conversation in a context block (``--conversation``, MCP ``build_context`` with a
``session_id``, ``lspMemory.buildContext`` with ``conversation``), each part within its own
share of the block's budget (docs/reference.md, Passive recall):

- the conversation's last messages verbatim, first and required (``recent_tokens``);
- what the assistant found with ``search_memory`` in the conversation's last turn
  (``tool_tokens``), right after what the user referenced, attached or pinned;
- passive recall (:class:`Streamed`): the claims (``fact_tokens``) and the earlier messages
  (``episode_tokens``) most related to the conversation's last two messages, searched as soon
  as those messages arrive, before the next block is asked for; the earlier messages most
  related to the prompt itself come first among the episodes (the automatic memories serve
  the prompt among the claims).

Each message is one item, ``- [role, time] text`` (a text over several lines keeps them,
indented by two spaces). The newest message is always shown, cut to the recent budget if it
alone is over it; older ones are added while they fit. Episodes never repeat a message shown
as recent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsp_memory.model import LIVE_STATUSES, MIN_CONFIDENCE, Note, doc_id, doc_key
from lsp_memory.services.block.claims import claim_data, claim_line
from lsp_memory.services.block.notes import summary
from lsp_memory.services.block.pieces import (
    EPISODES,
    MEMORY,
    P_AUTO,
    P_LABELLED,
    P_REFERENCED,
    RECENT,
    SEARCHED,
    Build,
    Piece,
)
from lsp_memory.services.kernel.tokens import TokenCounter
from lsp_memory.store.sqlite import Store
from lsp_memory.text import ELLIPSIS

if TYPE_CHECKING:
    from lsp_memory.services.retrieval.search import HybridSearch


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of the conversation, as the block shows it."""

    episode_id: str
    role: str  # user, assistant
    text: str
    when: str  # a stored timestamp


@dataclass(frozen=True, slots=True)
class TurnBudget:
    """The conversation's shares of a block, in tokens: its last messages (required), the
    assistant's search results, the recalled claims (at most ``facts``) and the recalled
    earlier messages (at most ``episodes``)."""

    recent_tokens: int = 400
    episode_tokens: int = 200
    episodes: int = 3
    fact_tokens: int = 200
    facts: int = 5
    tool_tokens: int = 400


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One result ``search_memory`` gave the conversation: what it names (``kind``, and
    ``target``: a claim's or episode's id, a note's key) and how it was shown (``label``)."""

    kind: str
    target: str
    label: str


@dataclass(frozen=True, slots=True)
class Streamed:
    """Passive recall from a conversation's last messages: the claim ids and episode ids most
    related to them, best first. ``precomputed``: found in the background when the messages
    arrived, not while the block was asked for."""

    facts: tuple[str, ...] = ()
    episodes: tuple[str, ...] = ()
    precomputed: bool = False


_LIVE = tuple(status.value for status in LIVE_STATUSES)


def recall_query(turns: Sequence[Turn]) -> str:
    """What passive recall searches by: the conversation's last two messages."""
    return "\n".join(turn.text for turn in turns[-2:]).strip()


def stream(
    search: HybridSearch | None,
    query: str,
    budget: TurnBudget,
    *,
    user: str,
    skip: int = 0,
    min_similarity: float | None = None,
) -> Streamed:
    """The claims and earlier messages most related to ``query`` (one embedding for both
    searches); ``skip`` more messages are asked for, as many as the recent part may show."""
    if search is None or not query.strip():
        return Streamed()
    facts = search.search(  # the query embedded while its words are searched
        query,
        user=user,
        kinds=("claim",),
        statuses=_LIVE,
        k=budget.facts + skip,  # some may be drawn from the messages shown
        min_confidence=MIN_CONFIDENCE,
        diverse=True,
        min_similarity=min_similarity,
    )
    vector = search.query_vector(query) if search.semantic else None  # kept: the same
    episodes = related_messages(
        search, query, budget, user=user, skip=skip, min_similarity=min_similarity, vector=vector
    )
    return Streamed(tuple(doc_key(hit.id) for hit in facts), episodes)


def related_messages(
    search: HybridSearch | None,
    query: str,
    budget: TurnBudget,
    *,
    user: str,
    skip: int = 0,
    min_similarity: float | None = None,
    vector: Any = None,
) -> tuple[str, ...]:
    """The ids of the messages most related to ``query``, best first: ``budget.episodes``
    and ``skip`` more."""
    if search is None or not query.strip():
        return ()
    hits = search.search(
        query,
        user=user,
        kinds=("episode",),
        k=budget.episodes + skip,
        diverse=True,
        query_vector=vector,
        min_similarity=min_similarity,
    )
    return tuple(doc_key(hit.id) for hit in hits)


def message_line(role: str, when: str, text: str) -> str:
    """``- [user, 2026-11-20 10:05] text`` and a newline; further lines indented."""
    lines = [line.rstrip() for line in text.strip().splitlines()] or [""]
    body = "\n".join("  " + line if line else "" for line in lines)[2:]
    return f"- [{role}, {when[:16].replace('T', ' ')}] {body}\n"


def add_recent(
    build: Build, turns: Sequence[Turn], budget: TurnBudget, counter: TokenCounter
) -> None:
    """The last of ``turns`` (oldest first) that fit in ``budget.recent_tokens``, newest
    kept first, as required items shown oldest first."""
    chosen: list[tuple[Turn, str]] = []
    used = 0
    for turn in reversed(turns):
        line = message_line(turn.role, turn.when, turn.text)
        size = counter.count(line)
        if used + size > budget.recent_tokens:
            if chosen:
                break
            line = _cut(line, budget.recent_tokens, counter)
            size = counter.count(line)
        chosen.append((turn, line))
        used += size
    for turn, line in reversed(chosen):
        build.add(
            Piece(
                RECENT,
                P_REFERENCED,
                "message",
                f"message:{turn.episode_id}",
                line,
                {
                    "kind": "message",
                    "episode_id": turn.episode_id,
                    "role": turn.role,
                    "timestamp": turn.when,
                    "text": turn.text,
                },
                referenced=True,  # required: never dropped for the budget
            )
        )


def add_tool_results(
    build: Build,
    results: Sequence[ToolResult],
    budget: TurnBudget,
    counter: TokenCounter,
    *,
    store: Store,
    user: str,
    note: Callable[[str], Note | None],
) -> None:
    """What ``search_memory`` gave the conversation in its last turn, in the order given,
    within ``budget.tool_tokens``: a claim as a SEARCHED claim (once in the block), a message
    as a message line, a note as its title and summary, anything else as its reference."""
    claims = {c.claim_id: c for c in store.claims_by_ids(user, [r.target for r in results])}
    episodes = {
        e.episode_id: e
        for e in store.episodes_by_ids(user, [r.target for r in results if r.kind == "episode"])
    }
    present = {piece.key for piece in build.pieces}  # a message shown as recent is not again
    used = 0
    for result in results:
        data: dict[str, object] = {"kind": result.kind, "ref": result.label}
        claim = claims.get(result.target) if result.kind == "claim" else None
        if result.kind == "claim":
            if claim is None or claim.claim_id in build.shown:
                continue
            line = claim_line("SEARCHED", claim)
            data = claim_data("SEARCHED", result.label, claim)
            key = doc_id("claim", claim.claim_id)
        elif result.kind == "episode":
            episode = episodes.get(result.target)
            if episode is None:
                continue
            line = message_line(episode.role, episode.occurred_at, episode.text)
            data.update(episode_id=episode.episode_id, text=episode.text)
            key = f"message:{episode.episode_id}"
            if key in present:
                continue
        elif result.kind == "note":
            found = note(result.target)
            if found is None:
                continue
            about = summary(found)
            line = f"- [[{found.title}]]" + (f": {about}" if about else "") + "\n"
            data.update(path=found.path, title=found.title, summary=about)
            key = f"searched:{result.target}"
        else:
            line = f"- [{result.kind}] {result.label}\n"
            key = f"searched:{result.kind}:{result.target}"
        size = counter.count(line)
        if used + size > budget.tool_tokens:
            break
        if claim is not None:
            build.shown[claim.claim_id] = claim
        build.add(Piece(SEARCHED, P_LABELLED, result.kind, key, line, data))
        used += size


def add_streamed_facts(
    build: Build,
    streamed: Streamed,
    budget: TurnBudget,
    counter: TokenCounter,
    *,
    store: Store,
    user: str,
) -> None:
    """The claims passive recall found, best first, as AUTO claims (tier ``conversation``)
    not already in the block — nor drawn only from messages it shows verbatim — within
    ``budget.fact_tokens``."""
    found = {c.claim_id: c for c in store.claims_by_ids(user, list(streamed.facts))}
    messages = {p.key.removeprefix("message:") for p in build.pieces if p.kind == "message"}
    used = 0
    for claim_id in streamed.facts:
        claim = found.get(claim_id)
        if claim is None or claim_id in build.shown or claim.status not in LIVE_STATUSES:
            continue
        if claim.derived_from and set(claim.derived_from) <= messages:
            continue
        line = claim_line("AUTO", claim)
        size = counter.count(line)
        if used + size > budget.fact_tokens:
            break
        build.shown[claim_id] = claim
        data = claim_data("AUTO", None, claim)
        data["tier"] = "conversation"
        build.add(Piece(MEMORY, P_AUTO, "claim", doc_id("claim", claim_id), line, data))
        used += size


def add_episodes(
    build: Build,
    found: Sequence[str],
    shown: Sequence[Turn],
    budget: TurnBudget,
    counter: TokenCounter,
    *,
    store: Store,
    user: str,
) -> None:
    """The messages of ``found`` (ids, best first) not among ``shown``, at most
    ``budget.episodes`` of them within ``budget.episode_tokens``."""
    if budget.episodes < 1:
        return
    skip = {turn.episode_id for turn in shown}
    wanted = [episode_id for episode_id in dict.fromkeys(found) if episode_id not in skip]
    episodes = {e.episode_id: e for e in store.episodes_by_ids(user, wanted)}
    used = taken = 0
    for episode_id in wanted:
        episode = episodes.get(episode_id)
        if episode is None or taken >= budget.episodes:
            continue
        line = message_line(episode.role, episode.occurred_at, episode.text)
        size = counter.count(line)
        if used + size > budget.episode_tokens:
            line = _cut(line, budget.episode_tokens - used, counter)
            size = counter.count(line)
            if size > budget.episode_tokens - used or line.strip() == "":
                break
        build.add(
            Piece(
                EPISODES,
                P_AUTO,
                "episode",
                f"episode:{episode_id}",
                line,
                {
                    "kind": "episode",
                    "episode_id": episode_id,
                    "conversation": episode.conversation_id,
                    "role": episode.role,
                    "timestamp": episode.occurred_at,
                    "text": episode.text,
                },
            )
        )
        used += size
        taken += 1


def _cut(line: str, tokens: int, counter: TokenCounter) -> str:
    """``line`` cut to ``tokens`` (ending ``…`` and a newline), or "" when too few."""
    if tokens < 8:
        return ""
    return counter.head(line, tokens - 2).rstrip() + ELLIPSIS + "\n"
