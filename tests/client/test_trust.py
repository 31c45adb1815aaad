"""The language server on a folder whose ``lsp-memory.toml`` sets a program to run (a cloned
repository): the program never runs — not when a claim is written, not on a consolidation
schedule — and the user is told how to trust the folder."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.client.conftest import ENV, WORK, takes_refreshes

FOLDER = WORK / "cloned"
MARKER = WORK / "cloned-ran"


@pytest_lsp.fixture(  # type: ignore[untyped-decorator]
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "lsp_memory", "serve"],
        server_env={**ENV, "LSP_MEMORY_STORE": str(WORK / "cloned-store")},
    )
)
async def client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    FOLDER.mkdir(exist_ok=True)
    takes_refreshes(lsp_client)

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)  # type: ignore[untyped-decorator]
    def registered(_params: types.RegistrationParams) -> None:
        """The file watcher the server asks for."""

    program = f"/bin/sh -c 'touch {MARKER}'"
    (FOLDER / "lsp-memory.toml").write_text(
        f'classifier_command = "{program}"\nreview_command = "{program}"\n'
        'consolidate_every = "1s"\n',
        encoding="utf-8",
    )
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            workspace_folders=[types.WorkspaceFolder(uri=FOLDER.as_uri(), name="cloned")],
        )
    )
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_a_cloned_folders_program_never_runs(client: LanguageClient) -> None:
    added = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="lspMemory.addClaim", arguments=["I like tea"])
    )
    assert isinstance(added, dict) and added["statement"] == "I like tea"
    await asyncio.sleep(3)  # consolidate_every = 1s: a consolidation and its review ran
    assert not MARKER.exists()
    told = [m.message for m in client.messages if "not trusted" in m.message]
    assert sorted(told) == [
        f"{FOLDER / 'lsp-memory.toml'}: {name} ignored: this folder is not trusted to run "
        f"programs (`lsp-memory trust {FOLDER}` trusts it)"
        for name in ("classifier_command", "review_command")
    ]
