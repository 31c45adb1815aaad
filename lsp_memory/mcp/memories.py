"""The MCP tools over single claims and their history: ``list_memories``, ``get_memory``,
``update_memory``, ``forget_memory`` and ``recent_activity``, each a thin call into
``services.memory.records`` (the same calls as ``claim list``, ``claim show``, ``claim add``
and ``claim retract``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from lsp_memory.app import App
from lsp_memory.errors import UserError
from lsp_memory.ids import since as start_of
from lsp_memory.mcp.calls import READ_ONLY, Calls, hints
from lsp_memory.model import LIVE_STATUSES, MAX_STATEMENT, Claim, ClaimStatus
from lsp_memory.services.kernel.claim_form import claim_record
from lsp_memory.services.kernel.resolver import claim_named

MAX_LIST = 200
"""The most claims one ``list_memories`` or ``recent_activity`` call gives."""

Status = Literal[
    "live", "all", "active", "contested", "retracted", "superseded", "merged", "deprecated"
]
Ref = Annotated[
    str, Field(min_length=1, max_length=1_000, description="the claim: #42, @friendly_id")
]
Timeframe = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        description="30m, 24h, 7d, 2w back from now, or an ISO 8601 date or time",
    ),
]


def memory_record(claim: Claim) -> dict[str, Any]:
    """A claim as the tools give it: its interchange form, and ``#N`` to refer to it by."""
    return {"reference": f"#{claim.number}", **claim_record(claim)}


def statuses_of(status: Status) -> tuple[ClaimStatus, ...] | None:
    """The statuses a ``status`` argument names (None: every one)."""
    if status == "all":
        return None
    if status == "live":
        return tuple(LIVE_STATUSES)
    return (ClaimStatus(status),)


def timeframe_start(value: str) -> str:
    """A ``since`` or ``timeframe`` argument as a stored timestamp; ``UserError`` else."""
    try:
        return start_of(value)
    except ValueError as error:
        raise UserError(str(error)) from None


def register(server: MCPServer, app: App, calls: Calls) -> None:
    """Add the claim tools to ``server``."""

    @server.tool(annotations=READ_ONLY)
    async def list_memories(
        type: Annotated[
            str | None, Field(max_length=200, description="a claim type: preference, fact, …")
        ] = None,
        status: Status = "live",
        context: Annotated[
            str | None, Field(max_length=200, description="a context's friendly id")
        ] = None,
        since: Annotated[Timeframe | None, Field(description="changed since: 7d, 2026-03-01")] = (
            None
        ),
        limit: Annotated[int, Field(ge=1, le=MAX_LIST)] = 20,
    ) -> dict[str, Any]:
        """The user's claims, most recently changed first: of one type, in one status
        (``live``: active or contested, the default; ``all``), in a context (or one below
        it), changed since a moment; at most ``limit``."""

        def listed() -> dict[str, Any]:
            found = app.records().matching(
                claim_type=type,
                statuses=statuses_of(status),
                context=context,
                since=timeframe_start(since) if since else None,
                limit=limit,
            )
            return {"memories": [memory_record(c) for c in found], "count": len(found)}

        return await calls.read(listed)

    @server.tool(annotations=READ_ONLY)
    async def get_memory(reference: Ref) -> dict[str, Any]:
        """One claim, whatever its status: its statement, type, status, confidence, links,
        dates and what superseded or merged it."""

        def got() -> dict[str, Any]:
            return memory_record(claim_named(app.snapshot().resolver(), reference))

        return await calls.read(got)

    @server.tool(annotations=hints(destructive=True))
    async def update_memory(
        reference: Ref,
        statement: Annotated[
            str,
            Field(min_length=1, max_length=MAX_STATEMENT, description="what is true now"),
        ],
    ) -> dict[str, Any]:
        """Change what a live claim says: a new claim of its type, contexts, tags and pin
        supersedes it (and whatever else it replaces by its type's rule). Nothing is
        overwritten: the old claim stays, superseded, with its dates."""

        def updated() -> dict[str, Any]:
            records = app.records()
            old = claim_named(app.snapshot().resolver(), reference)
            new = records.update(old, statement)
            return {
                "memory": memory_record(new),
                "supersedes": [f"#{c.number}" for c in records.last_superseded],
            }

        return await calls.write(updated)

    @server.tool(annotations=hints(destructive=True, idempotent=True))
    async def forget_memory(reference: Ref) -> dict[str, Any]:
        """Retract a claim: it leaves search and every context block, and stays in the store
        (``claim restore`` brings it back)."""

        def forgot() -> dict[str, Any]:
            claim = claim_named(app.snapshot().resolver(), reference)
            changed = app.records().retract(claim)
            name = f"#{claim.number} @{claim.friendly_id}"
            return {
                "reference": f"#{claim.number}",
                "retracted": changed,
                "message": f"retracted {name}" if changed else f"already retracted: {name}",
            }

        return await calls.write(forgot)

    @server.tool(annotations=READ_ONLY)
    async def recent_activity(
        timeframe: Timeframe = "7d",
        limit: Annotated[int, Field(ge=1, le=MAX_LIST)] = 20,
    ) -> dict[str, Any]:
        """What changed in the user's memory over a timeframe (default the last 7 days): the
        claims written or changed (any status), the notes saved and the conversation
        messages (how many, and the latest with their conversation's ``session_id``),
        newest first, at most ``limit`` of each."""

        def recent() -> dict[str, Any]:
            start = timeframe_start(timeframe)
            claims = app.records().matching(since=start, limit=limit)
            notes = app.snapshot().notes_changed_since(start, limit)
            return {
                "since": start,
                "memories": [memory_record(c) for c in claims],
                "notes": notes,
                "episodes": app.conversations().recent(start, limit),
            }

        return await calls.read(recent)
