"""The JSON-RPC edges pygls leaves open, closed: a request whose parameters do not fit its
method gets an ``InvalidParams`` response (pygls logs it and answers nothing, so the client
waits forever); a body that is not JSON gets a ``ParseError`` response with a null id, as
JSON-RPC asks; and the log the editor shows gets one line per problem, not a traceback
(``LSP_MEMORY_DEBUG=1`` keeps them).
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcParseError
from pygls.protocol import LanguageServerProtocol

from lsp_memory.lsp import internals
from lsp_memory.lsp.framing import answer

_REJECTED = object()
"""What a message that could not be read becomes once it has been answered."""


class MemoryProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            request_id = data.get("id")
            method = data.get("method")
            if isinstance(method, str) and isinstance(request_id, int | str):
                known = self.get_message_type(method) is not None or method in self.fm.features
                problem = (
                    types.ResponseError(
                        code=error.code, message=f"{error.message}: bad parameters for {method}"
                    )
                    if known
                    else types.ResponseError(code=-32601, message=f"Method Not Found: {method}")
                )
                internals.send_error(self, request_id, problem)
            return _REJECTED

    def handle_message(self, message: Any) -> None:
        if message is _REJECTED:
            return
        super().handle_message(message)


def answer_parse_error(protocol: LanguageServerProtocol, error: Exception) -> bool:
    """Answer a body that is not JSON (or not UTF-8) with ``ParseError`` (null id); whether
    it was one."""
    if not isinstance(error, json.JSONDecodeError | UnicodeDecodeError):
        return False
    answer(protocol, None, JsonRpcParseError.CODE, f"Parse error: {error}")
    return True


class OneLine(logging.Formatter):
    """A log record on one line: its message's first line, and an exception as its type
    and message only."""

    def format(self, record: logging.LogRecord) -> str:
        line = record.getMessage().splitlines()[0] if record.getMessage() else ""
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            line = f"{line}: {type(error).__name__}: {error}".splitlines()[0]
        return f"lsp-memory: {line}"


def configure_logging() -> None:
    """Warnings and errors to stderr (never stdout: it is the JSON-RPC channel)."""
    handler = logging.StreamHandler()
    if os.environ.get("LSP_MEMORY_DEBUG") == "1":
        handler.setFormatter(logging.Formatter("lsp-memory: %(message)s"))
    else:
        handler.setFormatter(OneLine())
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
