"""A JSON-RPC message's body read strictly, the same for both servers (the language server's
``lsp/framing.py`` and the MCP server's ``mcp/stdio.py``): a body that is not JSON is a
ParseError, JSON that is not an object an InvalidRequest, and each is answered with
``"id": null`` instead of being dropped. Standard library only.
"""

from __future__ import annotations

import json
import re
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

MAX_ERROR_MESSAGE = 500
"""Characters of an error message sent back (it may quote the input)."""


class Unreadable(Exception):
    """A body that is answered with an error instead of being handled."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message[:MAX_ERROR_MESSAGE])
        self.code = code
        self.message = message[:MAX_ERROR_MESSAGE]


def read_object(body: bytes, *, utf8_only: bool = False) -> dict[str, Any]:
    """The JSON object of a message's ``body``. Raises ``Unreadable``: a ParseError for a
    body that is not JSON, not UTF-8 (``utf8_only``: not even surrogates encoded as
    UTF-8 bytes, which Python's reader would take), nested too deep or holding a number
    Python will not make an int of; an InvalidRequest for JSON that is not an object."""
    readable = _without_lone_surrogates(body)
    try:
        data = json.loads(readable.decode("utf-8") if utf8_only else readable)
    except (ValueError, RecursionError) as error:  # not JSON, not UTF-8, too deep or long
        raise Unreadable(PARSE_ERROR, f"Parse error: {type(error).__name__}: {error}") from None
    if not isinstance(data, dict):
        raise Unreadable(INVALID_REQUEST, "Invalid Request: a message is a JSON object")
    return data


_HIGH = rb"\\u[dD][89abAB][0-9a-fA-F]{2}"
_LOW = rb"\\u[dD][c-fC-F][0-9a-fA-F]{2}"
_LONE = re.compile(
    rb"(?<!\\)((?:\\\\)*)"  # an even number of backslashes before: the next one escapes
    rb"(" + _HIGH + rb"(?!" + _LOW + rb")|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})" + _LOW + rb")"
)


def _without_lone_surrogates(body: bytes) -> bytes:
    """``body`` with each escaped lone surrogate (a high or low surrogate escape without its
    pair: valid JSON, and a UTF-16 editor can hold one after a bad paste) read as U+FFFD:
    such a string cannot be encoded, and SQLite, Tantivy and the tokenizer each failed on
    it."""
    if b"\\u" not in body and b"\\U" not in body:
        return body
    return _LONE.sub(lambda m: m.group(1) + b"\\ufffd", body)
