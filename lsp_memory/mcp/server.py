"""The MCP server: nine tools over the same store, settings and user as the command line.

- ``search_memory(query, search_type, limit, session_id, max_tokens)``: hybrid search over
  facts (claims), episodes, both, notes or all of them, near-duplicates once, only claims of
  confidence above 0.3, each with its timestamp, at most ``max_tokens`` (400) tokens of
  titles and snippets; with a conversation's id, what it found is recorded as that
  conversation's ``tool`` references (on its latest message), which its next block shows;
- ``remember(statement, category, contexts)``: a claim written like ``claim add`` (classified
  when no category is given, superseding older claims);
- ``ingest_messages(session_id, user_message, …)``: one message pair, like ``ingest``; the
  conversation's passive recall is then made ahead, on a reader's thread after the answer;
- ``build_context(text, budget, session_id, attach, pin, query, referenced_only)``: the
  context block's JSON, with passive recall when a conversation's id is given, and the
  options of ``build-context``;
- ``resolve(refs)``: what references name, like ``resolve --json``.
- ``pin_memory(reference)``, ``unpin_memory(reference)``, ``add_memory_to_context(reference,
  context)``, ``remove_memory_from_context(reference, context)``: like ``claim pin``,
  ``claim unpin``, ``claim context add`` and ``claim context remove``, with their line.

A bad argument (a wrong type, an unknown ``search_type``, a reference that names nothing, a
conversation of no one's, a text longer than ``MAX_TEXT``) is a tool error with one line;
nothing is printed on stdout but the protocol, and a line that is no message gets a JSON-RPC
error (``mcp/stdio.py``, which also bounds a message to 4 MiB).

Where each call runs (``Lanes``): writes one at a time on one thread, reads beside them, so a
slow write (a classifier or extractor command, a search's refresh embedding 256 records)
never holds a ``resolve`` or a ``build_context``; ``search_memory`` first brings the index up
to date on the writer's thread, so it waits for a write under way (it sees what was written
before it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import reprlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, EmptyResult, SetLevelRequestParams
from pydantic import Field, ValidationError

from lsp_memory.app import App
from lsp_memory.errors import UserError
from lsp_memory.mcp import lifecycle, memories, notes, resources
from lsp_memory.mcp.calls import READ_ONLY, Calls, hints
from lsp_memory.mcp.http import HttpSettings, serve_http
from lsp_memory.mcp.stdio import stdio_streams
from lsp_memory.model import MAX_STATEMENT, Claim, doc_key
from lsp_memory.services.block import referenced_lines
from lsp_memory.services.conversations.ingest import MAX_MESSAGE, MAX_SESSION_ID, pair_from
from lsp_memory.services.conversations.recall import recalled
from lsp_memory.services.kernel.asof import as_of_moment
from lsp_memory.services.kernel.resolver import claim_named, parse_argument, resolution_record
from lsp_memory.services.kernel.tokens import o200k
from lsp_memory.services.memory.records import Records
from lsp_memory.services.retrieval.search import SCOPES, SHOWN_STATUSES

SEARCH_TYPES = {
    "facts": "claim",
    "episodes": "episode",
    "both": "claim+episode",  # seed 001's word: facts and episodes
    "notes": "note",
    "all": "all",
}
"""``search_type`` in the words agents use, each a search scope (``search.SCOPES``)."""
MIN_CONFIDENCE = 0.3
"""search_memory leaves out claims at or below this confidence (seed 001's mode B)."""
MAX_TEXT = MAX_MESSAGE
"""Characters a text argument may have (a statement, a query, a prompt, a message): as many
as a message ingest takes. A longer one is a tool error: a 10 MB string held every other
call for 6–30 s."""
MAX_NAME = MAX_SESSION_ID
"""Characters a name argument may have (a conversation's id, a category, a context, a
source, a channel, a timestamp)."""
MAX_REF, MAX_REFS, MAX_CONTEXTS = 1_000, 100, 20
"""Characters of a reference; references ``resolve`` takes at once; contexts of a claim."""
RESULT_TOKENS, MAX_RESULT_TOKENS = 400, 20_000
"""Tokens of titles and snippets ``search_memory`` gives by default (seed 001's budget for
tool results), and the most it gives when asked."""
READERS = 2
"""Threads answering reads beside the writer's."""

_PROBLEMS = 3  # argument problems told in a tool error; the rest are counted
_MAX_ERROR = 500  # characters of an error's text
_shown = reprlib.Repr()  # a value quoted in an error: short, however long or deep it is
_shown.maxstring = _shown.maxother = 60
_shown.maxlevel, _shown.maxlist, _shown.maxdict = 2, 4, 4
logger = logging.getLogger(__name__)
T = TypeVar("T")


class Lanes:
    """Where the tools' work runs. Writes — ``remember``, ``ingest_messages``, a call given a
    conversation's id (its references are written) and ``search_memory``'s index refresh —
    one at a time on one thread: the App opens the embedding queue's SQLite connection for
    the thread that first asks, and they all use it. Reads — ``resolve``, ``build_context``,
    ``search_memory``'s search — on ``READERS`` threads of their own (each with its own store
    connection), once the writer has opened what they share and would otherwise open
    themselves: the vaults' scan, the full-text index, the model and the vector index (safe
    to read from several threads: the language server does). Until then, or when that
    failed, reads run on the writer too."""

    def __init__(self, app: App) -> None:
        self._app = app
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="lsp-memory-mcp-write")
        self._readers = ThreadPoolExecutor(READERS, thread_name_prefix="lsp-memory-mcp-read")
        self._opened: Future[bool] | None = None

    async def write(self, work: Callable[[], T]) -> T:
        self._open()
        return await asyncio.get_running_loop().run_in_executor(self._writer, work)

    async def read(self, work: Callable[[], T]) -> T:
        opened = await asyncio.wrap_future(self._open())
        lane = self._readers if opened else self._writer
        return await asyncio.get_running_loop().run_in_executor(lane, work)

    def later(self, work: Callable[[], object]) -> None:
        """Run the read ``work`` on a reader's thread, answering no one, once the shared
        parts are open (else not at all): it never holds the writer, so no call waits for
        it. A failure is logged, never raised."""

        def quietly() -> None:
            try:
                work()
            except Exception as error:  # one line: the log is read by people
                logger.warning("background work failed: %s: %s", type(error).__name__, error)

        opened = self._open()
        if opened.done() and opened.result():
            self._readers.submit(quietly)

    def close(self) -> None:
        """Let the calls under way end (before the App closes their connections)."""
        self._readers.shutdown(cancel_futures=True)
        self._writer.shutdown(cancel_futures=True)

    def _open(self) -> Future[bool]:
        if self._opened is None:  # only the event loop's thread comes here
            self._opened = self._writer.submit(self._open_shared)
            self._opened.add_done_callback(self._prepare)
        return self._opened

    def _prepare(self, opened: Future[bool]) -> None:
        """Once the shared parts are open, a reader's thread prepares the vector index for
        the searches to come (``VectorIndex.prepare``: its ids hashed, its int8 rows
        copied), which two of the first ~16 searches did otherwise (~0.1–0.2 s each)."""
        side = self._app.loaded_vectors
        if side is not None and not opened.cancelled() and opened.exception() is None:
            with contextlib.suppress(RuntimeError):  # the server closing: no new work
                self.later(side.index.prepare)

    def _open_shared(self) -> bool:
        try:
            self._app.snapshot()
            self._app.hybrid_search()
        except Exception:  # the first tool that needs it meets the error again and says it
            logger.debug("reads stay on the writer's thread", exc_info=True)
            return False
        return True


class _Server(MCPServer):
    """The SDK's server on ``mcp/stdio.py``'s transport, with each tool error on one short
    line: argument errors as "search_type: Input should be 'facts', …, not 'everything'"
    instead of pydantic's multi-line report, values quoted short."""

    async def run_stdio_async(self) -> None:
        async with stdio_streams() as (read_stream, write_stream):
            # The SDK's own run_stdio_async does this over its stdio_server.
            lowlevel = self._lowlevel_server
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Any = None
    ) -> Any:
        # The SDK turns every failure (an unknown prompt: this server has none) into a
        # ValueError, which went out as error code 0 with a traceback on stderr.
        try:
            return await super().get_prompt(name, arguments, context)
        except ValueError as error:
            raise MCPError(INVALID_PARAMS, _one_line(str(error))) from None

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            cause = error.__cause__
            if isinstance(cause, ValidationError):
                problems = cause.errors(include_url=False)
                told = [_problem(problem) for problem in problems[:_PROBLEMS]]
                if len(problems) > _PROBLEMS:
                    told.append(f"{len(problems) - _PROBLEMS:,} more problems")
                raise ToolError(f"Error executing tool {name}: {'; '.join(told)}") from None
            text = str(error)
            if text == _one_line(text):
                raise
            # An unknown tool's name, say, is quoted whole by the SDK.
            raise ToolError(_one_line(text)) from error


def _one_line(text: str) -> str:
    """``text`` on one line of at most ``_MAX_ERROR`` characters."""
    line = " ".join(text.splitlines())
    return line if len(line) <= _MAX_ERROR else f"{line[: _MAX_ERROR - 1]}…"


def _problem(problem: Any) -> str:
    """One argument problem of pydantic's, on one short line."""
    where = ".".join(
        _shown.repr(part) if isinstance(part, str) and len(part) > 60 else str(part)
        for part in problem["loc"]
    )
    said = f"{where or 'arguments'}: {problem['msg']}"
    if problem["type"] == "missing":
        return said
    value = problem["input"]
    size = f" ({len(value):,} characters)" if isinstance(value, str) and len(value) > 60 else ""
    return f"{said}, not {_shown.repr(value)}{size}"


Text = Annotated[str, Field(max_length=MAX_TEXT)]
Name = Annotated[str, Field(max_length=MAX_NAME)]
Ref = Annotated[
    str,
    Field(min_length=1, max_length=MAX_REF, description="the claim: #42, @friendly_id"),
]
AsOf = Annotated[
    str | None,
    Field(
        max_length=MAX_NAME,
        description="an ISO 8601 date or date-time: answer as the memory was then",
    ),
]
ContextId = Annotated[
    str, Field(min_length=1, max_length=MAX_NAME, description="the context's friendly id")
]


def build(app: App, lanes: Lanes) -> MCPServer:
    """The server over ``app``'s store and user, its calls run in ``lanes``."""
    server = _Server(
        "lsp-memory",
        instructions=(
            "The user's personal memory: facts about them (claims), past conversation "
            "messages (episodes) and their notes. Search it before answering personal "
            "questions; remember what the user states about themselves."
        ),
    )

    calls = Calls(lanes)
    write, read = calls.write, calls.read
    server._lowlevel_server.add_request_handler(  # the SDK's MCPServer has no logging
        "logging/setLevel", SetLevelRequestParams, _set_level
    )

    @server.tool(annotations=hints(idempotent=True))
    async def search_memory(
        query: Annotated[
            str, Field(min_length=1, max_length=MAX_TEXT, description="what to look for")
        ],
        search_type: Literal["facts", "episodes", "both", "notes", "all"] = "all",
        limit: Annotated[int, Field(ge=1, le=50)] = 5,
        session_id: Annotated[
            Name | None,
            Field(description="the conversation this search serves: its results are recorded"),
        ] = None,
        max_tokens: Annotated[
            int,
            Field(ge=1, le=MAX_RESULT_TOKENS, description="the most tokens of titles and snippets"),
        ] = RESULT_TOKENS,
        *,
        as_of: AsOf = None,
    ) -> dict[str, Any]:
        """Search the user's memory: facts (claims), episodes (past messages), both, notes,
        or all of them (contexts and entities too). Best first; near-duplicates shown once;
        each with its timestamp; at most ``max_tokens`` tokens of titles and snippets
        (default 400), the rest counted in ``left_out``. Given the conversation's id
        (``session_id``), the results are kept as that conversation's references, and its
        next context block shows them. Given ``as_of``, what the memory held at that date:
        claims as they were then, none created later, messages up to then."""

        def searched() -> tuple[list[dict[str, Any]], int]:
            records = app.search_records(
                query,
                kinds=SCOPES[SEARCH_TYPES[search_type]],
                statuses=SHOWN_STATUSES,
                k=limit,
                diverse=True,
                min_similarity=app.config.min_similarity,
                as_of=as_of_moment(as_of) if as_of else None,
            )
            # The store's confidence, not the index's: consolidation re-indexes a claim only
            # when its confidence crosses a threshold.
            kept = [r for r in records if r["kind"] != "claim" or r["confidence"] > MIN_CONFIDENCE]
            return within_tokens(kept, max_tokens)

        def given(conversation: str) -> dict[str, Any]:
            conversations = app.conversations()
            conversations.recall(conversation)  # an unknown one is an error before searching
            app.refresh_indexes()
            shown = searched()
            conversations.given(
                conversation,
                [(r["kind"], doc_key(r["id"]), r["reference"] or r["title"]) for r in shown[0]],
                via="tool",
            )
            return answer(shown)

        def answer(found: tuple[list[dict[str, Any]], int]) -> dict[str, Any]:
            return {"results": found[0], "left_out": found[1]}

        if session_id:
            return await write(partial(given, session_id))
        # Brought up to date by the writer (a search sees the writes before it), then read.
        await write(app.refresh_indexes)
        return answer(await read(searched))

    @server.tool(annotations=hints(destructive=True))
    async def remember(
        statement: Annotated[
            str,
            Field(min_length=1, max_length=MAX_STATEMENT, description="one fact about the user"),
        ],
        category: Name | None = None,
        contexts: Annotated[list[Name] | None, Field(max_length=MAX_CONTEXTS)] = None,
    ) -> dict[str, Any]:
        """Remember one statement about the user as a claim; its category is chosen when
        not given, and older claims it replaces are superseded."""

        def added() -> dict[str, Any]:
            records = app.records()
            claim = records.add_claim(statement, claim_type=category, contexts=contexts or ())
            return {
                "claim": f"#{claim.number}",
                "reference": f"@{claim.friendly_id}",
                "category": claim.claim_type,
                "statement": claim.statement,
                "supersedes": [f"#{old.number}" for old in records.last_superseded],
            }

        return await write(added)

    @server.tool(annotations=hints(destructive=True))
    async def ingest_messages(
        session_id: Annotated[str, Field(min_length=1, max_length=MAX_NAME)],
        user_message: Annotated[str, Field(min_length=1, max_length=MAX_TEXT)],
        *,
        assistant_response: Text | None = None,
        source: Name | None = None,
        channel: Name | None = None,
        timestamp: Name | None = None,
    ) -> dict[str, Any]:
        """Store one exchange of a conversation and remember what the user said about
        themselves."""

        def stored() -> tuple[dict[str, Any], str]:
            try:
                pair = pair_from(
                    {
                        "contentSessionId": session_id,
                        "userMessage": user_message,
                        "assistantResponse": assistant_response,
                        "source": source,
                        "channel": channel,
                        "timestamp": timestamp,
                    }
                )
            except ValueError as error:
                raise UserError(str(error)) from None
            result = app.ingester().ingest([pair])[0].to_json()
            del result["line"]
            return result, pair.conversation_id

        def recall_ahead(conversation: str) -> None:
            # Seed 001's mode A: the next block of this conversation recalls from these
            # messages; found now, while the assistant answers, not when it is asked for.
            # A read, on a reader's thread: the indexes as they are (what this exchange
            # adds is shown verbatim as recent messages anyway).
            app.conversations().prepare(app.snapshot().assembler(), conversation)

        answer, conversation = await write(stored)
        lanes.later(partial(recall_ahead, conversation))
        return answer

    @server.tool(annotations=hints(idempotent=True))
    async def build_context(
        text: Text,
        budget: Annotated[int | None, Field(ge=1)] = None,
        session_id: Name | None = None,
        *,
        attach: Annotated[
            list[Annotated[str, Field(max_length=MAX_REF)]] | None,
            Field(max_length=MAX_REFS, description="references shown as ATTACHED claims"),
        ] = None,
        pin: Annotated[
            list[Annotated[str, Field(max_length=MAX_REF)]] | None,
            Field(max_length=MAX_REFS, description="references shown as CONV PINNED claims"),
        ] = None,
        query: Annotated[
            Text | None, Field(description="what to find memories for, instead of the text")
        ] = None,
        referenced_only: Annotated[
            bool, Field(description="only the [REFERENCED …] lines, each whole")
        ] = False,
        as_of: AsOf = None,
    ) -> dict[str, Any]:
        """The token-budgeted context block for a prompt: the memories and notes it
        references, then the most relevant others (with a conversation: its last turns and
        pins too). ``attach``, ``pin``, ``query`` and ``referenced_only`` are
        ``build-context``'s options of the same names; given ``as_of`` (not with a
        conversation), the block as it would have been built at that date."""

        def block() -> dict[str, Any]:
            assembler = app.snapshot().assembler()
            options: dict[str, Any] = {
                "budget": budget,
                "attach": attach or (),
                "pin": pin or (),
                "query": query,
            }
            if as_of:
                options["as_of"] = as_of_moment(as_of)
            if session_id:
                built = recalled(assembler, app.conversations(), session_id, text, **options)
            else:
                built = assembler.build(text, **options)
            if referenced_only:
                return {"referenced": referenced_lines(built.markdown), "warnings": built.warnings}
            return built.to_json()

        # With a conversation, what the block shows is written as its references.
        return await (write(block) if session_id else read(block))

    def claim_change(reference: str, change: Callable[[Records, Claim], str]) -> dict[str, Any]:
        """``change`` made to the claim ``reference`` names, on the writer's thread."""
        claim = claim_named(app.snapshot().resolver(), reference)
        message = change(app.records(), claim)
        return {
            "claim": f"#{claim.number}",
            "reference": f"@{claim.friendly_id}",
            "message": message,
        }

    @server.tool(annotations=hints(idempotent=True))
    async def pin_memory(reference: Ref) -> dict[str, Any]:
        """Pin a claim globally: it is shown in every context block while it is live."""
        return await write(partial(claim_change, reference, lambda r, c: r.pin(c)))

    @server.tool(annotations=hints(destructive=True, idempotent=True))
    async def unpin_memory(reference: Ref) -> dict[str, Any]:
        """Unpin a globally pinned claim."""
        return await write(partial(claim_change, reference, lambda r, c: r.pin(c, pinned=False)))

    @server.tool(annotations=hints(idempotent=True))
    async def add_memory_to_context(reference: Ref, context: ContextId) -> dict[str, Any]:
        """Add a claim to one of the user's contexts (``@context`` then gives it)."""
        change = partial(claim_change, reference, lambda r, c: r.link_context(c, context))
        return await write(change)

    @server.tool(annotations=hints(destructive=True, idempotent=True))
    async def remove_memory_from_context(reference: Ref, context: ContextId) -> dict[str, Any]:
        """Remove a claim from one of the user's contexts."""
        return await write(
            partial(claim_change, reference, lambda r, c: r.link_context(c, context, linked=False))
        )

    @server.tool(annotations=READ_ONLY)
    async def resolve(
        refs: Annotated[
            list[Annotated[str, Field(max_length=MAX_REF)]],
            Field(min_length=1, max_length=MAX_REFS),
        ],
        as_of: AsOf = None,
    ) -> dict[str, Any]:
        """What references name: #42, @friendly_id, @context, [[Note]]; given ``as_of``, as
        they were at that date."""

        def resolved() -> dict[str, Any]:
            resolver = app.snapshot().resolver()
            found = [resolver.resolve(parse_argument(ref)) for ref in refs]
            if as_of:
                found = app.records().resolved_then(found, as_of_moment(as_of))
            return {"results": [resolution_record(r) for r in found]}

        return await read(resolved)

    for module in (memories, notes, lifecycle, resources):
        module.register(server, app, calls)
    return server


async def _set_level(_context: Any, params: SetLevelRequestParams) -> EmptyResult:
    """``logging/setLevel``: the server's log (stderr) from that level up."""
    level = _LEVELS.get(params.level, logging.WARNING)
    logging.getLogger("lsp_memory").setLevel(level)
    return EmptyResult()


_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


def serve(app: App, http: HttpSettings | None = None, *, generated: bool = False) -> None:
    """Serve ``app``'s memory over stdio until the client goes away, or with ``http`` over
    streamable HTTP until interrupted (``mcp/http.py``; ``generated``: its token was made
    for this run, and is told)."""
    lanes = Lanes(app)
    try:
        if http is None:
            build(app, lanes).run("stdio")
        else:
            serve_http(build(app, lanes), http, generated=generated)
    finally:
        lanes.close()


def within_tokens(records: list[dict[str, Any]], budget: int) -> tuple[list[dict[str, Any]], int]:
    """The records, best first, whose titles and snippets fit in ``budget`` tokens (o200k),
    and how many were left out; the first is kept whatever it takes, its snippet cut to
    fit."""
    counter = o200k()
    kept: list[dict[str, Any]] = []
    used = 0
    for record in records:
        cost = counter.count(record["title"] or "") + counter.count(record["snippet"] or "")
        if used + cost <= budget:
            kept.append(record)
            used += cost
            continue
        if not kept:
            room = max(0, budget - counter.count(record["title"] or ""))
            kept.append({**record, "snippet": counter.head(record["snippet"] or "", room)})
        break
    return kept, len(records) - len(kept)
