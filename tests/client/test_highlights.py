"""Document highlights through a real JSON-RPC client: every form of the record or note under
the cursor lights up in the document, positions after non-ASCII text in the client's units."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.client.test_hover_definition import opened, position_of, units

TEXT = (
    "😀 #1 then @leaf_active_a001, again @claim_1; not #2.\n"
    "`#1 in code` and @leaf_ctx, [[Alice Notes]] or [[alice|her]] and [[Project Plan]].\n"
    "Plain words.\n"
)


async def highlighted(client: LanguageClient, uri: str, needle: str) -> list[str] | None:
    """The highlighted texts for the cursor one character into ``needle``."""
    found = await client.text_document_document_highlight_async(
        types.DocumentHighlightParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=position_of(client, TEXT, needle),
        )
    )
    if found is None:
        return None
    lines = TEXT.splitlines()
    texts = []
    for highlight in found:
        line = lines[highlight.range.start.line]
        start = next(
            i
            for i in range(len(line) + 1)
            if units(client, line[:i]) == highlight.range.start.character
        )
        end = next(
            i
            for i in range(len(line) + 1)
            if units(client, line[:i]) == highlight.range.end.character
        )
        texts.append(line[start:end])
    return texts


async def test_every_form_of_the_same_target_is_highlighted(client: LanguageClient) -> None:
    async with opened(client, TEXT) as uri:
        expected = ["#1", "@leaf_active_a001", "@claim_1"]
        assert await highlighted(client, uri, "#1 then") == expected
        assert await highlighted(client, uri, "@claim_1") == expected
        assert await highlighted(client, uri, "#2") == ["#2"]
        assert await highlighted(client, uri, "[[alice|") == ["[[Alice Notes]]", "[[alice|her]]"]
        assert await highlighted(client, uri, "@leaf_ctx") == ["@leaf_ctx"]


async def test_nothing_off_a_reference(client: LanguageClient) -> None:
    async with opened(client, TEXT) as uri:
        assert await highlighted(client, uri, "Plain") is None
        assert await highlighted(client, uri, "#1 in code") is None
