"""A minimal LSP client over a server process's stdin and stdout, for timing requests.

The client is written here: ``subprocess`` pipes, ``Content-Length`` framing and a reader
thread that stamps each message with ``time.perf_counter()`` as soon as its body is read,
before it is parsed. A request is timed from just before its bytes are written to that stamp.
Responses are matched to their request by id, so several requests can be in flight and their
answers may come in any order. It sends the recorded client capabilities of VS Code
(``pytest_lsp.client_capabilities("visual-studio-code")``: UTF-16 positions, work-done progress,
dynamic file watching) and answers the server's requests (progress tokens, registrations).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ServerGone(RuntimeError):
    """The server closed its stdout (exited) while an answer was awaited."""


@dataclass(frozen=True, slots=True)
class Reply:
    """A response and when it was asked and received (``perf_counter`` seconds)."""

    result: Any
    sent: float
    received: float

    @property
    def seconds(self) -> float:
        return self.received - self.sent


class Client:
    """A minimal LSP client over a server process's stdin and stdout.

    A reader thread reads each message, stamps it, then parses it: responses go to their
    request, the server's requests are answered at once (null, which is what progress-token
    creation and capability registration expect), notifications are kept in order."""

    def __init__(
        self,
        command: Sequence[str],
        env: dict[str, str],
        stderr: Path,
        cwd: Path | None = None,
    ) -> None:
        self._errors = stderr.open("ab")
        self.spawned = time.perf_counter()
        self.process = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._errors,
            env=env,
            cwd=cwd,
        )
        self.pid = self.process.pid
        self._write_lock = threading.Lock()
        self._changed = threading.Condition()
        self._responses: dict[int, tuple[float, dict[str, Any]]] = {}
        self.notices: list[tuple[float, dict[str, Any]]] = []
        self._closed = False
        self._next_id = 0
        self._reader = threading.Thread(target=self._read, name="lsp-reader", daemon=True)
        self._reader.start()

    # -- writing ------------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> float:
        body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()
        frame = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        stdin = self.process.stdin
        assert stdin is not None
        with self._write_lock:
            sent = time.perf_counter()
            stdin.write(frame)
            stdin.flush()
        return sent

    def notify(self, method: str, params: Any) -> float:
        return self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def ask(self, method: str, params: Any) -> tuple[int, float]:
        """Send a request; its id and when it was written."""
        self._next_id += 1
        number = self._next_id
        sent = self._send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
        return number, sent

    def answer(self, number: int, sent: float, timeout: float = 60.0) -> Reply:
        with self._changed:
            if not self._changed.wait_for(
                lambda: number in self._responses or self._closed, timeout
            ):
                raise TimeoutError(f"no answer to request {number} in {timeout} s")
            if number not in self._responses:
                raise ServerGone(f"the server exited (code {self.process.poll()})")
            received, message = self._responses.pop(number)
        if "error" in message:
            raise RuntimeError(f"request {number} failed: {message['error']}")
        return Reply(message.get("result"), sent, received)

    def request(self, method: str, params: Any, timeout: float = 60.0) -> Reply:
        number, sent = self.ask(method, params)
        return self.answer(number, sent, timeout)

    # -- notifications ------------------------------------------------------------------------

    def mark(self) -> int:
        """A position in the notifications, to wait for one that comes after it."""
        with self._changed:
            return len(self.notices)

    def wait_notice(
        self,
        matches: Callable[[dict[str, Any]], bool],
        since: int = 0,
        timeout: float = 60.0,
    ) -> tuple[float, dict[str, Any]]:
        """The first notification after ``since`` that ``matches``, and when it came."""
        found: list[tuple[float, dict[str, Any]]] = []

        def seen() -> bool:
            for index in range(since, len(self.notices)):
                if matches(self.notices[index][1]):
                    found.append(self.notices[index])
                    return True
            return self._closed

        with self._changed:
            if not self._changed.wait_for(seen, timeout):
                raise TimeoutError(f"no matching notification in {timeout} s")
        if not found:
            raise ServerGone(f"the server exited (code {self.process.poll()})")
        return found[0]

    def diagnostics(
        self, uri: str, since: int, timeout: float = 60.0
    ) -> tuple[float, dict[str, Any]]:
        return self.wait_notice(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
            ),
            since,
            timeout,
        )

    def logged(self, text: str) -> float | None:
        """When a ``window/logMessage`` containing ``text`` came, if it did."""
        with self._changed:
            for received, message in self.notices:
                if message.get("method") == "window/logMessage" and text in str(
                    message["params"].get("message", "")
                ):
                    return received
        return None

    def logged_text(self, text: str) -> str | None:
        """The first ``window/logMessage`` containing ``text``, if any."""
        with self._changed:
            for _, message in self.notices:
                found = str(message["params"].get("message", ""))
                if message.get("method") == "window/logMessage" and text in found:
                    return found
        return None

    # -- reading ------------------------------------------------------------------------------

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        try:
            while True:
                length = -1
                while True:
                    line = stream.readline()
                    if not line:
                        return
                    if line in (b"\r\n", b"\n"):
                        break
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = stream.read(length)
                received = time.perf_counter()
                if len(body) < length:
                    return
                message = json.loads(body)
                if "method" in message and "id" in message:
                    self._send({"jsonrpc": "2.0", "id": message["id"], "result": _reply(message)})
                    continue
                with self._changed:
                    if "id" in message:
                        self._responses[message["id"]] = (received, message)
                    else:
                        self.notices.append((received, message))
                    self._changed.notify_all()
        finally:
            with self._changed:
                self._closed = True
                self._changed.notify_all()

    # -- life cycle ---------------------------------------------------------------------------

    def initialize(
        self, vault: Path, capabilities: dict[str, Any], options: dict[str, Any] | None = None
    ) -> Reply:
        """``initialize`` (with ``options`` as ``initializationOptions``), then ``initialized``."""
        params = {
            "processId": os.getpid(),
            "clientInfo": {"name": "lsp-memory benchmark", "version": "1"},
            "rootUri": vault.as_uri(),
            "workspaceFolders": [{"uri": vault.as_uri(), "name": vault.name}],
            "capabilities": capabilities,
        }
        if options is not None:
            params["initializationOptions"] = options
        reply = self.request("initialize", params)
        self.notify("initialized", {})
        return reply

    def close(self) -> None:
        """``shutdown`` and ``exit``; killed if it does not go within 15 s."""
        try:
            if self.process.poll() is None:
                self.request("shutdown", None, timeout=15)
                self.notify("exit", None)
                self.process.wait(timeout=15)
        except (TimeoutError, ServerGone, OSError, subprocess.TimeoutExpired):
            self.kill()
        self._errors.close()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        if not self._errors.closed:
            self._errors.close()


def _reply(request: dict[str, Any]) -> Any:
    """What the client answers a server's request: no settings for each configuration item
    asked (the server then keeps its own), null to the rest (progress tokens,
    registrations)."""
    if request["method"] == "workspace/configuration":
        return [None for _ in request["params"]["items"]]
    return None


def vs_code_capabilities() -> dict[str, Any]:
    from lsprotocol import converters
    from pytest_lsp import client_capabilities

    caps: dict[str, Any] = converters.get_converter().unstructure(
        client_capabilities("visual-studio-code")
    )
    return caps


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2
