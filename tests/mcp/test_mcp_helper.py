"""``lsp-memory mcp`` embeds in a helper process, as the language server does: a search by
meaning is answered while onnxruntime is mapped into the helper only, so the MCP server's own
memory holds no model (and none at all once the helper has stopped when idle)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.client.test_embed_helper import ONNX, children, command_line, mapped
from tests.mcp.test_mcp import call, connected


def the_mcp_server() -> int:
    (server,) = [p for p in children(os.getpid()) if command_line(p).endswith(" mcp ")]
    return server


async def test_search_by_meaning_runs_the_model_in_a_helper_process(tmp_path: Path) -> None:
    async with connected(tmp_path) as session:
        await call(session, "remember", statement="I take the night train to Vienna")
        found = await call(session, "search_memory", query="the night train")
        assert "Vienna" in found["results"][0]["title"], found
        server = the_mcp_server()
        assert not mapped(server, ONNX)
        helpers = [p for p in children(server) if "lsp_memory.store.embedhelper" in command_line(p)]
        assert len(helpers) == 1 and mapped(helpers[0], ONNX)
