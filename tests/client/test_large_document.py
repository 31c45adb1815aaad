"""A document above ``max_document_bytes`` is not read: no hover, links or diagnostics in
it, one warning saying why, and the other documents served as before. Back under the limit
it is read again."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from tests.client.conftest import SERVER, WORK, ready

LIMIT = 20_000
LINE = "About @leaf_active_a001 and [[Project Plan]] and #1 here.\n"


@pytest_lsp.fixture(config=SERVER)  # type: ignore[untyped-decorator]
async def limited(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    options = {"lspMemory": {"maxDocumentBytes": LIMIT}}  # nested and camelCase, as Helix
    await ready(lsp_client, client_capabilities("visual-studio-code"), options)
    yield lsp_client
    await lsp_client.shutdown_session()


def _open(client: LanguageClient, name: str, text: str) -> str:
    uri = (WORK / name).as_uri()
    item = types.TextDocumentItem(uri=uri, language_id="markdown", version=1, text=text)
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
    return uri


async def _hover(client: LanguageClient, uri: str) -> str | None:
    found = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=0, character=8),
        )
    )
    if found is None:
        return None
    assert isinstance(found.contents, types.MarkupContent)
    return found.contents.value


async def _links(client: LanguageClient, uri: str) -> int:
    found = await client.text_document_document_link_async(
        types.DocumentLinkParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return len(found or ())


def _warnings(client: LanguageClient) -> list[str]:
    return [m.message for m in client.messages if m.type == types.MessageType.Warning]


async def test_a_document_over_the_limit_is_not_read_and_said_once(
    limited: LanguageClient,
) -> None:
    client = limited
    assert not any("unknown setting" in w for w in _warnings(client)), _warnings(client)
    big_text = LINE * (LIMIT // len(LINE) + 10)
    big = _open(client, "big.md", big_text)
    small = _open(client, "small.md", LINE)
    assert await _hover(client, big) is None
    assert await _links(client, big) == 0
    assert await _hover(client, big) is None
    said = [w for w in _warnings(client) if "big.md" in w]
    assert len(said) == 1 and "max_document_bytes" in said[0], said
    hover = await _hover(client, small)
    assert hover is not None and "The Leaf service uses PostgreSQL 16" in hover
    assert await _links(client, small) == 1

    client.text_document_did_change(  # cut back under the limit: read again
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=big, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=LINE)],
        )
    )
    hover = await _hover(client, big)
    assert hover is not None and "The Leaf service uses PostgreSQL 16" in hover
