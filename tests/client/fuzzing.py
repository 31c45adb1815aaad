"""What the fuzz tests of the language server send (``test_fuzz.py``): hypothesis strategies
for LSP messages — every method the server registers, unknown ones, notifications — with
parameters well formed or mangled (missing fields, wrong types, nulls, nested garbage),
positions in range and out of it (negative, past the end, huge), odd Unicode (lone
surrogates, joiners, line separators LSP does not count) and, now and then, strings of a few
hundred kilobytes; and Markdown documents built from reference fragments, each fragment's
offset kept so requests can aim at it.

Pure: nothing here starts a process. The server's methods and commands are read from the
server itself (``lsp_memory.lsp.server.build``), so a capability added later is fuzzed too.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from lsp_memory.lsp.server import build
from lsp_memory.services.memory.interchange import import_records
from lsp_memory.store.sqlite import open_store
from tests.conftest import DATA, KB, USER

MISSING: Any = object()
"""A message's ``params`` left out altogether (not ``null``)."""

EXCLUDED = {
    "initialize": "a second initialize replaces the workspace: every open document is dropped",
    "shutdown": "after it the server may refuse every request, as LSP says",
    "exit": "ends the process, as LSP says",
}
"""Methods the random messages leave out, and why: each ends or resets the session by design."""
KNOWN_DEFECTS: dict[str, str] = {}
"""Methods left out until a defect a strict xfail test pins down is fixed."""

NOTIFICATION_PREFIXES = ("textDocument/did", "workspace/didChange", "notebookDocument/did", "$/")
NOTIFICATIONS = frozenset(
    {
        "initialized",
        "exit",
        "window/workDoneProgress/cancel",
        "workspace/didChangeWorkspaceFolders",
        "workspace/didRenameFiles",
    }
)

UNKNOWN_REQUESTS = (
    "textDocument/formatting",
    "textDocument/semanticTokens/full",
    "textDocument/documentSymbol",
    "workspace/willDeleteFiles",
    "lspMemory/noSuchMethod",
    "lspMemory.search",  # a command's name used as a method
    "rpc.discover",
    "",
)
UNKNOWN_NOTIFICATIONS = ("$/unknown", "$/progress", "textDocument/didFrobnicate", "telemetry/x")


def _registry() -> tuple[tuple[str, ...], tuple[str, ...]]:
    server = build()
    manager = server.protocol.fm
    methods = sorted({*manager.features, *manager.builtin_features})
    return tuple(methods), tuple(sorted(manager.commands))


REGISTERED, COMMANDS = _registry()
"""Every LSP method the server answers (its own features and pygls's built-in ones), and
every ``workspace/executeCommand`` command it registers."""
FUZZED = tuple(m for m in REGISTERED if m not in EXCLUDED and m not in KNOWN_DEFECTS)


def is_notification(method: str) -> bool:
    return method in NOTIFICATIONS or method.startswith(NOTIFICATION_PREFIXES)


@dataclass(frozen=True, slots=True)
class Message:
    """One JSON-RPC message to send: a request (the channel gives it an id) or a
    notification. ``params`` is ``MISSING`` to leave the member out; ``string_id`` sends the
    request's id as a string; ``mangled`` says the parameters were broken on purpose."""

    method: str
    params: Any
    request: bool
    string_id: bool = False
    mangled: bool = False

    def __repr__(self) -> str:  # hypothesis prints failing examples with it: keep it short
        shown = "MISSING" if self.params is MISSING else _short(repr(self.params))
        kind = "request" if self.request else "notification"
        return f"Message({self.method!r}, {shown}, {kind}{', mangled' if self.mangled else ''})"


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def fuzzed_memory(work: Path, store: Path, vault: Path) -> dict[str, str]:
    """A private copy of the fixture store and vault for a fuzzed server (fuzzing adds
    claims and changes settings), and the environment that points the server at it."""
    with open_store(store) as opened:
        import_records(opened, KB.read_bytes(), user=USER, source="kb")
    shutil.copytree(DATA / "notes", vault)
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(work / "home"),
        "XDG_CACHE_HOME": str(work / "cache"),
        "XDG_CONFIG_HOME": str(work / "config"),
        "XDG_DATA_HOME": str(work / "data"),
        "LSP_MEMORY_STORE": str(store),
        "LSP_MEMORY_USER": USER,
        "PYTHONPATH": str(Path(__file__).parents[2]),
    }


fuzz = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
"""Both fuzz suites' settings: reproducible (no example database), no deadline (a server
answers at its own pace), large data allowed."""


def weighted(*pairs: tuple[st.SearchStrategy[Any], int]) -> st.SearchStrategy[Any]:
    """One of the strategies, each as often as its weight. (``one_of`` of one strategy
    repeated draws it no more often than another: it keeps one of the copies.)"""
    return st.sampled_from([s for s, weight in pairs for _ in range(weight)]).flatmap(lambda s: s)


# -- text ---------------------------------------------------------------------------------------

REFERENCES = (
    "@leaf_active_a001",
    "@leaf_contested_a002",
    "@leaf_retracted_a003",
    "@prefer_morning_a3f2",
    "@leaf_",
    "@",
    "@@",
    "#1",
    "#42",
    "#0",
    "#",
    "#99999999999999999999999",
    "@claim_42",
    "@memory:00000000-0000-4000-a000-000000000001",
    "@memory:",
    "@mem:zz",
    "@root_ctx",
    "@root_ctx/mid_ctx/leaf_ctx",
    "@alice_ent",
    "@eng_team",
    "@no_such_thing_zz",
    "[[Alice Notes]]",
    "[[Alice Notes#Heading]]",
    "[[Alice Notes|alias]]",
    "[[Old Plan#^block]]",
    "[[sub/deep-note]]",
    "[[No Such Note]]",
    "[[",
    "]]",
    "[[]]",
    "[[|]]",
    "[[#]]",
    "`",
    "``",
    "```\n",
    "~~~\n",
    "---\ntitle: t\n---\n",
    "<!-- ",
    " -->",
    "(@leaf_active_a001)",
    '"#1"',
    "email@example.com",
    "\\@leaf_active_a001",
)
ODD = (
    "\ud800",
    "\udfff",
    "a\ud83d",
    "\ude00b",
    "\ud83d\ude00",  # a valid pair, as two code points: JSON carries it as one character
    "😀",
    "👩\u200d👩\u200d👧",
    "e\u0301",
    "\u0301",
    "\u200b",
    "\u200f",
    "\u202e",
    "\ufeff",
    "\x00",
    "\x1b[31m",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x85",
    "\u2028",
    "\u2029",
    "\u3000",
    "İ",  # lower() makes two characters of it
    "ß",  # upper() too
    "ﬀ",
    "𝔘𝔫𝔦",
    "\U0010ffff",
    "\ufffd",
    "Ω≈ç√",
    "日本語",
)
SPACE = (" ", " ", "\n", "\n", "\r\n", "\r", "\t", "\n\n")
LSP_LINE_BREAK = ("\r\n", "\n", "\r")  # the only line ends LSP counts

# References one per line: thousands on one line make references and rename take minutes
# (test_fuzz.py, the strict xfail test_references_on_one_long_line_are_quick). Put
# "@leaf_active_a001 " and "[[Alice Notes]] " back once that is fixed.
HUGE_UNITS = (
    "word ",
    "@leaf_active_a001\n",
    "[[Alice Notes]]\n",
    "#1\n",
    "😀",
    "\ud800",
    "x",
    "@",
    "[[",
    "`",
    "a\n",
    "\u2028",
)
HUGE_SIZES = (100_000, 300_000)


def huge_text() -> st.SearchStrategy[str]:
    """A string of a few hundred kilobytes: one unit repeated."""

    def repeat(unit: str, size: int) -> str:
        return (unit * (size // len(unit) + 1))[:size]

    return st.builds(repeat, st.sampled_from(HUGE_UNITS), st.sampled_from(HUGE_SIZES))


surrogates = st.text(st.characters(categories=["Cs"]), min_size=1, max_size=2)
fragments = weighted(
    (st.sampled_from(REFERENCES), 4),
    (st.sampled_from(ODD), 2),
    (st.sampled_from(SPACE), 3),
    (st.text(max_size=12), 2),
    (surrogates, 1),
)
small_text = weighted(
    (st.text(max_size=20), 3),
    (st.sampled_from(REFERENCES + ODD), 2),
    (surrogates, 1),
)
texts = weighted((small_text, 30), (huge_text(), 1))


# Characters str.splitlines breaks at and LSP does not (see lsp_lines): within a line.
NOT_LSP_BREAKS = frozenset("\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
# Text around a reference that hides nothing: words, LSP line breaks, the characters that
# are not (NOT_LSP_BREAKS) and odd Unicode, but no markup (code spans, links) and no
# surrogates (a UTF-8 client cannot hold one).
prose = st.lists(
    st.one_of(
        st.sampled_from(("word", "Leaf", "x", " ", "  ", "\t", *LSP_LINE_BREAK)),
        st.sampled_from(sorted(NOT_LSP_BREAKS)),
        st.sampled_from(
            [odd for odd in ODD if not (set(odd) & NOT_LSP_BREAKS) and odd.isprintable()]
        ),
        st.text(st.characters(categories=["L", "M", "N", "So", "Zs"]), max_size=6),
    ),
    max_size=12,
).map("".join)


@dataclass(frozen=True, slots=True)
class Doc:
    """A generated document and the string offsets where each of its fragments starts."""

    text: str
    starts: tuple[int, ...]


@st.composite
def documents(draw: st.DrawFn, huge: bool = True) -> Doc:
    """Fragments joined (references, odd Unicode, line breaks, random text); rarely a
    document of a few hundred kilobytes."""
    if huge and draw(st.integers(0, 40)) == 0:
        text = draw(huge_text())
        return Doc(text, (0, len(text) // 2))
    parts = draw(st.lists(fragments, max_size=40))
    starts, offset = [], 0
    for part in parts:
        starts.append(offset)
        offset += len(part)
    return Doc("".join(parts), tuple(starts))


# -- values and positions -----------------------------------------------------------------------

EXTREMES = (-1, -(2**31), 2**31 - 1, 2**31, 2**32, 2**53, 10**20)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(EXTREMES),
    st.floats(allow_nan=False, allow_infinity=False),
    small_text,
)
# No "jsonrpc" member in generated objects: the server reads any object that has one, however
# deep in the params, as a message of its own (test_fuzz.py, the strict xfail
# test_an_object_inside_params_is_not_a_message). Let them in once that is fixed.
keys = st.one_of(st.text(max_size=8), st.sampled_from(("uri", "line", "id", "method")))
garbage = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(keys.filter(lambda key: key != "jsonrpc"), inner, max_size=4),
    ),
    max_leaves=12,
)
coordinates = weighted(
    (st.integers(0, 6), 6),
    (st.integers(0, 400), 2),
    (st.sampled_from(EXTREMES), 2),
)
positions = st.fixed_dictionaries({"line": coordinates, "character": coordinates})
ranges = st.fixed_dictionaries({"start": positions, "end": positions})


def uri_pool(work: Path, vault: Path) -> st.SearchStrategy[str]:
    """Documents the messages talk about: a few files of the fuzz folder (so opened ones are
    asked about again), a vault note, unsaved buffers, URIs that are not file paths, text."""
    files = [(work / f"fuzz-{i}.md").as_uri() for i in range(3)]
    others = [
        (vault / "alice.md").as_uri(),
        (work / "plain.txt").as_uri(),
        (work / "a b ü 😀.md").as_uri(),
        "untitled:Untitled-1",
        "file:///nonexistent/folder/x.md",
        "file:///%ZZ.md",
        "file://",
        "http://example.com/x.md",
        "not a uri",
        "",
    ]
    return weighted(
        (st.sampled_from(files), 6), (st.sampled_from(others), 2), (st.text(max_size=12), 1)
    )


# -- parameters, method by method ---------------------------------------------------------------


def templates(work: Path, vault: Path) -> dict[str, st.SearchStrategy[Any]]:
    """Well-formed parameters for each method the server knows (and some it does not)."""
    uris = uri_pool(work, vault)
    document = st.fixed_dictionaries({"uri": uris})
    where = {"textDocument": document, "position": positions}
    version = weighted((st.integers(0, 1000), 4), (st.sampled_from(EXTREMES), 1))
    opened = st.fixed_dictionaries(
        {
            "uri": uris,
            "languageId": st.sampled_from(("markdown", "markdown", "plaintext", "", "python")),
            "version": version,
            "text": documents().map(lambda d: d.text),
        }
    )
    change = st.one_of(
        st.fixed_dictionaries({"text": documents().map(lambda d: d.text)}),
        st.fixed_dictionaries({"range": ranges, "text": small_text}),
        st.fixed_dictionaries({"range": ranges, "rangeLength": coordinates, "text": small_text}),
    )
    folder_uris = st.sampled_from(
        [(work / "empty").as_uri(), vault.as_uri(), "file:///nonexistent/folder", "x"]
    )
    folders = st.lists(st.fixed_dictionaries({"uri": folder_uris, "name": small_text}), max_size=2)
    renamed = st.one_of(uris, folder_uris)
    renames = st.fixed_dictionaries(
        {
            "files": st.lists(
                st.fixed_dictionaries({"oldUri": renamed, "newUri": renamed}), max_size=3
            )
        }
    )
    return {
        "initialized": st.just({}),
        "textDocument/didOpen": st.fixed_dictionaries({"textDocument": opened}),
        "textDocument/didChange": st.fixed_dictionaries(
            {
                "textDocument": st.fixed_dictionaries({"uri": uris, "version": version}),
                "contentChanges": st.lists(change, min_size=1, max_size=3),
            }
        ),
        "textDocument/didSave": st.fixed_dictionaries(
            {"textDocument": document}, optional={"text": texts}
        ),
        "textDocument/didClose": st.fixed_dictionaries({"textDocument": document}),
        "textDocument/completion": st.fixed_dictionaries(
            where,
            optional={
                "context": st.fixed_dictionaries(
                    {"triggerKind": st.integers(0, 4)},
                    optional={"triggerCharacter": st.sampled_from(("@", "#", "[", "x", ""))},
                )
            },
        ),
        "textDocument/hover": st.fixed_dictionaries(where),
        "textDocument/definition": st.fixed_dictionaries(where),
        "textDocument/documentHighlight": st.fixed_dictionaries(where),
        "textDocument/prepareRename": st.fixed_dictionaries(where),
        "textDocument/references": st.fixed_dictionaries(
            {**where, "context": st.fixed_dictionaries({"includeDeclaration": st.booleans()})}
        ),
        "textDocument/rename": st.fixed_dictionaries({**where, "newName": small_text}),
        "textDocument/codeLens": st.fixed_dictionaries({"textDocument": document}),
        "textDocument/semanticTokens/full": st.fixed_dictionaries({"textDocument": document}),
        "textDocument/semanticTokens/range": st.fixed_dictionaries(
            {"textDocument": document, "range": ranges}
        ),
        "textDocument/documentLink": st.fixed_dictionaries({"textDocument": document}),
        "textDocument/inlayHint": st.fixed_dictionaries(
            {"textDocument": document, "range": ranges}
        ),
        "textDocument/codeAction": st.fixed_dictionaries(
            {
                "textDocument": document,
                "range": ranges,
                "context": st.fixed_dictionaries(
                    {"diagnostics": st.just([])},
                    optional={
                        "only": st.lists(
                            st.sampled_from(("quickfix", "source", "refactor", "x")), max_size=2
                        )
                    },
                ),
            }
        ),
        "workspace/symbol": st.fixed_dictionaries({"query": texts}),
        "workspaceSymbol/resolve": st.fixed_dictionaries(
            {
                "name": small_text,
                "kind": st.integers(1, 26),
                "location": st.one_of(
                    st.fixed_dictionaries({"uri": uris}),
                    st.fixed_dictionaries({"uri": uris, "range": ranges}),
                ),
            },
            optional={"data": garbage},
        ),
        "workspace/executeCommand": command_params(uris),
        "workspace/didChangeConfiguration": st.fixed_dictionaries(
            {"settings": st.one_of(garbage, settings_sections())}
        ),
        "workspace/didChangeWatchedFiles": st.fixed_dictionaries(
            {
                "changes": st.lists(
                    st.fixed_dictionaries({"uri": uris, "type": st.integers(0, 4)}), max_size=3
                )
            }
        ),
        "workspace/willRenameFiles": renames,
        "workspace/didRenameFiles": renames,
        "workspace/didChangeWorkspaceFolders": st.fixed_dictionaries(
            {"event": st.fixed_dictionaries({"added": folders, "removed": folders})}
        ),
        "$/setTrace": st.fixed_dictionaries(
            {"value": st.sampled_from(("off", "messages", "verbose", "loud"))}
        ),
        "$/cancelRequest": st.fixed_dictionaries({"id": st.integers(0, 10_000)}),
        "window/workDoneProgress/cancel": st.fixed_dictionaries(
            {"token": st.one_of(st.integers(), small_text)}
        ),
        "notebookDocument/didOpen": st.fixed_dictionaries(
            {
                "notebookDocument": st.fixed_dictionaries(
                    {
                        "uri": uris,
                        "notebookType": st.just("jupyter-notebook"),
                        "version": version,
                        "cells": st.just([]),
                    }
                ),
                "cellTextDocuments": st.lists(opened, max_size=1),
            }
        ),
        "notebookDocument/didChange": st.fixed_dictionaries(
            {
                "notebookDocument": st.fixed_dictionaries({"uri": uris, "version": version}),
                "change": garbage,
            }
        ),
        "notebookDocument/didClose": st.fixed_dictionaries(
            {
                "notebookDocument": st.fixed_dictionaries({"uri": uris}),
                "cellTextDocuments": st.lists(document, max_size=1),
            }
        ),
    }


# Settings an editor may send. Keys that would point the server at another store, user or
# vault, or make it run a command, get only non-string values: a bad value must leave the
# setting as it was (the store of the environment), which is a property worth testing; a
# valid path would legitimately move the session elsewhere, and a command would run.
_PATH_KEYS = ("store", "user", "vaults", "cache", "model", "classifier_command")
_SAFE_KEYS = ("budget", "severities", "tiers", "excludes", "supersede", "busy_timeout_ms")
non_strings: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), st.integers(), st.lists(st.integers(), max_size=2), st.just({})
)


def settings_sections() -> st.SearchStrategy[dict[str, Any]]:
    section = st.dictionaries(
        st.one_of(st.sampled_from(_SAFE_KEYS), st.text(max_size=8)), garbage, max_size=3
    ) | st.dictionaries(st.sampled_from(_PATH_KEYS), non_strings, max_size=2)
    return st.fixed_dictionaries({"lspMemory": section})


def command_params(uris: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    """``workspace/executeCommand``: each registered command with arguments of the right
    shape or not, and commands nobody registered."""
    arguments: dict[str, st.SearchStrategy[list[Any]]] = {
        "lspMemory.search": st.tuples(
            texts, st.sampled_from(("claim", "note", "episode", "all", "x")), st.integers(-1, 101)
        ).map(list),
        "lspMemory.addClaim": st.tuples(
            texts, st.sampled_from(("technical", "preference", "", "not a type"))
        ).map(list),
        "lspMemory.rememberSelection": st.tuples(uris, ranges, st.booleans()).map(list),
        "lspMemory.reindex": st.just([]),
        "lspMemory.unlinkedMentions": st.tuples(uris).map(list),
        "lspMemory.buildContext": st.tuples(
            uris,
            st.fixed_dictionaries(
                {},
                optional={
                    "budget": st.integers(-5, 5000),
                    "attach": st.lists(st.sampled_from(REFERENCES), max_size=2),
                    "pin": st.lists(small_text, max_size=2),
                    "query": small_text,
                    "bogus": garbage,
                },
            ),
        ).map(list),
        "lspMemory.showReferences": st.tuples(
            uris,
            st.fixed_dictionaries({"line": st.integers(-1, 2**31), "character": st.integers(0, 5)}),
        ).map(list),
        "lspMemory.review": st.one_of(
            st.just([]),
            st.tuples(st.sampled_from(("accept", "reject", "keep-both", "x")), st.integers()).map(
                list
            ),
        ),
    }
    names = st.sampled_from(COMMANDS)

    def params(name: str) -> st.SearchStrategy[dict[str, Any]]:
        given = arguments.get(name, st.lists(garbage, max_size=3))
        shaped = weighted((given, 3), (st.lists(garbage, max_size=3), 1))
        return st.fixed_dictionaries({"command": st.just(name), "arguments": shaped})

    unknown = st.fixed_dictionaries(
        {"command": st.one_of(st.just("lspMemory.nothing"), small_text)},
        optional={"arguments": st.lists(garbage, max_size=2)},
    )
    return weighted((names.flatmap(params), 6), (unknown, 1))


# -- mangling -----------------------------------------------------------------------------------


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a member or item of nested dicts and lists."""
    found: list[tuple[Any, ...]] = []
    items: Sequence[tuple[Any, Any]] = (
        list(value.items())
        if isinstance(value, dict)
        else list(enumerate(value))
        if isinstance(value, list)
        else []
    )
    for key, inner in items:
        found.append((*prefix, key))
        found.extend(_paths(inner, (*prefix, key)))
    return found


def _changed(value: Any, path: tuple[Any, ...], change: Callable[[Any, Any], Any]) -> Any:
    """A copy of ``value`` with the container holding ``path`` changed by ``change``."""
    if len(path) == 1:
        copy = dict(value) if isinstance(value, dict) else list(value)
        return change(copy, path[0])
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _changed(value[path[0]], path[1:], change)
    return copy


@st.composite
def mangled(draw: st.DrawFn, params: Any) -> tuple[Any, bool]:
    """``params`` as they are (most often), or broken: a member left out, a value of the
    wrong type or null, garbage in place of the whole, or no params at all."""
    how = draw(st.sampled_from(("keep", "keep", "keep", "drop", "retype", "retype", "whole")))
    paths = _paths(params)
    if how == "keep":
        return params, False
    if how == "whole":
        return draw(st.one_of(garbage, st.just(MISSING), st.just(None), st.just([]))), True
    if not paths:
        return draw(garbage), True
    path = draw(st.sampled_from(paths))
    if how == "drop":

        def drop(container: Any, key: Any) -> Any:
            del container[key]
            return container

        return _changed(params, path, drop), True
    replacement = draw(garbage)

    def put(container: Any, key: Any) -> Any:
        container[key] = replacement
        return container

    return _changed(params, path, put), True


# -- messages -----------------------------------------------------------------------------------


def messages(work: Path, vault: Path) -> st.SearchStrategy[Message]:
    """Any message: a method the server knows with its parameters (perhaps mangled), an
    unknown request or notification with garbage."""
    known = templates(work, vault)

    @st.composite
    def registered(draw: st.DrawFn) -> Message:
        method = draw(st.sampled_from(FUZZED))
        params, broken = draw(known.get(method, garbage).flatmap(mangled))
        request = not is_notification(method)
        string_id = request and draw(st.integers(0, 9)) == 0
        return Message(method, params, request, string_id=string_id, mangled=broken)

    unknown_request = st.builds(
        lambda method, params: Message(method, params, request=True, mangled=True),
        st.one_of(st.sampled_from(UNKNOWN_REQUESTS), st.text(max_size=12)),
        st.one_of(garbage, st.just(MISSING)),
    )
    unknown_notification = st.builds(
        lambda method, params: Message(method, params, request=False, mangled=True),
        st.one_of(st.sampled_from(UNKNOWN_NOTIFICATIONS), st.text(max_size=12)),
        st.one_of(garbage, st.just(MISSING)),
    )
    return weighted((registered(), 12), (unknown_request, 1), (unknown_notification, 1))


def lsp_lines(text: str) -> list[str]:
    """The document's lines as an LSP client counts them: only ``\\r\\n``, ``\\n`` and ``\\r``
    end a line (not ``\\u2028``, ``\\x85``, form feed… which ``str.splitlines`` also splits on)."""
    lines, start, index = [], 0, 0
    while index < len(text):
        char = text[index]
        if char in "\r\n":
            lines.append(text[start:index])
            index += 2 if text.startswith("\r\n", index) else 1
            start = index
        else:
            index += 1
    lines.append(text[start:])
    return lines


def utf8_units(text: str) -> int:
    """UTF-8 code units of ``text`` as the server counts them (a lone surrogate is three)."""
    return len(text.encode("utf-8", "surrogatepass"))


def client_position(text: str, offset: int) -> dict[str, int]:
    """The LSP position (UTF-8 columns) of the string offset ``offset`` of ``text``."""
    before = lsp_lines(text[:offset])
    return {"line": len(before) - 1, "character": utf8_units(before[-1])}
