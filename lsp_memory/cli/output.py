"""What every command prints the same way: warnings, errors, JSON, a claim's line.

Commands print their answer on stdout and anything else (warnings, errors, progress) on
stderr, each line led by the program's name.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from lsp_memory.app import App
from lsp_memory.model import ClaimLine, ClaimStatus
from lsp_memory.text import one_line

PROG = "lsp-memory"


def warn(app: App, *more: str) -> None:
    """Print the warnings the services collected in ``app`` (a failed ``classifier_command``,
    a vault's unreadable file, …), then ``more``; each once: ``app``'s are cleared."""
    for warning in [*app.warnings, *more]:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    app.warnings.clear()


def error(line: str) -> None:
    """One error line on stderr (the exit code is the caller's)."""
    print(f"{PROG}: error: {line}", file=sys.stderr)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def print_json(value: Any) -> int:
    """Print ``value`` as indented JSON (``--json``); the command's exit code, 0."""
    print(dumps(value))
    return 0


def short(text: str, width: int = 72) -> str:
    return one_line(text, width)


def handle(claim: ClaimLine) -> str:
    """``#42 @friendly_id``: how a line names a claim."""
    return f"#{claim.number} @{claim.friendly_id}"


def claim_line(claim: ClaimLine) -> str:
    status = "" if claim.status is ClaimStatus.ACTIVE else f" ({claim.status.value})"
    return f"{handle(claim)} [{claim.claim_type}]{status} {short(claim.statement)}"
