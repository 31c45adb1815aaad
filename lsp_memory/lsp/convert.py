"""Conversions between the domain's positions (Python string indices) and the client's
(UTF-16 or UTF-8 code units, as negotiated). Never slice a line by a client column."""

from __future__ import annotations

from lsprotocol import types
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import ServerTextPosition


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
