"""No user sees another's data. A store of two users who share friendly ids and numbers
(``kb.jsonl``: ann's records and mallory's ``@leaf_active_a001``, ``#1``, ``#42``,
``@leaf_ctx``, ``@alice_ent``, ``@health_tag``, and ``#99``/``@mallory_only_f099`` that only
mallory has), served to ann: every request and command that returns data is asked, and no
answer holds anything of mallory's. Mallory's own server on the same store and cache writes
her record pages beside ann's, never over them."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types
from pygls.uris import to_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_memory.services.memory.interchange import import_records
from lsp_memory.store.sqlite import open_store
from tests.client.conftest import ENV, WORK, ready
from tests.client.test_malformed import Channel, _initialized
from tests.conftest import DATA, KB, USER

STORE, VAULT = WORK / "isolation-store", WORK / "isolation-vault"
ISOLATED = {**ENV, "LSP_MEMORY_STORE": str(STORE), "XDG_CACHE_HOME": str(WORK / "iso-cache")}
TEXT = (
    "Ask @leaf_active_a001 and #1 and #42 and #99 and @mallory_only_f099\n"
    "About @leaf_ctx, @alice_ent and @health_tag in [[Project Plan]]\n"
)


MALLORYS = ("MALLORY", "Mallory's", "mallory.example", "MySQL", "at night")
"""What only mallory's records say (her statements, names, descriptions, fields)."""


def _prepare() -> None:
    if not STORE.exists():
        with open_store(STORE) as store:
            import_records(store, KB.read_bytes(), user=USER, source="kb")
        shutil.copytree(DATA / "notes", VAULT)


def _server(user: str) -> ClientServerConfig:
    command = [sys.executable, "-m", "lsp_memory", "--user", user, "--vault", str(VAULT)]
    return ClientServerConfig(server_command=[*command, "serve"], server_env=ISOLATED)


@pytest_lsp.fixture(config=_server(USER))  # type: ignore[untyped-decorator]
async def ann(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    _prepare()
    await ready(lsp_client, client_capabilities("visual-studio-code"))
    yield lsp_client
    await lsp_client.shutdown_session()


def _mine(found: Any) -> str:
    """``found`` as JSON text, asserted to hold nothing of mallory's."""
    text = json.dumps(found, default=lambda o: getattr(o, "__dict__", repr(o)))
    for theirs in MALLORYS:
        assert theirs not in text, (theirs, text[:2000])
    return text


def _open(client: LanguageClient, name: str, text: str = TEXT) -> str:
    uri = (WORK / name).as_uri()
    item = types.TextDocumentItem(uri=uri, language_id="markdown", version=1, text=text)
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
    return uri


def _at(uri: str, line: int, needle: str) -> dict[str, Any]:
    column = TEXT.splitlines()[line].index(needle) + 1
    return {
        "text_document": types.TextDocumentIdentifier(uri=uri),
        "position": types.Position(line=line, character=column),
    }


async def _command(client: LanguageClient, name: str, *arguments: Any) -> Any:
    params = types.ExecuteCommandParams(command=name, arguments=list(arguments))
    return await client.workspace_execute_command_async(params)


async def test_nothing_of_another_users_reaches_any_answer(ann: LanguageClient) -> None:
    client = ann
    uri = _open(client, "isolation.md")
    for line, needle in [(0, "@leaf_active"), (0, "#1 "), (0, "#42"), (0, "#99"), (0, "@mall")]:
        hover = await client.text_document_hover_async(types.HoverParams(**_at(uri, line, needle)))
        _mine(hover)
    for line, needle in [(1, "@leaf_ctx"), (1, "@alice"), (1, "@health")]:
        _mine(await client.text_document_hover_async(types.HoverParams(**_at(uri, line, needle))))
    own = await client.text_document_hover_async(types.HoverParams(**_at(uri, 0, "@leaf")))
    assert own is not None and "PostgreSQL 16" in _mine(own)  # ann's own, same id
    for typed in ["@mall", "@leaf", "#9", "#4", "@alice", "@heal"]:
        completion = await client.text_document_completion_async(
            types.CompletionParams(
                text_document=types.TextDocumentIdentifier(uri=_open(client, "typed.md", typed)),
                position=types.Position(line=0, character=len(typed)),
            )
        )
        _mine(completion)

    pages: list[str] = []
    for line, needle in [(0, "@leaf_active"), (0, "#42"), (1, "@leaf_ctx"), (1, "@alice")]:
        found = await client.text_document_definition_async(
            types.DefinitionParams(**_at(uri, line, needle))
        )
        _mine(found)
        first = found[0] if isinstance(found, list) else found
        assert isinstance(first, types.Location), (needle, found)
        path = to_fs_path(first.uri)
        if path is not None and "/pages/" in path:
            pages.append(path)
            _mine(Path(path).read_text(encoding="utf-8"))
    assert len(pages) == 4

    _mine(
        await client.text_document_references_async(
            types.ReferenceParams(
                **_at(uri, 1, "@leaf_ctx"),
                context=types.ReferenceContext(include_declaration=True),
            )
        )
    )
    for query in ["MySQL", "leaf", "Alice", "night"]:
        _mine(await client.workspace_symbol_async(types.WorkspaceSymbolParams(query=query)))
    whole = types.Range(start=types.Position(0, 0), end=types.Position(2, 0))
    document = types.TextDocumentIdentifier(uri=uri)
    hints = types.InlayHintParams(text_document=document, range=whole)
    _mine(await client.text_document_inlay_hint_async(hints))
    lens = await client.text_document_code_lens_async(types.CodeLensParams(text_document=document))
    _mine(lens)
    block = await _command(client, "lspMemory.buildContext", uri)
    assert "PostgreSQL 16" in _mine(block)  # mallory's pinned claim is not in ann's block
    for query in ["MySQL", "night", "leaf service"]:
        _mine(await _command(client, "lspMemory.search", query))
    status = await _command(client, "lspMemory.status")
    _mine(status)
    with open_store(STORE) as store:
        assert status["claims"]["total"] == len(store.claims(USER))

    rename = await client.text_document_rename_async(
        types.RenameParams(**_at(uri, 1, "@leaf_ctx"), new_name="leaf_context")
    )
    _mine(rename)
    with open_store(STORE) as store:  # ann's context renamed; mallory's untouched
        assert store.context_by_friendly_id("mallory", "leaf_ctx") is not None
        assert store.context_by_friendly_id(USER, "leaf_context") is not None

    mallory = await _mallory_pages()
    assert set(mallory).isdisjoint(pages)  # her pages are other files …
    for path in pages:  # … and ann's still show ann's records
        _mine(Path(path).read_text(encoding="utf-8"))


async def _mallory_pages() -> list[str]:
    """Mallory's server on the same store and cache, going to the definition of the ids
    she shares with ann: the pages it writes, each showing her records."""
    channel = Channel(["--user", "mallory", "--vault", str(VAULT)], ISOLATED)
    uri = (WORK / "mallory.md").as_uri()
    try:
        _initialized(channel)
        item = {"uri": uri, "languageId": "markdown", "version": 1, "text": TEXT}
        channel.send({"method": "textDocument/didOpen", "params": {"textDocument": item}})
        pages = []
        for number, (line, needle) in enumerate([(0, "@leaf_active"), (1, "@leaf_ctx")], 2):
            column = TEXT.splitlines()[line].index(needle) + 1
            where = {"textDocument": {"uri": uri}, "position": {"line": line, "character": column}}
            channel.send({"id": number, "method": "textDocument/definition", "params": where})
            found = channel.response(number)["result"]
            path = to_fs_path((found[0] if isinstance(found, list) else found)["uri"])
            assert path is not None
            assert "MALLORY" in Path(path).read_text(encoding="utf-8")
            pages.append(path)
        channel.send({"id": 9, "method": "shutdown"})
        channel.response(9)
        channel.send({"method": "exit"})
        channel.process.wait(timeout=30)
    finally:
        if channel.process.poll() is None:
            channel.process.kill()
        channel.process.wait()
    return pages
