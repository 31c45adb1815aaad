""" "Pin @x" and "Unpin @x" through a real JSON-RPC client: on a reference to a claim the
editor offers the one that applies (nothing off a reference, or on one that names no claim),
and running it pins or unpins the claim in the store, so the next offer is the other one and
the context block shows the pin; a reference that names nothing is an error."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from lsp_memory.services.memory.interchange import import_records
from lsp_memory.store.sqlite import open_store
from tests.client.conftest import SERVER, WORK, ready
from tests.client.test_remember import code_actions, open_line, parse_actions_like_editors, run
from tests.conftest import USER

STORES = iter(WORK / f"pins-store-{n}" for n in range(100))
FOLDERS: dict[int, Path] = {}  # each client's store
LINE = "Tea: @tea_pref and #2, not @nothing_here."


def claim(folder: Path, number: int) -> tuple[bool, str]:
    with open_store(folder) as store:
        found = store.claim_by_number(USER, number)
    assert found is not None
    return found.pinned, found.friendly_id


@pytest_lsp.fixture(config=SERVER)  # type: ignore[untyped-decorator]
async def client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    folder = next(STORES)  # a store per test: the actions write to it
    records = [
        {"kind": "claim", "statement": "I like green tea", "claim_type": "preference",
         "friendly_id": "tea_pref"},
        {"kind": "claim", "statement": "I live in Lyon", "claim_type": "identity",
         "pinned": True},
    ]  # fmt: skip
    with open_store(folder) as store:
        data = "\n".join(json.dumps(r) for r in records).encode()
        import_records(store, data, user=USER, source="pins")
    await ready(lsp_client, client_capabilities("visual-studio-code"), {"store": str(folder)})
    FOLDERS[id(lsp_client)] = folder
    yield lsp_client
    await lsp_client.shutdown_session()


def at(needle: str, after: int = 1) -> types.Range:
    where = types.Position(line=0, character=LINE.index(needle) + after)
    return types.Range(start=where, end=where)


async def titles(client: LanguageClient, uri: str, needle: str) -> list[str]:
    return [action.title for action in await code_actions(client, uri, at(needle))]


async def test_pin_and_unpin_from_a_reference(client: LanguageClient) -> None:
    parse_actions_like_editors(client)
    folder = FOLDERS[id(client)]
    uri = open_line(client, "pins.md", LINE)
    assert await titles(client, uri, "@tea_pref") == ["Pin @tea_pref"]
    assert await titles(client, uri, "#2") == ["Unpin #2"]  # imported pinned
    assert await titles(client, uri, "@nothing_here") == []
    assert await titles(client, uri, "Tea:") == []
    only = types.CodeActionKind.QuickFix
    assert await code_actions(client, uri, at("@tea_pref"), [only]) == []

    (pin,) = await code_actions(client, uri, at("@tea_pref"))
    assert isinstance(pin, types.CodeAction) and pin.command is not None
    done = await run(client, pin.command)
    assert done["pinned"] is True and done["message"].startswith("pinned: #1 @tea_pref")
    assert claim(folder, 1) == (True, "tea_pref")
    assert await titles(client, uri, "@tea_pref") == ["Unpin @tea_pref"]

    (unpin,) = await code_actions(client, uri, at("#2", 0))
    assert unpin.title == "Unpin #2"
    assert isinstance(unpin, types.CodeAction) and unpin.command is not None
    done = await run(client, unpin.command)
    assert done["message"].startswith("unpinned: #2 @")
    assert claim(folder, 2)[0] is False
    assert await titles(client, uri, "#2") == ["Pin #2"]
    hello = open_line(client, "hello.md", "Hello")
    block = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="lspMemory.buildContext", arguments=[hello])
    )
    assert block is not None
    assert "- [GLOBAL PINNED] [preference] I like green tea" in block["markdown"]
    assert "[GLOBAL PINNED] [identity]" not in block["markdown"]


async def test_a_wrong_reference_is_an_error(client: LanguageClient) -> None:
    for arguments in ([], ["@nothing_here"], [42]):
        with pytest.raises(Exception, match=r"reference|No memory"):
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="lspMemory.pinClaim", arguments=arguments)
            )
    assert claim(FOLDERS[id(client)], 1)[0] is False
