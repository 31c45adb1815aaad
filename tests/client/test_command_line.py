"""The server's command line: ``lsp-memory --store DIR --user NAME serve`` serves that store
and user — over the config file and the environment — and the editor's settings
(``initializationOptions``, then ``workspace/configuration``) still come above it."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_memory.app import App
from lsp_memory.config import Config
from tests.client.conftest import ENV, STORE, WORK, ready
from tests.conftest import USER

CAROL_STORE = WORK / "carol-store"  # the environment (ENV) names STORE and USER instead


def _carol_claim() -> str:
    """A claim of carol's in her own store; its reference."""
    app = App(Config(store=CAROL_STORE, user="carol"))
    try:
        claims = app.records().claims(None, None)
        claim = claims[0] if claims else app.records().add_claim("Carol keeps bees on the roof")
        return f"@{claim.friendly_id}"
    finally:
        app.close()


CAROL = _carol_claim()
COMMAND_LINE = ClientServerConfig(
    server_command=[
        sys.executable,
        "-m",
        "lsp_memory",
        "--store",
        str(CAROL_STORE),
        "--user",
        "carol",
        "serve",
    ],
    server_env=ENV,
)


@pytest_lsp.fixture(config=COMMAND_LINE)  # type: ignore[untyped-decorator]
async def command_line(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    await ready(lsp_client, client_capabilities("visual-studio-code"))
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=COMMAND_LINE)  # type: ignore[untyped-decorator]
async def editor_settings(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    options = {"store": str(STORE), "user": USER}
    await ready(lsp_client, client_capabilities("visual-studio-code"), options)
    yield lsp_client
    await lsp_client.shutdown_session()


async def hover_text(client: LanguageClient, name: str, text: str) -> str | None:
    uri = (WORK / name).as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=text
            )
        )
    )
    found = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=0, character=2),
        )
    )
    if found is None:
        return None
    assert isinstance(found.contents, types.MarkupContent)
    return found.contents.value


async def test_the_command_line_beats_the_environment(command_line: LanguageClient) -> None:
    carol = await hover_text(command_line, "carol.md", f"{CAROL} today\n")
    assert carol is not None and "Carol keeps bees on the roof" in carol
    theirs = await hover_text(command_line, "theirs.md", "@leaf_active_a001 today\n")
    assert theirs is not None and "No memory or context found" in theirs


async def test_the_editor_settings_beat_the_command_line(editor_settings: LanguageClient) -> None:
    ours = await hover_text(editor_settings, "ours.md", "@leaf_active_a001 today\n")
    assert ours is not None and "PostgreSQL 16" in ours
    carol = await hover_text(editor_settings, "carol2.md", f"{CAROL} today\n")
    assert carol is not None and "No memory or context found" in carol


async def test_a_write_lands_in_the_command_lines_store(command_line: LanguageClient) -> None:
    """``lspMemory.addClaim`` on ``lsp-memory --store DIR --user carol serve`` writes to
    carol's store as carol: nowhere else, under no other name."""
    added = await command_line.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="lspMemory.addClaim", arguments=["Carol moved the hives to the orchard"]
        )
    )
    app = App(Config(store=CAROL_STORE, user="carol"))
    try:
        mine = app.records().claims(None, None)
    finally:
        app.close()
    assert added is not None
    assert any(c.friendly_id == added["friendly_id"] for c in mine), added
    other = App(Config(store=STORE, user=USER))
    try:
        statements = [c.statement for c in other.records().claims(None, None)]
    finally:
        other.close()
    assert "Carol moved the hives to the orchard" not in statements
