"""An optional external program that answers a JSON batch (``classifier_command``,
``review_command``, ``extractor_command``: a local LLM, say): run once per batch, the batch
on stdin, the answer JSON on stdout, within a time limit. Any failure is a ``CommandFailed``
saying why in one line; the caller falls back to its built-in answer.

The program is contained: it runs in a process group of its own, and that whole group is
killed when the program exits, times out or says too much — a child it leaves behind holding
its output never turns an answer into a timeout, and never outlives the call. At most
``MAX_OUTPUT`` bytes of its output are read."""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shlex
import signal
import subprocess
import time
from typing import IO, Any

MAX_OUTPUT = 16 * 1024 * 1024
"""The most a program may print on stdout for one batch (16 MiB): more is a failure."""
_STDERR_TAIL = 4096
"""How much of the end of its stderr is kept, for the reason of a failure."""
_CHUNK = 65536


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
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, killed whole below
        )
    except (OSError, ValueError) as error:
        raise CommandFailed(f"cannot run {argv[0]}: {error}") from None
    try:
        # backslashreplace: a lone surrogate becomes its JSON escape, still valid JSON.
        data = json.dumps(batch, ensure_ascii=False).encode("utf-8", "backslashreplace")
        stdout, stderr, status = _exchange(process, data, timeout_s)
    finally:
        _kill_group(process)
    if status != 0:
        last = stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        reason = f": {last[0][:200]}" if last[0] else ""
        raise CommandFailed(f"exit status {status}{reason}")
    try:
        return json.loads(stdout)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        shown = stdout[:60].decode("utf-8", "replace").strip()
        raise CommandFailed(f"output is not JSON: {shown!r}") from None


def _exchange(
    process: subprocess.Popen[bytes], data: bytes, timeout_s: float
) -> tuple[bytes, bytes, int]:
    """Write ``data`` to the program's stdin and read its stdout and stderr until it exits
    (a child holding the pipes open does not count): both, and its exit status;
    ``CommandFailed`` when ``timeout_s`` passes first."""
    assert process.stdin and process.stdout and process.stderr
    deadline = time.monotonic() + timeout_s
    out, err = bytearray(), bytearray()
    pending = memoryview(data)
    with selectors.DefaultSelector() as selector:
        streams: dict[int, IO[bytes]] = {}
        for stream in (process.stdout, process.stderr):
            os.set_blocking(stream.fileno(), False)
            selector.register(stream, selectors.EVENT_READ)
            streams[stream.fileno()] = stream
        if pending:
            os.set_blocking(process.stdin.fileno(), False)
            selector.register(process.stdin, selectors.EVENT_WRITE)
        else:
            process.stdin.close()
        exited = False
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise CommandFailed(f"no answer within {timeout_s:g} s")
            # Once the program has exited, only what is already in the pipes is read.
            events = selector.select(0 if exited else min(left, 0.05))
            if not events and exited:
                break
            for key, _ in events:
                if key.fileobj is process.stdin:
                    try:
                        written = os.write(process.stdin.fileno(), pending[:_CHUNK])
                    except BrokenPipeError:  # it stopped reading: its answer decides
                        written = len(pending)
                    pending = pending[written:]
                    if not pending:
                        selector.unregister(process.stdin)
                        process.stdin.close()
                    continue
                chunk = os.read(key.fd, _CHUNK)
                if not chunk:
                    selector.unregister(key.fileobj)
                elif key.fileobj is process.stdout:
                    out += chunk
                    if len(out) > MAX_OUTPUT:
                        raise CommandFailed(
                            f"more than {MAX_OUTPUT // (1024 * 1024)} MiB of output"
                        )
                else:
                    err = (err + chunk)[-_STDERR_TAIL:]
            exited = exited or process.poll() is not None
    try:  # it closed its output but may still run
        status = process.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        raise CommandFailed(f"no answer within {timeout_s:g} s") from None
    return bytes(out), bytes(err), status


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the program and everything it started (its process group), and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream:
            stream.close()
    process.wait()
