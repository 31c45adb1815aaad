"""The embedding helper: the ONNX model in a process of its own, started when there is text
to embed and stopped when idle, so that a long-running server does not hold the model
(~250 MB once onnxruntime has folded its int8 weights into float32) while it has nothing to
embed.

- ``python -m lsp_memory.store.embedhelper [--model DIR] [--threads N]`` loads the model once
  (``Embedder.load``), says which it is, then answers "embed these texts" requests read from
  its stdin with float32 rows on its stdout. Requests are answered each on a thread of its
  own, so a query's embedding does not wait behind a batch of notes (onnxruntime sessions run
  concurrently, as they do in one process). It exits at the end of its stdin: when the
  process that started it closes the pipe or exits, however it exits (no orphan).
- ``RemoteEmbedder`` is a ``TextEmbedder`` over that process, for the servers: it starts the
  helper on first use, reuses it, stops it after ``idle_seconds`` without a request and when
  closed. A helper that exits or does not answer in time fails the requests under way with
  one line (``HelperError``: no fallback to the server's own process, which would load the
  model there for good); the next request starts a new one.

Frames, both ways: a 4-byte little-endian payload length, then the payload.

- request: ``<Q id><I batch_size><I count>``, then per text ``<I length>`` and its UTF-8;
- answer: ``<Q id><B status>``, then for ``ROWS`` ``<I rows><I dim>`` and the float32 rows
  (little-endian, row-major), for ``FAILED`` one line of UTF-8, for ``HELLO`` (the first
  frame, id 0) ``{"model_id": …, "dim": …}`` as JSON.

numpy is the only heavy import here; onnxruntime loads in the helper alone.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np

from lsp_memory.store.vectors import Embedder, FloatMatrix, ModelError

HELLO, ROWS, FAILED = 0, 1, 2
log = logging.getLogger(__name__)
_LENGTH = struct.Struct("<I")
_REQUEST = struct.Struct("<QII")
_ANSWER = struct.Struct("<QB")
_SHAPE = struct.Struct("<II")
MAX_FRAME = 1 << 30
"""A frame longer than this is a broken stream, not a request."""
WORKERS = 3
"""Requests the helper embeds at once: the language server's two request workers and its
indexing thread, each of which embedded concurrently when the model was in its process."""
START_TIMEOUT_S = 60.0
"""How long the helper may take to load the model (0.3–1 s here; minutes on a swapping
machine are a hang)."""
ANSWER_TIMEOUT_S = 10.0
PER_TEXT_S = 0.5
"""A request not answered in ``ANSWER_TIMEOUT_S`` plus ``PER_TEXT_S`` per text means a hung
helper (a query takes ~20 ms, a passage ~70 ms on one thread)."""
STOP_WAIT_S = 2.0
"""How long a helper asked to stop may take to exit before it is killed."""


class HelperError(ModelError):
    """The embedding helper exited or hung: the request that needed it fails (one line)."""


# --- frames --------------------------------------------------------------------------------


def _read_exact(stream: IO[bytes], size: int) -> bytes | None:
    """``size`` bytes, or None at the end of the stream (or a frame cut short by it)."""
    data = stream.read(size)
    while data is not None and 0 < len(data) < size:
        more = stream.read(size - len(data))
        if not more:
            return None
        data += more
    return data if data is not None and len(data) == size else None


def read_frame(stream: IO[bytes]) -> bytes | None:
    """The next frame's payload, or None at the end of the stream."""
    head = _read_exact(stream, _LENGTH.size)
    if head is None:
        return None
    (size,) = _LENGTH.unpack(head)
    if size > MAX_FRAME:
        raise ValueError(f"a frame of {size} bytes")
    return _read_exact(stream, size) if size else b""


def frame(payload: bytes) -> bytes:
    return _LENGTH.pack(len(payload)) + payload


def encode_request(ident: int, texts: Sequence[str], batch_size: int) -> bytes:
    parts = [_REQUEST.pack(ident, batch_size, len(texts))]
    for text in texts:
        data = text.encode("utf-8", "surrogatepass")
        parts += (_LENGTH.pack(len(data)), data)
    return frame(b"".join(parts))


def decode_request(payload: bytes) -> tuple[int, int, list[str]]:
    ident, batch_size, count = _REQUEST.unpack_from(payload)
    at, texts = _REQUEST.size, []
    for _ in range(count):
        (size,) = _LENGTH.unpack_from(payload, at)
        at += _LENGTH.size
        texts.append(payload[at : at + size].decode("utf-8", "surrogatepass"))
        at += size
    return ident, batch_size, texts


def encode_rows(ident: int, rows: FloatMatrix) -> bytes:
    matrix = np.ascontiguousarray(rows, dtype="<f4")
    shape = _SHAPE.pack(*matrix.shape)
    return frame(_ANSWER.pack(ident, ROWS) + shape + matrix.tobytes())


def encode_message(ident: int, status: int, text: str) -> bytes:
    return frame(_ANSWER.pack(ident, status) + text.encode("utf-8", "replace"))


# --- the helper process --------------------------------------------------------------------


def release_memory() -> None:
    """Hand the free pages of the heap back to the system (glibc's ``malloc_trim``; nothing
    where there is none). What the model's load and a batch freed stays in this process's
    resident memory otherwise: 215 MiB once the model is loaded, 171 trimmed; what
    onnxruntime's arena holds stays (docs/benchmarks.md, "The embedding helper's memory
    while it embeds")."""
    import ctypes

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return
    trim(0)


def serve(model: Path | None, threads: int, source: IO[bytes], sink: IO[bytes]) -> int:
    """Load the model, say hello, answer requests until ``source`` ends; the heap's free
    pages go back to the system after the load and whenever no request is under way."""
    try:
        embedder = Embedder.load(model, threads=threads)
    except ModelError as error:
        sink.write(encode_message(0, FAILED, str(error)))
        sink.flush()
        return 1
    release_memory()
    hello = json.dumps({"model_id": embedder.model_id, "dim": embedder.dim})
    sink.write(encode_message(0, HELLO, hello))
    sink.flush()
    lock = threading.Lock()

    def send(data: bytes) -> None:
        try:
            with lock:
                sink.write(data)
                sink.flush()
        except (BrokenPipeError, ValueError, OSError):
            os._exit(0)  # the parent is gone: nothing left to answer

    counting = threading.Lock()
    under_way = [0]  # requests received and not yet answered

    def answer(payload: bytes) -> None:
        ident = 0
        try:
            ident, batch_size, texts = decode_request(payload)
            send(encode_rows(ident, embedder.embed(texts, batch_size=max(1, batch_size))))
        except Exception as error:  # one line to the parent, whatever the model raised
            line = str(error).strip().splitlines()
            send(encode_message(ident, FAILED, line[0] if line else type(error).__name__))
        finally:
            with counting:
                under_way[0] -= 1
                idle = under_way[0] == 0
            if idle:
                release_memory()

    pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="embed")
    while (payload := read_frame(source)) is not None:
        with counting:
            under_way[0] += 1
        pool.submit(answer, payload)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lsp_memory.store.embedhelper")
    parser.add_argument("--model", type=Path, help="a model folder (default: the built-in)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    faulthandler.enable()  # a native crash says where, on stderr (the parent's log)
    # The terminal's Ctrl-C reaches the whole process group; the parent decides when this
    # process ends (by closing its stdin).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Frames alone on the real stdout; anything a library prints goes to stderr.
    sink = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    code = serve(args.model, args.threads, sys.stdin.buffer, sink)
    sys.stderr.flush()
    os._exit(code)  # at once: the answering threads have nothing left to answer to


# --- the parent's side ---------------------------------------------------------------------


@dataclass(slots=True)
class _Waiting:
    """One request under way."""

    done: threading.Event = field(default_factory=threading.Event)
    rows: FloatMatrix | None = None
    error: str | None = None


class _Helper:
    """One helper process and the requests under way in it."""

    def __init__(self, command: Sequence[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, close_fds=True
        )
        self.hello: dict[str, object] | None = None
        self.greeted = threading.Event()
        self.ended = threading.Event()
        self.failure: str | None = None  # why it ended, once it has
        self.refused: str | None = None  # the helper's own line when the model did not load
        self._waiting: dict[int, _Waiting] = {}
        self._lock = threading.Lock()
        self._write = threading.Lock()
        self._next = 1
        self._reader = threading.Thread(target=self._read, name="embed-helper", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def _read(self) -> None:
        """Hand each answer to its request; at the end, fail whatever is still waiting."""
        stdout = self.process.stdout
        assert stdout is not None
        why = None
        try:
            while (payload := read_frame(stdout)) is not None:
                ident, status = _ANSWER.unpack_from(payload)
                body = payload[_ANSWER.size :]
                if status == HELLO:
                    self.hello = json.loads(body)
                    self.greeted.set()
                    continue
                if ident == 0 and status == FAILED:
                    self.refused = body.decode("utf-8", "replace")
                    break
                with self._lock:
                    waiting = self._waiting.pop(ident, None)
                if waiting is None:
                    continue  # answered after its request gave up
                if status == ROWS:
                    rows, dim = _SHAPE.unpack_from(body)
                    data = np.frombuffer(body, dtype="<f4", offset=_SHAPE.size)
                    waiting.rows = data.reshape(rows, dim).astype(np.float32)
                else:
                    waiting.error = body.decode("utf-8", "replace")
                waiting.done.set()
        except (OSError, ValueError, struct.error) as error:
            why = f"its answers could not be read ({error})"
        self._end(why)

    def _end(self, why: str | None) -> None:
        if why is None:
            try:
                code = self.process.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                code = None
            why = _exit_reason(code)
        with self._lock:
            if self.failure is None:
                self.failure = why
            waiting, self._waiting = self._waiting, {}
        for each in waiting.values():
            each.done.set()
        self.greeted.set()
        self.ended.set()

    def ask(self, texts: Sequence[str], batch_size: int, timeout: float) -> FloatMatrix:
        """The rows of ``texts``; ``HelperError`` when the helper ends or hangs meanwhile."""
        with self._lock:
            if self.failure is not None:
                raise HelperError(_failed(self.failure))
            ident, self._next = self._next, self._next + 1
            waiting = self._waiting[ident] = _Waiting()
        # A write to a hung helper whose pipe is full would block: the timer kills it, which
        # ends the write (and the wait) with an error.
        timer = threading.Timer(timeout, self.hung, args=(timeout,))
        timer.daemon = True
        timer.start()
        try:
            data = encode_request(ident, texts, batch_size)
            with self._write:
                stdin = self.process.stdin
                assert stdin is not None
                stdin.write(data)
                stdin.flush()
        except (OSError, ValueError):
            pass  # it ended: the reader says why
        finally:
            waiting.done.wait(timeout + STOP_WAIT_S)
            timer.cancel()
        if waiting.rows is not None:
            return waiting.rows
        if waiting.error is not None:
            raise HelperError(f"embeddings: the embedding helper failed: {waiting.error}")
        self.kill(f"did not answer in {timeout:.0f} s and was stopped")
        raise HelperError(_failed(self.failure))

    def hung(self, timeout: float) -> None:
        self.kill(f"did not answer in {timeout:.0f} s and was stopped")

    def kill(self, why: str) -> None:
        with self._lock:
            if self.failure is None:
                self.failure = why
        self.process.kill()
        self.ended.wait(STOP_WAIT_S)

    def stop(self) -> None:
        """Close its stdin (it exits at the end of it), kill it if it lingers, and reap it."""
        with self._lock:
            if self.failure is None:
                self.failure = "was stopped"
        try:
            with self._write:
                if self.process.stdin is not None:
                    self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(STOP_WAIT_S)
        if self.process.stdout is not None:
            self.process.stdout.close()


def _failed(failure: str | None) -> str:
    return f"embeddings: the embedding helper {failure}; the next request starts a new one"


def _exit_reason(code: int | None) -> str:
    if code is None:
        return "stopped answering"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed ({name})"
    return f"exited (code {code})"


def helper_command(model: Path | None, threads: int) -> list[str]:
    """The command line of a helper process for ``model`` (None: the built-in one)."""
    command = [sys.executable, "-m", "lsp_memory.store.embedhelper", "--threads", str(threads)]
    return command if model is None else [*command, "--model", str(model)]


MALLOC_ARENAS = "1"
"""glibc's malloc arenas in the helper (unless the environment sets ``MALLOC_ARENA_MAX``):
onnxruntime without its own arena allocates every tensor with malloc, and each embedding
thread's arena kept its freed memory. Three batches of 64 notes beside a query every 50 ms:
VmHWM 353 MiB with one arena, 423 with two, 438 with glibc's default (524–573 after eight
batches), and no slower (docs/benchmarks.md)."""


def _helper_env() -> dict[str, str]:
    """This environment, with the folder this package was imported from first on the path,
    so the helper runs the same code however the parent was started."""
    env = {"MALLOC_ARENA_MAX": MALLOC_ARENAS, **os.environ}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


class RemoteEmbedder:
    """A ``TextEmbedder`` whose model runs in a helper process, started on demand and
    stopped after ``idle_seconds`` without a request. Safe to use from several threads; each
    request waits for the helper to start if it is not running (the first after an idle stop
    pays the spawn and the model load)."""

    def __init__(
        self,
        model: Path | None = None,
        *,
        threads: int = 1,
        idle_seconds: float = 90.0,
        answer_timeout_s: float = ANSWER_TIMEOUT_S,
    ) -> None:
        """Nothing starts here: ``start`` (or the first ``embed``) starts the helper."""
        self.model = model
        self.threads = threads
        self.idle_seconds = idle_seconds
        self.answer_timeout_s = answer_timeout_s
        self.starts = 0  # helpers started so far (tests and benchmarks read it)
        self._helper: _Helper | None = None
        self._known: tuple[str, int] | None = None
        self._lock = threading.Lock()  # the helper, its start and the idle accounting
        self._busy = 0
        self._last = time.monotonic()
        self._closed = False

    @classmethod
    def start(
        cls, model: Path | None = None, *, threads: int = 1, idle_seconds: float = 90.0
    ) -> RemoteEmbedder:
        """A remote embedder whose helper has started and said which model it runs:
        ``ModelError`` with the helper's one line when the model cannot be loaded."""
        embedder = cls(model, threads=threads, idle_seconds=idle_seconds)
        with embedder._lock:
            embedder._running()
        return embedder

    @property
    def model_id(self) -> str:
        return self._identity()[0]

    @property
    def dim(self) -> int:
        return self._identity()[1]

    @property
    def pid(self) -> int | None:
        """The running helper's process id, if one is running."""
        helper = self._helper
        return None if helper is None or helper.ended.is_set() else helper.pid

    def _identity(self) -> tuple[str, int]:
        if self._known is None:
            with self._lock:
                self._running()
        assert self._known is not None
        return self._known

    def _running(self) -> _Helper:
        """The running helper, started if there is none (called holding ``_lock``)."""
        if self._closed:
            raise HelperError("embeddings: the embedder is closed")
        helper = self._helper
        if helper is not None and not helper.ended.is_set():
            return helper
        helper = _Helper(helper_command(self.model, self.threads), _helper_env())
        self.starts += 1
        if not helper.greeted.wait(START_TIMEOUT_S):
            helper.kill(f"did not load the model in {START_TIMEOUT_S:.0f} s")
        if helper.hello is None:
            helper.stop()
            # The helper's own line (a missing or altered model) is the user's to read as is.
            raise ModelError(
                helper.refused
                or f"embeddings: the embedding helper {helper.failure} before loading the model"
            )
        found = (str(helper.hello["model_id"]), int(str(helper.hello["dim"])))
        if self._known is not None and found != self._known:
            helper.stop()
            raise HelperError(
                f"embeddings: the model changed on disk ({self._known[0]} → {found[0]}); "
                "restart the server"
            )
        self._known = found
        self._helper = helper
        self._last = time.monotonic()
        threading.Thread(
            target=self._watch, args=(helper,), name="embed-helper-idle", daemon=True
        ).start()
        return helper

    def _watch(self, helper: _Helper) -> None:
        """Stop ``helper`` once nothing has asked it for ``idle_seconds``."""
        while True:
            with self._lock:
                if self._helper is not helper:
                    return
                left = self.idle_seconds
                if self._busy == 0:
                    left = self._last + self.idle_seconds - time.monotonic()
                    if left <= 0:
                        self._helper = None
                        break
            if helper.ended.wait(max(left, 0.05)):
                with self._lock:
                    if self._helper is helper:
                        self._helper = None
                return
        helper.stop()

    def warm(self) -> None:
        """Start the helper in the background if it is not running, so that a query about
        to come (the user is typing) does not wait for its start; never blocks, never
        raises (a helper that cannot start says so at the query)."""
        if self._closed or self.pid is not None or not self._lock.acquire(blocking=False):
            return  # running, or another thread is starting or using it

        def start() -> None:
            try:
                self._running()
            except ModelError as error:
                log.info("the embedding helper did not start ahead: %s", error)
            finally:
                self._lock.release()

        threading.Thread(target=start, name="embed-helper-warm", daemon=True).start()

    def embed(self, texts: Sequence[str], *, batch_size: int = 32) -> FloatMatrix:
        """Unit vectors of ``texts``, computed by the helper; ``HelperError`` (one line) when
        it exits or hangs meanwhile (the next call starts another)."""
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        with self._lock:
            helper = self._running()
            self._busy += 1
        try:
            timeout = self.answer_timeout_s + PER_TEXT_S * len(texts)
            return helper.ask(texts, batch_size, timeout)
        finally:
            with self._lock:
                self._busy -= 1
                self._last = time.monotonic()

    def close(self) -> None:
        """Stop the helper (if running); later calls fail."""
        with self._lock:
            self._closed = True
            helper, self._helper = self._helper, None
        if helper is not None:
            helper.stop()


if __name__ == "__main__":
    sys.exit(main())
