"""The ``lsp-memory`` program's entry point: the command line, with the language server's
``initialize`` answered before the command line's own imports when a kept reply allows
(``lsp.early``: an editor gets its first reply in tens of milliseconds, not ~0.6 s)."""

from __future__ import annotations

import contextlib
import faulthandler
import sys
from collections.abc import Sequence


def crash_traces() -> None:
    """Have a crash in native code (onnxruntime, Tantivy, SQLite) print every thread's
    Python stack to stderr, which an editor keeps in its language-server log, rather than
    end the process with nothing said. Not where stderr is no file (nothing to write to)."""
    with contextlib.suppress(AttributeError, ValueError, OSError, RuntimeError):
        faulthandler.enable()


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return the exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    if argv is None:  # the process's own: its crashes traced, its standard input read ahead
        crash_traces()
        from lsp_memory.lsp import early

        early.start(words, sys.stdin.buffer, sys.stdout.buffer)
    from lsp_memory.cli import main as run

    return run(words)
