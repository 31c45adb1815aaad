"""Writes run off the event loop (``lsp/dispatch.py``): while ``lspMemory.addClaim`` waits
for a store whose write lock another process holds, hover is still answered — the claim
lands once the lock is let go."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import sys
from collections.abc import AsyncIterator

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_memory.services.memory.interchange import import_records
from lsp_memory.store.sqlite import open_store
from lsp_memory.store.sqlite.connection import STORE_FILE
from tests.client.conftest import ENV, WORK, ready
from tests.conftest import KB, USER

STORE = WORK / "off-loop-store"
STATEMENT = "I keep my bicycle in the hallway"


@pytest_lsp.fixture(  # type: ignore[untyped-decorator]
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "lsp_memory", "serve"],
        server_env={**ENV, "LSP_MEMORY_STORE": str(STORE), "XDG_CACHE_HOME": str(WORK / "ol")},
    )
)
async def client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    shutil.rmtree(STORE, ignore_errors=True)
    with open_store(STORE) as store:
        import_records(store, KB.read_bytes(), user=USER, source="kb")
    await ready(lsp_client, client_capabilities("visual-studio-code"))
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_hover_is_answered_while_add_claim_waits_for_the_write_lock(
    client: LanguageClient,
) -> None:
    uri = (WORK / "off-loop.md").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text="See @leaf_active_a001\n"
            )
        )
    )
    hover = types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=0, character=6),
    )
    assert await client.text_document_hover_async(hover) is not None

    holder = sqlite3.connect(STORE / STORE_FILE, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # this process holds the write lock (busy timeout 5 s)
    try:
        adding = asyncio.ensure_future(
            client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="lspMemory.addClaim", arguments=[STATEMENT])
            )
        )
        await asyncio.sleep(0.5)  # the write is now waiting for the lock
        answered = await client.text_document_hover_async(hover)
        assert answered is not None and "leaf" in str(answered.contents).lower()
        assert not adding.done(), "addClaim finished (or failed) before hover was answered"
    finally:
        holder.execute("ROLLBACK")
        holder.close()

    added = await adding
    assert isinstance(added, dict) and added["statement"] == STATEMENT
    with open_store(STORE) as store:
        stored = store.claim_by_number(USER, added["claim_number"])
    assert stored is not None and stored.statement == STATEMENT
