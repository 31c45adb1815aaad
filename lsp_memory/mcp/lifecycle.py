"""The MCP tools over consolidation and its review queue: ``consolidate`` (a dry run unless
told otherwise), ``review_queue`` and ``review_decide`` — the calls of ``lsp-memory
consolidate`` and ``lsp-memory review``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from lsp_memory.app import App
from lsp_memory.errors import UserError
from lsp_memory.ids import now, timestamp
from lsp_memory.mcp.calls import READ_ONLY, Calls, hints


def register(server: MCPServer, app: App, calls: Calls) -> None:
    """Add the consolidation and review tools to ``server``."""

    @server.tool(annotations=hints(destructive=True))
    async def consolidate(
        dry_run: Annotated[
            bool, Field(description="only say what a run would change (the default)")
        ] = True,
        now_at: Annotated[
            str | None,
            Field(max_length=64, description="the run's moment, ISO 8601 (default: now)"),
        ] = None,
    ) -> dict[str, Any]:
        """Consolidate the memory: evidence, decay, contradictions, merges and deprecation,
        as ``lsp-memory consolidate``. A dry run (the default) changes nothing and says what
        a run would; a run is written as one, undone by ``consolidate --undo RUN_ID``, and
        what it cannot decide goes to the review queue."""

        def ran() -> dict[str, Any]:
            try:
                moment = timestamp(now_at) if now_at else now()
            except ValueError as error:
                said = f"now_at {now_at!r} is not an ISO 8601 date or time: {error}"
                raise UserError(said) from None
            app.refresh_indexes()
            report = app.consolidation().run(moment, dry_run=dry_run)
            decided, failed = ([], None) if dry_run else app.review().ask_command()
            warnings = [*report.warnings, *([failed] if failed else [])]
            return {
                **report.to_json(),
                "decided": [o.message for o in decided],
                "warnings": warnings,
            }

        return await calls.write(ran)

    @server.tool(annotations=READ_ONLY)
    async def review_queue() -> dict[str, Any]:
        """The open review items consolidation raised (a merge, a contradiction it would
        not decide alone), each with its claims as they are now."""
        return await calls.read(lambda: {"items": app.review().items()})

    @server.tool(annotations=hints(destructive=True))
    async def review_decide(
        item: Annotated[
            # Bounded: a larger number overflowed SQLite's integer (found by the fuzzer).
            int, Field(ge=1, le=2**63 - 1, description="the item's id, from review_queue")
        ],
        decision: Literal["accept", "reject", "keep-both"],
    ) -> dict[str, Any]:
        """Decide one open review item: accept its proposal, reject it, or keep both
        claims, as ``lsp-memory review accept|reject|keep-both ID``."""

        def decided() -> dict[str, Any]:
            return {"item": item, "message": app.review().decide(item, decision).message}

        return await calls.write(decided)
