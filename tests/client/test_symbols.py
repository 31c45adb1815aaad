"""Workspace symbols (the hybrid search) through a real JSON-RPC client, with the recorded
capabilities of VS Code and Neovim 0.7 and 0.11 — none of which resolves symbols lazily — and
a client that does (``workspaceSymbol/resolve``, LSP 3.17)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.uris import to_fs_path
from pytest_lsp import LanguageClient, client_capabilities

from tests.client.conftest import SERVER, VAULT, ready

Symbols = Sequence[types.SymbolInformation] | Sequence[types.WorkspaceSymbol]


async def symbols(client: LanguageClient, query: str) -> Symbols:
    found = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query=query))
    return found or []


def page_text(uri: str) -> str:
    path = to_fs_path(uri)
    assert path is not None
    return Path(path).read_text(encoding="utf-8")


async def test_claims_contexts_entities_and_notes_are_symbols(client: LanguageClient) -> None:
    found = await symbols(client, "Leaf service PostgreSQL")
    names = [s.name for s in found]
    assert "The Leaf service uses PostgreSQL 16" in names
    assert "The Leaf service uses PostgreSQL 14" not in names  # #4 is superseded
    assert not any(name.startswith("MALLORY") for name in names)  # another user's claims
    claim = found[names.index("The Leaf service uses PostgreSQL 16")]
    assert claim.kind == types.SymbolKind.Constant
    assert claim.container_name == "@leaf_active_a001 · claim"
    assert isinstance(claim, types.SymbolInformation)  # no lazy resolution in these clients
    assert "The Leaf service uses PostgreSQL 16" in page_text(claim.location.uri)

    alice = {s.name: s for s in await symbols(client, "Alice")}
    note = alice["Alice Notes"]
    assert note.kind == types.SymbolKind.File
    assert isinstance(note.location, types.Location)
    assert note.location.uri == (VAULT / "alice.md").as_uri()
    assert alice["Alice"].kind == types.SymbolKind.Class  # the entity alice_ent
    assert alice["Alice"].container_name == "@alice_ent · entity"


async def test_a_blank_or_unmatched_query_gives_no_symbols(client: LanguageClient) -> None:
    assert await symbols(client, "") == []
    assert await symbols(client, "   ") == []
    assert await symbols(client, "zzqxv") == []


def _lazy_capabilities() -> types.ClientCapabilities:
    capabilities = client_capabilities("visual-studio-code")
    assert capabilities.workspace is not None and capabilities.workspace.symbol is not None
    capabilities.workspace.symbol.resolve_support = types.ClientSymbolResolveOptions(
        properties=["location.range"]
    )
    return capabilities


@pytest_lsp.fixture(config=SERVER)  # type: ignore[untyped-decorator]
async def lazy(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    """A client that resolves workspace symbols' ranges when one is picked."""
    await ready(lsp_client, _lazy_capabilities())
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest.mark.parametrize("query", ["Leaf service PostgreSQL"])
async def test_a_lazy_client_gets_the_page_when_a_symbol_is_picked(
    lazy: LanguageClient, query: str
) -> None:
    found = await symbols(lazy, query)
    claim = next(s for s in found if s.name == "The Leaf service uses PostgreSQL 16")
    assert isinstance(claim, types.WorkspaceSymbol)
    assert isinstance(claim.location, types.LocationUriOnly)
    assert "/pages/" in claim.location.uri
    assert claim.location.uri.endswith("/claim/leaf_active_a001.md")
    picked = await lazy.workspace_symbol_resolve_async(claim)
    assert isinstance(picked.location, types.Location)
    assert picked.location.uri == claim.location.uri
    assert picked.location.range.start == types.Position(line=0, character=0)
    assert "The Leaf service uses PostgreSQL 16" in page_text(picked.location.uri)
    # A symbol the server did not make comes back as it went.
    foreign = types.WorkspaceSymbol(
        name="x", kind=types.SymbolKind.File, location=types.LocationUriOnly(uri="file:///x")
    )
    assert await lazy.workspace_symbol_resolve_async(foreign) == foreign
    note = next(s for s in await symbols(lazy, "Alice") if s.name == "Alice Notes")
    assert isinstance(note.location, types.Location)  # a note's file needs no resolving


async def test_symbols_find_meaning_once_embedded(client: LanguageClient) -> None:
    """No word in common: found by the local embeddings, drained in the background."""
    for _ in range(400):
        names = [s.name for s in await symbols(client, "when do I exercise")]
        if "Walk 8000 steps every day" in names:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not found by meaning: {names}")
