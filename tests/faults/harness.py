"""What the fault tests share: the command line in a private home with its own store and cache
folders, commands killed with SIGKILL when a condition on their progress holds, read-only
SQLite checks that leave a killed command's files as it left them, and tmpfs mounts."""

from __future__ import annotations

import json
import logging
import os
import pty
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from lsp_memory.store.sqlite import STORE_FILE

ROOT = Path(__file__).parents[2]
DATA = ROOT / "tests" / "data"
KB = DATA / "kb.jsonl"
NOTES = DATA / "notes"
USER = "ann"
KB_CLAIMS = 18  # ann's claims in kb.jsonl (it also holds three of mallory's)

log = logging.getLogger("tests.faults")

Result = subprocess.CompletedProcess[str]
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


class Cli:
    """``python -m lsp_memory`` as a user runs it: a private home, ``--store`` and ``--vault``
    on the command line, and the cache folder set by an ``lsp-memory.toml`` in the working
    folder (``cache`` has no flag or environment variable)."""

    def __init__(
        self,
        work: Path,
        *,
        store: Path | None = None,
        cache: Path | None = None,
        vaults: Sequence[Path] = (),
    ) -> None:
        self.work = work
        self.store = store or work / "store"
        self.cache = cache or work / "cache"
        self.vaults = tuple(vaults)
        work.mkdir(parents=True, exist_ok=True)
        setting = json.dumps(str(self.cache), ensure_ascii=False)  # a TOML basic string
        (work / "lsp-memory.toml").write_text(f"cache = {setting}\n", encoding="utf-8")

    @property
    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(self.work / "home"),
            "XDG_CONFIG_HOME": str(self.work / "config"),
            "XDG_DATA_HOME": str(self.work / "data"),
            "XDG_CACHE_HOME": str(self.work / "xdg-cache"),
            "LSP_MEMORY_USER": USER,
            "PYTHONPATH": str(ROOT),
            "COLUMNS": "120",
            "TERM": "xterm",
        }

    def argv(self, *args: str) -> list[str]:
        vaults = [flag for vault in self.vaults for flag in ("--vault", str(vault))]
        return [sys.executable, "-m", "lsp_memory", "--store", str(self.store), *vaults, *args]

    def run(self, *args: str, stdin: str | None = None, timeout: float = 120) -> Result:
        """Run a command to its end; a traceback on stderr fails the test whatever the exit."""
        result = subprocess.run(
            self.argv(*args),
            input=stdin,
            capture_output=True,
            text=True,
            cwd=self.work,
            env=self.env,
            timeout=timeout,
            check=False,
        )
        assert "Traceback" not in result.stderr, (args, result.stderr)
        return result

    def ok(self, *args: str, stdin: str | None = None) -> Result:
        result = self.run(*args, stdin=stdin)
        assert result.returncode == 0, (args, result.stdout[-2000:], result.stderr[-2000:])
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "--json").stdout)

    def start(self, *args: str, tty: bool = False) -> Running:
        """Start a command; with ``tty`` its stderr is a terminal, so ``index`` shows its
        progress bar as it goes (to a pipe it prints none)."""
        return Running(self.argv(*args), self.work, self.env, tty=tty)


class Running:
    """A command under way, its output collected as it comes so that a kill can wait for a
    line."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str], *, tty: bool) -> None:
        self.argv = argv
        self._out = bytearray()
        self._err = bytearray()
        self.started = time.monotonic()
        if tty:
            master, slave = pty.openpty()
            self.process = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=slave,
            )
            os.close(slave)
            err: IO[bytes] = os.fdopen(master, "rb", buffering=0)
        else:
            self.process = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            assert self.process.stderr is not None
            err = self.process.stderr
        assert self.process.stdout is not None
        self._readers = [
            threading.Thread(target=_drain, args=(self.process.stdout, self._out), daemon=True),
            threading.Thread(target=_drain, args=(err, self._err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started

    @property
    def stdout(self) -> str:
        return bytes(self._out).decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        """Standard error without terminal control sequences, carriage returns as newlines."""
        text = _ANSI.sub("", bytes(self._err).decode("utf-8", "replace"))
        return text.replace("\r", "\n")

    def wait_for(self, condition: Callable[[Running], bool], timeout: float = 90) -> bool:
        """Poll ``condition`` every 2 ms while the command runs: True as soon as it holds,
        False if the command ended first."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None:
            if condition(self):
                return True
            assert time.monotonic() < deadline, f"{self.argv}: condition not met in {timeout} s"
            time.sleep(0.002)
        return False

    def kill(self) -> bool:
        """SIGKILL the command if it still runs; True when the kill ended it."""
        with suppress(ProcessLookupError):
            if self.process.poll() is None:
                os.kill(self.process.pid, signal.SIGKILL)
        self.finish()
        return self.process.returncode == -signal.SIGKILL

    def finish(self, timeout: float = 120) -> int:
        code = self.process.wait(timeout=timeout)
        for reader in self._readers:
            reader.join(timeout=10)
        assert "Traceback" not in self.stderr, self.stderr
        return code


def _drain(source: IO[bytes], into: bytearray) -> None:
    read = getattr(source, "read1", source.read)
    with suppress(OSError, ValueError):  # a terminal's master reports EIO once the child exits
        while chunk := read(65536):
            into += chunk
    with suppress(OSError):
        source.close()


@dataclass(frozen=True, slots=True)
class KillPoint:
    """Where a kill lands: ``name`` records it, ``when`` says the moment has come, and
    ``may_finish`` marks the points so late that the command may end before the kill."""

    name: str
    when: Callable[[Running], bool]
    may_finish: bool = False

    def __repr__(self) -> str:
        return self.name


def after(seconds: float) -> Callable[[Running], bool]:
    return lambda running: running.seconds >= seconds


def later(condition: Callable[[Running], bool], seconds: float) -> Callable[[Running], bool]:
    """``seconds`` after ``condition`` first held."""
    seen: list[float] = []

    def check(running: Running) -> bool:
        if not seen and condition(running):
            seen.append(running.seconds)
        return bool(seen) and running.seconds >= seen[0] + seconds

    return check


def stdout_has(text: str) -> Callable[[Running], bool]:
    return lambda running: text in running.stdout


def stderr_matches(pattern: str) -> Callable[[Running], bool]:
    compiled = re.compile(pattern, re.MULTILINE)
    return lambda running: compiled.search(running.stderr) is not None


def size(path: Path) -> int:
    """A file's size, -1 when it does not exist."""
    try:
        return path.stat().st_size
    except OSError:
        return -1


# -- SQLite, read-only: a killed command's files are checked as it left them ------------------


def connect_ro(path: Path) -> sqlite3.Connection:
    """A read-only connection that leaves no file behind: a database nobody has open (no
    shared-memory file) is read as immutable, so no log or shared-memory file is created
    beside it (they would change what a later command finds, a full disk included)."""
    shared = path.with_name(path.name + "-shm")
    mode = "ro" if shared.exists() else "ro&immutable=1"
    return sqlite3.connect(f"{path.absolute().as_uri()}?mode={mode}", uri=True, timeout=5)


def query(path: Path, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` on the SQLite file ``path``, read-only; [] while it cannot be read."""
    try:
        db = connect_ro(path)
    except sqlite3.Error:
        return []
    try:
        return db.execute(sql, params).fetchall()
    except sqlite3.Error:
        return []
    finally:
        db.close()


def integrity(path: Path) -> str:
    """``PRAGMA integrity_check`` of a SQLite file, read-only (its WAL left for the next
    writer to recover): "ok", or what is wrong."""
    db = connect_ro(path)
    try:
        return "; ".join(str(row[0]) for row in db.execute("PRAGMA integrity_check"))
    finally:
        db.close()


def store_file(store: Path) -> Path:
    return store / STORE_FILE


def dump(store: Path) -> str:
    """Every row of the store as SQL text, read-only."""
    db = connect_ro(store_file(store))
    try:
        return "\n".join(db.iterdump())
    finally:
        db.close()


def count(store: Path, table: str, where: str = "1") -> int:
    rows = query(store_file(store), f"SELECT count(*) FROM {table} WHERE {where}")
    return int(rows[0][0]) if rows else -1


def cache_files(cache: Path) -> list[Path]:
    """The SQLite files of a cache folder: the vector cache and each store's queue."""
    return sorted(p for p in cache.rglob("*.sqlite3") if p.is_file())


# -- data --------------------------------------------------------------------------------------

TOPICS = ("garden", "kitchen", "garage", "attic", "balcony", "library", "studio", "cellar")


def statement(n: int) -> str:
    return f"I plan to tidy the {TOPICS[n % len(TOPICS)]} in week {n}"


def write_claims(path: Path, n: int, *, distinct: int | None = None, first: int = 1000) -> Path:
    """``n`` claims with fixed ids, numbers from ``first`` and fixed times (an import of them
    is the same everywhere), of ``distinct`` different statements (default: all)."""
    lines = []
    for i in range(n):
        lines.append(
            json.dumps(
                {
                    "kind": "claim",
                    "claim_id": f"00000000-0000-4000-8000-{i:012d}",
                    "claim_number": first + i,
                    "friendly_id": f"tidy_plan_{i}",
                    "statement": statement(i % (distinct or n)),
                    "claim_type": "goal",
                    "created_at": "2026-01-01T00:00:00Z",
                    "updated_at": "2026-01-01T00:00:00Z",
                }
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def copy_store(source: Path, target: Path) -> None:
    """A copy of a closed store folder as a command leaves it: without an empty log and its
    shared-memory file (as a reader may leave them)."""

    def leave_out(folder: str, names: list[str]) -> set[str]:
        empty = {n for n in names if n.endswith("-wal") and size(Path(folder, n)) == 0}
        return empty | {n[: -len("-wal")] + "-shm" for n in empty}

    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=leave_out)


# -- mounts ------------------------------------------------------------------------------------


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    if shutil.which("mount") is None:
        pytest.skip("no mount command on this machine")
    return subprocess.run(["mount", *args], capture_output=True, text=True, check=False)


def _unmount(folder: Path) -> None:
    done = subprocess.run(["umount", str(folder)], capture_output=True, text=True, check=False)
    if done.returncode != 0:  # still busy: detach it now, it goes when the last user exits
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


def resize(folder: Path, size: str) -> None:
    """Give the tmpfs on ``folder`` a new size: space freed without touching its files."""
    done = _mount("-o", f"remount,size={size}", str(folder))
    assert done.returncode == 0, done.stderr


@contextmanager
def tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``256k``, ``1m``) mounted on ``folder``, unmounted afterwards;
    the test is skipped where mounting is not permitted."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = _mount("-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder))
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip() or mounted.returncode}")
    try:
        yield folder
    finally:
        _unmount(folder)


@contextmanager
def read_only(folder: Path) -> Iterator[str]:
    """``folder`` read-only for the commands; yields how. An ordinary user gets file modes
    (0555 folders, 0444 files); root ignores those, so root gets a read-only bind mount of
    the folder on itself, and the test is skipped where mounting is not permitted."""
    if os.geteuid() != 0:
        modes = {path: path.stat().st_mode for path in [folder, *folder.rglob("*")]}
        for path in modes:
            path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield "file modes 0555/0444"
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
        return
    bound = _mount("--bind", str(folder), str(folder))
    if bound.returncode != 0:
        pytest.skip(f"root ignores file modes and cannot bind-mount here: {bound.stderr.strip()}")
    try:
        again = _mount("-o", "remount,bind,ro", str(folder))
        if again.returncode != 0:
            pytest.skip(f"cannot remount read-only here: {again.stderr.strip()}")
        probe = folder / ".write-probe"
        with suppress(OSError):
            probe.touch()
            probe.unlink()
            pytest.skip("a read-only bind mount is still writable here")
        yield "a read-only bind mount"
    finally:
        _unmount(folder)


def fill(folder: Path, name: str = "ballast") -> Path:
    """Fill the file system of ``folder`` to the last byte with one file; returns it."""
    ballast = folder / name
    chunk = b"\0" * 65536
    with ballast.open("wb", buffering=0) as out:
        for piece in (chunk, b"\0" * 4096, b"\0" * 512, b"\0"):
            with suppress(OSError):
                while True:
                    out.write(piece)
    return ballast


def one_line(result: Result, kind: str = "error") -> str:
    """The single line a failure prints: ``lsp-memory: error: …`` (or ``warning``)."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"lsp-memory: {kind}: "), result.stderr
    return lines[0]
