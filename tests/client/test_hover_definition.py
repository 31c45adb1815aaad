"""Hover and go-to-definition through a real JSON-RPC client (pytest-lsp), with the recorded
capabilities of VS Code and Neovim 0.7 and 0.11 (which asks for UTF-8 positions)."""

from __future__ import annotations

import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from lsprotocol import types
from pygls.uris import to_fs_path
from pytest_lsp import LanguageClient

from lsp_memory.model import ClaimStatus
from lsp_memory.store.sqlite import open_store
from tests.client.conftest import STORE, VAULT, WORK, utf8
from tests.conftest import USER


def units(client: LanguageClient, text: str) -> int:
    """The length of ``text`` in the client's position units."""
    return len(text.encode("utf-8")) if utf8(client) else len(text.encode("utf-16-le")) // 2


@asynccontextmanager
async def opened(
    client: LanguageClient, text: str, uri: str | None = None, language_id: str = "markdown"
) -> AsyncIterator[str]:
    """``text`` open as a document for the block; its URI."""
    uri = uri or (WORK / "prompt.md").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id=language_id, version=1, text=text
            )
        )
    )
    try:
        yield uri
    finally:
        client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )


def position_of(client: LanguageClient, text: str, needle: str, delta: int = 1) -> types.Position:
    """The client position ``delta`` characters into the first ``needle`` of ``text``."""
    index = text.index(needle) + delta
    line = text.count("\n", 0, index)
    line_start = text.rfind("\n", 0, index) + 1
    return types.Position(line=line, character=units(client, text[line_start:index]))


async def hover_on(
    client: LanguageClient,
    text: str,
    needle: str,
    delta: int = 1,
    *,
    language_id: str = "markdown",
    name: str = "prompt.md",
) -> types.Hover | None:
    async with opened(client, text, (WORK / name).as_uri(), language_id) as uri:
        return await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=position_of(client, text, needle, delta),
            )
        )


def markdown(hover: types.Hover | None) -> str:
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.kind == types.MarkupKind.Markdown
    return hover.contents.value


async def definition_at(
    client: LanguageClient, uri: str, text: str, needle: str, delta: int = 1
) -> types.Location | None:
    result = await client.text_document_definition_async(
        types.DefinitionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=position_of(client, text, needle, delta),
        )
    )
    assert result is None or isinstance(result, types.Location)
    return result


async def definition_on(
    client: LanguageClient, text: str, needle: str, delta: int = 1
) -> types.Location | None:
    async with opened(client, text) as uri:
        return await definition_at(client, uri, text, needle, delta)


def local(location: types.Location) -> Path:
    path = to_fs_path(location.uri)
    assert path is not None
    return Path(path)


# -- hover ---------------------------------------------------------------------------------------


async def test_hover_on_a_superseded_claim_warns_and_names_its_successor(
    client: LanguageClient,
) -> None:
    text = "Was it #4 after all?"
    hover = await hover_on(client, text, "#4")
    value = markdown(hover)
    assert "**Claim #4** · @leaf_superseded_a004" in value
    assert "⚠️ **Superseded** by #1 @leaf_active_a001" in value
    assert "The Leaf service uses PostgreSQL 14" in value
    assert "contexts @leaf_ctx" in value and "confidence 0.8" in value
    assert hover is not None and hover.range == types.Range(
        start=types.Position(line=0, character=7), end=types.Position(line=0, character=9)
    )
    # The cursor just after the token still hovers it; an active claim has no warning.
    active = markdown(await hover_on(client, "see @claim_42", "@claim_42", len("@claim_42")))
    assert "**Claim #42** · @prefer_morning_a3f2" in active
    assert "⚠️" not in active
    assert "What time do I prefer for deep work?" in active


async def test_hover_on_a_superseded_or_retracted_claim_gives_its_dates(
    client: LanguageClient,
) -> None:
    """Superseded on a known day, then retracted on another: the hover says on which day and
    by which claim, and what the claim held from and until. The shared store is put back
    (with the claim's own time) afterwards."""
    with open_store(STORE) as store:
        claim, new = store.claim_by_number(USER, 42), store.claim_by_number(USER, 1)
        assert claim is not None and new is not None
        store.supersede(USER, [claim.claim_id], new.claim_id, "2026-03-04T09:00:00.000000Z")
        try:
            superseded = markdown(await hover_on(client, "see #42", "#42"))
            store.restore(USER, claim.claim_id, claim.updated_at)
            store.set_status(USER, claim.claim_id, ClaimStatus.RETRACTED, "2026-03-05T10:00:00Z")
            retracted = markdown(await hover_on(client, "see #42", "#42"))
        finally:
            store.restore(USER, claim.claim_id, claim.updated_at)
    created = claim.created_at[:10]
    assert "⚠️ **Superseded** on 2026-03-04 by #1 @leaf_active_a001" in superseded
    assert f"valid {created} → 2026-03-04" in superseded
    assert "⚠️ **Retracted** on 2026-03-05: no longer held" in retracted
    assert f"valid {created} → 2026-03-05" in retracted


async def test_hover_on_a_context_gives_its_path_count_and_first_claims(
    client: LanguageClient,
) -> None:
    root = markdown(await hover_on(client, "Summarise @root_ctx please", "@root_ctx"))
    assert "**Context @root_ctx** · Root Context" in root
    assert "path: Root Context · sub-contexts: @mid_ctx, @other_ctx" in root
    assert "6 claims (with sub-contexts) · " in root and " tokens" in root
    assert "- #10 (preference) I review my notes every Friday afternoon" in root
    assert "- … 1 more" in root
    leaf = markdown(await hover_on(client, "@leaf_ctx", "@leaf_ctx"))
    assert "path: Root Context › Mid Context › Leaf Context" in leaf
    assert "3 claims" in leaf and "#3" not in leaf  # retracted: not in a context


async def test_hover_on_an_entity_shows_fields_with_references_resolved(
    client: LanguageClient,
) -> None:
    value = markdown(await hover_on(client, "ask @alice_ent", "@alice_ent"))
    assert "**Entity @alice_ent** · Alice · Person" in value
    assert "- role: Engineering Manager" in value
    assert "- team: @eng_team (Engineering)" in value
    assert "- profile: [[Alice Notes]] (alice.md)" in value
    assert "2 claims" in value and "#15 (relationship) I report to Alice" in value
    team = markdown(await hover_on(client, "@eng_team", "@eng_team"))
    assert "@carol_ent (Carol, deleted)" in team


async def test_hover_on_a_note_link(client: LanguageClient) -> None:
    text = "Read [[Project Plan]] first."
    hover = await hover_on(client, text, "[[Project", 3)
    value = markdown(hover)
    assert "**[[Project Plan]]** · project-plan.md" in value
    assert "> The plan for the Leaf service. Owner: Alice Notes." in value
    assert "backlinks (3):" in value and "[[Alice Notes]] (alice.md)" in value
    assert hover is not None and hover.range == types.Range(
        start=types.Position(line=0, character=5),
        end=types.Position(line=0, character=5 + len("[[Project Plan]]")),
    )
    heading = markdown(await hover_on(client, "[[Project Plan#Milestones]]", "[["))
    assert "§ Milestones (line 5)" in heading
    missing = markdown(await hover_on(client, "[[Missing Target]]", "[["))
    assert missing == "⚠️ Note not found: Missing Target"


async def test_hover_on_an_unresolved_reference_gives_the_resolver_message(
    client: LanguageClient,
) -> None:
    value = markdown(await hover_on(client, "what about @no_such_thing?", "@no_such"))
    assert value == "⚠️ No memory or context found with ID: no_such_thing"
    number = markdown(await hover_on(client, "#99", "#99"))
    assert number == "⚠️ No memory or context found with ID: claim_99"


async def test_hover_range_after_non_ascii_text(client: LanguageClient) -> None:
    text = "first 😀 line\n😀 café @leaf_ctx, then #4."
    hover = await hover_on(client, text, "@leaf_ctx", 4)
    assert "**Context @leaf_ctx**" in markdown(hover)
    start = units(client, "😀 café ")
    assert hover is not None
    assert hover.range == types.Range(
        start=types.Position(line=1, character=start),
        end=types.Position(line=1, character=start + len("@leaf_ctx")),
    )
    number = await hover_on(client, text, "#4", 1)
    assert number is not None and number.range is not None
    assert number.range.start == types.Position(
        line=1, character=units(client, "😀 café @leaf_ctx, then ")
    )


async def test_no_hover_on_plain_words_in_code_or_in_unopened_documents(
    client: LanguageClient,
) -> None:
    assert await hover_on(client, "just plain words", "plain") is None
    assert await hover_on(client, "mail someone@leaf_ctx.com", "leaf") is None
    assert await hover_on(client, "use `see @leaf_ctx` here", "@leaf") is None
    assert await hover_on(client, "```\n@leaf_ctx\n```", "@leaf") is None
    # Outside Markdown every text counts, backticks included.
    code = await hover_on(
        client, "x = 1  # `see @leaf_ctx`", "@leaf", name="script.py", language_id="python"
    )
    assert "**Context @leaf_ctx**" in markdown(code)
    nowhere = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=(WORK / "never-opened.md").as_uri()),
            position=types.Position(line=0, character=1),
        )
    )
    assert nowhere is None


# -- definition ----------------------------------------------------------------------------------


async def test_definition_of_a_note_link_opens_the_file_at_the_heading(
    client: LanguageClient,
) -> None:
    found = await definition_on(client, "See [[Project Plan#Milestones]].", "[[Project")
    assert found is not None
    assert local(found).resolve() == (VAULT / "project-plan.md").resolve()
    assert found.range.start == types.Position(line=4, character=0)  # "## Milestones"
    whole = await definition_on(client, "[[Alice Notes]]", "Alice")
    assert whole is not None and local(whole).name == "alice.md"
    assert whole.range.start.line == 0
    assert await definition_on(client, "[[Missing Target]]", "Missing") is None
    assert await definition_on(client, "@no_such_thing", "no_such") is None
    assert await definition_on(client, "plain words", "words") is None


async def test_an_embedded_attachment_opens_the_file_and_its_hover_shows_the_image(
    client: LanguageClient,
) -> None:
    """``![[diagram.png]]`` names a file of the vault that is not a note: definition opens it,
    hover says what it is and shows it (an editor that renders Markdown images displays it),
    and no diagnostic says it is missing. Before: "Note not found: diagram.png"."""
    text = "Look: ![[diagram.png]] and [[Missing Target]]\n"
    found = await definition_on(client, text, "diagram")
    assert found is not None
    assert local(found).resolve() == (VAULT / "images" / "diagram.png").resolve()
    shown = markdown(await hover_on(client, text, "diagram"))
    image = (VAULT / "images" / "diagram.png").resolve().as_uri()
    assert shown.startswith("**diagram.png** · images/diagram.png · image · 0 KB"), shown
    assert f"![diagram.png]({image})" in shown or "![diagram.png](file://" in shown, shown


async def test_definition_of_a_context_opens_a_read_only_page_you_can_navigate_from(
    client: LanguageClient,
) -> None:
    found = await definition_on(client, "Tell me about @leaf_ctx.", "@leaf_ctx")
    assert found is not None
    page = local(found)
    assert page.is_relative_to(WORK / "cache")
    assert page.parent.name == "context" and page.name == "leaf_ctx.md"
    assert found.range.start == types.Position(line=0, character=0)
    assert stat.S_IMODE(page.stat().st_mode) == 0o444
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# Context @leaf_ctx · Leaf Context")
    assert "- #1 @leaf_active_a001 (fact) The Leaf service uses PostgreSQL 16" in text
    # The page is a document like any other: its references lead on.
    async with opened(client, text, found.uri) as uri:
        claim = await definition_at(client, uri, text, "@leaf_active_a001")
        assert claim is not None and local(claim).name == "leaf_active_a001.md"
        assert local(claim).parent.name == "claim"
        claim_text = local(claim).read_text(encoding="utf-8")
        assert "# Claim #1 · @leaf_active_a001" in claim_text
        parent = await definition_at(client, uri, text, "@mid_ctx")
        assert parent is not None and local(parent).name == "mid_ctx.md"
    by_number = await definition_on(client, "#4", "#4")
    assert by_number is not None and local(by_number).name == "leaf_superseded_a004.md"
    assert "#1 @leaf_active_a001" in local(by_number).read_text(encoding="utf-8")


async def test_a_page_is_rewritten_only_when_its_record_changes(client: LanguageClient) -> None:
    text = "@leaf_ctx"
    first = await definition_on(client, text, "@leaf")
    assert first is not None
    page = local(first)
    before = page.stat()
    content = page.read_text(encoding="utf-8")
    again = await definition_on(client, text, "@leaf")
    assert again == first
    after = page.stat()
    assert (after.st_mtime_ns, after.st_ino) == (before.st_mtime_ns, before.st_ino)
    # Claim #3 back to active joins the context; set back afterwards, with its own time, so
    # the shared fixture store is as it was for the other tests.
    with open_store(STORE) as store:
        claim = store.claim_by_number(USER, 3)
        assert claim is not None
        store.set_status(USER, claim.claim_id, ClaimStatus.ACTIVE, claim.updated_at)
        try:
            changed = await definition_on(client, text, "@leaf")
            assert changed == first
            updated = page.read_text(encoding="utf-8")
            assert updated != content
            assert "#3 @leaf_retracted_a003 (fact) The Leaf service is written in Go" in updated
            assert stat.S_IMODE(page.stat().st_mode) == 0o444
        finally:
            store.set_status(USER, claim.claim_id, ClaimStatus.RETRACTED, claim.updated_at)
    await definition_on(client, text, "@leaf")
    assert page.read_text(encoding="utf-8") == content
    assert not [p for p in page.parent.iterdir() if p.name.startswith(".")]  # no temp files
