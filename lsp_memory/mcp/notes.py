"""The MCP tools over the vaults' notes: ``read_note``, ``write_note``, ``edit_note``,
``move_note`` and ``delete_note``, each a call into ``notes.files`` (never a file outside a
vault; every write atomic; an edit refused when its anchor is not found exactly once; a move
never over a note) — a move's link rewrites planned as an editor's rename of the file is
(``services.editor.moves``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from lsp_memory.app import App
from lsp_memory.errors import UserError
from lsp_memory.mcp.calls import READ_ONLY, Calls, hints

NotePath = Annotated[
    str,
    Field(
        min_length=1,
        max_length=1_000,
        description="the note's path inside the vault, e.g. projects/alpha.md",
    ),
]
VaultName = Annotated[
    str | None,
    Field(max_length=1_000, description="the vault's folder name (default: the first vault)"),
]
MAX_NOTE_TEXT = 4 * 1024 * 1024
"""Characters of a note's text or an edit's anchor: as many as one message over stdio
carries (``mcp/stdio.py``); the note itself is bounded by the vault's own limit."""
NoteText = Annotated[str, Field(max_length=MAX_NOTE_TEXT)]


def register(server: MCPServer, app: App, calls: Calls) -> None:
    """Add the note tools to ``server``."""

    @server.tool(annotations=READ_ONLY)
    async def read_note(path: NotePath, vault: VaultName = None) -> dict[str, Any]:
        """A note's whole text (Markdown, front matter included), by its path in a vault."""

        def read() -> dict[str, Any]:
            files = app.note_files()
            note = files.locate(path, vault)
            return note.record(files.read(note))

        return await calls.read(read)

    @server.tool(annotations=hints(destructive=True, idempotent=True))
    async def write_note(
        path: NotePath,
        text: NoteText,
        overwrite: Annotated[
            bool, Field(description="replace the note when it exists (refused otherwise)")
        ] = False,
        vault: VaultName = None,
    ) -> dict[str, Any]:
        """Write a whole note: a new one (its folders made), or with ``overwrite`` an
        existing one replaced. Atomic: a reader sees the old note or the new one."""

        def written() -> dict[str, Any]:
            files = app.note_files()
            note = files.locate(path, vault)
            created = files.write(note, text, overwrite=overwrite)
            return {**note.record(), "created": created}

        return await calls.write(written)

    @server.tool(annotations=hints(destructive=True))
    async def edit_note(
        path: NotePath,
        operation: Annotated[
            Literal["append", "replace_section", "find_replace"],
            Field(
                description="append: text at the end; replace_section: the body under "
                "`heading`; find_replace: the one occurrence of `find`"
            ),
        ],
        text: Annotated[NoteText, Field(description="the text to add or put in place")],
        *,
        heading: Annotated[
            str | None, Field(max_length=1_000, description="replace_section's heading")
        ] = None,
        find: Annotated[
            str | None, Field(max_length=MAX_NOTE_TEXT, description="find_replace's text")
        ] = None,
        vault: VaultName = None,
    ) -> dict[str, Any]:
        """Edit an existing note in place, atomically: append text, replace the body of the
        section under a heading (up to the next heading of its level), or replace one exact
        text. Refused, changing nothing, when the heading or the text is not found exactly
        once."""

        def edited() -> dict[str, Any]:
            files = app.note_files()
            note = files.locate(path, vault)
            if operation == "append":
                files.append(note, text)
            elif operation == "replace_section":
                if heading is None:
                    raise UserError("replace_section needs the heading of the section")
                files.replace_section(note, heading, text)
            else:
                if find is None:
                    raise UserError("find_replace needs the text to find")
                files.replace_text(note, find, text)
            return {**note.record(), "operation": operation}

        return await calls.write(edited)

    @server.tool(annotations=hints(destructive=True))
    async def move_note(
        path: NotePath,
        new_path: Annotated[NotePath, Field(description="where the note goes, in the same vault")],
        vault: VaultName = None,
    ) -> dict[str, Any]:
        """Move or rename a note inside its vault, refused when a note is at ``new_path``;
        the ``[[links]]`` of other notes that named it are rewritten to name it there, as an
        editor's rename of the file does."""

        def moved() -> dict[str, Any]:
            from lsp_memory.services.editor.moves import rewritten
            from lsp_memory.services.editor.rename import Move

            files = app.note_files()
            source, destination = files.locate(path, vault), files.locate(new_path, vault)
            plan = app.snapshot().mover().plan([Move(source.full, destination.full)], [])
            texts = rewritten(plan)
            files.move(source, destination, texts)
            changed = sorted(files.path_of(p, source, destination) for p in texts)
            return {
                **destination.record(),
                "moved_from": source.path,
                "links_rewritten_in": changed,
            }

        return await calls.write(moved)

    @server.tool(annotations=hints(destructive=True, idempotent=True))
    async def delete_note(path: NotePath, vault: VaultName = None) -> dict[str, Any]:
        """Delete a note's file. The links that named it are left as they are (unresolved
        from then on)."""

        def deleted() -> dict[str, Any]:
            files = app.note_files()
            note = files.locate(path, vault)
            files.delete(note)
            return {**note.record(), "deleted": True}

        return await calls.write(deleted)
