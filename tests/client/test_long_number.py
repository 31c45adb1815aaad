"""``#`` followed by 5,000 digits (Python refuses to read an int of more than 4,300) in an
open document: every request on it still answers, the other references resolve, and the
long one is one short "not found" diagnostic."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from tests.client.conftest import SERVER, WORK, ready

TEXT = "See #" + "7" * 5000 + " and @leaf_active_a001\n"


@pytest_lsp.fixture(config=SERVER)  # type: ignore[untyped-decorator]
async def client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    await ready(lsp_client, client_capabilities("visual-studio-code"))
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_a_number_of_5000_digits_breaks_no_request(client: LanguageClient) -> None:
    uri = (WORK / "long-number.md").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=TEXT
            )
        )
    )
    document = types.TextDocumentIdentifier(uri=uri)
    other = types.Position(line=0, character=len(TEXT) - 5)  # inside @leaf_active_a001
    long_one = types.Position(line=0, character=6)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=document, position=other)
    )
    assert hover is not None and "PostgreSQL" in str(hover.contents)
    why = await client.text_document_hover_async(
        types.HoverParams(text_document=document, position=long_one)
    )
    assert why is not None and "No memory or context found" in str(why.contents)
    assert len(str(why.contents)) < 200
    found = await client.text_document_definition_async(
        types.DefinitionParams(text_document=document, position=other)
    )
    assert found is not None
    unasked = types.ReferenceContext(include_declaration=False)
    await client.text_document_references_async(
        types.ReferenceParams(text_document=document, position=other, context=unasked)
    )
    start, end = types.Position(line=0, character=0), types.Position(line=1, character=0)
    whole = types.Range(start=start, end=end)
    await client.text_document_inlay_hint_async(
        types.InlayHintParams(text_document=document, range=whole)
    )
    await client.text_document_code_lens_async(types.CodeLensParams(text_document=document))
    block = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="lspMemory.buildContext", arguments=[uri])
    )
    assert isinstance(block, dict) and "leaf" in block["markdown"].lower()
    for _ in range(100):
        problems = client.diagnostics.get(uri)
        if problems:
            break
        await asyncio.sleep(0.1)
    assert problems is not None and len(problems) == 1
    assert problems[0].message.startswith("No memory or context found with ID: claim_7777")
    assert len(problems[0].message) < 120
