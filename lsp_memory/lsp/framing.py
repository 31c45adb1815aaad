"""The client's byte stream → JSON-RPC messages, read strictly.

pygls's own loop skips any header line it does not recognise and waits for a
``Content-Length`` forever: after ``Content-Length: abc``, a message without the header, or a
length shorter than the body, every later request waited in silence. Here a broken header
ends the connection with one line on stderr (the editor sees the server exit and restarts
it); a body that is not JSON is still answered and the stream goes on (read by
``lsp_memory.jsonrpc``, as the MCP server reads its lines).
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol

from lsp_memory.jsonrpc import MAX_ERROR_MESSAGE, Unreadable, read_object
from lsp_memory.lsp import internals

MAX_BODY = 256 * 1024 * 1024
"""The largest message body read (bytes): a bigger ``Content-Length`` is a broken header."""

_NAME = re.compile(rb"[A-Za-z0-9-]+")
logger = logging.getLogger(__name__)


class FramingError(Exception):
    """The stream is not framed as the base protocol says: nothing after it can be trusted."""


class Reader(Protocol):
    def readline(self) -> Awaitable[bytes]: ...

    def readexactly(self, n: int) -> Awaitable[bytes]: ...


def _shown(line: bytes) -> str:
    text = line.decode("utf-8", "backslashreplace").rstrip("\r\n")
    return repr(text if len(text) <= 60 else text[:60] + "…")


async def read_body(reader: Reader) -> bytes | None:
    """The next message's body; None at the end of the stream. Raises ``FramingError``."""
    length: int | None = None
    while True:
        try:
            line = await reader.readline()
        except (ValueError, asyncio.LimitOverrunError):  # asyncio's line limit (TCP)
            raise FramingError("a header line longer than 64 KiB") from None
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            if length is None:
                raise FramingError("a message without a Content-Length header")
            break
        name, colon, value = line.partition(b":")
        if not colon or not _NAME.fullmatch(name):
            raise FramingError(f"not a header line: {_shown(line)}")
        if name.lower() == b"content-length":
            digits = value.strip()
            if not digits.isdigit() or int(digits) > MAX_BODY:
                raise FramingError(f"a Content-Length that is not a size: {_shown(line)}")
            length = int(digits)
    try:
        body = await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        return None
    return body if len(body) == length else None


async def serve_stream(
    stop: threading.Event,
    reader: Reader,
    protocol: JsonRPCProtocol,
    on_error: Callable[[Exception, type[JsonRpcException]], Any],
) -> str | None:
    """Hand each message to ``protocol`` until the stream ends or ``stop`` is set; what
    broke the framing, if something did."""
    while not stop.is_set():
        try:
            body = await read_body(reader)
        except FramingError as error:
            return str(error)
        if body is None:
            return None
        try:
            data = read_object(body)
        except Unreadable as error:
            answer(protocol, None, error.code, error.message)
            continue
        try:
            # Only the message itself is a message: an object in its params with a
            # "jsonrpc" member is data (pygls's object_hook took every such object for one).
            protocol.handle_message(protocol.structure_message(data))
        except Exception as error:  # as pygls: a bad message never ends the loop
            logger.debug("unable to handle a message", exc_info=True)
            on_error(error, JsonRpcException)
    return None


def answer(protocol: JsonRPCProtocol, request_id: Any, code: int, message: str) -> None:
    """An error response, ``"id": null`` included when the id could not be read (pygls drops
    null members, and a response without an id is no response to a client)."""
    error = {"code": code, "message": message[:MAX_ERROR_MESSAGE]}
    internals.send_raw(protocol, {"jsonrpc": "2.0", "id": request_id, "error": error})
