"""The command line: a composition root over ``app``.

``main`` parses the arguments (``parser``), builds the ``App`` and runs the command's function;
each command group has a module (``claims``, ``contexts``, ``interchange``, ``documents``,
``search``, ``conversations``, ``lifecycle``, ``servers``), each command a few lines around one
call on the ``App`` or a ``Snapshot``'s service. ``output`` prints what every command prints
the same way (warnings, errors, JSON); ``inputs`` reads FILE and REF arguments; ``options``
holds the global options and the shared argument types.

User errors print one line on stderr (``lsp-memory: error: …``) and exit 1; usage errors exit
2 (argparse); nothing prints a traceback unless ``LSP_MEMORY_DEBUG`` is set.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

from lsp_memory.app import App
from lsp_memory.cli.options import Handler, overrides
from lsp_memory.cli.output import PROG, error, warn
from lsp_memory.cli.parser import build_parser
from lsp_memory.config import load_config
from lsp_memory.errors import ImportFailed, UserError

__all__ = ["build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return the exit code."""
    # Warnings reach the user through ``app.warnings``, once: not also as bare log lines.
    logging.getLogger("lsp_memory").addHandler(logging.NullHandler())
    args = build_parser().parse_args(argv)
    config, warnings = load_config(overrides(args))
    app = App(config)
    warn(app, *warnings)
    try:
        handler: Handler = args.handler
        return handler(app, args)
    except ImportFailed as failed:
        error(str(failed))
        for problem in failed.problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    except UserError as problem:
        error(str(problem))
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`); quietly stop writing.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as failure:
        if os.environ.get("LSP_MEMORY_DEBUG"):
            raise
        print(
            f"{PROG}: internal error: {type(failure).__name__}: {failure} "
            "(set LSP_MEMORY_DEBUG=1 for a traceback, and please report it)",
            file=sys.stderr,
        )
        return 70
    finally:
        app.close()
