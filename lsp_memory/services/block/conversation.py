"""The conversation in a context block (``--conversation``, MCP ``build_context`` with a
``session_id``, ``lspMemory.buildContext`` with ``conversation``), as seed 001's turn budget
has it: the conversation's last messages verbatim, first and required, within their own
budget (``recent_tokens``); and the earlier messages most related to what is being asked
(episodes), within theirs (``episode_tokens``), filled with the automatic memories.

Each message is one item, ``- [role, time] text`` (a text over several lines keeps them,
indented by two spaces). The newest message is always shown, cut to the recent budget if it
alone is over it; older ones are added while they fit. Episodes are searched by the block's
query, best first, and never repeat a message shown as recent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsp_memory.model import doc_key
from lsp_memory.services.block.pieces import EPISODES, P_AUTO, P_REFERENCED, RECENT, Build, Piece
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
    """The conversation's share of a block: tokens for its last messages (required), and for
    related earlier messages, at most ``episodes`` of them."""

    recent_tokens: int = 400
    episode_tokens: int = 200
    episodes: int = 3


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


def add_episodes(
    build: Build,
    query: str,
    shown: Sequence[Turn],
    budget: TurnBudget,
    counter: TokenCounter,
    *,
    store: Store,
    user: str,
    load_search: Callable[[], HybridSearch | None] | None,
    min_similarity: float | None = None,
) -> None:
    """The earlier messages most related to ``query`` (not among ``shown``), best first, at
    most ``budget.episodes`` of them within ``budget.episode_tokens``."""
    search = load_search() if load_search is not None and query.strip() else None
    if search is None or budget.episodes < 1:
        return
    hits = search.search(
        query,
        user=user,
        kinds=("episode",),
        k=budget.episodes + len(shown),
        diverse=True,
        min_similarity=min_similarity,
    )
    skip = {turn.episode_id for turn in shown}
    wanted = [doc_key(hit.id) for hit in hits if doc_key(hit.id) not in skip]
    found = {e.episode_id: e for e in store.episodes_by_ids(user, wanted)}
    used = taken = 0
    for episode_id in wanted:
        episode = found.get(episode_id)
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
