"""Commands, and the indexing thread following changes: a claim added through the server or
by the CLI in another process becomes searchable and completable; the embedding queue is
drained in the background; bad command arguments get an error and the server keeps serving."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import uuid
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from tests.client.conftest import ENV, VAULT, WORK


async def command(client: LanguageClient, name: str, *arguments: Any) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=list(arguments))
    )


async def completes(client: LanguageClient, typed: str) -> list[str]:
    uri = (WORK / "sync.md").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=typed
            )
        )
    )
    result = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=0, character=len(typed)),
        )
    )
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert result is None or isinstance(result, types.CompletionList)
    return [item.label for item in result.items] if result else []


async def eventually(check: Any, seconds: float = 20.0) -> None:
    for _ in range(int(seconds / 0.1)):
        if await check():
            return
        await asyncio.sleep(0.1)
    pytest.fail("the condition never held")


async def test_search_command_as_of_a_date(client: LanguageClient) -> None:
    """The fourth argument's ``asOf``: the memory as it was then. kb.jsonl's PostgreSQL
    claims were written on 1 and 4 January 2024."""

    async def search(as_of: str) -> list[str]:
        hits = await command(client, "lspMemory.search", "PostgreSQL", "claim", 5, {"asOf": as_of})
        return [hit["title"] for hit in hits]

    assert "The Leaf service uses PostgreSQL 16" in await search("2030-01-01")
    assert await search("2023-12-31") == []
    assert await search("2024-01-02T00:00:00Z") == ["The Leaf service uses PostgreSQL 16"]
    with pytest.raises(JsonRpcInvalidParams, match="not a date: 'soon'"):
        await search("soon")
    with pytest.raises(JsonRpcInvalidParams, match="options must be an object"):
        await command(client, "lspMemory.search", "PostgreSQL", "claim", 5, "2024-01-02")


async def test_search_command(client: LanguageClient) -> None:
    hits = await command(client, "lspMemory.search", "PostgreSQL", "claim", 5)
    assert hits and hits[0]["kind"] == "claim" and "PostgreSQL" in hits[0]["title"]
    assert all(hit["status"] in ("active", "contested") for hit in hits)
    notes = await command(client, "lspMemory.search", "milestones", "note")
    assert notes[0]["reference"] == "[[Project Plan]]"
    # The command line gives each hit the same JSON (the signals and the order aside: its
    # search may have vectors the server has not loaded yet).
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "lsp_memory",
            "--vault",
            str(VAULT),
            "search",
            "PostgreSQL",
            "--kind",
            "claim",
            "-k",
            "5",
            "--json",
        ],
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
    )
    same = ("id", "kind", "key", "reference", "number", "title", "status")
    by_id = {hit["id"]: hit for hit in json.loads(cli.stdout)}
    common = [hit for hit in hits if hit["id"] in by_id]
    assert common
    for hit in common:
        assert {key: hit[key] for key in same} == {key: by_id[hit["id"]][key] for key in same}
    assert hits[0]["reference"] == f"@{hits[0]['key']}" and isinstance(hits[0]["number"], int)


async def test_a_claim_added_through_the_server_is_completable(client: LanguageClient) -> None:
    added = await command(client, "lspMemory.addClaim", "Kombucha brewing on Sundays", "preference")
    assert added["reference"].startswith("@kombucha_brewing_sundays_")
    assert isinstance(added["supersedes"], list)  # the same statement added by another client

    async def found() -> bool:
        return added["reference"] in await completes(client, "@kombucha")

    await eventually(found)


async def test_an_added_claim_names_the_claims_it_supersedes(client: LanguageClient) -> None:
    first = await command(client, "lspMemory.addClaim", "I feel nervous about Monday", "emotional")
    second = await command(client, "lspMemory.addClaim", "I feel ready for Monday", "emotional")
    assert first["reference"] in second["supersedes"]


async def test_a_claim_added_by_the_cli_in_another_process_is_picked_up(
    client: LanguageClient,
) -> None:
    subprocess.run(
        [sys.executable, "-m", "lsp_memory", "claim", "add", "Sourdough starter named Bob"],
        env=ENV,
        check=True,
        capture_output=True,
        timeout=60,
    )

    async def found() -> bool:
        hits = await command(client, "lspMemory.search", "sourdough", "claim", 3)
        return bool(hits) and hits[0]["title"] == "Sourdough starter named Bob"

    await eventually(found)


async def test_embeddings_are_drained_in_the_background(client: LanguageClient) -> None:
    async def semantic() -> bool:
        hits = await command(client, "lspMemory.search", "which database", "claim", 3)
        return any(hit["similarity"] > 0 for hit in hits)

    await eventually(semantic, seconds=60)


CONTEXT_DOC = "Plan with @leaf_ctx and #42, see [[Project Plan]] and @nope.\n"


def open_context_doc(client: LanguageClient) -> str:
    uri = (WORK / "ctx.md").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=CONTEXT_DOC
            )
        )
    )
    return uri


async def test_build_context_returns_the_context_block(client: LanguageClient) -> None:
    uri = open_context_doc(client)
    block = await command(client, "lspMemory.buildContext", uri)
    assert set(block) == {
        "budget", "tokens", "tokenizer", "over_budget", "sections", "dropped", "warnings",
        "markdown",
    }  # fmt: skip
    assert block["tokenizer"] == "o200k_base" and block["budget"] == 1500
    assert 0 < block["tokens"] <= 1500 and block["over_budget"] is False
    lines = block["markdown"].splitlines()
    referenced = [line for line in lines if line.startswith("- [REFERENCED")]
    assert referenced == [
        "- [REFERENCED @leaf_ctx] [decision] [contested] The Leaf service launches in March",
        "- [REFERENCED @leaf_ctx] [fact] Leaf deploys happen every Tuesday and Thursday",
        "- [REFERENCED @leaf_ctx] [fact] The Leaf service uses PostgreSQL 16"
        " (answers: Which database does Leaf use?)",
        "- [REFERENCED #42] [preference] I prefer to do deep work in the morning"
        " (answers: What time do I prefer for deep work?; When should meetings be scheduled?)",
    ]
    assert "### [[Project Plan]] [id:project-plan.md]" in lines
    assert any("@nope" in warning for warning in block["warnings"])

    tight = await command(client, "lspMemory.buildContext", uri, {"budget": 20})
    assert tight["over_budget"] is True and tight["tokens"] > 20
    assert [line for line in tight["markdown"].splitlines() if "[REFERENCED" in line] == referenced
    assert tight["dropped"]


async def test_build_context_as_of_a_date(client: LanguageClient) -> None:
    """``{"asOf"}``: the block as it would have been built then. kb.jsonl's #1 was written
    on 1 January 2024, #2 on the 2nd at 09:00."""
    uri = (WORK / "as-of.md").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text="Leaf: #1 and #2\n"
            )
        )
    )

    async def lines(as_of: str) -> list[str]:
        block = await command(client, "lspMemory.buildContext", uri, {"asOf": as_of})
        return [line for line in block["markdown"].splitlines() if line.startswith("- [")]

    assert (await lines("2024-01-02T00:00:00Z"))[:2] == [
        "- [REFERENCED #1] [fact] The Leaf service uses PostgreSQL 16"
        " (answers: Which database does Leaf use?)",
        "- [NOT FOUND #2] #2 did not exist yet on 2024-01-02T00:00:00.000000Z",
    ]
    assert (await lines("2023-12-31"))[0].startswith("- [NOT FOUND #1] #1 did not exist yet")
    with pytest.raises(JsonRpcInvalidParams, match="not a date: 'soon'"):
        await lines("soon")


async def test_a_block_asked_again_follows_a_write_by_another_process(
    client: LanguageClient,
) -> None:
    """The server keeps each document's last block while nothing it depends on changes; a
    claim pinned by the CLI in another process changes the store, so the next block has it."""
    uri = (WORK / "kept-block.md").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text="Plans with @leaf_ctx.\n"
            )
        )
    )
    first = await command(client, "lspMemory.buildContext", uri)
    assert first == await command(client, "lspMemory.buildContext", uri)
    statement = f"I water the balcony plants every {uuid.uuid4().hex[:8]}"  # new per client
    assert statement not in first["markdown"]
    subprocess.run(
        [sys.executable, "-m", "lsp_memory", "claim", "add", statement, "--pin"],
        env=ENV,
        check=True,
        capture_output=True,
        timeout=60,
    )
    again = await command(client, "lspMemory.buildContext", uri)
    assert "- [GLOBAL PINNED] [" in again["markdown"] and statement in again["markdown"]


async def test_a_conversations_recall_is_made_ahead_when_its_messages_arrive(
    client: LanguageClient,
) -> None:
    """Seed 001's mode A: once a block was built for a conversation, a message stored for it
    by another process is recalled from by the indexing thread, and the next block uses that
    (``recall``: "precomputed"); before, every block searched when asked."""
    conversation = f"lsp-{uuid.uuid4().hex[:8]}"  # new per client: the store is shared

    def exchange(user: str, minute: int) -> None:
        pair = {
            "contentSessionId": conversation,
            "timestamp": f"2026-11-20T10:{minute:02d}:00Z",
            "userMessage": user,  # questions: nothing is extracted into the shared store
            "assistantResponse": "Let me look.",
        }
        subprocess.run(
            [sys.executable, "-m", "lsp_memory", "ingest", "-"],
            input=json.dumps(pair),
            env=ENV,
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        )

    uri = (WORK / f"{conversation}.md").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text="What now?\n"
            )
        )
    )
    exchange("When do Leaf deploys happen?", 1)
    first = await command(client, "lspMemory.buildContext", uri, {"conversation": conversation})
    assert first["recall"] == "computed"
    assert "When do Leaf deploys happen?" in first["markdown"]
    exchange("Which database does Leaf use?", 2)
    for _ in range(150):  # the indexing thread syncs every 2 s
        block = await command(client, "lspMemory.buildContext", uri, {"conversation": conversation})
        if block["recall"] == "precomputed":
            break
        await asyncio.sleep(0.1)
    assert block["recall"] == "precomputed"
    assert "Which database does Leaf use?" in block["markdown"]


async def test_a_code_lens_shows_the_blocks_size(client: LanguageClient) -> None:
    uri = open_context_doc(client)
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    (lens,) = lenses or ()
    assert lens.range.start == types.Position(line=0, character=0)
    assert lens.command is not None
    # The figure is the block's (automatic memories may change as embeddings arrive).
    shown = re.fullmatch(r"context: (\d+) / 1500 tokens", lens.command.title)
    assert shown is not None and 0 < int(shown[1]) <= 1500, lens.command.title
    assert lens.command.command == "lspMemory.buildContext"
    assert list(lens.command.arguments or ()) == [uri]
    plain = (WORK / "no-refs.md").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=plain, language_id="markdown", version=1, text="Nothing to see.\n"
            )
        )
    )
    assert not await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=plain))
    )


async def test_a_code_lens_follows_the_text_of_a_reopened_document(
    client: LanguageClient,
) -> None:
    """The lens is kept per document text: closed and opened again (version 1 again) with
    more references, the document gets a new figure, not the one kept for its old text."""
    uri = (WORK / "lens-reopened.md").as_uri()

    async def title(text: str) -> str:
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="markdown", version=1, text=text
                )
            )
        )
        lenses = await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        (lens,) = lenses or ()
        assert lens.command is not None
        return lens.command.title

    one = await title("See @leaf_active_a001\n")
    assert await title("See @leaf_active_a001 and @root_ctx\n") != one


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("lspMemory.search", []),
        ("lspMemory.search", ["x", "everything"]),
        ("lspMemory.addClaim", ["   "]),
        ("lspMemory.buildContext", ["file:///not/open.md"]),
        ("lspMemory.buildContext", [(WORK / "ctx.md").as_uri(), {"budget": 0}]),
        ("lspMemory.buildContext", [(WORK / "ctx.md").as_uri(), {"colour": "red"}]),
        ("lspMemory.buildContext", [(WORK / "ctx.md").as_uri(), {"attach": ["@nope"]}]),
        ("lspMemory.noSuchCommand", []),
    ],
)
async def test_bad_commands_get_an_error_and_the_server_keeps_serving(
    client: LanguageClient, name: str, arguments: list[Any]
) -> None:
    with pytest.raises(JsonRpcException) as caught:
        await command(client, name, *arguments)
    assert caught.value.code == JsonRpcInvalidParams.CODE
    assert "Traceback" not in caught.value.message and not caught.value.data
    assert await command(client, "lspMemory.reindex") == {"status": "started"}


async def test_a_selection_past_lsps_largest_column_is_a_bad_argument(
    client: LanguageClient,
) -> None:
    """A column past LSP's uinteger (2**31 - 1) is invalid params; before, building the range
    raised inside the server, an internal error (found by the fuzz suite)."""
    uri = open_context_doc(client)
    huge = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 2**31}}
    with pytest.raises(JsonRpcException) as caught:
        await command(client, "lspMemory.rememberSelection", uri, huge, False)
    assert caught.value.code == JsonRpcInvalidParams.CODE, caught.value
    assert "range must be" in caught.value.message


async def test_an_open_notes_unsaved_text_is_indexed_until_it_is_closed(
    client: LanguageClient,
) -> None:
    """Edits to an open note are searched and linked before they are saved; closing the
    buffer unsaved gives the file back (which never changed on disk)."""
    note = VAULT / "alice.md"
    on_disk = note.read_text(encoding="utf-8")
    uri = note.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=on_disk
            )
        )
    )
    edited = on_disk + "\n## Zebracorn Plans\n\nAlice wants a zebracorn mascot.\n"
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited)],
        )
    )

    async def searchable() -> bool:
        hits = await command(client, "lspMemory.search", "zebracorn", "note", 3)
        return [hit["title"] for hit in hits] == ["Alice Notes"]

    async def heading_completes() -> bool:
        return "Zebracorn Plans" in await completes(client, "[[Alice Notes#Zebra")

    await eventually(searchable)
    await eventually(heading_completes)
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )

    async def forgotten() -> bool:
        hits = await command(client, "lspMemory.search", "zebracorn", "note", 3)
        return not hits and "Zebracorn Plans" not in await completes(client, "[[Alice Notes#Z")

    await eventually(forgotten)
    assert note.read_text(encoding="utf-8") == on_disk
