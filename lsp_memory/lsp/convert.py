"""Conversions between the domain's positions (Python string indices) and the client's
(UTF-16 or UTF-8 code units, as negotiated). Never slice a line by a client column."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import ServerTextPosition

if TYPE_CHECKING:
    from lsp_memory.model import Reference


def open_document(documents: dict[str, TextDocument], uri: str) -> TextDocument | None:
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
    documents: dict[str, TextDocument], uri: str, position: types.Position
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
