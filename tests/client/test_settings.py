"""Editor settings through ``workspace/configuration`` (section ``lspMemory``): read after
``initialized`` over ``lsp-memory.toml`` and ``initializationOptions``, bad ones reported and
their defaults kept, and read again on ``workspace/didChangeConfiguration``, which restarts
the session when they change it — here, whose memory the server serves."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from tests.client.conftest import SERVER, VAULT, WORK, prepare, ready, takes_refreshes
from tests.conftest import USER

TEXT = "See @leaf_active_a001 today\n"


@pytest_lsp.fixture(config=SERVER)  # type: ignore[untyped-decorator]
async def configured(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    """A VS Code client whose settings say: serve mallory's memory (and two bad keys)."""
    lsp_client.set_configuration(
        {"user": "mallory", "budget": "lots", "fancyKey": 1, "trace": "verbose", "store": None},
        section="lspMemory",
    )
    await ready(lsp_client, client_capabilities("visual-studio-code"))
    yield lsp_client
    await lsp_client.shutdown_session()


async def hover_text(client: LanguageClient, uri: str) -> str:
    found = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=0, character=6),
        )
    )
    assert found is not None and isinstance(found.contents, types.MarkupContent)
    return found.contents.value


async def test_settings_are_read_and_follow_changes(configured: LanguageClient) -> None:
    client = configured
    warnings = [m.message for m in client.messages if m.type == types.MessageType.Warning]
    assert any("setting 'budget'" in w and "using the default" in w for w in warnings), warnings
    assert any("unknown setting 'fancyKey'" in w for w in warnings), warnings
    assert not any("trace" in w or "'store'" in w for w in warnings)  # the extension's, unset

    uri = (WORK / "settings.md").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=TEXT
            )
        )
    )
    assert "MALLORY: the Leaf service uses MySQL" in await hover_text(client, uri)

    client.set_configuration({"user": USER}, section="lspMemory")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    for _ in range(200):  # indexed again, for the new user
        logs = [m.message for m in client.log_messages]
        if sum("index ready" in m for m in logs) == 2:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError(logs)
    assert "lsp-memory: settings changed; reindexing" in logs
    assert "The Leaf service uses PostgreSQL 16" in await hover_text(client, uri)

    restarts = logs.count("lsp-memory: settings changed; reindexing")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    assert "The Leaf service uses PostgreSQL 16" in await hover_text(client, uri)
    await asyncio.sleep(0.2)
    same = [m.message for m in client.log_messages]
    assert same.count("lsp-memory: settings changed; reindexing") == restarts  # nothing changed


@pytest_lsp.fixture(config=SERVER)  # type: ignore[untyped-decorator]
async def eager(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    """A client that pushes its settings right after ``initialized``, as Neovim >= 0.10
    does when its ``settings`` are not empty."""
    lsp_client.set_configuration({"budget": 1200}, section="lspMemory")

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)  # type: ignore[untyped-decorator]
    def register(_params: types.RegistrationParams) -> None:
        """Accept the server's registrations, as VS Code does."""

    takes_refreshes(lsp_client)
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            workspace_folders=[types.WorkspaceFolder(uri=VAULT.as_uri(), name="vault")],
        )
    )
    lsp_client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"lspMemory": {"budget": 1200}})
    )
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_settings_pushed_at_once_start_one_session(eager: LanguageClient) -> None:
    client = eager
    for _ in range(300):
        if any("index ready" in m.message for m in client.log_messages):
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.0)  # a second session would report by now
    logs = [m.message for m in client.log_messages]
    assert sum("index ready" in m for m in logs) == 1, logs
    assert not any("failed" in m or "reindexing" in m for m in logs), logs
    uri = (WORK / "eager.md").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=TEXT
            )
        )
    )
    block = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="lspMemory.buildContext", arguments=[uri])
    )
    assert isinstance(block, dict) and block["budget"] == 1200


@pytest_lsp.fixture(config=SERVER)  # type: ignore[untyped-decorator]
async def settled(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    """A client whose settings start a new session as soon as the server is initialized;
    initialized by the test itself."""
    lsp_client.set_configuration({"budget": 1200}, section="lspMemory")

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)  # type: ignore[untyped-decorator]
    def register(_params: types.RegistrationParams) -> None:
        """Accept the server's registrations, as VS Code does."""

    takes_refreshes(lsp_client)
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_requests_while_the_settings_start_a_session_are_answered(
    settled: LanguageClient,
) -> None:
    """The editor's settings replace the first session right after ``initialized``; a
    request answered meanwhile reads the first session until the new one serves, never a
    closed one. The first session used to be closed before the new one was built: a hover
    then read a closed store (an error) or one being closed in another thread (the server
    died of a segmentation fault: seen in the Neovim plugin test)."""
    client = settled
    prepare()
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            workspace_folders=[types.WorkspaceFolder(uri=VAULT.as_uri(), name="vault")],
        )
    )
    uri = (WORK / "settled.md").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=TEXT
            )
        )
    )
    answers, deadline = 0, time.monotonic() + 120  # a guard, not a measure
    while not any("index ready" in m.message for m in client.log_messages):
        assert "PostgreSQL 16" in await hover_text(client, uri)
        answers += 1
        assert time.monotonic() < deadline, client.log_messages
    assert answers > 1
    block = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="lspMemory.buildContext", arguments=[uri])
    )
    assert isinstance(block, dict) and block["budget"] == 1200  # the new session serves
