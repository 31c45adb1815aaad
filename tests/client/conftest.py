"""Shared fixtures of the client tier: a store and a vault prepared once, and a
pytest-lsp client per recorded editor (VS Code, Neovim 0.7, Neovim 0.11 — which asks for UTF-8
positions) talking to ``python -m lsp_memory serve`` over stdio."""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_memory.services.memory.interchange import import_records
from lsp_memory.store.sqlite import open_store
from tests.conftest import DATA, KB, USER

WORK = Path(tempfile.mkdtemp(prefix="lsp-memory-client-"))
atexit.register(shutil.rmtree, WORK, True)
STORE, VAULT = WORK / "store", WORK / "vault"
ENCODINGS: dict[int, str | None] = {}  # the position encoding each session negotiated
ENV = {
    "PATH": os.environ.get("PATH", ""),
    "HOME": str(WORK / "home"),
    "XDG_CACHE_HOME": str(WORK / "cache"),
    "XDG_CONFIG_HOME": str(WORK / "config"),
    "LSP_MEMORY_STORE": str(STORE),
    "LSP_MEMORY_USER": USER,
    "PYTHONPATH": str(Path(__file__).parents[2]),
}


def prepare() -> None:
    if not STORE.exists():
        with open_store(STORE) as store:
            import_records(store, KB.read_bytes(), user=USER, source="kb")
        shutil.copytree(DATA / "notes", VAULT)


SERVER = ClientServerConfig(
    server_command=[sys.executable, "-m", "lsp_memory", "serve"], server_env=ENV
)
"""``python -m lsp_memory serve`` over the shared store, for fixtures of other clients."""


@pytest_lsp.fixture(  # type: ignore[untyped-decorator]
    params=["visual-studio-code", "neovim@v0.7", "neovim@v0.11"], config=SERVER
)
async def client(
    request: pytest.FixtureRequest, lsp_client: LanguageClient
) -> AsyncIterator[LanguageClient]:
    await ready(lsp_client, client_capabilities(request.param))
    yield lsp_client
    await lsp_client.shutdown_session()


def takes_refreshes(lsp_client: LanguageClient) -> list[str]:
    """Answer the server's ``workspace/codeLens/refresh``, ``workspace/inlayHint/refresh`` and
    ``workspace/semanticTokens/refresh`` as the recorded editors that announce them do (the
    test client refuses unknown requests and fails the test); returns what was asked, in
    order."""
    asked: list[str] = []

    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)  # type: ignore[untyped-decorator]
    def lenses_again(_: None) -> None:
        asked.append("code lenses")

    @lsp_client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)  # type: ignore[untyped-decorator]
    def hints_again(_: None) -> None:
        asked.append("inlay hints")

    @lsp_client.feature(types.WORKSPACE_SEMANTIC_TOKENS_REFRESH)  # type: ignore[untyped-decorator]
    def tokens_again(_: None) -> None:
        asked.append("semantic tokens")

    return asked


async def ready(
    lsp_client: LanguageClient,
    capabilities: types.ClientCapabilities,
    options: dict[str, Any] | None = None,
) -> None:
    """Initialize a session over the shared store and vault (with ``options`` as the
    client's ``initializationOptions``) and wait for the first index sync."""
    prepare()
    takes_refreshes(lsp_client)
    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            workspace_folders=[types.WorkspaceFolder(uri=VAULT.as_uri(), name="vault")],
            initialization_options=options,
        )
    )
    ENCODINGS[id(lsp_client)] = result.capabilities.position_encoding
    for _ in range(300):  # the first index sync runs in the background
        if any("index ready" in m.message for m in lsp_client.log_messages):
            break
        await asyncio.sleep(0.05)
    else:
        pytest.fail(f"no 'index ready' message: {lsp_client.log_messages}")


def open_doc(client: LanguageClient, path: Path, text: str) -> str:
    """Opens Markdown ``text`` as the document at ``path``; its URI."""
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=text
            )
        )
    )
    return uri


def utf8(client: LanguageClient) -> bool:
    """Whether the server chose UTF-8 positions for this client (Neovim ≥ 0.10 asks)."""
    return ENCODINGS.get(id(client)) == types.PositionEncodingKind.Utf8
