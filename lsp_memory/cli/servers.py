"""The servers: ``serve`` (the language server) and ``mcp`` (the MCP server), each imported
only when its command runs."""

from __future__ import annotations

import argparse

from lsp_memory.app import App
from lsp_memory.cli.options import overrides


def cmd_serve(_app: App, args: argparse.Namespace) -> int:
    from lsp_memory.lsp.server import serve

    serve(args.tcp, overrides=overrides(args))
    return 0


def cmd_mcp(app: App, _args: argparse.Namespace) -> int:
    # The model (for search_memory, remember's supersede) loads while the MCP SDK is imported
    # (~0.9 s of CPU, mostly its pydantic types): onnxruntime releases the interpreter while
    # it builds its session, so on two cores the two overlap.
    app.load_model_ahead()
    from lsp_memory.mcp.server import serve

    serve(app)
    return 0
