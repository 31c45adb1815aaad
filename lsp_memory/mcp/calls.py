"""What every tool module of the MCP server shares: the ``Calls`` a tool's work runs
through (on ``Lanes``, a ``UserError`` turned into a one-line tool error) and the tools'
annotations.

The annotations follow one rule, told to agents in the README: ``readOnlyHint`` when the
call changes nothing; ``destructiveHint`` when it may make something the user had stop
showing up — a claim superseded or retracted, a pin or a context link removed, a note's text
replaced — even though each can be put back (nothing is deleted); ``idempotentHint`` when
calling it again with the same arguments changes nothing more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from lsp_memory.errors import UserError

if TYPE_CHECKING:
    from lsp_memory.mcp.server import Lanes

T = TypeVar("T")


def hints(
    *, read_only: bool = False, destructive: bool = False, idempotent: bool = False
) -> ToolAnnotations:
    """A tool's hints; every tool works on the user's own memory (``openWorldHint`` off)."""
    return ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent or read_only,
        open_world_hint=False,
    )


READ_ONLY = hints(read_only=True)
"""A tool that changes nothing."""


class Calls:
    """Where the tools' work runs."""

    def __init__(self, lanes: Lanes) -> None:
        self.lanes = lanes

    async def write(self, work: Callable[[], T]) -> T:
        """``work`` on the writer's thread; a ``UserError`` becomes a tool error."""
        try:
            return await self.lanes.write(work)
        except UserError as error:
            raise ToolError(str(error)) from None

    async def read(self, work: Callable[[], T]) -> T:
        """``work`` on a reader's thread; a ``UserError`` becomes a tool error."""
        try:
            return await self.lanes.read(work)
        except UserError as error:
            raise ToolError(str(error)) from None
