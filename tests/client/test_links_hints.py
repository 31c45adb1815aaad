"""Document links for ``[[notes]]`` and inlay hints after ``#N`` / ``@claim_N``."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.client.conftest import VAULT, WORK, utf8

TEXT = "😀 See [[Project Plan#Milestones]] and [[Nowhere]].\nThen #4, @claim_9 and #99 and `#1`."


def open_doc(client: LanguageClient, name: str) -> str:
    uri = (WORK / name).as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=TEXT
            )
        )
    )
    return uri


async def test_links_open_the_note_at_the_heading(client: LanguageClient) -> None:
    uri = open_doc(client, "links.md")
    links = await client.text_document_document_link_async(
        types.DocumentLinkParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert links is not None and len(links) == 1  # [[Nowhere]] resolves to nothing
    [link] = links
    plan = (VAULT / "project-plan.md").resolve()
    assert link.target is not None and link.target.startswith(plan.as_uri() + "#L")
    line = int(link.target.rsplit("#L", 1)[1])
    assert plan.read_text(encoding="utf-8").splitlines()[line - 1].lstrip("# ") == "Milestones"
    start = len("😀 See ".encode()) if utf8(client) else len("😀 See ") + 1
    assert link.range.start == types.Position(line=0, character=start)
    link_support = client.capabilities.text_document if client.capabilities else None
    tooltips = (
        link_support and link_support.document_link and link_support.document_link.tooltip_support
    )
    assert link.tooltip == ("Project Plan" if tooltips else None)


async def test_an_attachment_links_to_its_file(client: LanguageClient) -> None:
    """``![[diagram.png]]`` opens the image itself (no line to jump to); before, an embed of
    an attachment had no link at all."""
    uri = (WORK / "embeds.md").as_uri()
    text = "An image: ![[diagram.png]] and a [[Nowhere.png]]\n"
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=text
            )
        )
    )
    links = await client.text_document_document_link_async(
        types.DocumentLinkParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert links is not None
    assert [link.target for link in links] == [
        (VAULT / "images" / "diagram.png").resolve().as_uri()
    ]


async def test_hints_show_the_statement_after_claim_numbers(client: LanguageClient) -> None:
    capabilities = client.capabilities
    text_document = capabilities.text_document if capabilities else None
    if text_document is None or text_document.inlay_hint is None:
        pytest.skip("this editor (as recorded) asks for no inlay hints")
    uri = open_doc(client, "hints.md")
    hints = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(0, 0), end=types.Position(1, 40)),
        )
    )
    assert hints is not None
    labels = [h.label for h in hints]
    assert len(labels) == 2  # #99 resolves to nothing; `#1` is code
    assert isinstance(labels[0], str) and isinstance(labels[1], str)
    assert labels[0].startswith("The Leaf service") and labels[0].endswith("(superseded)")
    assert labels[1].startswith("I keep a paper notebook")
    assert hints[0].position == types.Position(line=1, character=len("Then #4"))
