"""``lspMemory.unlinkedMentions``: the notes that mention a note without linking it.

Argument: a note's URI (its file in a vault). Answer: one entry a mention, by note then
position — a ``Location`` (``uri``, ``range`` in the client's units), with the note it is in
(``note``, ``title``), the text (``text``) and its line cut to a snippet (``snippet``), so a
client can show them as a list of places. Open notes are read from their buffers. The
"Link to [[Title]]" code actions on the mentions of an open document are offered by
``diagnostics``' code action handler (``lsp/actions.py``'s ``mention_actions``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from lsp_memory.errors import UserError
from lsp_memory.lsp.convert import Places, as_documents
from lsp_memory.services.editor.mentions import mention_record

if TYPE_CHECKING:
    from lsp_memory.app import Snapshot
    from lsp_memory.lsp.server import MemoryServer

COMMAND = "lspMemory.unlinkedMentions"


def register(server: MemoryServer) -> None:
    @server.command(COMMAND)
    async def unlinked_mentions(ls: LanguageServer, *args: Any) -> list[dict[str, Any]]:
        session = server.session
        if session is None:
            raise _invalid("lsp-memory is not initialized yet")
        uri = args[0] if args else None
        path = to_fs_path(uri) if isinstance(uri, str) and uri.strip() else None
        if path is None:
            raise _invalid("the argument must be a note's URI")
        documents = as_documents(server.documents)
        places = Places(ls.workspace.position_codec)

        def find(reads: Snapshot) -> list[dict[str, Any]]:
            mentions = reads.mentions()
            note = next((n for v in reads.vaults if (n := v.note_at(Path(path))) is not None), None)
            if note is None:
                raise UserError(f"not a note of a vault: {uri}")
            found: list[dict[str, Any]] = []
            for other, place in mentions.of_note(note, documents):
                record = mention_record(other, place)
                location = places.location(place)
                record["uri"] = location.uri
                record["range"] = _range(location.range)
                found.append(record)
            return found

        try:
            return await session.run(find)
        except UserError as error:
            raise _invalid(str(error)) from None


def _range(where: Any) -> dict[str, dict[str, int]]:
    return {
        "start": {"line": where.start.line, "character": where.start.character},
        "end": {"line": where.end.line, "character": where.end.character},
    }


def _invalid(message: str) -> Exception:
    """A bad argument or state, answered as ``InvalidParams`` with its one line."""
    return JsonRpcInvalidParams(message)
