"""Malformed traffic over the real stdio channel, written byte by byte as a broken client
would: a body that is not JSON, a request with missing or mistyped parameters, an unknown
method. Each request gets an error response, nothing else happens, and the server keeps
serving and shuts down cleanly."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import IO, Any

import pytest

from tests.client.conftest import ENV, VAULT, WORK, prepare

TIMEOUT = 30.0


class Channel:
    """A language server process and its JSON-RPC messages, framed by hand."""

    def __init__(self, options: Sequence[str] = (), env: Mapping[str, str] = ENV) -> None:
        """``lsp-memory [options] serve`` in the environment ``env``."""
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lsp_memory", *options, "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
        )
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        assert self.process.stdout is not None
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()

    def _read(self, stream: IO[bytes]) -> None:
        while True:
            length = None
            while (line := stream.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            if length is None:
                return  # the server closed its end
            self.inbox.put(json.loads(stream.read(length)))

    def send_raw(self, body: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8"))

    def response(self, request_id: int | None) -> dict[str, Any]:
        """The response to ``request_id``, skipping the server's own notifications and
        answering its requests (progress tokens, registrations) with null."""
        while True:
            message = self.inbox.get(timeout=TIMEOUT)
            if message.get("id") == request_id and "method" not in message:
                return message
            if "method" in message and "id" in message:
                self.send({"id": message["id"], "result": None})


def test_malformed_messages_get_errors_and_the_server_keeps_serving() -> None:
    prepare()
    channel = Channel()
    document = (WORK / "malformed.md").as_uri()
    try:
        channel.send(
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "processId": None,
                    "rootUri": VAULT.as_uri(),
                    "capabilities": {},
                },
            }
        )
        assert "capabilities" in channel.response(1)["result"]
        channel.send({"method": "initialized", "params": {}})
        channel.send(
            {
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {
                        "uri": document,
                        "languageId": "markdown",
                        "version": 1,
                        "text": "See #1\n",
                    }
                },
            }
        )

        channel.send_raw(b'{"jsonrpc": "2.0", "id": 2, "method": "textDocument/hov')  # cut short
        parse_error = channel.response(None)["error"]
        assert parse_error["code"] == -32700, parse_error  # JSON-RPC: ParseError, id null
        channel.send({"id": 3, "method": "textDocument/hover", "params": {"textDocument": 5}})
        channel.send(
            {
                "id": 4,
                "method": "textDocument/completion",
                "params": {"textDocument": {"uri": document}, "position": {"line": "zero"}},
            }
        )
        channel.send({"id": 5, "method": "lspMemory/noSuchMethod", "params": {}})
        codes = {3: -32602, 4: -32602, 5: -32601}  # InvalidParams twice, MethodNotFound
        for request_id, code in codes.items():
            error = channel.response(request_id).get("error")
            assert error is not None and error["code"] == code, (request_id, error)

        hover = {"textDocument": {"uri": document}, "position": {"line": 0, "character": 5}}
        channel.send({"id": 6, "method": "textDocument/hover", "params": hover})
        answer = channel.response(6)
        assert "error" not in answer, answer
        assert "The Leaf service uses PostgreSQL 16" in answer["result"]["contents"]["value"]

        channel.send({"id": 7, "method": "shutdown"})
        assert channel.response(7).get("result") is None
        channel.send({"method": "exit"})
        assert channel.process.wait(timeout=TIMEOUT) == 0
    finally:
        if channel.process.poll() is None:
            channel.process.kill()
        channel.process.wait()
    assert channel.process.stderr is not None
    stderr = channel.process.stderr.read().decode("utf-8", "replace")
    assert "Traceback" not in stderr, stderr
    assert all(line.startswith("lsp-memory: ") for line in stderr.splitlines()), stderr


def _initialized(channel: Channel) -> None:
    params: dict[str, Any] = {"processId": None, "rootUri": VAULT.as_uri(), "capabilities": {}}
    channel.send({"id": 1, "method": "initialize", "params": params})
    assert "capabilities" in channel.response(1)["result"]
    channel.send({"method": "initialized", "params": {}})


SHUTDOWN = b'{"jsonrpc": "2.0", "id": 2, "method": "shutdown"}'


@pytest.mark.parametrize(
    ("stream", "said"),
    [
        (b"Content-Length: abc\r\n\r\n" + SHUTDOWN, "a Content-Length that is not a size"),
        (b"Content-Type: application/json\r\n\r\n" + SHUTDOWN, "without a Content-Length"),
        (b"Content-Length: 12\r\n\r\n" + SHUTDOWN, "not a header line"),  # shorter than it
        (b"Content-Length: 99999999999\r\n\r\n", "a Content-Length that is not a size"),
    ],
    ids=["not-a-number", "missing", "shorter-than-the-body", "too-large"],
)
def test_a_broken_header_stops_the_server_with_one_line(stream: bytes, said: str) -> None:
    """The server never waits forever on a stream it cannot read: it exits (code 1) with
    one line saying why, and the editor restarts it."""
    prepare()
    channel = Channel()
    try:
        _initialized(channel)
        assert channel.process.stdin is not None
        later = b'{"jsonrpc": "2.0", "id": 3, "method": "shutdown"}'  # the next request
        channel.process.stdin.write(stream + b"Content-Length: %d\r\n\r\n" % len(later) + later)
        channel.process.stdin.flush()
        assert channel.process.wait(timeout=TIMEOUT) == 1
    finally:
        if channel.process.poll() is None:
            channel.process.kill()
        channel.process.wait()
    assert channel.process.stderr is not None
    stderr = channel.process.stderr.read().decode("utf-8", "replace")
    lines = [line for line in stderr.splitlines() if "broken message" in line]
    assert len(lines) == 1 and said in lines[0], stderr
    assert "Traceback" not in stderr, stderr


def test_a_body_that_is_not_utf8_is_answered_and_the_server_goes_on() -> None:
    prepare()
    channel = Channel()
    try:
        _initialized(channel)
        channel.send_raw(b'{"jsonrpc": "2.0", "id": 2, "method": "\xff\xfe"}')
        assert channel.response(None)["error"]["code"] == -32700
        channel.send({"id": 3, "method": "shutdown"})
        assert channel.response(3).get("result") is None
        channel.send({"method": "exit"})
        assert channel.process.wait(timeout=TIMEOUT) == 0
    finally:
        if channel.process.poll() is None:
            channel.process.kill()
        channel.process.wait()


def test_a_language_id_that_is_not_a_string_breaks_no_request() -> None:
    """A client that sends ``"languageId": 3.5`` (the protocol says a string) gets its
    document served as plain text. Before, every request on it (links, hints, hover) was
    an internal error: 'float' object has no attribute 'lower' (found by the fuzz suite)."""
    prepare()
    channel = Channel()
    document = (WORK / "odd-language.txt").as_uri()
    try:
        _initialized(channel)
        item = {"uri": document, "languageId": 3.5, "version": 1, "text": "See [[Alice Notes]]\n"}
        channel.send({"method": "textDocument/didOpen", "params": {"textDocument": item}})
        asked = {"textDocument": {"uri": document}}
        channel.send({"id": 2, "method": "textDocument/documentLink", "params": asked})
        answer = channel.response(2)
        assert "error" not in answer, answer
        assert isinstance(answer["result"], list), answer
        channel.send({"id": 3, "method": "shutdown"})
        assert channel.response(3).get("result") is None
        channel.send({"method": "exit"})
        assert channel.process.wait(timeout=TIMEOUT) == 0
    finally:
        if channel.process.poll() is None:
            channel.process.kill()
        channel.process.wait()
