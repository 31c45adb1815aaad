"""Reference counts in code lenses and semantic tokens, through a real JSON-RPC client
(pytest-lsp) with the recorded capabilities of VS Code and Neovim 0.7 and 0.11 (UTF-8
positions), on the shared fixture store and vault (never written: an open note's edits stay
in its buffer) and a cache folder of each test's own."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.client.conftest import ENCODINGS, ENV, VAULT, WORK, open_doc, prepare, takes_refreshes
from tests.client.test_hover_definition import position_of, units

ALICE = VAULT / "alice.md"  # "# Alice" on line 8, "## Working Style" 12, "## Open Questions" 16


@pytest_lsp.fixture(  # type: ignore[untyped-decorator]
    params=["visual-studio-code", "neovim@v0.7", "neovim@v0.11"],
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "lsp_memory", "serve"], server_env=ENV
    ),
)
async def client(
    request: pytest.FixtureRequest, lsp_client: LanguageClient, tmp_path: Path
) -> AsyncIterator[LanguageClient]:
    prepare()
    lsp_client.refreshed = takes_refreshes(lsp_client)  # type: ignore[attr-defined]
    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(request.param),
            workspace_folders=[types.WorkspaceFolder(uri=VAULT.as_uri(), name="vault")],
            initialization_options={"cache": str(tmp_path / "cache")},
        )
    )
    ENCODINGS[id(lsp_client)] = result.capabilities.position_encoding
    lsp_client.server_capabilities = result.capabilities  # type: ignore[attr-defined]
    for _ in range(300):
        if any("index ready" in m.message for m in lsp_client.log_messages):
            break
        await asyncio.sleep(0.05)
    else:
        pytest.fail(f"no 'index ready' message: {lsp_client.log_messages}")
    yield lsp_client
    await lsp_client.shutdown_session()


async def lenses(client: LanguageClient, uri: str) -> dict[int, str]:
    """The reference-count lenses of a document: line → title."""
    found = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    shown = {}
    for lens in found or ():
        assert lens.command is not None
        if lens.command.command == "lspMemory.showReferences":
            assert list(lens.command.arguments or ()) == [
                uri,
                {"line": lens.range.start.line, "character": 0},
            ]
            shown[lens.range.start.line] = lens.command.title
    return shown


async def show(client: LanguageClient, uri: str, line: int) -> list[tuple[str, int]]:
    """What clicking the count on ``line`` lists: (file name, line) of each link."""
    found = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="lspMemory.showReferences", arguments=[uri, {"line": line, "character": 0}]
        )
    )
    return [
        (place["uri"].rsplit("/", 1)[1], place["range"]["start"]["line"]) for place in found or ()
    ]


async def test_a_notes_title_and_linked_headings_show_how_many_links_name_them(
    client: LanguageClient,
) -> None:
    """Other notes link Alice twice (one to "Working Style"); an open prompt outside the
    vault adds two more (one to "Open Questions"); the note's own heading without links
    gets no lens. The existing context lens of a document with references stays."""
    uri = open_doc(client, ALICE, ALICE.read_text("utf-8"))
    assert await lenses(client, uri) == {8: "2 references", 12: "1 reference"}
    assert sorted(await show(client, uri, 8)) == [("deep-note.md", 7), ("project-plan.md", 2)]
    assert await show(client, uri, 12) == [("deep-note.md", 7)]
    prompt = open_doc(
        client, WORK / "lens-prompt.md", "Ask [[Alice]] about\n[[A. Example#Open Questions]].\n"
    )
    assert await lenses(client, uri) == {8: "4 references", 12: "1 reference", 16: "1 reference"}
    assert await show(client, uri, 16) == [("lens-prompt.md", 1)]
    found = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=prompt))
    )
    assert [lens.command.command for lens in found or () if lens.command] == [
        "lspMemory.buildContext"
    ]
    # A note without a "# " heading has its count on line 0.
    meeting = VAULT / "meeting.md"
    assert await lenses(client, open_doc(client, meeting, meeting.read_text("utf-8"))) == {
        0: "1 reference"
    }


async def test_a_count_follows_an_open_notes_unsaved_links(client: LanguageClient) -> None:
    """A link typed into an open note (not saved) counts once the server has its text, and
    the editor is asked for its lenses again where it takes that request."""
    uri = open_doc(client, ALICE, ALICE.read_text("utf-8"))
    plan = VAULT / "project-plan.md"
    plan_uri = open_doc(client, plan, plan.read_text("utf-8"))
    assert (await lenses(client, uri)).get(16) is None
    refreshed: list[str] = client.refreshed  # type: ignore[attr-defined]
    refreshed.clear()
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=plan_uri, version=2),
            content_changes=[
                types.TextDocumentContentChangeWholeDocument(
                    text=plan.read_text("utf-8") + "\nAsk [[Alice Notes#Open Questions]].\n"
                )
            ],
        )
    )
    for _ in range(100):
        shown = await lenses(client, uri)
        if shown.get(16):
            break
        await asyncio.sleep(0.1)
    assert shown == {8: "3 references", 12: "1 reference", 16: "1 reference"}
    workspace = (client.capabilities or types.ClientCapabilities()).workspace
    if workspace and workspace.code_lens and workspace.code_lens.refresh_support:
        assert "code lenses" in refreshed


async def test_show_references_refuses_bad_arguments(client: LanguageClient) -> None:
    """Each with one line saying what is wrong, never an internal error."""
    cases: list[tuple[list[Any], str]] = [
        ([], "arguments: a document URI"),
        ([ALICE.as_uri(), "top"], "arguments: a document URI"),
        (["file:///nowhere.md", {"line": 0}], "file:///nowhere.md is not open"),
    ]
    for arguments, message in cases:
        with pytest.raises(JsonRpcInvalidParams) as raised:
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="lspMemory.showReferences", arguments=arguments)
            )
        assert message in str(raised.value), raised.value


TOKENS = """\
# Tokens 😀
😀 @leaf_active_a001, @leaf_superseded_a004 and @leaf_retracted_a003, @leaf_merged_a005.
@leaf_contested_a002 @leaf_ctx @alice_ent @health_tag @work_domain @no_such_id_x #999999 @bob
😀 [[Alice Notes]] [[Alice Notes#Working Style|style]] [[Alice Notes#Nope]] [[Missing Target]]
`@leaf_ctx` is code.
"""


def decoded(client: LanguageClient, data: list[int]) -> dict[tuple[int, int], tuple[str, set[str]]]:
    """(line, client column) → (type, modifiers) of each token, by the server's legend; the
    length checked against the next token's start."""
    legend = client.server_capabilities.semantic_tokens_provider.legend  # type: ignore[attr-defined]
    found = {}
    line = column = 0
    for at in range(0, len(data), 5):
        delta_line, delta_start, length, kind, bits = data[at : at + 5]
        line += delta_line
        column = delta_start if delta_line else column + delta_start
        assert length > 0
        names = {name for bit, name in enumerate(legend.token_modifiers) if bits >> bit & 1}
        found[(line, column)] = (legend.token_types[kind], names)
    return found


def at(client: LanguageClient, needle: str, delta: int = 0) -> tuple[int, int]:
    where = position_of(client, TOKENS, needle, delta)
    return where.line, where.character


async def tokens_of(client: LanguageClient, uri: str, **range_: Any) -> list[int]:
    document = types.TextDocumentIdentifier(uri=uri)
    if range_:
        found = await client.text_document_semantic_tokens_range_async(
            types.SemanticTokensRangeParams(text_document=document, range=range_["range"])
        )
    else:
        found = await client.text_document_semantic_tokens_full_async(
            types.SemanticTokensParams(text_document=document)
        )
    assert found is not None
    return list(found.data)


async def test_semantic_tokens_give_each_reference_its_kind_and_state(
    client: LanguageClient,
) -> None:
    provider = client.server_capabilities.semantic_tokens_provider  # type: ignore[attr-defined]
    assert provider.full is True and provider.range is True
    assert {"deprecated", "unresolved"} <= set(provider.legend.token_modifiers)
    uri = open_doc(client, WORK / "tokens.md", TOKENS)
    found = decoded(client, await tokens_of(client, uri))
    assert found[at(client, "@leaf_active")] == ("variable", set())
    assert found[at(client, "@leaf_contested")] == ("variable", set())
    for stale in ("@leaf_superseded", "@leaf_retracted", "@leaf_merged"):
        assert found[at(client, stale)] == ("variable", {"deprecated"}), stale
    assert found[at(client, "@leaf_ctx")] == ("namespace", set())
    assert found[at(client, "@alice_ent")] == ("class", set())
    assert found[at(client, "@health_tag")] == ("enumMember", set())
    assert found[at(client, "@work_domain")] == ("type", set())
    assert found[at(client, "@no_such")] == ("variable", {"unresolved"})
    assert at(client, "#999999") not in found  # past every claim number: an issue number
    assert at(client, "@bob") not in found  # no memory id's shape: a handle
    assert found[at(client, "[[Alice Notes]]")] == ("string", set())
    assert found[at(client, "[[Alice Notes#W")] == ("string", set())
    assert found[at(client, "#Working")] == ("property", set())
    assert found[at(client, "|style")] == ("string", set())
    assert found[at(client, "#Nope")] == ("property", {"unresolved"})
    assert found[at(client, "[[Alice Notes#N")] == ("string", set())
    assert found[at(client, "[[Missing")] == ("string", {"unresolved"})
    assert (4, 1) not in found  # in code: no reference
    assert len(found) == 18
    # The anchor ends where the label starts: its length is "#Working Style" in client units.
    data = await tokens_of(client, uri)
    anchor = next(data[i + 2] for i in range(0, len(data), 5) if data[i + 3] == 6)
    assert anchor == units(client, "#Working Style")
    lines_2_3 = types.Range(start=types.Position(2, 0), end=types.Position(3, 0))
    ranged = decoded(client, await tokens_of(client, uri, range=lines_2_3))
    assert {line for line, _ in ranged} == {2, 3}
    assert ranged[at(client, "@leaf_ctx")] == ("namespace", set())
