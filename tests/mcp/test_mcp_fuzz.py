"""Fuzzing the MCP server over its real stdio channel: hypothesis draws lines (``fuzzing.py``:
raw bytes, broken JSON, JSON of the wrong shape, requests and notifications of every method
the SDK knows, ``tools/call`` of every tool with arguments of the right shape or not,
odd Unicode, strings beyond the limits, deep nesting, now and then a line over 4 MiB) and
writes them to ONE ``python -m lsp_memory mcp`` per module, one message a line, as an MCP
client does.

The properties: every line gets what ``fuzzing.expected`` says from its bytes alone — an
answer under its request's id (a result or an error) within ``REPLY_TIMEOUT`` seconds, one
error with ``"id": null`` (ParseError, InvalidRequest) for a line that is no message, nothing
for a notification or a blank line; no answer comes for an id nobody sent; no error is an
internal one (the SDK's code 0 for a tool that raised, or -32603); a tool's error is one line
of at most ``MAX_TOOL_ERROR`` characters; after each example a plain ``resolve`` of a known
claim still answers correctly; the process never exits; and at the end its stderr holds no
traceback and closing stdin ends it with exit code 0.

Each defect found has a plain test below (the explicit cases). The run is reproducible
(``derandomize``, no example database) and sized by ``EXAMPLES`` to stay under a minute on
two cores. ``TALLY`` counts what was sent and answered; the last test prints it (``-s``).
"""

from __future__ import annotations

import atexit
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_memory.mcp.stdio import MAX_MESSAGE
from tests.client.fuzzing import fuzz, fuzzed_memory
from tests.mcp.fuzzing import (
    CONVERSATION,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MISSING,
    PARSE_ERROR,
    Draft,
    drafts,
    tool_calls,
    written,
)

REPLY_TIMEOUT = 10.0  # seconds an answer may take, from the moment its line was written
START_TIMEOUT = 60.0
EXAMPLES = {"lines": 1500, "tools": 500}
"""Hypothesis examples per property. Measured on two shared cores (load 1.5): 2 000 examples,
about 7 600 lines written and 7 400 answers, 33 s for the module."""
MAX_TOOL_ERROR = 600  # characters of a tool error's text
KNOWN = "The Leaf service uses PostgreSQL 16"  # claim #1 of kb.jsonl
INTERNAL = (0, -32603)  # the SDK's code for a handler that raised; JSON-RPC's InternalError

TALLY: Counter[str] = Counter()
WORK = Path(tempfile.mkdtemp(prefix="lsp-memory-mcp-fuzz-"))
atexit.register(shutil.rmtree, WORK, True)
STORE, VAULT = WORK / "store", WORK / "vault"

# Hypothesis shows the strategies of strings beyond the limits, a megabyte each, when asked.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")


class Server:
    """``python -m lsp_memory mcp`` and its lines. A reader thread files answers by id (those
    with ``"id": null`` in order), answers the server's own requests; another drains stderr
    so a chatty server never blocks on it."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lsp_memory", "--vault", str(VAULT), "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self._lock = threading.Lock()  # one writer at a time on stdin
        self._changed = threading.Condition()
        self._answers: dict[str, dict[str, Any]] = {}
        self._awaited: dict[str, str] = {}  # keys of requests sent and not answered: method
        self.nulls: list[dict[str, Any]] = []  # answers with "id": null, in order
        self.unexpected: list[dict[str, Any]] = []  # answers to no request of ours
        self.tool_errors: list[str] = []  # tool errors that are not one short line
        self.stderr: list[str] = []
        self.closed = False
        self._ids = itertools.count(1)
        assert self.process.stdout is not None and self.process.stderr is not None
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.process.stderr,), daemon=True).start()

    # -- writing --------------------------------------------------------------------------------

    def write(self, line: bytes) -> None:
        stdin = self.process.stdin
        assert stdin is not None and b"\n" not in line
        with self._lock:
            stdin.write(line + b"\n")
            stdin.flush()
        TALLY["lines"] += 1

    def fresh(self) -> int | str:
        """A request id not given before: a small integer or "fuzz-N" (the fuzzed
        cancellations name neither)."""
        number = next(self._ids)
        return number if number % 3 else f"fuzz-{number}"

    def expect(self, request_id: Any, method: str = "") -> str:
        key = json.dumps(request_id)
        with self._changed:
            self._awaited[key] = method
        return key

    def request(self, method: str, params: Any = MISSING) -> str:
        request_id = self.fresh()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not MISSING:
            message["params"] = params
        key = self.expect(request_id, method)
        self.write(json.dumps(message).encode())
        return key

    def notify(self, method: str, params: Any = MISSING) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not MISSING:
            message["params"] = params
        self.write(json.dumps(message).encode())

    # -- reading --------------------------------------------------------------------------------

    def answer(self, key: str, timeout: float = REPLY_TIMEOUT) -> dict[str, Any] | None:
        """The answer filed under ``key``; None if none came in ``timeout`` seconds or the
        server closed its output."""
        with self._changed:
            self._changed.wait_for(lambda: key in self._answers or self.closed, timeout)
            return self._answers.pop(key, None)

    def forget(self, key: str) -> None:
        """Stop awaiting ``key`` (a late answer to it is not a stray one)."""
        with self._changed:
            self._awaited.pop(key, None)
            self._answers.pop(key, None)

    def _read(self, stream: IO[bytes]) -> None:
        try:
            for line in stream:
                self._file(json.loads(line))
        finally:
            with self._changed:
                self.closed = True
                self._changed.notify_all()

    def _file(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is not None:
            if "id" in message:  # the server's own request: nothing to offer
                error = {"code": -32601, "message": "Method not found"}
                self.write(
                    json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode()
                )
            TALLY[f"from the server: {method}"] += 1
            return
        with self._changed:
            if "id" in message and message["id"] is None:
                self.nulls.append(message)
                TALLY[f"null-id error {message.get('error', {}).get('code')}"] += 1
            else:
                key = json.dumps(message.get("id"))
                if key in self._awaited:
                    if self._awaited.pop(key) == "tools/call":
                        self._check_tool_answer(message)
                    self._answers[key] = message
                else:
                    self.unexpected.append(message)
            TALLY["answers"] += 1
            self._changed.notify_all()

    def _check_tool_answer(self, message: dict[str, Any]) -> None:
        result = message.get("result")
        if not isinstance(result, dict) or not result.get("isError"):
            return
        text = str(result.get("content", [{}])[0].get("text"))
        TALLY["tool errors"] += 1
        if "\n" in text or len(text) > MAX_TOOL_ERROR:
            self.tool_errors.append(text[:300])

    def _drain(self, stream: IO[bytes]) -> None:
        for line in stream:
            self.stderr.append(line.decode("utf-8", "replace").rstrip("\n"))

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def well_formed(answer: dict[str, Any] | None, about: object = None) -> dict[str, Any]:
    """A JSON-RPC answer: a result or an error with an integer code and a message; no
    internal error."""
    assert answer is not None, f"no answer to {about!r}"
    assert answer.get("jsonrpc") == "2.0", answer
    assert ("result" in answer) != ("error" in answer), answer
    if "error" in answer:
        error = answer["error"]
        assert isinstance(error.get("code"), int) and isinstance(error.get("message"), str), error
        assert error["code"] not in INTERNAL, (about, error)
        TALLY[f"error {error['code']}"] += 1
    else:
        TALLY["results"] += 1
    return answer


# -- the server ---------------------------------------------------------------------------------


def tool(server: Server, name: str, **arguments: Any) -> dict[str, Any]:
    """A tool's structured answer (not an error)."""
    key = server.request("tools/call", {"name": name, "arguments": arguments})
    result = well_formed(server.answer(key), name)["result"]
    assert not result.get("isError"), result
    found: dict[str, Any] = result["structuredContent"]
    return found


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """One server for the whole module, on its own copy of the fixture store and vault."""
    env = fuzzed_memory(WORK, STORE, VAULT)
    process = Server(env, WORK)
    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "1"},
        }
        started = well_formed(process.answer(process.request("initialize", hello), START_TIMEOUT))
        assert "tools" in started["result"]["capabilities"], started
        process.notify("notifications/initialized")
        tool(process, "ingest_messages", session_id=CONVERSATION, user_message="See #1")
        yield process
    finally:
        process.kill()


def alive(server: Server, doing: str) -> None:
    """The server still runs and answers a plain call correctly; nothing stray came."""
    assert server.process.poll() is None, f"the server exited ({server.process.returncode}) {doing}"
    (resolved,) = tool(server, "resolve", refs=["#1"])["results"]
    assert resolved["claims"][0]["statement"] == KNOWN, (doing, resolved)
    assert not server.unexpected, f"answers to no request {doing}: {server.unexpected[:3]}"
    assert not server.tool_errors, (
        f"tool errors of more than one line {doing}: {server.tool_errors}"
    )


def sent(server: Server, drafts_: list[Draft]) -> None:
    """Write each line and check it got what ``fuzzing.expected`` says."""
    nulls_before = len(server.nulls)
    awaited: list[tuple[str, float, Draft]] = []
    # The lines to be answered with "id": null, in order: the codes allowed, or a line over
    # the limit (the key of its id, when it shows one), answered under its id or null.
    slots: list[tuple[set[int] | str | None, Draft]] = []
    for draft in drafts_:
        line, (what, detail) = written(draft, server.fresh)
        TALLY[f"sent {draft.how}{'' if draft.breaking is None else ' broken'}"] += 1
        if what == "id":
            awaited.append((server.expect(detail, _method(line)), time.perf_counter(), draft))
        elif what == "null":
            slots.append((detail, draft))
        elif what == "big":
            slots.append((None if detail is None else server.expect(detail), draft))
        server.write(line)
    # Lines are read in order, and one that is no message is answered before the next is
    # read: once the sentinel's answer is here, every answer of that kind is too.
    well_formed(server.answer(server.request("ping")), "the sentinel ping")
    nulls = server.nulls[nulls_before:]
    for slot, draft in slots:
        allowed = slot if isinstance(slot, set) else {INVALID_REQUEST}
        if isinstance(slot, str):  # a line over the limit that shows its id
            answer = server.answer(slot, 0.0)
            if answer is not None:
                assert answer["error"]["code"] == INVALID_REQUEST, (draft, answer)
                continue
            server.forget(slot)
        assert nulls, f"no answer with a null id to {draft!r}"
        null = nulls.pop(0)
        assert null["error"]["code"] in allowed, (draft, null)
    assert not nulls, f"answers with a null id to none of {drafts_!r}: {nulls}"
    for key, when, draft in awaited:
        left = max(0.1, when + REPLY_TIMEOUT - time.perf_counter())
        answer = server.answer(key, left)
        assert server.process.poll() is None, f"the server exited after {draft!r}"
        well_formed(answer, draft)


def _method(line: bytes) -> str:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return ""
    return str(value.get("method")) if isinstance(value, dict) else ""


# -- properties ---------------------------------------------------------------------------------


@settings(fuzz, max_examples=EXAMPLES["lines"])
@given(batch=st.lists(drafts(), min_size=1, max_size=4))
def test_every_line_gets_its_answer(server: Server, batch: list[Draft]) -> None:
    TALLY["examples"] += 1
    sent(server, batch)
    alive(server, f"after {batch!r}")


@settings(fuzz, max_examples=EXAMPLES["tools"])
@given(params=tool_calls())
def test_every_tool_call_is_answered_in_one_line(server: Server, params: dict[str, Any]) -> None:
    """A tool call with random arguments: a result, a tool error of one short line, or
    InvalidParams (arguments that are not an object)."""
    TALLY["examples"] += 1
    started = time.perf_counter()
    answer = well_formed(server.answer(server.request("tools/call", params)), params)
    TALLY["tool calls"] += 1
    assert time.perf_counter() - started < REPLY_TIMEOUT
    if "error" in answer:
        # A line over the limit is not read: InvalidRequest, under its id.
        over = len(json.dumps(params)) > MAX_MESSAGE
        assert answer["error"]["code"] == (INVALID_REQUEST if over else INVALID_PARAMS), answer
    elif not answer["result"].get("isError"):
        assert isinstance(answer["result"].get("structuredContent"), dict), (params, answer)
    alive(server, f"after tools/call {params!r}")


# -- explicit cases -----------------------------------------------------------------------------


def answer_to(server: Server, line: bytes, request_id: Any = None) -> dict[str, Any] | None:
    """Write ``line``; its answer under ``request_id`` (when given) or else with a null id,
    or None."""
    before = len(server.nulls)
    key = None if request_id is None else server.expect(request_id)
    server.write(line)
    well_formed(server.answer(server.request("ping")), "the sentinel ping")
    if key is not None:
        found = server.answer(key)
        if found is not None:
            return found
        server.forget(key)
    nulls = server.nulls[before:]
    assert len(nulls) <= 1, nulls
    return nulls[0] if nulls else None


def call_line(request_id: Any, tool_name: str, arguments: str) -> bytes:
    """A ``tools/call`` line, its arguments written as given (JSON text)."""
    params = f'{{"name": "{tool_name}", "arguments": {arguments}}}'
    head = f'{{"jsonrpc": "2.0", "id": {json.dumps(request_id)}, "method": "tools/call"'
    return f'{head}, "params": {params}}}'.encode()


def error_code(answer: dict[str, Any] | None) -> int | None:
    assert answer is not None, "no answer"
    well_formed(answer)
    return int(answer["error"]["code"]) if "error" in answer else None


def test_a_line_that_is_not_json_gets_a_parse_error_with_a_null_id(server: Server) -> None:
    answer = answer_to(server, b'{"jsonrpc": "2.0", "id": 7001, "method": "ping"')
    assert error_code(answer) == PARSE_ERROR and answer is not None and answer["id"] is None
    alive(server, "after a line that is not JSON")


def test_a_lone_surrogate_escape_is_read_as_a_replacement_character(server: Server) -> None:
    """``"\\ud800"`` inside a JSON string (valid JSON; the SDK's reader refused it and the
    call was never answered): read as U+FFFD, and the call answers."""
    line = call_line(7002, "build_context", '{"text": "See #1 \\ud800 and \\udfff"}')
    answer = answer_to(server, line, 7002)
    assert error_code(answer) is None and answer is not None, answer
    assert not answer["result"].get("isError"), answer
    assert KNOWN in answer["result"]["structuredContent"]["markdown"]
    alive(server, "after a lone surrogate escape")


def test_params_nested_deeper_than_200_are_read(server: Server) -> None:
    """300 levels of arrays in a call's params (the SDK's reader stopped at 200 and the call
    was never answered): read, and the call answers."""
    deep = "[" * 300 + "]" * 300
    line = f'{{"jsonrpc": "2.0", "id": 7003, "method": "ping", "params": {{"deep": {deep}}}}}'
    assert error_code(answer_to(server, line.encode(), 7003)) is None
    alive(server, "after params 300 deep")


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 7004, "method": "ping", "params": {"n": '
            + b"9" * 5000
            + b"}}",
            id="a 5000-digit number",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 7004, "method": "ping", "params": {"deep": '
            + b"[" * 100_000
            + b"]" * 100_000
            + b"}}",
            id="100000 deep",
        ),
        pytest.param(
            call_line(7004, "resolve", '{"refs": ["?"]}').replace(b"?", b"\xff"), id="not UTF-8"
        ),
        pytest.param(
            call_line(7004, "resolve", '{"refs": ["?"]}').replace(b"?", b"\xed\xa0\x80"),
            id="a surrogate as bytes",
        ),
    ],
)
def test_what_python_cannot_read_gets_a_parse_error(server: Server, line: bytes) -> None:
    """A number Python will not make an int of, nesting beyond its reader, bytes that are not
    UTF-8 (the SDK read them as U+FFFD and stored that): ParseError, ``"id": null``."""
    assert error_code(answer_to(server, line)) == PARSE_ERROR
    alive(server, "after a line Python cannot read")


@pytest.mark.parametrize(
    ("line", "request_id", "code"),
    [
        (b"[]", None, INVALID_REQUEST),
        (b'[{"jsonrpc": "2.0", "id": 7005, "method": "ping"}]', None, INVALID_REQUEST),
        (b"5", None, INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', None, INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', None, INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "method": 5}', None, INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": 7005}', None, INVALID_REQUEST),
        (b'{"id": 7006, "method": "ping"}', 7006, INVALID_REQUEST),
        (
            b'{"jsonrpc": "2.0", "id": "t", "method": "tools/call", "params": [1]}',
            "t",
            INVALID_PARAMS,
        ),
        (
            b'{"jsonrpc": "2.0", "method": "notifications/initialized", "params": 5}',
            None,
            INVALID_REQUEST,
        ),
    ],
)
def test_json_that_is_no_message_gets_an_error(
    server: Server, line: bytes, request_id: Any, code: int
) -> None:
    """A batch, a scalar, an id of the wrong type, a method that is no string, neither
    method nor result, no ``jsonrpc``, params that are no object: an error, under the
    request's id where it has a usable one (the SDK answered none of them)."""
    answer = answer_to(server, line, request_id)
    assert error_code(answer) == code and answer is not None
    assert answer["id"] == request_id, answer
    alive(server, f"after {line[:60]!r}")


@pytest.mark.parametrize("where", ["head", "tail", "none"])
def test_a_line_over_4_mib_is_refused_unread(
    server: Server, where: Literal["head", "tail", "none"]
) -> None:
    """A call of 8 MiB: refused at once, under its id when the line starts (the Python SDK)
    or ends (the TypeScript SDK) with it (a 10 MB string held every call for 6–30 s)."""
    line, (what, detail) = written(Draft("oversize", oversize=where), server.fresh)
    assert len(line) > MAX_MESSAGE and what == ("null" if where == "none" else "id")
    request_id = detail if what == "id" else None
    started = time.perf_counter()
    answer = answer_to(server, line, request_id)
    took = time.perf_counter() - started
    assert error_code(answer) == INVALID_REQUEST and answer is not None
    assert answer["id"] == request_id and "4 MiB" in answer["error"]["message"], answer
    assert took < 3.0, took
    alive(server, "after a line over 4 MiB")


def test_an_unknown_prompt_is_invalid_params(server: Server) -> None:
    """``prompts/get`` of a prompt this server does not have (it has none): InvalidParams
    (the SDK's ValueError went out as error code 0, a traceback on stderr)."""
    before = len(server.stderr)
    answer = server.answer(server.request("prompts/get", {"name": "nope"}))
    assert error_code(answer) == INVALID_PARAMS and answer is not None, answer
    assert answer["error"]["message"] == "Unknown prompt: nope", answer
    well_formed(server.answer(server.request("ping")))
    assert not any("Traceback" in line for line in server.stderr[before:]), server.stderr[before:]


def test_a_blank_line_gets_no_answer(server: Server) -> None:
    for line in (b"", b"   ", b"\r", b"\t"):
        assert answer_to(server, line) is None
    alive(server, "after blank lines")


def test_the_server_still_answers_after_the_fuzzing(
    server: Server, record_property: Callable[[str, object], None]
) -> None:
    """Last: a plain call answers correctly, closing stdin ends the server with exit code
    0, and its stderr holds no traceback."""
    alive(server, "at the end")
    stdin = server.process.stdin
    assert stdin is not None
    stdin.close()
    assert server.process.wait(timeout=REPLY_TIMEOUT) == 0
    record_property("fuzz_tally", dict(TALLY))
    sys.stderr.write(f"\nfuzz tally: {dict(sorted(TALLY.items()))}\n")  # seen with -s
    text = "\n".join(server.stderr)
    for sign in ("Traceback", "unexpected exception", "could not be written"):
        assert sign not in text, text[-4000:]
