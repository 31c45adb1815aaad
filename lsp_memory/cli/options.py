"""The options every command takes (``--store``, ``--vault``, ``--user``, before or after the
command) and the argument types the commands share."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsp_memory.app import App

Handler = Callable[[App, argparse.Namespace], int]
"""A command: the App and the parsed arguments in, the exit code out."""

MAX_HITS = 1000
"""The most hits `search -k` asks for."""


def add_globals(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """--store/--vault/--user, accepted before or after the command."""
    default: dict[str, Any] = {"default": argparse.SUPPRESS} if suppress else {}
    parser.add_argument("--store", metavar="DIR", help="the store folder", **default)
    parser.add_argument(
        "--vault", metavar="DIR", action="append", help="a notes vault (repeatable)", **default
    )
    parser.add_argument(
        "--user", metavar="NAME", help="whose memory (default: login name)", **default
    )


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The global options given (``--store``, ``--user``, ``--vault``), as settings; paths
    absolute (``~`` expanded: an editor starts the server without a shell), so that they
    mean the same from the language server's workspace root."""
    given = vars(args)  # None, or absent, when not given
    found: dict[str, Any] = {}
    if given.get("store"):
        found["store"] = str(Path(given["store"]).expanduser().absolute())
    if given.get("user"):
        found["user"] = given["user"]
    if given.get("vault"):
        found["vaults"] = [str(Path(v).expanduser().absolute()) for v in given["vault"]]
    return found


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, not {value}")
    return value


def moment(text: str) -> str:
    """``--as-of``: an ISO 8601 date (the end of that day, UTC) or date-time, as stored."""
    from lsp_memory.errors import UserError
    from lsp_memory.services.kernel.asof import as_of_moment

    try:
        return as_of_moment(text)
    except UserError as problem:
        raise argparse.ArgumentTypeError(str(problem)) from None


def hits(text: str) -> int:
    value = positive(text)
    if value > MAX_HITS:
        raise argparse.ArgumentTypeError(f"expected at most {MAX_HITS}, not {value}")
    return value
