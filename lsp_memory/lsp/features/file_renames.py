"""``workspace/willRenameFiles`` and ``workspace/didRenameFiles``: renaming or moving a note,
several, or a folder in the editor's file explorer keeps every ``[[link]]`` to them.

Before the files move, the client asks for the edits that rewrite the links naming them, in
the vaults' notes and the open documents (see :mod:`lsp_memory.services.editor.moves` for
which links and how); the edits address the files where they are then. Once they have moved,
the index follows at once — the old paths dropped, the new ones read (an open buffer's text
wins) — instead of waiting for the file watcher or the next rescan, so no "Note not found"
lingers and ``[[`` completion offers the new names.

Both are registered for Markdown files (``*.md``, ``*.markdown``) and for folders; a rename
outside every vault answers null. The client sends them when it renames the files itself
(VS Code's explorer, ``vscode.workspace.fs`` does not): vscode-languageclient does so for a
server that declares these capabilities.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import to_fs_path

from lsp_memory.lsp.convert import Places, as_documents, edit_capability, plan_edit
from lsp_memory.services.editor.rename import Move

if TYPE_CHECKING:
    from lsp_memory.app import Snapshot
    from lsp_memory.lsp.server import MemoryServer

_NOTES = types.FileOperationPattern(
    glob="**/*.{md,markdown}",
    matches=types.FileOperationPatternKind.File,
    options=types.FileOperationPatternOptions(ignore_case=True),
)
_FOLDERS = types.FileOperationPattern(glob="**/*", matches=types.FileOperationPatternKind.Folder)
FILTERS = types.FileOperationRegistrationOptions(
    filters=[
        types.FileOperationFilter(scheme="file", pattern=_NOTES),
        types.FileOperationFilter(scheme="file", pattern=_FOLDERS),
    ]
)
"""What the client tells the server about: notes and folders on disk."""


def _moves(files: Sequence[types.FileRename]) -> list[tuple[Move, str]]:
    """Each rename of a file on disk, with the URI it moves to."""
    moves = []
    for rename in files:
        source, destination = to_fs_path(rename.old_uri), to_fs_path(rename.new_uri)
        if source and destination and rename.old_uri.startswith("file:"):
            moves.append((Move(Path(source), Path(destination)), rename.new_uri))
    return moves


def register(server: MemoryServer) -> None:
    @server.feature(types.WORKSPACE_WILL_RENAME_FILES, FILTERS)
    async def will_rename(
        ls: MemoryServer, params: types.RenameFilesParams
    ) -> types.WorkspaceEdit | None:
        session = ls.session
        moves = [move for move, _ in _moves(params.files)]
        if session is None or not moves:
            return None
        documents = ls.documents
        opened = as_documents(documents)
        versions = {uri: doc.version for uri, doc in documents.items()}
        capability = edit_capability(ls.client_capabilities)
        places = Places(ls.workspace.position_codec)

        def plan(reads: Snapshot) -> types.WorkspaceEdit | None:
            found = reads.mover().plan(moves, opened)
            if found is None or not found.edits:
                return None
            return plan_edit(found, places, capability, versions)

        return await session.run(plan)

    @server.feature(types.WORKSPACE_DID_RENAME_FILES, FILTERS)
    def did_rename(ls: MemoryServer, params: types.RenameFilesParams) -> None:
        session = ls.session
        if session is None:
            return
        documents = ls.documents
        for move, uri in _moves(params.files):
            session.note_edited(move.source, None)  # gone from there
            # There: as the open buffer has it (the edits above may be unsaved), else the disk.
            opened = documents.get(uri)
            session.note_edited(move.destination, opened.source if opened else None)
