"""The language server through a real JSON-RPC client (pytest-lsp), with the recorded
capabilities of VS Code and Neovim 0.7 and 0.11 (which asks for UTF-8 positions)."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_memory.services.kernel.tokens import o200k
from tests.client.conftest import WORK, utf8


async def complete(
    client: LanguageClient, text: str, name: str = "prompt.md", after: str = ""
) -> list[types.CompletionItem]:
    """Open ``text`` + ``after`` (the cursor at the end of ``text``, on its last line) and
    complete there."""
    uri = (WORK / name).as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=text + after
            )
        )
    )
    lines = text.split("\n")
    last = lines[-1]
    character = len(last.encode("utf-8")) if utf8(client) else len(last.encode("utf-16-le")) // 2
    result = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=len(lines) - 1, character=character),
        )
    )
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    if result is None:
        return []
    assert isinstance(result, types.CompletionList)
    return list(result.items)


def applied(client: LanguageClient, line: str, item: types.CompletionItem, typed: str = "") -> str:
    """``line`` after the editor applies ``item``, then the user types ``typed`` (the cursor
    at the end of the inserted text): what the user ends up with."""
    edit = item.text_edit
    assert isinstance(edit, types.TextEdit), item
    assert edit.range.start.line == edit.range.end.line

    def index(character: int) -> int:  # a position in the client's encoding → str index
        unit, size = ("utf-8", 1) if utf8(client) else ("utf-16-le", 2)
        return len(line.encode(unit)[: character * size].decode(unit))

    start, end = index(edit.range.start.character), index(edit.range.end.character)
    return line[:start] + edit.new_text + typed + line[end:]


def labels(items: list[types.CompletionItem]) -> list[str]:
    return [item.label for item in sorted(items, key=lambda i: i.sort_text or i.label)]


async def test_at_completes_contexts_claims_and_tags_by_prefix(client: LanguageClient) -> None:
    items = await complete(client, "Tell me about @leaf")
    found = labels(items)
    assert found[0] == "@leaf_active_a001" or found[0] == "@leaf_ctx"
    assert {"@leaf_ctx", "@leaf_active_a001", "@leaf_contested_a002"} <= set(found)
    assert not any(label.startswith("@mallory") for label in found)
    item = next(i for i in items if i.label == "@leaf_ctx")
    assert isinstance(item.text_edit, types.TextEdit)
    assert item.text_edit.range.start == types.Position(line=0, character=14)
    assert item.text_edit.new_text == "@leaf_ctx"
    assert applied(client, "Tell me about @leaf", item) == "Tell me about @leaf_ctx"
    retracted = next(i for i in items if i.label == "@leaf_retracted_a003")
    assert list(retracted.tags or ()) == [types.CompletionItemTag.Deprecated]
    assert found.index("@leaf_retracted_a003") > found.index("@leaf_contested_a002")
    assert "@health_tag" in labels(await complete(client, "@heal"))
    assert "@work_domain" in labels(await complete(client, "@wor"))
    assert "@hgoals" in labels(await complete(client, "@my_health"))  # by context name


async def test_at_finds_claims_by_statement_words(client: LanguageClient) -> None:
    items = await complete(client, "@notebook")
    assert "@root_claim_a009" in labels(items)
    item = next(i for i in items if i.label == "@root_claim_a009")
    assert item.detail is not None and item.detail.startswith("#9 · preference")
    assert item.kind == types.CompletionItemKind.Value  # not Text: editors show that as a word
    assert isinstance(item.documentation, types.MarkupContent)
    statement = item.documentation.value.split("\n\n")[0]
    assert "paper notebook" in statement
    # Counted as the context block counts it (o200k), not estimated: one number per claim.
    assert item.detail.endswith(f" · {o200k().count(statement)} tokens")


async def test_hash_completes_claim_numbers(client: LanguageClient) -> None:
    items = await complete(client, "see #4")
    found = labels(items)
    assert found[:2] == ["#4", "#42"]
    assert applied(client, "see #4", next(i for i in items if i.label == "#42")) == "see #42"
    assert labels(await complete(client, "(#1"))[:3] == ["#1", "#10", "#11"]


async def test_brackets_complete_notes_and_headings(client: LanguageClient) -> None:
    items = await complete(client, "Read [[proj")
    assert labels(items)[0] == "Project Plan"
    first = next(i for i in items if i.label == "Project Plan")
    assert isinstance(first.text_edit, types.TextEdit)
    assert first.text_edit.new_text == "Project Plan]]"
    assert first.text_edit.range.start == types.Position(line=0, character=7)
    assert "Nested Note" not in labels(items)
    assert applied(client, "Read [[proj", first) == "Read [[Project Plan]]"
    assert "Deep Note" in labels(await complete(client, "[[nest"))  # by alias
    headings = await complete(client, "See [[Project Plan#mile")
    assert labels(headings) == ["Milestones"]
    assert applied(client, "See [[Project Plan#mile", headings[0]) == (
        "See [[Project Plan#Milestones]]"
    )
    assert headings[0].filter_text == "Milestones"  # matched against the replaced '#mile'
    headings = await complete(client, "[[project-plan#")
    assert applied(client, "[[project-plan#", headings[0]).startswith("[[project-plan#")


async def test_brackets_the_editor_closed_are_replaced_so_typing_goes_on_after_the_link(
    client: LanguageClient,
) -> None:
    """VS Code (and other editors) close ``[[`` as it is typed: the edit covers that ``]]``,
    so the next word lands after the link, not inside it."""
    items = await complete(client, "Read [[proj", after="]] next")
    first = next(i for i in items if i.label == "Project Plan")
    assert applied(client, "Read [[proj]] next", first, typed=" ok") == (
        "Read [[Project Plan]] ok next"
    )
    headings = await complete(client, "See [[Project Plan#mile", after="]]")
    assert applied(client, "See [[Project Plan#mile]]", headings[0], typed=".") == (
        "See [[Project Plan#Milestones]]."
    )
    # A single ']' is not a closed link: it stays.
    items = await complete(client, "Read [[proj", after="] x")
    first = next(i for i in items if i.label == "Project Plan")
    assert applied(client, "Read [[proj] x", first) == "Read [[Project Plan]]] x"


async def test_nothing_in_code_or_after_a_word(client: LanguageClient) -> None:
    assert await complete(client, "`@leaf") == []
    assert await complete(client, "```\n@leaf") == []
    assert await complete(client, "mail me at someone@leaf") == []
    assert await complete(client, "issue x#4") == []


async def test_positions_after_non_ascii_text(client: LanguageClient) -> None:
    items = await complete(client, "😀 café @leaf")
    item = next(i for i in items if i.label == "@leaf_ctx")
    assert isinstance(item.text_edit, types.TextEdit)
    expected = len("😀 café ".encode()) if utf8(client) else 8
    assert item.text_edit.range.start == types.Position(line=0, character=expected)


async def test_bad_requests_get_an_error_or_nothing_and_the_server_keeps_serving(
    client: LanguageClient,
) -> None:
    with pytest.raises(Exception, match=r"(?i)method not found|not found"):
        await client.protocol.send_request_async(  # type: ignore[no-untyped-call]
            "lspMemory/noSuchMethod", {}
        )
    nowhere = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=(WORK / "never-opened.md").as_uri()),
            position=types.Position(line=999, character=5),
        )
    )
    assert nowhere is None
    assert "@leaf_ctx" in labels(await complete(client, "@leaf"))
