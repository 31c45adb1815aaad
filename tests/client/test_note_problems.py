"""A note that cannot be read as written gets a diagnostic, is still indexed, and the server
keeps serving; a note created while the server runs is picked up: at once when the editor
reports it, by the periodic rescan when the editor cannot watch files."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.client.conftest import VAULT

BROKEN = "---\ntitle: [unclosed\n---\n# Broken Front Matter\n\nStill see #4 here.\n"


async def test_broken_front_matter_is_a_diagnostic_and_the_note_still_indexed(
    client: LanguageClient,
) -> None:
    note = VAULT / "broken-front-matter.md"
    note.write_text(BROKEN, encoding="utf-8")
    try:
        uri = note.as_uri()
        # As an editor watching the workspace does (a client that watches files is not
        # rescanned for a minute; one that does not, every 2 seconds).
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=uri, type=types.FileChangeType.Created)]
            )
        )
        for _ in range(100):
            result = await client.workspace_execute_command_async(
                types.ExecuteCommandParams(
                    command="lspMemory.search", arguments=["Broken Front Matter", "note", 5]
                )
            )
            found: list[dict[str, Any]] = result or []
            if any(hit["title"] == "Broken Front Matter" for hit in found):
                break
            await asyncio.sleep(0.1)
        else:
            pytest.fail("the new note was never indexed")
        # Indexed although its front matter is broken, titled from its first heading. (Not
        # necessarily the first hit: until the background thread embeds the new note, the
        # dense side of the hybrid ranking can put an older note above it.)
        hit = next(hit for hit in found if hit["title"] == "Broken Front Matter")
        assert hit["path"] == "broken-front-matter.md"
        assert hit["reference"] == "[[Broken Front Matter]]"
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="markdown", version=1, text=BROKEN
                )
            )
        )
        for _ in range(100):
            if client.diagnostics.get(uri):
                break
            await asyncio.sleep(0.05)
        codes = {d.code: d for d in client.diagnostics.get(uri, [])}
        assert "note-unreadable" in codes and "inactive-claim" in codes
        problem = codes["note-unreadable"]
        assert "front matter" in problem.message
        assert problem.range.start == types.Position(line=0, character=0)
        client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
    finally:
        note.unlink(missing_ok=True)
