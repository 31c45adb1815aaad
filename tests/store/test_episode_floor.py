"""The relevance floor for episodes, with the real local model: a chat message is further from
a question, in cosine, than a claim is, so episodes have a floor ``EPISODE_FLOOR_BELOW`` under
``min_similarity`` and keep hits down to ``EPISODE_FLOOR_MARGIN`` below it; claims keep theirs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from lsp_memory.app import App
from lsp_memory.config import DEFAULT_MIN_SIMILARITY, Config
from lsp_memory.store.sqlite import Episode
from tests.conftest import USER

MESSAGES = (
    "I have been painting sunsets lately, it calms me down.",  # cosine 0.50 with QUESTION
    "I draw cartoons for my nephew.",  # 0.36
    "The kids loved the camping trip by the lake.",  # 0.10
    "We finally adopted a puppy from the shelter last weekend, a little beagle.",  # 0.16
)
QUESTION = "What have you been painting?"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    config = replace(
        Config(), store=tmp_path / "store", cache=tmp_path / "cache", user=USER, vaults=()
    )
    opened = App(config)
    when = "2026-11-20T10:00:00Z"
    opened.store.add_episodes(
        [
            Episode(f"e{n}", USER, f"chat-{n}", "user", text, when, when)
            for n, text in enumerate(MESSAGES)
        ]
    )
    opened.records().add_claim(MESSAGES[0])
    opened.keeper.index()
    yield opened
    opened.close()


def _found(app: App, kinds: set[str], query: str = QUESTION) -> list[tuple[str, str, float]]:
    hits = app.hybrid_search().search(
        query, user=USER, kinds=kinds, k=10, min_similarity=DEFAULT_MIN_SIMILARITY
    )
    return [(hit.kind, hit.title, round(hit.similarity, 2)) for hit in hits]


def test_episodes_have_a_lower_floor_and_a_wider_margin(app: App) -> None:
    # The best message is under the claims' floor (0.51) and over the episodes' (0.47); the
    # second is kept by the wider margin (0.27 and up), the unrelated ones are not.
    assert [title for _, title, _ in _found(app, {"episode"})] == list(MESSAGES[:2])
    # The same text as a claim: under the claims' floor, nothing.
    assert _found(app, {"claim"}) == []
    # Unrelated questions still find nothing.
    assert _found(app, {"episode"}, "quantum chromodynamics") == []
    assert _found(app, {"episode"}, "What is the capital of France?") == []


def test_a_search_over_both_kinds_keeps_each_hit_by_its_kind(app: App) -> None:
    """Over claims and episodes (``all``, MCP ``both``) the message reaching its floor is
    enough to find something; then each hit is kept by its kind's margin: the claim at 0.50
    (claims: down to 0.46), the second message at 0.36 (episodes: down to 0.27)."""
    found = {(kind, title) for kind, title, _ in _found(app, {"claim", "episode"})}
    assert found == {("claim", MESSAGES[0]), ("episode", MESSAGES[0]), ("episode", MESSAGES[1])}
