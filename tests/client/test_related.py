"""Related-note suggestions through a real JSON-RPC client: the paragraph under the cursor is
offered "Link [[Title]]" for a note and "Reference @id" for a claim that mean what it says,
applying one appends the link to the paragraph; unrelated prose, what the document already
links or references, retracted claims and the note itself are never offered; never more
than three; the ``relatedSimilarity`` setting lowers the threshold or turns it off."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from tests.client.conftest import SERVER, VAULT, WORK, ready
from tests.client.test_relevance_floor import embedded
from tests.client.test_remember import code_actions, text_edits

RELATED = types.CodeActionKind.RefactorRewrite
PLAN = (
    "Our project plan for Leaf: milestones are a frozen schema and a beta in March, and the "
    "risks are listed."
)
DATABASE = (
    "We still need to decide which database the Leaf service runs on in production and "
    "which version of Postgres it needs."
)
RECIPE = (
    "The recipe calls for two cups of flour, a pinch of salt and butter softened at room "
    "temperature overnight before baking."
)
GOLANG = (
    "Which programming language is the Leaf service written in, and is it Go or something "
    "else like Rust or Java?"
)


@pytest_lsp.fixture(config=SERVER)  # type: ignore[untyped-decorator]
async def client(
    request: pytest.FixtureRequest, lsp_client: LanguageClient
) -> AsyncIterator[LanguageClient]:
    """A VS Code session over the shared store, with the editor settings a test passes
    (``indirect`` parametrization), if any."""
    settings = getattr(request, "param", None)
    if settings:
        lsp_client.set_configuration(settings, section="lspMemory")
    await ready(lsp_client, client_capabilities("visual-studio-code"))
    yield lsp_client
    await lsp_client.shutdown_session()


LOW = pytest.mark.parametrize("client", [{"relatedSimilarity": 0.05}], indirect=True)
OFF = pytest.mark.parametrize("client", [{"relatedSimilarity": "off"}], indirect=True)


def open_note(client: LanguageClient, name: str, text: str) -> str:
    """Open ``text`` as a document named ``name``, outside the vault unless ``name`` is one
    of its notes (a new note in the vault would be indexed, and suggested, as it is typed)."""
    uri = (VAULT / name if (VAULT / name).exists() else WORK / name).as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=text
            )
        )
    )
    return uri


def at(line: int, character: int = 3) -> types.Range:
    where = types.Position(line=line, character=character)
    return types.Range(start=where, end=where)


async def related(client: LanguageClient, uri: str, line: int) -> list[types.CodeAction]:
    """The related-note actions on ``line``."""
    found = await code_actions(client, uri, at(line), [RELATED])
    assert all(isinstance(action, types.CodeAction) for action in found)
    return [action for action in found if isinstance(action, types.CodeAction)]


async def searching(client: LanguageClient) -> None:
    """Wait until suggestions come: the index has its embeddings and the embedding helper
    runs (a request while it starts answers nothing and starts it)."""
    uri = open_note(client, "probe.md", DATABASE + "\n")
    for _ in range(600):
        if await related(client, uri, 0):
            return
        await asyncio.sleep(0.1)
    raise AssertionError("no suggestion ever came")


async def test_a_paragraph_is_offered_its_note_and_claim(client: LanguageClient) -> None:
    await searching(client)
    text = f"# Catch-up\n\n{PLAN}\nMore on it later.\n\n{DATABASE}\n"
    uri = open_note(client, "catch-up.md", text)
    titles = [action.title for action in await related(client, uri, 2)]
    assert titles[0] == "Link [[Project Plan]]"
    assert len(titles) <= 3
    (action,) = [a for a in await related(client, uri, 3) if a.title == titles[0]]
    assert action.edit is not None
    (edit,) = text_edits(action.edit, uri)
    lines = text.split("\n")
    lines[3] += edit.new_text
    assert edit.range.start == edit.range.end == types.Position(3, len("More on it later."))
    assert "\n".join(lines) == text.replace("later.", "later. [[Project Plan]]")
    titles = [action.title for action in await related(client, uri, 5)]
    assert titles[0] == "Reference @leaf_active_a001: The Leaf service uses PostgreSQL 16"
    assert await related(client, uri, 0) == []  # a heading
    assert await related(client, uri, 1) == []  # a blank line


async def test_unrelated_prose_gets_nothing(client: LanguageClient) -> None:
    await searching(client)
    uri = open_note(client, "baking.md", f"{RECIPE}\n")
    assert await related(client, uri, 0) == []


async def test_what_the_document_names_is_not_offered(client: LanguageClient) -> None:
    await searching(client)
    text = f"{PLAN}\n\nSee [[project plan]] and @leaf_active_a001.\n\n{DATABASE}\n"
    uri = open_note(client, "linked.md", text)
    assert "Link [[Project Plan]]" not in [a.title for a in await related(client, uri, 0)]
    titles = [action.title for action in await related(client, uri, 4)]
    assert not any("@leaf_active_a001" in title for title in titles)
    # The note itself: the project plan's own paragraph is not offered its own note.
    plan = (VAULT / "project-plan.md").read_text(encoding="utf-8")
    own = open_note(client, "project-plan.md", plan + f"\n{PLAN}\n")
    line = len(plan.split("\n"))
    assert "Link [[Project Plan]]" not in [a.title for a in await related(client, own, line)]


@LOW
async def test_at_most_three_and_never_a_retracted_claim(client: LanguageClient) -> None:
    await searching(client)
    uri = open_note(client, "leaf.md", f"{GOLANG}\n\n{DATABASE}\n")
    titles = [action.title for action in await related(client, uri, 0)]
    assert len(titles) == 3
    assert not any("leaf_retracted_a003" in title for title in titles)  # "written in Go"
    assert len(await related(client, uri, 2)) == 3
    assert await related(client, uri, 1) == []


@OFF
async def test_the_setting_turns_them_off(client: LanguageClient) -> None:
    await embedded(client)  # searches by meaning, the embedding helper started
    uri = open_note(client, "off.md", f"{DATABASE}\n")
    for _ in range(5):
        assert await related(client, uri, 0) == []
        await asyncio.sleep(0.1)


@pytest.mark.parametrize("client", [{"embedIdleSeconds": 1}], indirect=True)
async def test_a_stopped_helper_answers_nothing_at_once_and_starts(client: LanguageClient) -> None:
    """Asked while the embedding helper is stopped, the request does not wait for it to
    start (1–3 s): nothing this time, the helper started, suggestions the next time."""
    await searching(client)
    uri = open_note(client, "later.md", f"{PLAN}\n")
    await asyncio.sleep(3)  # idle: the helper stops after 1 s
    assert await related(client, uri, 0) == []
    for _ in range(100):
        titles = [action.title for action in await related(client, uri, 0)]
        if titles:
            break
        await asyncio.sleep(0.1)
    assert titles[0] == "Link [[Project Plan]]"
