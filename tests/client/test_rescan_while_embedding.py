"""While the server embeds a long queue (a new vault: minutes), it keeps syncing: a note
renamed on disk in an editor that cannot watch files used to stay invisible until the whole
queue was embedded (127 s on 10 000 notes), since the queue was drained between two syncs
in one go. Now the queue is embedded between syncs, never instead of them."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.client.conftest import ENV, WORK, takes_refreshes

NOTES = 1500
HOME = WORK / "embedding"
VAULT = HOME / "vault"


def write_vault() -> None:
    VAULT.mkdir(parents=True, exist_ok=True)
    for n in range(NOTES):
        (VAULT / f"note {n}.md").write_text(
            f"# Note {n}\n\nField report number {n}: the river rose {n % 97} cm near bridge "
            f"{n % 13}, and crew {n % 7} moved sandbags to street {n}.\n",
            encoding="utf-8",
        )


@pytest_lsp.fixture(  # type: ignore[untyped-decorator]
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "lsp_memory", "serve"],
        server_env={
            **ENV,
            "LSP_MEMORY_STORE": str(HOME / "store"),
            "XDG_CACHE_HOME": str(HOME / "cache"),
        },
    ),
)
async def client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    write_vault()
    takes_refreshes(lsp_client)
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("neovim@v0.7"),  # cannot watch files
            workspace_folders=[types.WorkspaceFolder(uri=VAULT.as_uri(), name="vault")],
        )
    )
    for _ in range(1200):
        if any("index ready" in m.message for m in lsp_client.log_messages):
            break
        await asyncio.sleep(0.05)
    yield lsp_client
    await lsp_client.shutdown_session()


async def command(client: LanguageClient, name: str, *arguments: Any) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=list(arguments))
    )


async def test_a_renamed_note_is_found_while_the_queue_is_embedded(client: LanguageClient) -> None:
    status = await command(client, "lspMemory.status")
    assert status["index"]["pending"] > NOTES // 2, status  # most of the queue is ahead
    (VAULT / "note 7.md").rename(VAULT / "Zebrafish survey.md")
    (VAULT / "Zebrafish survey.md").write_text("# Zebrafish survey\n\nCounted 40.\n")
    found: list[str] = []
    for _ in range(100):  # two syncs of 2 s each, with their rescans, and some slack
        hits = await command(client, "lspMemory.search", "zebrafish survey", "note", 5)
        found = [hit["title"] for hit in hits or []]
        if "Zebrafish survey" in found:
            break
        await asyncio.sleep(0.1)
    assert "Zebrafish survey" in found, found
    status = await command(client, "lspMemory.status")
    assert status["index"]["pending"] > 0, status  # found before the queue was embedded
    assert status["notes"] == NOTES
