"""An optional external program that answers a JSON batch (``classifier_command``,
``review_command``: a local LLM, say): run once per batch, the batch on stdin, the answer
JSON on stdout, within a time limit. Any failure is a ``CommandFailed`` saying why in one
line; the caller falls back to its built-in answer."""

from __future__ import annotations

import json
import shlex
import subprocess
from typing import Any


class CommandFailed(Exception):
    """The external program gave no usable answer; the message says why."""


def ask(command: str, batch: Any, timeout_s: float) -> Any:
    """Run ``command`` with ``batch`` as JSON on its stdin; its stdout parsed as JSON."""
    try:
        argv = shlex.split(command)
    except ValueError as error:
        raise CommandFailed(f"cannot parse the command: {error}") from None
    if not argv:
        raise CommandFailed("the command is empty")
    try:
        done = subprocess.run(
            argv,
            input=json.dumps(batch, ensure_ascii=False),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CommandFailed(f"no answer within {timeout_s:g} s") from None
    except OSError as error:
        raise CommandFailed(f"cannot run {argv[0]}: {error}") from None
    if done.returncode != 0:
        last = done.stderr.strip().splitlines()[-1:] or [""]
        reason = f": {last[0][:200]}" if last[0] else ""
        raise CommandFailed(f"exit status {done.returncode}{reason}")
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        raise CommandFailed(f"output is not JSON: {done.stdout.strip()[:60]!r}") from None
