"""Conversions between the domain's positions (Python string indices) and the client's
(UTF-16 or UTF-8 code units, as negotiated). Never slice a line by a client column."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import PositionCodec, ServerTextPosition

from lsp_memory.lsp.documents import lsp_lines
from lsp_memory.services.editor.references import Document

if TYPE_CHECKING:
    from lsp_memory.model import Reference
    from lsp_memory.services.editor.references import Place
    from lsp_memory.services.editor.rename import Plan


def open_document(documents: Mapping[str, TextDocument], uri: str) -> TextDocument | None:
    """An open document, or None: requests about unopened files answer nothing rather than
    read the disk."""
    return documents.get(uri)


def client_position(doc: TextDocument, line: int, column: int) -> types.Position:
    """The client's position of ``column`` (a Python index) on ``line``."""
    return doc.position_to_client_units(ServerTextPosition(line=line, character=column))


def offset(doc: TextDocument, line: int, column: int) -> int:
    """The Python string index in the whole document of ``column`` on ``line``."""
    return sum(len(text) for text in doc.lines[:line]) + column


@dataclass(frozen=True, slots=True)
class Cursor:
    """A request's position in an open document, in Python string indices."""

    doc: TextDocument
    line: int
    column: int

    @property
    def offset(self) -> int:
        return offset(self.doc, self.line, self.column)


def cursor_at(
    documents: Mapping[str, TextDocument], uri: str, position: types.Position
) -> Cursor | None:
    """Where a request points, or None for an unopened document or a line past its end."""
    doc = open_document(documents, uri)
    if doc is None:
        return None
    server = doc.position_from_client_units(position)
    if server.line >= len(doc.lines):
        return None
    return Cursor(doc, server.line, server.character)


def token_range(doc: TextDocument, reference: Reference) -> types.Range:
    """A reference's range in client units, from its string offsets (a token never spans
    lines)."""
    start = doc.server_position_at_offset(reference.offset)
    end = start.character + reference.end - reference.offset
    return types.Range(
        start=client_position(doc, start.line, start.character),
        end=client_position(doc, start.line, end),
    )


FileOperation = types.CreateFile | types.RenameFile | types.DeleteFile


def edit_capability(
    capabilities: types.ClientCapabilities,
) -> types.WorkspaceEditClientCapabilities:
    """What the client declares it takes in a workspace edit (nothing declared: plain
    ``changes``)."""
    workspace = capabilities.workspace
    found = workspace.workspace_edit if workspace is not None else None
    return found or types.WorkspaceEditClientCapabilities()


def workspace_edit(
    capability: types.WorkspaceEditClientCapabilities,
    edits: Mapping[str, Sequence[types.TextEdit]],
    versions: Mapping[str, int | None] | None = None,
    *,
    before: Sequence[FileOperation] = (),
    after: Sequence[FileOperation] = (),
) -> types.WorkspaceEdit:
    """Text edits by URI as the client can take them: ``documentChanges`` when it declares
    them or when there are file operations — each document with its version when open
    (``versions``), file operations ``before`` and ``after`` the text edits — else plain
    ``changes``. Callers offer file operations only to clients that declare them."""
    if not capability.document_changes and not (before or after):
        return types.WorkspaceEdit(changes={uri: list(found) for uri, found in edits.items()})
    versions = versions or {}
    changes: list[types.TextDocumentEdit | FileOperation] = list(before)
    for uri, found in edits.items():
        identifier = types.OptionalVersionedTextDocumentIdentifier(
            uri=uri, version=versions.get(uri)
        )
        changes.append(types.TextDocumentEdit(text_document=identifier, edits=list(found)))
    changes += after
    return types.WorkspaceEdit(document_changes=changes)


def plan_edit(
    plan: Plan,
    places: Places,
    capability: types.WorkspaceEditClientCapabilities,
    versions: Mapping[str, int | None],
) -> types.WorkspaceEdit:
    """A rename's plan as the client can take it, its file rename after the text edits."""
    by_uri: dict[str, list[types.TextEdit]] = {}
    for edit in plan.edits:
        text_edit = types.TextEdit(range=places.range(edit.place), new_text=edit.new_text)
        by_uri.setdefault(places.uri(edit.place.document), []).append(text_edit)
    after: list[FileOperation] = []
    if plan.move is not None:
        # Named as the edits name files, so the client sees one resource.
        source = from_fs_path(str(plan.move.source)) or plan.move.source.as_uri()
        destination = from_fs_path(str(plan.move.destination)) or plan.move.destination.as_uri()
        after.append(
            types.RenameFile(
                old_uri=source,
                new_uri=destination,
                # Neither overwrite nor ignore: an existing file makes the client refuse.
                options=types.RenameFileOptions(overwrite=False, ignore_if_exists=False),
            )
        )
    return workspace_edit(capability, by_uri, versions, after=after)


def open_texts(documents: Mapping[str, TextDocument]) -> dict[str, str]:
    """Every open document's text by file path (documents without a file left out)."""
    found: dict[str, str] = {}
    for uri, doc in documents.items():
        path = to_fs_path(uri)
        if path is not None:
            found[path] = doc.source
    return found


def as_document(doc: TextDocument) -> Document:
    """An open document as the services see it: URI, file, unsaved text, language."""
    path = to_fs_path(doc.uri)
    return Document(doc.uri, Path(path) if path else None, doc.source, doc.language_id)


def as_documents(documents: Mapping[str, TextDocument]) -> list[Document]:
    """Every open document, as the services see them."""
    return [as_document(doc) for doc in documents.values()]


class Places:
    """Client URIs and ranges of places in many documents, open or read from disk, in the
    negotiated position encoding; each document's lines are split once, at LSP line breaks
    only (``\n``, ``\r\n``, ``\r``: ``str.splitlines`` also breaks at form feeds and
    U+2028, which clients do not)."""

    def __init__(self, codec: PositionCodec) -> None:
        self._codec = codec
        self._lines: dict[int, tuple[Document, list[str], list[int]]] = {}
        self._ascii: dict[tuple[int, int], bool] = {}  # (document, line) → only ASCII

    @staticmethod
    def uri(document: Document) -> str:
        if document.uri is not None:
            return document.uri
        assert document.path is not None  # a document is open (a URI) or a file
        return from_fs_path(str(document.path)) or document.path.as_uri()

    def position(self, document: Document, offset: int) -> types.Position:
        found = self._lines.get(id(document))
        if found is None:
            lines = lsp_lines(document.text)
            starts = [0]
            for text in lines:
                starts.append(starts[-1] + len(text))
            found = self._lines[id(document)] = (document, lines, starts)
        _, lines, starts = found
        line = max(bisect_right(starts, offset) - 1, 0)
        if line >= len(lines):
            return types.Position(line=len(lines), character=0)
        column = offset - starts[line]
        key = (id(document), line)
        ascii_only = self._ascii.get(key)
        if ascii_only is None:
            ascii_only = self._ascii[key] = lines[line].isascii()
        if ascii_only:  # one unit a character in every encoding: no measuring the line
            return types.Position(line=line, character=column)
        return types.Position(
            line=line, character=self._codec.client_num_units(lines[line][:column])
        )

    def range(self, place: Place) -> types.Range:
        return types.Range(
            start=self.position(place.document, place.start),
            end=self.position(place.document, place.end),
        )

    def location(self, place: Place) -> types.Location:
        return types.Location(uri=self.uri(place.document), range=self.range(place))


class LineUnits:
    """Client columns of pieces of one document's lines, from string offsets: each line's
    start is found once, and a line of ASCII (one unit a character in every encoding) is
    never measured."""

    def __init__(self, doc: TextDocument) -> None:
        self._lines = doc.lines
        self._codec = doc.position_codec
        starts = [0]
        for text in self._lines:
            starts.append(starts[-1] + len(text))
        self._starts = starts

    def columns(self, line: int, start: int, end: int) -> tuple[int, int]:
        """The client column of string offset ``start`` on ``line`` and the length in client
        units of ``start``..``end`` (both on that line)."""
        text = self._lines[line]
        column = start - self._starts[line]
        if text.isascii():
            return column, end - start
        units = self._codec.client_num_units
        before = units(text[:column])
        return before, units(text[: column + end - start]) - before
