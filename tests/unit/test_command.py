"""An external program (classifier, review, extractor command) is contained: an answer given
is an answer even when a child keeps the pipe open, nothing it starts outlives the call, and
its output is read up to a limit."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import pytest

from lsp_memory.services.kernel.command import MAX_OUTPUT, CommandFailed, ask

SH = "/bin/sh -c "


def gone(pid: int) -> bool:
    """True once the process has ended (a zombie waiting for its reaper counts)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in {"Z", "X"}:
            return True
        time.sleep(0.05)
    return False


def test_an_answer_with_a_child_holding_the_pipe_is_an_answer(tmp_path: Path) -> None:
    pid_file = tmp_path / "child"
    script = f"sleep 60 & echo $! > {pid_file}; echo '[1, 2]'"
    started = time.monotonic()
    assert ask(SH + shlex.quote(script), [], timeout_s=20) == [1, 2]
    assert time.monotonic() - started < 10  # not the 20 s timeout
    assert gone(int(pid_file.read_text()))


def test_a_timeout_kills_children_of_a_program_that_ignores_sigterm(tmp_path: Path) -> None:
    pid_file = tmp_path / "child"
    script = f"trap '' TERM; sleep 60 & echo $! > {pid_file}; sleep 60"
    with pytest.raises(CommandFailed, match=r"no answer within 0\.5 s"):
        ask(SH + shlex.quote(script), [], timeout_s=0.5)
    assert gone(int(pid_file.read_text()))


def test_a_program_that_closes_its_output_but_runs_on_times_out() -> None:
    script = "exec >&- 2>&-; sleep 60"
    started = time.monotonic()
    with pytest.raises(CommandFailed, match=r"no answer within 0\.5 s"):
        ask(SH + shlex.quote(script), [], timeout_s=0.5)
    assert time.monotonic() - started < 5


def test_endless_output_is_cut_at_the_limit() -> None:
    with pytest.raises(CommandFailed, match=f"more than {MAX_OUTPUT // 2**20} MiB of output"):
        ask("yes", [], timeout_s=60)


def test_a_large_batch_reaches_a_program_that_answers_while_reading() -> None:
    """The batch is written while the output is read: a program echoing a 4 MB batch back
    (more than any pipe holds) neither deadlocks nor loses a byte."""
    batch = [{"text": "é" * 1000 + str(i)} for i in range(2000)]
    assert ask("cat", batch, timeout_s=60) == batch


def test_a_program_that_stops_reading_is_judged_by_its_answer() -> None:
    code = "import sys; sys.stdin.read(10); print('[]')"
    answer = ask(f"{sys.executable} -c {shlex.quote(code)}", ["x" * 1_000_000], timeout_s=30)
    assert answer == []


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("/no/such/program", "cannot run /no/such/program"),
        ("'unclosed", "cannot parse the command"),
        ("", "the command is empty"),
        (SH + shlex.quote("echo oops >&2; exit 3"), "exit status 3: oops"),
        (SH + shlex.quote("printf '\\377\\376'"), "output is not JSON"),
        (SH + shlex.quote("echo '[' ; echo done"), "output is not JSON"),
    ],
)
def test_failures_say_why_in_one_line(command: str, reason: str) -> None:
    with pytest.raises(CommandFailed, match=reason):
        ask(command, [], timeout_s=10)


def test_a_lone_surrogate_in_the_batch_reaches_the_program_as_valid_json() -> None:
    assert ask("cat", ["a\udcffb"], timeout_s=10) == ["a\udcffb"]
