"""``lspMemory.search`` and the relevance floor (setting ``min_similarity``, editor name
``minSimilarity``): once the embeddings are in, a query BM25 finds but that means something
else gets no hit; a related one still does; a lower floor from the editor lets it back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from tests.client.conftest import SERVER, ready

UNRELATED = "Friday chromodynamics"  # "Friday" is in a claim; the meaning is not (cosine 0.22)
FRIDAY = "I review my notes every Friday afternoon"


async def search(client: LanguageClient, query: str) -> list[dict[str, Any]]:
    found = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="lspMemory.search", arguments=[query, "claim", 5])
    )
    assert isinstance(found, list)
    return found


async def embedded(client: LanguageClient) -> None:
    """Wait until the server searches with vectors (the floor needs them)."""
    for _ in range(600):
        hits = await search(client, "Which database does Leaf use?")
        if any(hit["similarity"] > 0 for hit in hits):
            return
        await asyncio.sleep(0.1)
    pytest.fail("the server never searched with vectors")


@pytest_lsp.fixture(config=SERVER)  # type: ignore[untyped-decorator]
async def default(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    await ready(lsp_client, client_capabilities("visual-studio-code"))
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER)  # type: ignore[untyped-decorator]
async def lower(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    lsp_client.set_configuration({"minSimilarity": 0.2}, section="lspMemory")
    await ready(lsp_client, client_capabilities("visual-studio-code"))
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_hits_below_the_floor_are_left_out(default: LanguageClient) -> None:
    await embedded(default)
    assert await search(default, UNRELATED) == []
    related = await search(default, "Which database does Leaf use?")
    assert related[0]["title"] == "The Leaf service uses PostgreSQL 16"


async def test_a_lower_floor_from_the_editor_lets_them_back(lower: LanguageClient) -> None:
    await embedded(lower)
    assert [hit["title"] for hit in await search(lower, UNRELATED)][:1] == [FRIDAY]
