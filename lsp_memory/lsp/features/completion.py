"""``textDocument/completion`` for ``@``, ``#``, ``[[``, ``[[Note#`` and ``[[Note#^``.

A block chosen without an ``^id`` gets one written into its note: through the item's
``additionalTextEdits`` when the note is the document being edited, else by the command the
item runs (``lspMemory.addBlockId``, which asks the client to apply the edit)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument

from lsp_memory import refs
from lsp_memory.lsp.actions import ADD_BLOCK_ID
from lsp_memory.lsp.convert import client_position, cursor_at, offset, open_texts
from lsp_memory.services.editor.completion import Candidate, typed_at

if TYPE_CHECKING:
    from lsp_memory.lsp.server import MemoryServer

_KINDS = {
    "claim": types.CompletionItemKind.Value,  # Text shows as a plain word ("abc")
    "context": types.CompletionItemKind.Folder,
    "entity": types.CompletionItemKind.Class,
    "tag": types.CompletionItemKind.Keyword,
    "domain": types.CompletionItemKind.Module,
    "note": types.CompletionItemKind.File,
    "heading": types.CompletionItemKind.Reference,
    "block": types.CompletionItemKind.Reference,
}


def _item(candidate: Candidate, replace: types.Range, doc: TextDocument) -> types.CompletionItem:
    extra: list[types.TextEdit] | None = None
    command: types.Command | None = None
    write = candidate.write
    if write is not None and str(write.path) == to_fs_path(doc.uri):
        at = client_position(doc, write.line, write.column)
        extra = [types.TextEdit(range=types.Range(start=at, end=at), new_text=write.text)]
    elif write is not None:
        uri = from_fs_path(str(write.path)) or write.path.as_uri()
        command = types.Command(
            title=f"Add ^{write.block_id}",
            command=ADD_BLOCK_ID,
            arguments=[uri, write.first, write.block_id],
        )
    return types.CompletionItem(
        label=candidate.label,
        kind=_KINDS.get(candidate.kind, types.CompletionItemKind.Text),
        detail=candidate.detail,
        documentation=types.MarkupContent(
            kind=types.MarkupKind.Markdown, value=candidate.documentation
        ),
        sort_text=candidate.sort,
        filter_text=candidate.filter,
        text_edit=types.TextEdit(range=replace, new_text=candidate.insert),
        tags=[types.CompletionItemTag.Deprecated] if candidate.inactive else None,
        additional_text_edits=extra,
        command=command,
    )


def register(server: MemoryServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_COMPLETION,
        types.CompletionOptions(trigger_characters=["@", "#", "["]),
    )
    def completion(ls: MemoryServer, params: types.CompletionParams) -> types.CompletionList | None:
        session = ls.session
        at = cursor_at(ls.documents, params.text_document.uri, params.position)
        if session is None or at is None:
            return None
        doc = at.doc
        line = doc.lines[at.line].rstrip("\r\n")
        column = min(at.column, len(line))
        typed = typed_at(line, column)
        if typed is None:
            return None
        if refs.is_markdown(doc.language_id, doc.uri) and refs.in_code(
            doc.source, offset(doc, at.line, column)
        ):
            return None
        # A block's note may be open with unsaved text: completion reads that.
        buffers = open_texts(ls.documents) if typed.kind == "block" else None
        found, incomplete = session.reads().completer(buffers).complete(typed)
        # A ']]' the editor closed is replaced too: the cursor lands after the link.
        end = column + 2 if typed.closed else column
        replace = types.Range(
            start=client_position(doc, at.line, typed.start),
            end=client_position(doc, at.line, end),
        )
        return types.CompletionList(
            is_incomplete=incomplete, items=[_item(c, replace, doc) for c in found]
        )
