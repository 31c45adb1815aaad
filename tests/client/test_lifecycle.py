"""The memory lifecycle through a real language server: with ``consolidate_every`` the server
consolidates in the background and says so in its log; ``lspMemory.review`` lists the items
and decides one; a reference to a claim consolidation merged gets the inactive-claim
diagnostic with a quick fix to the claim it was merged into."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_memory.ids import new_uuid, timestamp
from lsp_memory.services.memory.interchange import import_records
from lsp_memory.store.sqlite import Episode, open_store
from tests.client.conftest import ENV, WORK, ready
from tests.client.test_diagnostics import actions, apply, at, open_text, text_edits, wait_for

STORES = iter(WORK / f"lifecycle-store-{n}" for n in range(100))
YESTERDAY = timestamp((datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ"))
MEMORY = [
    ("I like dark roast coffee", "preference", 0.9),
    ("I really love dark roast coffee", "preference", 0.8),
    ("I live in Lyon", "identity", 0.9),
    ("I no longer live in Lyon", "identity", 0.9),
]


@pytest_lsp.fixture(  # type: ignore[untyped-decorator]
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "lsp_memory", "serve"],
        server_env={**ENV, "LSP_MEMORY_USER": "lena"},
    )
)
async def client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    records = [
        {"kind": "claim", "statement": s, "claim_type": t, "confidence": c, "created_at": YESTERDAY}
        for s, t, c in MEMORY
    ]
    folder = next(STORES)  # a store per test: the background consolidation writes to it
    with open_store(folder) as store:
        data = "\n".join(json.dumps(r) for r in records).encode()
        import_records(store, data, user="lena", source="memory")
        first = store.claim_by_number("lena", 1)
        assert first is not None
        store.add_episodes(
            [
                Episode(
                    new_uuid(),
                    "lena",
                    "chat",
                    "user",
                    "Which coffee should I buy?",
                    YESTERDAY,
                    YESTERDAY,
                )
            ]
        )
        store.pin_to_conversation(
            "lena", "chat", kind="claim", target=first.claim_id,
            label=f"@{first.friendly_id}", when=YESTERDAY,
        )  # fmt: skip
    capabilities = client_capabilities("visual-studio-code")
    await ready(lsp_client, capabilities, {"consolidate_every": "1h", "store": str(folder)})
    yield lsp_client
    await lsp_client.shutdown_session()


async def review(client: LanguageClient, *args: Any) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="lspMemory.review", arguments=list(args))
    )


async def test_background_consolidation_review_and_the_merged_reference(
    client: LanguageClient,
) -> None:
    for _ in range(400):  # after the first sync and the embedding queue
        logs = [m.message for m in client.log_messages]
        if any(m.startswith("lsp-memory: consolidated (run 1)") for m in logs):
            break
        await asyncio.sleep(0.05)
    else:
        pytest.fail(f"no consolidation in the log: {logs}")
    line = next(m for m in logs if m.startswith("lsp-memory: consolidated"))
    assert "1 merged, 1 contradictions" in line

    (item,) = await review(client)
    assert (item["id"], item["kind"], item["proposal"]) == (1, "contradiction", "CONTRADICTION")
    assert [c["claim"] for c in item["claims"]] == ["#4", "#3"]

    text = "Coffee: #2\n"
    uri = open_text(client, "coffee.md", text)
    found = await wait_for(client, uri)
    merged = at(found, 0, 8)
    assert merged.code == "inactive-claim"
    assert merged.message.startswith("Claim #2 (@")
    assert "is merged into #1" in merged.message
    (action,) = await actions(client, uri, merged)
    (edit,) = text_edits(action, uri)
    assert apply(client, text.rstrip("\n"), edit) == "Coffee: #1"

    with pytest.raises(Exception, match="decision must be one of"):
        await review(client, "merge", 1)
    decided = await review(client, "accept", 1)
    assert decided["item"] == 1 and decided["run_id"] == 2
    assert decided["message"].startswith("review 1: #4 stands; #3 superseded by it")
    assert await review(client) == []
    with pytest.raises(Exception, match="already closed"):
        await review(client, "keep-both", 1)


async def test_build_context_with_a_conversation_recalls_it(client: LanguageClient) -> None:
    """``lspMemory.buildContext``'s ``conversation`` option: the conversation's pinned claim
    is a conversation pin; an unknown conversation is one line; ``session``, its old name,
    still works."""
    uri = open_text(client, "recall.md", "What should I drink?\n")
    block = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="lspMemory.buildContext", arguments=[uri, {"conversation": "chat"}]
        )
    )
    assert block is not None
    assert "- [CONV PINNED] [preference] I like dark roast coffee" in block["markdown"]
    with pytest.raises(Exception, match="no conversation 'nobody'"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="lspMemory.buildContext", arguments=[uri, {"session": "nobody"}]
            )
        )
