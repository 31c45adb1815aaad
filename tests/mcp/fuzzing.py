"""What the fuzz tests of the MCP server send (``test_mcp_fuzz.py``): hypothesis strategies for
lines of its stdio channel — raw bytes, JSON broken on purpose (cut short, bytes that are not
UTF-8, surrogates encoded as bytes, 5 000-digit numbers, nesting 5 000 deep), JSON of the
wrong shape (batches, scalars, ids and params of the wrong type, answers nobody asked for),
and well-formed requests and notifications of every method the MCP SDK knows, with
parameters well formed or mangled; above all ``tools/call`` of every tool (and unknown
ones) with arguments of the right shape or not: odd Unicode (NUL, U+2028, lone surrogates,
joiners), strings longer than the limits, deep nesting — and ``expected``, which says from a
line's bytes alone what must answer it, by the rules ``lsp_memory/mcp/stdio.py`` documents.

Pure: nothing here starts a process. The methods are the SDK's own list
(``mcp_types.methods``), so a method added later is fuzzed too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from hypothesis import strategies as st
from mcp_types.methods import CLIENT_NOTIFICATIONS, CLIENT_REQUESTS

from lsp_memory.mcp.server import MAX_CONTEXTS, MAX_NAME, MAX_REF, MAX_REFS, MAX_TEXT
from lsp_memory.mcp.stdio import MAX_MESSAGE
from lsp_memory.model import MAX_STATEMENT
from tests.client.fuzzing import (
    EXTREMES,
    MISSING,
    ODD,
    REFERENCES,
    mangled,
    surrogates,
    weighted,
)

__all__ = ["MISSING", "Draft", "drafts", "expected", "tool_calls", "written"]

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602

REQUESTS = tuple(sorted({method for method, _ in CLIENT_REQUESTS}))
NOTIFICATIONS = tuple(sorted({method for method, _ in CLIENT_NOTIFICATIONS}))
"""Every request and notification method a client may send, as the SDK lists them."""
TOOLS = (
    "search_memory",
    "remember",
    "ingest_messages",
    "build_context",
    "resolve",
    "pin_memory",
    "unpin_memory",
    "add_memory_to_context",
    "remove_memory_from_context",
    "list_memories",
    "get_memory",
    "update_memory",
    "forget_memory",
    "recent_activity",
    "read_note",
    "write_note",
    "edit_note",
    "move_note",
    "delete_note",
    "consolidate",
    "review_queue",
    "review_decide",
)
CONVERSATION = "trip"
"""A conversation the fuzzed server has (the fixture ingests one message in it)."""


class _Id:
    """Where the channel puts a fresh request id (a message is drawn before it is sent)."""

    def __repr__(self) -> str:
        return "ID"


ID: Any = _Id()


# -- values -------------------------------------------------------------------------------------


def _repeat(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


HUGE_UNITS = ("word ", "😀", "\ud800", "x", "\x00", "\u2028", "#1 ", "[[", "\n")
HUGE_SIZES = (MAX_STATEMENT + 1, MAX_TEXT, MAX_TEXT + 1, 1_000_000)
huge_text = st.builds(_repeat, st.sampled_from(HUGE_UNITS), st.sampled_from(HUGE_SIZES))
"""Strings at and beyond the tools' limits (``MAX_TEXT`` is accepted: one search of it takes
a few tenths of a second)."""
CONTROL = ("\x00", "\x01", "\x07", "\x1b", "\x7f", "\r", "\n", "\t", "\u2028", "\u2029", "\x85")
odd_text = weighted(
    (st.text(max_size=20), 3),
    (st.sampled_from(REFERENCES + ODD + CONTROL), 3),
    (st.lists(st.sampled_from(ODD + CONTROL + ("a", " ", "#1")), max_size=6).map("".join), 2),
    (surrogates, 1),
)
texts = weighted((odd_text, 60), (huge_text, 1))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(EXTREMES),
    st.floats(allow_nan=False, allow_infinity=False),
    odd_text,
)
garbage = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(odd_text, inner, max_size=4)
    ),
    max_leaves=10,
)


def nested(depth: int, inner: Any = "x") -> Any:
    """``inner`` inside ``depth`` lists."""
    for _ in range(depth):
        inner = [inner]
    return inner


# Python's JSON reader stops at about 1 000 levels (its recursion limit, less the stack in
# use): 300 is read wherever it is parsed, 5 000 nowhere.
deep = st.builds(nested, st.sampled_from((50, 300)), scalars)
values = weighted((garbage, 8), (texts, 4), (deep, 1))


# -- tool calls ---------------------------------------------------------------------------------

names = weighted(
    (st.sampled_from((CONVERSATION, "nobody-s", "")), 3),
    (odd_text, 2),
    (st.builds(_repeat, st.just("s"), st.sampled_from((MAX_NAME, MAX_NAME + 1))), 1),
)
references = weighted(
    (st.sampled_from(REFERENCES), 6),
    (odd_text, 2),
    (st.builds(_repeat, st.sampled_from(("#1", "@a", "x")), st.just(MAX_REF + 1)), 1),
)
timeframes = weighted(
    (st.sampled_from(("7d", "24h", "30m", "2w", "2026-01-02", "2026-01-02T10:00:00Z")), 4),
    (st.sampled_from(("soon", "", "999999999d", "0000-01-01", "-1d")), 2),
    (odd_text, 1),
)
note_paths = weighted(
    (st.sampled_from(("fuzz.md", "deep/er/fuzz.md", "new note.md")), 4),
    (
        st.sampled_from(
            ("../escape.md", "/etc/passwd.md", "a/../../b.md", ".hidden/x.md", "x.txt", "", ".")
        ),
        3,
    ),
    (odd_text, 2),
)
TOOL_ARGUMENTS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "search_memory": st.fixed_dictionaries(
        {"query": texts},
        optional={
            "search_type": st.sampled_from(("facts", "episodes", "notes", "all", "x", "")),
            "limit": st.one_of(st.integers(-2, 60), st.sampled_from(EXTREMES)),
            "session_id": names,
        },
    ),
    "remember": st.fixed_dictionaries(
        {"statement": texts},
        optional={
            "category": st.sampled_from(("preference", "identity", "fact", "", "x")) | names,
            "contexts": st.lists(
                st.sampled_from(("@root_ctx", "leaf_ctx", "")) | names, max_size=MAX_CONTEXTS + 2
            ),
        },
    ),
    "ingest_messages": st.fixed_dictionaries(
        {"session_id": names, "user_message": texts},
        optional={
            "assistant_response": texts,
            "source": names,
            "channel": names,
            "timestamp": st.sampled_from(
                ("2026-11-20T10:00:00Z", "2026-11-20", "soon", "9999-12-31T23:00:00-05:00", "")
            )
            | odd_text,
        },
    ),
    "build_context": st.fixed_dictionaries(
        {"text": texts},
        optional={
            "budget": st.one_of(st.integers(-5, 5000), st.sampled_from(EXTREMES)),
            "session_id": names,
        },
    ),
    **{
        tool: st.fixed_dictionaries({"reference": references})
        for tool in ("pin_memory", "unpin_memory")
    },
    **{
        tool: st.fixed_dictionaries(
            {"reference": references, "context": st.sampled_from(("@root_ctx", "x")) | names}
        )
        for tool in ("add_memory_to_context", "remove_memory_from_context")
    },
    "resolve": st.fixed_dictionaries(
        {
            "refs": st.lists(references, max_size=5)
            | st.lists(st.just("#1"), min_size=MAX_REFS + 1, max_size=MAX_REFS + 1)
        }
    ),
    "list_memories": st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(("preference", "fact", "")) | names,
            "status": st.sampled_from(("live", "all", "retracted", "gone", "")),
            "context": st.sampled_from(("root_ctx", "@leaf_ctx", "x")) | names,
            "since": timeframes,
            "limit": st.one_of(st.integers(-2, 250), st.sampled_from(EXTREMES)),
        },
    ),
    **{tool: st.fixed_dictionaries({"reference": references}) for tool in ("get_memory",)},
    "update_memory": st.fixed_dictionaries({"reference": references, "statement": texts}),
    "forget_memory": st.fixed_dictionaries(
        {"reference": st.sampled_from(("#2", "#3", "#999", "x")) | odd_text}
    ),
    "recent_activity": st.fixed_dictionaries(
        {}, optional={"timeframe": timeframes, "limit": st.integers(-2, 250)}
    ),
    "read_note": st.fixed_dictionaries({"path": note_paths}, optional={"vault": names}),
    "write_note": st.fixed_dictionaries(
        {"path": note_paths, "text": texts},
        optional={"overwrite": st.booleans(), "vault": names},
    ),
    "edit_note": st.fixed_dictionaries(
        {
            "path": note_paths,
            "operation": st.sampled_from(("append", "replace_section", "find_replace", "x")),
            "text": texts,
        },
        optional={"heading": texts, "find": texts},
    ),
    "move_note": st.fixed_dictionaries(
        {"path": note_paths, "new_path": note_paths}, optional={"vault": names}
    ),
    "delete_note": st.fixed_dictionaries({"path": note_paths}, optional={"vault": names}),
    "consolidate": st.fixed_dictionaries(
        {}, optional={"dry_run": st.booleans(), "now_at": timeframes}
    ),
    "review_queue": st.just({}),
    "review_decide": st.fixed_dictionaries(
        {
            "item": st.one_of(st.integers(-2, 5), st.sampled_from(EXTREMES)),
            "decision": st.sampled_from(("accept", "reject", "keep-both", "maybe")),
        }
    ),
}


@st.composite
def tool_calls(draw: st.DrawFn) -> dict[str, Any]:
    """``tools/call`` params: a tool (now and then one that does not exist) and its
    arguments, of the right shape or mangled (a member left out, a value of the wrong type
    or nested deep, garbage for the whole)."""
    name = draw(weighted((st.sampled_from(TOOLS), 12), (odd_text, 1)))
    shaped = TOOL_ARGUMENTS.get(name, st.dictionaries(odd_text, values, max_size=3))
    arguments, _ = draw(shaped.flatmap(mangled))
    if isinstance(arguments, dict) and arguments and draw(st.integers(0, 7)) == 0:
        arguments = {**arguments, draw(st.sampled_from(sorted(arguments))): draw(values)}
    params: dict[str, Any] = {"name": name}
    if arguments is not MISSING:
        params["arguments"] = arguments
    return params


# -- messages -----------------------------------------------------------------------------------

PARAMS: dict[str, st.SearchStrategy[Any]] = {
    "tools/call": tool_calls(),
    "tools/list": st.just({}) | st.fixed_dictionaries({"cursor": odd_text}),
    "ping": st.just({}),
    "initialize": st.fixed_dictionaries(
        {
            "protocolVersion": st.sampled_from(("2025-06-18", "2024-11-05", "1999-01-01", "")),
            "capabilities": st.just({}),
            "clientInfo": st.fixed_dictionaries({"name": odd_text, "version": odd_text}),
        }
    ),
    "logging/setLevel": st.fixed_dictionaries(
        {"level": st.sampled_from(("debug", "info", "error", "loud"))}
    ),
    "resources/read": st.fixed_dictionaries({"uri": odd_text}),
    "prompts/get": st.fixed_dictionaries({"name": odd_text}),
    "completion/complete": st.fixed_dictionaries(
        {
            "ref": st.fixed_dictionaries({"type": st.just("ref/prompt"), "name": odd_text}),
            "argument": st.fixed_dictionaries({"name": odd_text, "value": odd_text}),
        }
    ),
    # Cancellations and progress for ids the channel never gives (it gives small integers
    # and "fuzz-…"): cancelling a request of the fuzzing leaves it unanswered, as MCP says.
    "notifications/cancelled": st.fixed_dictionaries(
        {"requestId": st.integers(10**9, 10**12) | st.just("gone")},
        optional={"reason": odd_text},
    ),
    "notifications/progress": st.fixed_dictionaries(
        {"progressToken": st.integers(10**9, 10**12) | st.just("gone"), "progress": scalars}
    ),
}
UNKNOWN = ("tools/run", "rpc.discover", "notifications/unknown", "", "$/cancelRequest")


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    """A well-formed request or notification: a method of the SDK's list (most often
    ``tools/call``) or an unknown one, its params well formed, mangled or missing."""
    method = draw(
        weighted(
            (st.just("tools/call"), 8),
            (st.sampled_from(REQUESTS), 3),
            (st.sampled_from(NOTIFICATIONS), 1),
            (st.sampled_from(UNKNOWN) | odd_text, 1),
        )
    )
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if method not in NOTIFICATIONS or method == "notifications/unknown":
        message["id"] = ID
    given = PARAMS.get(method, st.just({}))
    params, _ = draw(
        given.flatmap(lambda p: mangled(p) if method != "tools/call" else st.just((p, False)))
    )
    if params is not MISSING:
        if not isinstance(params, dict) and draw(st.booleans()):
            params = {"value": params}  # most often an object: the server reads it
        message["params"] = params
    if method.startswith("notifications/") and draw(st.integers(0, 3)) == 0:
        message["id"] = ID  # a notification's method as a request
    return message


ids = weighted(
    (st.just(ID), 6),
    (st.sampled_from((None, True, 1.5, -0.0, [], {}, [1], {"a": 1})), 2),
    (st.just(MISSING), 1),
)


@st.composite
def shapes(draw: st.DrawFn) -> Any:
    """JSON that is no JSON-RPC message, or is one only just: a scalar, an array (a batch),
    an object with ``jsonrpc``, ``id``, ``method`` or ``params`` missing or of the wrong
    type, an answer (right or wrong) to no request, members nobody knows, an object shaped
    like a message inside the params."""
    kind = draw(st.sampled_from(("scalar", "batch", "members", "answer", "inner")))
    if kind == "scalar":
        return draw(scalars | st.just([]) | st.just({}))
    if kind == "batch":
        return draw(st.lists(requests() | garbage, max_size=3))
    if kind == "answer":
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": draw(st.integers(10**9, 10**12))}
        outcome = draw(st.sampled_from(("result", "error", "both", "neither", "bad")))
        if outcome in ("result", "both"):
            answer["result"] = {}
        if outcome in ("error", "both"):
            answer["error"] = {"code": -1, "message": "no"}
        if outcome == "bad":
            member = draw(st.sampled_from(("result", "error")))
            answer[member] = draw(
                st.sampled_from(([], "x", None, {"code": "x", "message": 5}, {"message": "m"}))
            )
        return answer
    base = draw(requests())
    if kind == "inner":
        inner = {"jsonrpc": "2.0", "id": 7099, "method": "ping"}
        params = base.get("params")
        base["params"] = {**(params if isinstance(params, dict) else {}), "extra": inner}
        return base
    for member in draw(
        st.lists(st.sampled_from(("jsonrpc", "id", "method", "params")), max_size=2)
    ):
        replacement = draw(
            {
                "jsonrpc": st.sampled_from(("1.0", "2", 2.0, None, MISSING)),
                "id": ids,
                "method": st.one_of(scalars, st.just([]), st.just(MISSING)),
                "params": st.one_of(garbage, st.just([]), st.just(MISSING)),
            }[member]
        )
        if replacement is MISSING:
            base.pop(member, None)
        else:
            base[member] = replacement
    if draw(st.booleans()):
        base[draw(odd_text)] = draw(garbage)
    return base


# -- lines --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Draft:
    """One line to write: a JSON value (with ``ID`` where the channel puts a fresh request
    id) written one of a few ways, perhaps broken, or raw bytes, or a line longer than the
    most read (``oversize``: where its id is)."""

    how: Literal["json", "raw", "oversize"]
    value: Any = None
    ascii: bool = True  # lone surrogates and odd characters as \\u escapes, else as UTF-8
    breaking: str | None = None  # how the written JSON is broken
    at: float = 0.0  # where, as a fraction of the line
    raw: bytes = b""
    oversize: Literal["head", "tail", "none"] = "head"

    def __repr__(self) -> str:  # hypothesis prints failing examples with it: keep it short
        shown = repr(self.raw if self.how == "raw" else self.value)
        shown = shown if len(shown) <= 300 else f"{shown[:300]}… ({len(shown)} characters)"
        extra = f", broken by {self.breaking} at {self.at:.2f}" if self.breaking else ""
        return f"Draft({self.how}, {shown}{extra}{'' if self.ascii else ', UTF-8'})"


BREAKINGS = ("cut", "byte", "cesu", "digits", "deep", "extra", "quote")


def drafts() -> st.SearchStrategy[Draft]:
    """Any line: requests most often, then JSON of the wrong shape, broken JSON, raw bytes
    and, rarely, a line over the limit."""
    requests_ = st.builds(Draft, st.just("json"), requests(), st.booleans())
    wrong = st.builds(Draft, st.just("json"), shapes(), st.booleans())
    broken = st.builds(
        Draft,
        st.just("json"),
        requests(),
        st.booleans(),
        st.sampled_from(BREAKINGS),
        st.floats(0, 1),
    )
    raw = st.builds(
        lambda data: Draft("raw", raw=data.replace(b"\n", b" ")),
        st.binary(max_size=60)
        | st.sampled_from(
            (b"", b" ", b"\r", b"\t\t", b"\xef\xbb\xbf{}", b"\x00", b"{", b"null", b"[]", b"\xff")
        ),
    )
    oversize = st.builds(
        lambda where: Draft("oversize", oversize=where), st.sampled_from(("head", "tail", "none"))
    )
    return weighted((requests_, 30), (wrong, 8), (broken, 6), (raw, 4), (oversize, 1))


def written(draft: Draft, fresh: Callable[[], int | str]) -> tuple[bytes, Expected]:
    """The line's bytes (without its newline), ``ID`` replaced by ``fresh()`` (a request id
    the channel has not given before), and what must answer it."""
    if draft.how == "raw":
        return draft.raw, expected(draft.raw)
    if draft.how == "oversize":
        arguments = {"refs": ["#1" * (MAX_MESSAGE // 2)]}
        params = json.dumps({"name": "resolve", "arguments": arguments})
        if draft.oversize == "none":
            text = f'{{"jsonrpc":"2.0","method":"tools/call","params":{params}}}'
            return text.encode(), ("null", {INVALID_REQUEST})
        request_id = json.dumps(fresh())
        if draft.oversize == "head":
            text = f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{params}}}'
        else:  # as the TypeScript SDK writes a request: its id last
            text = f'{{"method":"tools/call","params":{params},"jsonrpc":"2.0","id":{request_id}}}'
        return text.encode(), ("id", json.loads(request_id))
    value = _with_ids(draft.value, fresh)
    line = json.dumps(value, ensure_ascii=draft.ascii).encode("utf-8", "surrogatepass")
    if draft.breaking is not None:
        line = _broken(line, draft.breaking, draft.at)
    return line, expected(line)


def _with_ids(value: Any, fresh: Callable[[], int | str]) -> Any:
    if value is ID:
        return fresh()
    if isinstance(value, dict):
        return {key: _with_ids(inner, fresh) for key, inner in value.items()}
    if isinstance(value, list):
        return [_with_ids(inner, fresh) for inner in value]
    return value


def _broken(line: bytes, how: str, at: float) -> bytes:
    """``line`` (a JSON object) made unreadable."""
    where = min(len(line) - 1, max(1, int(len(line) * at)))
    if how == "cut":
        return line[:where]
    if how == "byte":
        return line[:where] + b"\xff" + line[where:]
    if how == "cesu":  # a lone surrogate encoded as bytes, inside the first string
        quote = line.index(b'"') + 1
        return line[:quote] + "\ud800".encode("utf-8", "surrogatepass") + line[quote:]
    if how == "digits":
        return line[:-1] + b', "n": ' + b"9" * 5000 + b"}"
    if how == "deep":
        return line[:-1] + b', "deep": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    if how == "extra":
        return line + b"}x"
    return line.replace(b'"', b"", 1)  # "quote": the first key's opening quote


# -- what must answer ---------------------------------------------------------------------------

Expected = tuple[Literal["none", "null", "id", "big"], Any]
"""``("none", None)``: nothing; ``("null", codes)``: one error with ``"id": null`` and one of
those codes; ``("id", request_id)``: an answer (a result or an error) under that id;
``("big", request_id)``: a line over the limit, refused with InvalidRequest under its id or,
where the line does not show it at an end, with ``"id": null``."""


def expected(line: bytes) -> Expected:
    """What answers ``line`` (bytes, no newline), by the rules of ``mcp/stdio.py``, worked
    out here on their own from Python's JSON reader (surrogate escapes are read either way,
    and the shape rules do not depend on them)."""
    if not line.strip():
        return "none", None
    try:
        value = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return ("big", None) if len(line) > MAX_MESSAGE else ("null", {PARSE_ERROR})
    if len(line) > MAX_MESSAGE:
        method, request_id = _request_id(value)
        return "big", request_id if method else None
    return expected_of(value)


def _request_id(value: Any) -> tuple[bool, Any]:
    """Whether ``value`` is request-like (a string method, an id of the right type), and
    its id."""
    if not isinstance(value, dict):
        return False, None
    request_id = value.get("id")
    return isinstance(value.get("method"), str) and _usable(request_id), request_id


def _usable(request_id: Any) -> bool:
    return isinstance(request_id, str) or type(request_id) is int


def expected_of(value: Any) -> Expected:
    """What answers a line holding the JSON ``value``."""
    invalid: Expected = ("null", {INVALID_REQUEST})
    if not isinstance(value, dict):
        return invalid
    method, request_id = value.get("method"), value.get("id")
    request = isinstance(method, str) and _usable(request_id)
    if value.get("jsonrpc") != "2.0":
        return ("id", request_id) if request else invalid
    if "method" in value:
        if not isinstance(method, str) or ("id" in value and not _usable(request_id)):
            return invalid
        params = value.get("params")
        if params is not None and not isinstance(params, dict):
            return ("id", request_id) if request else invalid
        return ("id", request_id) if "id" in value else ("none", None)
    if _usable(request_id) and ("result" in value) != ("error" in value):
        result, error = value.get("result", {}), value.get("error", {"code": 0, "message": ""})
        if (
            isinstance(result, dict)
            and isinstance(error, dict)
            and type(error.get("code")) is int
            and isinstance(error.get("message"), str)
        ):
            return "none", None  # an answer to a request the server never sent: dropped
    return invalid
