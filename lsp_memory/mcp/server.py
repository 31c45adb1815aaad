"""The MCP server: five tools over the same store, settings and user as the command line.

- ``search_memory(query, search_type, limit, session_id)``: hybrid search over facts
  (claims), episodes, notes or all of them, near-duplicates once, only claims of confidence
  above 0.3; with a conversation's id, what it found is recorded as that conversation's ``search``
  references (on its latest message);
- ``remember(statement, category, contexts)``: a claim written like ``claim add`` (classified
  when no category is given, superseding older claims);
- ``ingest_messages(session_id, user_message, …)``: one message pair, like ``ingest``;
- ``build_context(text, budget, session_id)``: the context block's JSON, with passive recall
  when a conversation's id is given;
- ``resolve(refs)``: what references name, like ``resolve --json``.

A bad argument (a wrong type, an unknown ``search_type``, a reference that names nothing, a
conversation of no one's) is a tool error with one line; nothing is printed on stdout but the
protocol. Tool calls run one at a time on one thread: they share the process's ``App``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field, ValidationError

from lsp_memory.app import App
from lsp_memory.errors import UserError
from lsp_memory.model import doc_key
from lsp_memory.services.conversations.ingest import pair_from
from lsp_memory.services.conversations.recall import recalled
from lsp_memory.services.kernel.resolver import parse_argument, resolution_record
from lsp_memory.services.retrieval.search import SCOPES, SHOWN_STATUSES

SEARCH_TYPES = {"facts": "claim", "episodes": "episode", "notes": "note", "all": "all"}
"""``search_type`` in the words agents use, each a search scope (``search.SCOPES``)."""
MIN_CONFIDENCE = 0.3
"""search_memory leaves out claims at or below this confidence (seed 001's mode B)."""


class _Server(MCPServer):
    """The SDK's server, with argument errors as one line each ("search_type: Input should
    be 'facts', …, not 'everything'") instead of pydantic's multi-line report."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            cause = error.__cause__
            if not isinstance(cause, ValidationError):
                raise
            problems = "; ".join(
                f"{'.'.join(str(part) for part in problem['loc']) or 'arguments'}: "
                f"{problem['msg']}"
                + ("" if problem["type"] == "missing" else f", not {problem['input']!r}")
                for problem in cause.errors()
            )
            raise ToolError(f"Error executing tool {name}: {problems}") from None


def build(app: App) -> MCPServer:
    """The server over ``app``'s store and user."""
    # Every tool runs on this one thread: the App's SQLite connections (the store, the
    # vector queue and cache) belong to the thread that opened them.
    worker = ThreadPoolExecutor(1, thread_name_prefix="lsp-memory-mcp")
    server = _Server(
        "lsp-memory",
        instructions=(
            "The user's personal memory: facts about them (claims), past conversation "
            "messages (episodes) and their notes. Search it before answering personal "
            "questions; remember what the user states about themselves."
        ),
    )

    async def call(work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        try:
            return await asyncio.get_running_loop().run_in_executor(worker, work)
        except UserError as error:
            raise ToolError(str(error)) from None

    @server.tool()
    async def search_memory(
        query: Annotated[str, Field(min_length=1, description="what to look for")],
        search_type: Literal["facts", "episodes", "notes", "all"] = "all",
        limit: Annotated[int, Field(ge=1, le=50)] = 5,
        session_id: Annotated[
            str | None,
            Field(description="the conversation this search serves: its results are recorded"),
        ] = None,
    ) -> dict[str, Any]:
        """Search the user's memory: facts (claims), episodes (past messages), notes, or all
        of them (contexts and entities too). Best first; near-duplicates shown once. Given
        the conversation's id (``session_id``), the results are kept as that conversation's
        references."""

        def found() -> dict[str, Any]:
            conversations = app.conversations()
            if session_id:
                conversations.recall(session_id)  # an unknown one is an error before searching
            app.refresh_indexes()
            records = app.search_records(
                query,
                kinds=SCOPES[SEARCH_TYPES[search_type]],
                statuses=SHOWN_STATUSES,
                k=limit,
                diverse=True,
            )
            # The store's confidence, not the index's: consolidation re-indexes a claim only
            # when its confidence crosses a threshold.
            shown = [r for r in records if r["kind"] != "claim" or r["confidence"] > MIN_CONFIDENCE]
            if session_id:
                conversations.given(
                    session_id,
                    [(r["kind"], doc_key(r["id"]), r["reference"] or r["title"]) for r in shown],
                )
            return {"results": shown}

        return await call(found)

    @server.tool()
    async def remember(
        statement: Annotated[str, Field(min_length=1, description="one fact about the user")],
        category: str | None = None,
        contexts: list[str] | None = None,
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

        return await call(added)

    @server.tool()
    async def ingest_messages(
        session_id: Annotated[str, Field(min_length=1)],
        user_message: Annotated[str, Field(min_length=1)],
        *,
        assistant_response: str | None = None,
        source: str | None = None,
        channel: str | None = None,
        timestamp: str | None = None,
    ) -> dict[str, Any]:
        """Store one exchange of a conversation and remember what the user said about
        themselves."""

        def stored() -> dict[str, Any]:
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
            return result

        return await call(stored)

    @server.tool()
    async def build_context(
        text: str,
        budget: Annotated[int | None, Field(ge=1)] = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        """The token-budgeted context block for a prompt: the memories and notes it
        references, then the most relevant others (with a conversation: its last turns and
        pins too)."""

        def block() -> dict[str, Any]:
            assembler = app.snapshot().assembler()
            if session_id:
                built = recalled(assembler, app.conversations(), session_id, text, budget=budget)
            else:
                built = assembler.build(text, budget=budget)
            return built.to_json()

        return await call(block)

    @server.tool()
    async def resolve(refs: Annotated[list[str], Field(min_length=1)]) -> dict[str, Any]:
        """What references name: #42, @friendly_id, @context, [[Note]]."""

        def resolved() -> dict[str, Any]:
            resolver = app.snapshot().resolver()
            found = [resolver.resolve(parse_argument(ref)) for ref in refs]
            return {"results": [resolution_record(r) for r in found]}

        return await call(resolved)

    return server


def serve(app: App) -> None:
    """Serve ``app``'s memory over stdio until the client goes away."""
    build(app).run("stdio")
