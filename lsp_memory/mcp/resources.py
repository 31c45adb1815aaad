"""The MCP server's resources and prompts. Resources: ``memory://status`` (what the memory
holds, listed), and the templates ``memory://claim/{number}``, ``memory://context/{id}`` and
``memory://note/{+path}`` (a note of the first vault). Prompts: ``recall`` (what the memory
knows about a topic: the context block ``build_context`` makes for it) and
``review_recent`` (what changed over a timeframe, to look over with the user). A resource
that names nothing is an ``INVALID_PARAMS`` error with one line."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from lsp_memory.app import App
from lsp_memory.errors import UserError
from lsp_memory.mcp.calls import Calls
from lsp_memory.mcp.memories import memory_record, timeframe_start
from lsp_memory.services.kernel.resolver import claim_named, parse_argument, resolution_record

T = TypeVar("T")


def register(server: MCPServer, app: App, calls: Calls) -> None:
    """Add the resources, resource templates and prompts to ``server``."""

    async def read(work: Callable[[], T]) -> T:
        try:
            return await calls.lanes.read(work)
        except UserError as error:
            raise MCPError(INVALID_PARAMS, str(error)) from None

    @server.resource(
        "memory://status",
        name="status",
        description="What the memory holds: claims, contexts, entities, notes, the indexes",
        mime_type="application/json",
    )
    async def status() -> str:
        return json.dumps(await read(app.status), indent=2)

    @server.resource(
        "memory://claim/{number}",
        name="claim",
        description="One claim by its number, whatever its status (JSON)",
        mime_type="application/json",
    )
    async def claim(number: str) -> str:
        def got() -> dict[str, Any]:
            return memory_record(claim_named(app.snapshot().resolver(), f"#{number}"))

        return json.dumps(await read(got), indent=2)

    @server.resource(
        "memory://context/{id}",
        name="context",
        description="One context by its friendly id: its name, description and live claims",
        mime_type="application/json",
    )
    async def context(id: str) -> str:
        def got() -> dict[str, Any]:
            found = app.snapshot().resolver().resolve(parse_argument(f"@{id}"))
            if found.error:
                raise UserError(found.error)
            if found.kind != "context":
                raise UserError(f"@{id} is a {found.kind}, not a context")
            return resolution_record(found)

        return json.dumps(await read(got), indent=2)

    @server.resource(
        "memory://note/{+path}",
        name="note",
        description="A note of the first vault by its path in it (Markdown)",
        mime_type="text/markdown",
    )
    async def note(path: str) -> str:
        def got() -> str:
            files = app.note_files()
            return files.read(files.locate(path))

        return await read(got)

    @server.prompt()
    async def recall(topic: str) -> str:
        """Recall what the user's memory holds about a topic (their claims, notes and past
        messages, within a token budget) before answering about it."""

        def block() -> str:
            return app.snapshot().assembler().build(topic, query=topic).markdown

        found = await read(block)
        return (
            f"Here is what my memory holds about {topic!r}, most relevant first:\n\n"
            f"{found}\n\nUse it to answer about {topic!r}; say so where it is silent or "
            "where two memories disagree."
        )

    @server.prompt()
    async def review_recent(timeframe: str = "7d") -> str:
        """Look over what changed in the user's memory over a timeframe (7d, 24h, a date):
        the claims written or changed and the notes saved."""

        def recent() -> dict[str, Any]:
            start = timeframe_start(timeframe)
            claims = app.records().matching(since=start, limit=50)
            return {
                "since": start,
                "memories": [
                    {"reference": f"#{c.number}", "status": c.status.value, "text": c.statement}
                    for c in claims
                ],
                "notes": app.snapshot().notes_changed_since(start, 50),
            }

        found = await read(recent)
        return (
            f"These are the changes to my memory since {found['since']}:\n\n"
            f"{json.dumps(found, indent=2)}\n\nSummarise them for me, and point out any "
            "memory that looks wrong, outdated or in conflict with another."
        )
