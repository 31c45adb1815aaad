"""The servers: ``serve`` (the language server) and ``mcp`` (the MCP server), each imported
only when its command runs."""

from __future__ import annotations

import argparse

from lsp_memory.app import App
from lsp_memory.cli.options import overrides
from lsp_memory.errors import UserError


def cmd_serve(_app: App, args: argparse.Namespace) -> int:
    from lsp_memory.lsp.server import serve

    serve(args.tcp, overrides=overrides(args))
    return 0


def cmd_mcp(app: App, args: argparse.Namespace) -> int:
    # The model (for search_memory, remember's supersede) starts in its helper process while
    # the MCP SDK is imported here (~0.9 s of CPU, mostly its pydantic types): on two cores
    # the two overlap, and the helper stops when idle, as the language server's does.
    app.load_model_ahead(helper=True)
    from lsp_memory.mcp.http import settings_from
    from lsp_memory.mcp.server import serve

    if args.http is None:
        given = [flag for flag, on in _HTTP_ONLY.items() if getattr(args, on)]
        if given:
            raise UserError(f"{given[0]} goes with --http HOST:PORT")
        serve(app)
        return 0
    http, generated = settings_from(
        args.http,
        token_file=args.token_file,
        no_auth=args.no_auth,
        allow_remote=args.allow_remote,
        allow_hosts=args.allow_host or (),
    )
    serve(app, http, generated=generated)  # uvicorn stops on Ctrl-C by itself
    return 0


_HTTP_ONLY = {
    "--token-file": "token_file",
    "--no-auth": "no_auth",
    "--allow-remote": "allow_remote",
    "--allow-host": "allow_host",
}
