"""The MCP server's stdio transport: one JSON-RPC message a line, read strictly.

The SDK's own ``stdio_server`` dropped without a word every line it could not validate — not
JSON, a lone surrogate escape (``"\\ud800"``), nesting deeper than 200, a 5 000-digit number,
a batch, an id that is neither a string nor an integer, ``params`` that are not an object —
so the client waited forever; it read a line of any length in full, and bytes that are not
UTF-8 as U+FFFD. Here each line is answered or handled, and reading goes on:

- a line longer than ``MAX_MESSAGE`` bytes is skipped unread: InvalidRequest, under the
  request's id when the line starts or ends with it (as the SDKs write messages), else
  ``"id": null``;
- not JSON, not UTF-8, nested deeper than Python reads or a number Python will not make an
  int of: ParseError, ``"id": null`` (``lsp_memory.jsonrpc``, as the language server);
- JSON that is no JSON-RPC message: InvalidRequest, under the request's id if it has one of
  the right type, else ``"id": null``; a request whose ``params`` is not an object:
  InvalidParams. A lone surrogate escape is read as U+FFFD.

Blank lines are skipped. While serving, fd 0 reads nothing and fd 1 writes to stderr, so a
stray print or a child process's output never lands inside the protocol (as the SDK's does).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp.types import (
    INTERNAL_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from lsp_memory.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, Unreadable, read_object

MAX_MESSAGE = 4 * 1024 * 1024
"""The longest line read, in bytes (4 MiB: the SDK's limit on an HTTP request's body)."""

_PEEK = 256  # bytes kept of each end of a line too long to read, to find its id
_ID = rb'(-?[0-9]{1,19}|"[^"\\\n]{0,200}")'
_HEAD_ID = re.compile(rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*' + _ID + rb"\s*,")
_TAIL_ID = re.compile(rb',\s*"id"\s*:\s*' + _ID + rb"\s*\}\s*\Z")
_JSON_TYPES = {list: "an array", str: "a string", bool: "a boolean"}
logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Refusal:
    """The error answering a line that is not handled."""

    answer: JSONRPCError


def _refusal(code: int, message: str, request_id: Any = None) -> _Refusal:
    error = ErrorData(code=code, message=message)
    return _Refusal(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def _usable_id(value: Any) -> bool:
    """An id MCP allows: a string or an integer (not a boolean, not null)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _message(body: bytes) -> JSONRPCMessage | _Refusal:
    """The message on one line, or the error that answers it."""
    try:
        data = read_object(body, utf8_only=True)
    except Unreadable as error:
        return _refusal(error.code, error.message)
    method, request_id = data.get("method"), data.get("id")
    # Only a request's id is answered under: a response's id is one of the server's own.
    answer_to = request_id if isinstance(method, str) and _usable_id(request_id) else None
    if data.get("jsonrpc") != "2.0":
        return _refusal(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', answer_to)
    if "method" in data:
        if not isinstance(method, str):
            return _refusal(INVALID_REQUEST, "Invalid Request: a method is a string")
        if "id" in data and answer_to is None:
            return _refusal(INVALID_REQUEST, "Invalid Request: an id is a string or an integer")
        params = data.get("params")
        if params is not None and not isinstance(params, dict):
            code = INVALID_REQUEST if answer_to is None else INVALID_PARAMS
            kind = _JSON_TYPES.get(type(params), "a number")
            return _refusal(code, f"Invalid params: params is an object, not {kind}", answer_to)
    elif not (_usable_id(request_id) and ("result" in data) != ("error" in data)):
        return _refusal(
            INVALID_REQUEST,
            "Invalid Request: not a request (method, id), a notification (method) "
            "or a response (id, result or error)",
        )
    try:
        message: JSONRPCMessage = jsonrpc_message_adapter.validate_python(data, by_name=False)
    except ValidationError as error:
        problem = error.errors(include_url=False)[0]
        where = ".".join(str(part)[:40] for part in problem["loc"])
        return _refusal(INVALID_REQUEST, f"Invalid Request: {where}: {problem['msg']}", answer_to)
    return message


def _too_long(head: bytes, tail: bytes, size: int) -> _Refusal:
    """The answer to a line of ``size`` bytes, too long to read, from its ends."""
    found = _HEAD_ID.match(head) or _TAIL_ID.search(tail)
    request_id = json.loads(found.group(1)) if found and b'"method"' in head else None
    return _refusal(
        INVALID_REQUEST,
        f"Invalid Request: a message of {size:,} bytes; the most read is {MAX_MESSAGE:,} "
        "(4 MiB), so it was not read",
        request_id,
    )


def _next(wire: BinaryIO) -> JSONRPCMessage | _Refusal | None:
    """The next message or the answer to the next line that is none; None at the end."""
    while True:
        line = wire.readline(MAX_MESSAGE + 1)
        if not line:
            return None
        if len(line) > MAX_MESSAGE and not line.endswith(b"\n"):
            head, tail, size = line[:_PEEK], line[-_PEEK:], len(line)
            while not tail.endswith(b"\n") and (more := wire.readline(1024 * 1024)):
                tail, size = (tail + more)[-_PEEK:], size + len(more)
            end = tail.rstrip(b"\r\n")
            return _too_long(head, end, size - (len(tail) - len(end)))
        if not line.strip():
            continue
        try:
            return _message(line)
        except Exception:  # a message the checks above let through: it never ends reading
            logger.exception("lsp-memory: a message could not be read")
            return _refusal(INVALID_REQUEST, "Invalid Request: the message could not be read")


async def _read(
    wire: BinaryIO,
    messages: MemoryObjectSendStream[SessionMessage | Exception],
    answers: MemoryObjectSendStream[SessionMessage],
) -> None:
    async with messages, answers:
        while True:
            item = await anyio.to_thread.run_sync(_next, wire, abandon_on_cancel=True)
            if item is None:
                return
            if isinstance(item, _Refusal):
                try:
                    await answers.send(SessionMessage(item.answer))
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    logger.debug("dropped an error answer: the writer is gone")
            else:
                await messages.send(SessionMessage(item))


def _encoded(message: JSONRPCMessage) -> bytes | None:
    """A message as its line; an InternalError under its id for an answer that cannot be
    written (one that could not is no reason to stop writing the others); None else."""
    try:
        return message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
    except ValueError as error:  # pydantic's serialization error: too deep, a surrogate
        logger.warning("lsp-memory: an answer could not be written: %s", error)
        if not isinstance(message, JSONRPCResponse | JSONRPCError):
            return None
        failed = ErrorData(
            code=INTERNAL_ERROR, message="Internal error: the answer could not be written"
        )
        answer = JSONRPCError(jsonrpc="2.0", id=message.id, error=failed)
        return answer.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


def _put(wire: BinaryIO, line: bytes) -> None:
    wire.write(line)
    wire.flush()


async def _write(wire: BinaryIO, messages: MemoryObjectReceiveStream[SessionMessage]) -> None:
    async with messages:
        async for item in messages:
            line = _encoded(item.message)
            if line is None:
                continue
            try:
                await anyio.to_thread.run_sync(_put, wire, line)
            except OSError as error:  # the client closed its end: nobody reads the answers
                logger.debug("stopped writing: %s", error)
                return


def _claim() -> tuple[BinaryIO, BinaryIO, Callable[[], None]]:
    """The protocol's own copies of stdin and stdout, with fd 0 reading nothing and fd 1
    writing to stderr meanwhile; the callable puts them back."""
    sys.stdout.flush()
    try:
        wire_in, wire_out = os.dup(0), os.dup(1)  # not inherited by child processes
    except OSError:
        return sys.stdin.buffer, sys.stdout.buffer, lambda: None
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    os.dup2(2, 1)

    def restore() -> None:
        sys.stdout.flush()
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)

    return os.fdopen(wire_in, "rb"), os.fdopen(wire_out, "wb"), restore


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[
    tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage],
    ]
]:
    """The read and write streams of the MCP server over this process's stdin and stdout,
    as the SDK's ``stdio_server`` gives them."""
    wire_in, wire_out, restore = _claim()
    messages, received = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    answers, written = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_read, wire_in, messages, answers.clone())
            group.start_soon(_write, wire_out, written)
            yield received, answers
    finally:
        restore()
