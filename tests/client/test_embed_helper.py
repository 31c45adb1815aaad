"""The language server embeds in a helper process: it answers a search by meaning while
onnxruntime is mapped into the helper only, never into the server; with
``embedIdleSeconds: 0`` the model is in the server's own process, as before."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from tests.client.conftest import SERVER, ready
from tests.client.test_relevance_floor import embedded, search

ONNX = "libonnxruntime"


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def command_line(pid: int) -> str:
    try:
        return (Path(f"/proc/{pid}/cmdline").read_bytes()).replace(b"\0", b" ").decode()
    except OSError:
        return ""


def mapped(pid: int, library: str) -> bool:
    return library in Path(f"/proc/{pid}/maps").read_text()


def the_server() -> int:
    (server,) = [p for p in children(os.getpid()) if "lsp_memory serve" in command_line(p)]
    return server


async def semantic_hit(client: LanguageClient) -> None:
    """Wait until a search by meaning finds the claim (the vectors are in)."""
    await embedded(client)
    hits = await search(client, "Which database does Leaf use?")
    assert hits[0]["title"] == "The Leaf service uses PostgreSQL 16"


@pytest_lsp.fixture(config=SERVER)  # type: ignore[untyped-decorator]
async def apart(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    await ready(lsp_client, client_capabilities("visual-studio-code"))
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER)  # type: ignore[untyped-decorator]
async def inside(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    options = {"embedIdleSeconds": 0}
    await ready(lsp_client, client_capabilities("visual-studio-code"), options)
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_the_server_searches_by_meaning_without_the_model_in_its_process(
    apart: LanguageClient,
) -> None:
    await semantic_hit(apart)
    server = the_server()
    assert not mapped(server, ONNX)
    helpers = [p for p in children(server) if "lsp_memory.store.embedhelper" in command_line(p)]
    assert len(helpers) == 1 and mapped(helpers[0], ONNX)


async def test_embed_idle_seconds_0_keeps_the_model_in_the_server(inside: LanguageClient) -> None:
    await semantic_hit(inside)
    server = the_server()
    assert mapped(server, ONNX)
    assert not [p for p in children(server) if "embedhelper" in command_line(p)]


@pytest_lsp.fixture(config=SERVER)  # type: ignore[untyped-decorator]
async def brief(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    options = {"embedIdleSeconds": 1}
    await ready(lsp_client, client_capabilities("visual-studio-code"), options)
    yield lsp_client
    await lsp_client.shutdown_session()


def helpers_of(server: int) -> list[int]:
    return [p for p in children(server) if "lsp_memory.store.embedhelper" in command_line(p)]


async def until(check: Callable[[], bool]) -> bool:
    for _ in range(200):
        if check():
            return True
        await asyncio.sleep(0.05)
    return check()


async def test_an_edit_starts_the_helper_that_stopped_when_idle(brief: LanguageClient) -> None:
    await semantic_hit(brief)
    server = the_server()
    assert await until(lambda: not helpers_of(server))  # idle for 1 s: stopped
    uri = "untitled:Prompt-1"
    document = types.TextDocumentItem(uri=uri, language_id="markdown", version=1, text="")
    brief.text_document_did_open(types.DidOpenTextDocumentParams(text_document=document))
    await asyncio.sleep(0.5)
    assert not helpers_of(server)  # opening is not editing
    change = types.TextDocumentContentChangeWholeDocument(text="Which database")
    brief.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[change],
        )
    )
    assert await until(lambda: bool(helpers_of(server)))  # started before any query
