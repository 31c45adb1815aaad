"""The ``lsp-memory`` program's entry point: the command line, with the language server's
``initialize`` answered before the command line's own imports when a kept reply allows
(``lsp.early``: an editor gets its first reply in tens of milliseconds, not ~0.6 s)."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return the exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    if argv is None:  # only the process's own standard input is read ahead
        from lsp_memory.lsp import early

        early.start(words, sys.stdin.buffer, sys.stdout.buffer)
    from lsp_memory.cli import main as run

    return run(words)
