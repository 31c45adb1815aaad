"""The language-server benchmark: completion, hover, definition and diagnostics latency,
start-up, and memory of ``python -m lsp_memory serve``, timed through a JSON-RPC client over
the server's stdin and stdout; and obsidian.nvim's ripgrep search for ``[[`` on the same vault.

    python benchmarks/server.py [--claims 100000] [--notes 10000] [--samples 300]
                                [--spawns 10] [--cache DIR] [--json] [--seed 7]

The corpus is the search benchmark's (``benchmarks/search.py``, same seed, same generators):
the foundation benchmark's first user (100 000 claims, 2 000 contexts, 200 tags, 5 000
entities) imported into a store, and 10 000 generated Markdown notes as the one workspace
folder (vault). The full-text index is built before any server starts (``App.index``), and
every document gets a vector in the vector cache (a sample embedded for real, the rest noisy
copies, as the search benchmark does), so a server starts on an existing, fully embedded
index. With ``--cache DIR`` the corpus, store and indexes are kept under DIR and reused.

The client is written here: ``subprocess`` pipes, ``Content-Length`` framing and a reader
thread that stamps each message with ``time.perf_counter()`` as soon as its body is read,
before it is parsed. A request is timed from just before its bytes are written to that stamp.
It sends the recorded client capabilities of VS Code
(``pytest_lsp.client_capabilities("visual-studio-code")``: UTF-16 positions, work-done progress,
dynamic file watching) and answers the server's requests (progress tokens, registrations).

1. **Start-up**: ``--spawns`` processes per trigger (``@``, ``#``, ``[[``): process start →
   ``initialize`` reply, and → the first completion answer with items (the document opened
   right after ``initialized``, completion asked every 10 ms until it returns items).
2. **Latency** on one server, after its first index sync ("index ready") and once its
   background thread is idle (vectors loaded): an open 100-line prompt whose middle line is
   rewritten by ``didChange`` before each request, as typing does. Completion for ``@``, ``#``
   and ``[[`` with 1–4 typed characters; hover and definition on claims by friendly id,
   ``#N``, contexts, entities and ``[[notes]]``; two cases again in a 1 000-line document.
3. **Diagnostics**: 1 000-line documents with 200 references (resolving, inactive,
   unresolved, ``[[links]]`` good and broken): ``didOpen`` → ``publishDiagnostics`` and
   ``didSave`` → ``publishDiagnostics`` (checked without debounce), and ``didChange`` →
   ``publishDiagnostics`` (debounced).
4. **Memory**: VmRSS and VmHWM of that server after the runs (``/proc/<pid>/status``).
5. **ripgrep**: the two ``rg`` commands obsidian.nvim runs for ``[[`` completion
   (``Client:find_notes_async``), on the same prefixes.
6. **While embedding**: a few cases again on a server whose 10 000 notes wait to be
   embedded (a cache without vectors), while its background thread embeds them.
7. **Probe**: some cases again on a server started through a bootstrap that records every
   cycle collection (``gc.callbacks``) and every background sync of its indexing thread
   (``App.index``, ``VectorSide.drain``); which slow requests overlapped one, and the p99
   with the collections' time taken out.

Results are printed as a table (each figure beside its target) or as one JSON object.
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import json
import os
import random
import resource
import selectors
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from foundation import WORDS, UserData, generate_user, machine, percentiles
from search import fill_vectors, folder_bytes, generate_vault

from lsp_memory.app import App
from lsp_memory.config import Config
from lsp_memory.services.indexing import embed_text
from lsp_memory.services.interchange import import_records
from lsp_memory.store.vectors import Embedder, FloatVector

USER = "bench"

# Targets from the issue.
TARGET_COMPLETION_P99_MS = 15.0
TARGET_HOVER_P99_MS = 10.0
TARGET_DIAGNOSTICS_MS = 50.0
TARGET_INITIALIZE_MS = 500.0
TARGET_FIRST_COMPLETION_MS = 1000.0
TARGET_RSS_MB = 400.0  # 10^6 bytes, as in the search benchmark

CONTEXTS = 2000
ENTITIES = 5000
TAGS = 200
WARMUP = 30  # untimed requests before each case
CASE_CAP_S = 40.0  # a case stops after this much timed work once it has CAPPED_RUNS runs
CAPPED_RUNS = 100
PROMPT_LINES = 100
DIAGNOSTIC_LINES = 1000
DIAGNOSTIC_REFERENCES = 200
DEBOUNCE_RUNS = 30
DIAGNOSTIC_WARMUP = 5  # documents opened, saved and closed untimed first
REAL_CLAIM_VECTORS = 256  # embedded for real while building; the rest are noisy copies
REAL_NOTE_VECTORS = 64
RG_PREFIXES = 60  # per prefix length
SIDE_PASS_SAMPLES = 150  # per case, while embedding and in the probe
SIDE_PASS_CHECKS = 40  # diagnostics runs in those passes
READY_TIMEOUT_S = 300.0
IDLE_CPU_SHARE = 0.3  # background thread idle: below this share of one core over IDLE_WINDOW_S
IDLE_WINDOW_S = 2.0
GC_SLOW_MS = 1.0  # a collection this long counts as a pause
STARTUP_TIMEOUT_S = 60.0
TRIGGERS = ("@", "#", "[[")
KINDS = ("claim", "number", "context", "entity", "note")
KIND_LABELS = {
    "claim": "@friendly_id (claim)",
    "number": "#N",
    "context": "@context",
    "entity": "@entity",
    "note": "[[note]]",
}
SERVER = [sys.executable, "-m", "lsp_memory", "serve"]
# Runs the server with every cycle collection and every background sync (the indexing
# thread's App.index and VectorSide.drain) recorded, in perf_counter time (CLOCK_MONOTONIC,
# shared with the harness); SIGUSR1 writes them to argv[1]. The server's code is unchanged.
PROBE_BOOTSTRAP = """
import gc, json, signal, sys, time
from lsp_memory.app import App
from lsp_memory.services.embedding import VectorSide
events, busy = [], []
began = [0.0]
def track(phase, info):
    if phase == "start":
        began[0] = time.perf_counter()
    else:
        events.append((began[0], time.perf_counter(), info["generation"], info["collected"]))
gc.callbacks.append(track)
def timed(cls, name):
    original = getattr(cls, name)
    def wrapper(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            busy.append((start, time.perf_counter(), name))
    setattr(cls, name, wrapper)
timed(App, "index")
timed(VectorSide, "drain")
def dump(signum, frame):
    data = {"events": events, "busy": busy, "stats": gc.get_stats(),
            "frozen": gc.get_freeze_count(), "threshold": gc.get_threshold(),
            "young": [len(gc.get_objects(g)) for g in range(3)]}
    with open(sys.argv[1] + ".tmp", "w") as out:
        json.dump(data, out)
    import os
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
signal.signal(signal.SIGUSR1, dump)
from lsp_memory.cli import main
sys.exit(main(["serve"]))
"""


# -- corpus -------------------------------------------------------------------------------------


@dataclass(slots=True)
class Prepared:
    """A built corpus: where things are and what inputs are drawn from."""

    root: Path
    vault: Path
    store: Path
    xdg: Path
    claims: dict[str, Any]  # claim/context/entity/tag friendly ids, context levels
    titles: list[str]
    paths: list[str]
    build: dict[str, Any]
    reused: bool

    @property
    def cache(self) -> Path:
        """The server's cache folder: ``$XDG_CACHE_HOME/lsp-memory``."""
        return self.xdg / "cache" / "lsp-memory"

    def env(self, cache_home: Path | None = None) -> dict[str, str]:
        """The server's environment: settings from env, every XDG folder inside the corpus."""
        return {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(self.xdg / "home"),
            "XDG_CACHE_HOME": str(cache_home or self.xdg / "cache"),
            "XDG_CONFIG_HOME": str(self.xdg / "config"),
            "XDG_DATA_HOME": str(self.xdg / "data"),
            "XDG_STATE_HOME": str(self.xdg / "state"),
            "LSP_MEMORY_STORE": str(self.store),
            "LSP_MEMORY_USER": USER,
        }


def prepare(root: Path, claims: int, notes: int, seed: int) -> Prepared:
    """The corpus under ``root``, built unless a complete one is there already."""
    meta = root / "corpus.json"
    vault, store, xdg = root / "vault", root / "store", root / "xdg"
    if meta.exists():
        data = json.loads(meta.read_text())
        return Prepared(
            root, vault, store, xdg, data["claims"], data["titles"], data["paths"],
            data["build"], reused=True,
        )  # fmt: skip
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    rng = random.Random(seed)  # the search benchmark's order: claims, then the vault
    started = time.perf_counter()
    user = generate_user(
        rng, user=None, claims=claims, contexts=CONTEXTS, entities=ENTITIES, tags=TAGS
    )
    corpus = generate_vault(rng, vault, notes, user)
    generated = time.perf_counter() - started
    prepared = Prepared(
        root, vault, store, xdg, _claim_inputs(user), corpus.titles, corpus.paths, {}, False
    )
    for folder in ("home", "cache", "config", "data", "state"):
        (xdg / folder).mkdir(parents=True, exist_ok=True)
    config = replace(
        Config(), store=store, cache=prepared.cache, user=USER, vaults=(vault.resolve(),)
    )
    app = App(config)
    started = time.perf_counter()
    import_records(app.store, user.data, user=USER, source="claims.jsonl")
    imported = time.perf_counter() - started
    started = time.perf_counter()
    report = app.keeper.index(full=True, embed=False)
    indexed = time.perf_counter() - started
    docs = list({d.id: d for d in report.text.docs}.values())
    started = time.perf_counter()
    real = _real_vectors(app, docs, rng)
    vectors = fill_vectors(app, docs, real, rng)
    filled = time.perf_counter() - started
    index_bytes = folder_bytes(app.index_folder / "fulltext")
    app.close()
    prepared.build = {
        "generate_s": generated,
        "import_s": imported,
        "index_s": indexed,
        "vectors_s": filled,
        "documents": len(docs),
        "vectors": vectors["vectors"],
        "vectors_real": vectors["real"],
        "note_bytes": corpus.bytes,
        "index_bytes": index_bytes,
    }
    meta.write_text(
        json.dumps(
            {
                "claims": prepared.claims,
                "titles": prepared.titles,
                "paths": prepared.paths,
                "build": prepared.build,
            }
        )
    )
    return prepared


def _claim_inputs(user: UserData) -> dict[str, Any]:
    return {
        "claim_fids": user.claim_fids,
        "context_fids": user.context_fids,
        "context_levels": user.context_levels,
        "entity_fids": user.entity_fids,
        "tag_fids": user.leaf_tag_fids,
    }


def _real_vectors(app: App, docs: Sequence[Any], rng: random.Random) -> dict[int, FloatVector]:
    """Real vectors for a sample of claims and notes (what ``fill_vectors`` copies)."""
    side = app.vectors
    if side is None:
        raise SystemExit(f"the embedding model cannot be loaded: {app.warnings}")
    claim_rows = [i for i, d in enumerate(docs) if d.kind == "claim"]
    note_rows = [i for i, d in enumerate(docs) if d.kind == "note"]
    rows = rng.sample(claim_rows, min(REAL_CLAIM_VECTORS, len(claim_rows)))
    rows += rng.sample(note_rows, min(REAL_NOTE_VECTORS, len(note_rows)))
    embedder: Embedder = side.embedder  # type: ignore[assignment]
    matrix = embedder.embed([embed_text(docs[i]) for i in rows])
    return dict(zip(rows, matrix, strict=True))


# -- the client ---------------------------------------------------------------------------------


class ServerGone(RuntimeError):
    """The server closed its stdout (exited) while an answer was awaited."""


@dataclass(frozen=True, slots=True)
class Reply:
    """A response and when it was asked and received (``perf_counter`` seconds)."""

    result: Any
    sent: float
    received: float

    @property
    def seconds(self) -> float:
        return self.received - self.sent


class Client:
    """A minimal LSP client over a server process's stdin and stdout.

    A reader thread reads each message, stamps it, then parses it: responses go to their
    request, the server's requests are answered at once (null, which is what progress-token
    creation and capability registration expect), notifications are kept in order."""

    def __init__(
        self,
        command: Sequence[str],
        env: dict[str, str],
        stderr: Path,
        cwd: Path | None = None,
    ) -> None:
        self._errors = stderr.open("ab")
        self.spawned = time.perf_counter()
        self.process = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._errors,
            env=env,
            cwd=cwd,
        )
        self.pid = self.process.pid
        self._write_lock = threading.Lock()
        self._changed = threading.Condition()
        self._responses: dict[int, tuple[float, dict[str, Any]]] = {}
        self.notices: list[tuple[float, dict[str, Any]]] = []
        self._closed = False
        self._next_id = 0
        self._reader = threading.Thread(target=self._read, name="lsp-reader", daemon=True)
        self._reader.start()

    # -- writing ------------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> float:
        body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()
        frame = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        stdin = self.process.stdin
        assert stdin is not None
        with self._write_lock:
            sent = time.perf_counter()
            stdin.write(frame)
            stdin.flush()
        return sent

    def notify(self, method: str, params: Any) -> float:
        return self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def ask(self, method: str, params: Any) -> tuple[int, float]:
        """Send a request; its id and when it was written."""
        self._next_id += 1
        number = self._next_id
        sent = self._send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
        return number, sent

    def answer(self, number: int, sent: float, timeout: float = 60.0) -> Reply:
        with self._changed:
            if not self._changed.wait_for(
                lambda: number in self._responses or self._closed, timeout
            ):
                raise TimeoutError(f"no answer to request {number} in {timeout} s")
            if number not in self._responses:
                raise ServerGone(f"the server exited (code {self.process.poll()})")
            received, message = self._responses.pop(number)
        if "error" in message:
            raise RuntimeError(f"request {number} failed: {message['error']}")
        return Reply(message.get("result"), sent, received)

    def request(self, method: str, params: Any, timeout: float = 60.0) -> Reply:
        number, sent = self.ask(method, params)
        return self.answer(number, sent, timeout)

    # -- notifications ------------------------------------------------------------------------

    def mark(self) -> int:
        """A position in the notifications, to wait for one that comes after it."""
        with self._changed:
            return len(self.notices)

    def wait_notice(
        self,
        matches: Callable[[dict[str, Any]], bool],
        since: int = 0,
        timeout: float = 60.0,
    ) -> tuple[float, dict[str, Any]]:
        """The first notification after ``since`` that ``matches``, and when it came."""
        found: list[tuple[float, dict[str, Any]]] = []

        def seen() -> bool:
            for index in range(since, len(self.notices)):
                if matches(self.notices[index][1]):
                    found.append(self.notices[index])
                    return True
            return self._closed

        with self._changed:
            if not self._changed.wait_for(seen, timeout):
                raise TimeoutError(f"no matching notification in {timeout} s")
        if not found:
            raise ServerGone(f"the server exited (code {self.process.poll()})")
        return found[0]

    def diagnostics(
        self, uri: str, since: int, timeout: float = 60.0
    ) -> tuple[float, dict[str, Any]]:
        return self.wait_notice(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
            ),
            since,
            timeout,
        )

    def logged(self, text: str) -> float | None:
        """When a ``window/logMessage`` containing ``text`` came, if it did."""
        with self._changed:
            for received, message in self.notices:
                if message.get("method") == "window/logMessage" and text in str(
                    message["params"].get("message", "")
                ):
                    return received
        return None

    def logged_text(self, text: str) -> str | None:
        """The first ``window/logMessage`` containing ``text``, if any."""
        with self._changed:
            for _, message in self.notices:
                found = str(message["params"].get("message", ""))
                if message.get("method") == "window/logMessage" and text in found:
                    return found
        return None

    # -- reading ------------------------------------------------------------------------------

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        try:
            while True:
                length = -1
                while True:
                    line = stream.readline()
                    if not line:
                        return
                    if line in (b"\r\n", b"\n"):
                        break
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = stream.read(length)
                received = time.perf_counter()
                if len(body) < length:
                    return
                message = json.loads(body)
                if "method" in message and "id" in message:
                    self._send({"jsonrpc": "2.0", "id": message["id"], "result": _reply(message)})
                    continue
                with self._changed:
                    if "id" in message:
                        self._responses[message["id"]] = (received, message)
                    else:
                        self.notices.append((received, message))
                    self._changed.notify_all()
        finally:
            with self._changed:
                self._closed = True
                self._changed.notify_all()

    # -- life cycle ---------------------------------------------------------------------------

    def initialize(self, vault: Path, capabilities: dict[str, Any]) -> Reply:
        params = {
            "processId": os.getpid(),
            "clientInfo": {"name": "lsp-memory benchmark", "version": "1"},
            "rootUri": vault.as_uri(),
            "workspaceFolders": [{"uri": vault.as_uri(), "name": vault.name}],
            "capabilities": capabilities,
        }
        reply = self.request("initialize", params)
        self.notify("initialized", {})
        return reply

    def close(self) -> None:
        """``shutdown`` and ``exit``; killed if it does not go within 15 s."""
        try:
            if self.process.poll() is None:
                self.request("shutdown", None, timeout=15)
                self.notify("exit", None)
                self.process.wait(timeout=15)
        except (TimeoutError, ServerGone, OSError, subprocess.TimeoutExpired):
            self.kill()
        self._errors.close()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        if not self._errors.closed:
            self._errors.close()


def _reply(request: dict[str, Any]) -> Any:
    """What the client answers a server's request: no settings for each configuration item
    asked (the server then keeps its own), null to the rest (progress tokens,
    registrations)."""
    if request["method"] == "workspace/configuration":
        return [None for _ in request["params"]["items"]]
    return None


def vs_code_capabilities() -> dict[str, Any]:
    from lsprotocol import converters
    from pytest_lsp import client_capabilities

    caps: dict[str, Any] = converters.get_converter().unstructure(
        client_capabilities("visual-studio-code")
    )
    return caps


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


# -- process figures ----------------------------------------------------------------------------


def proc_status(pid: int) -> dict[str, float]:
    """VmRSS, VmHWM, RssAnon, RssFile of a process, in MiB."""
    found: dict[str, float] = {}
    try:
        rows = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return found
    for row in rows:
        key = row.split(":", 1)[0]
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "Threads"):
            value = int(row.split()[1])
            found[key.lower() + ("" if key == "Threads" else "_mib")] = (
                value if key == "Threads" else value / 1024
            )
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_ready(client: Client, timeout: float = READY_TIMEOUT_S) -> float:
    """Seconds from spawn to the "index ready" log message."""
    received, message = client.wait_notice(
        lambda m: (
            m.get("method") == "window/logMessage"
            and any(
                word in str(m["params"].get("message", ""))
                for word in ("index ready", "indexing failed", "indexing stopped")
            )
        ),
        timeout=timeout,
    )
    if "index ready" not in message["params"]["message"]:
        raise RuntimeError(f"the server could not index: {message['params']['message']}")
    return received - client.spawned


def wait_idle(client: Client, timeout: float = 120.0) -> dict[str, Any]:
    """Wait until the server's background work (vectors loading, embedding) is done: under
    IDLE_CPU_SHARE of a core over IDLE_WINDOW_S and a steady RSS."""
    started = time.perf_counter()
    last_cpu = cpu_seconds(client.pid)
    last_rss = proc_status(client.pid).get("vmrss_mib", 0.0)
    while time.perf_counter() - started < timeout:
        time.sleep(IDLE_WINDOW_S)
        cpu = cpu_seconds(client.pid)
        rss = proc_status(client.pid).get("vmrss_mib", 0.0)
        share = (cpu - last_cpu) / IDLE_WINDOW_S
        if share < IDLE_CPU_SHARE and abs(rss - last_rss) < 2.0:
            return {"waited_s": time.perf_counter() - started, "cpu_share": share, "idle": True}
        last_cpu, last_rss = cpu, rss
    return {"waited_s": time.perf_counter() - started, "idle": False}


# -- documents ----------------------------------------------------------------------------------


class Document:
    """An open document: its lines as the server has them, and edits that keep them so."""

    def __init__(self, client: Client, uri: str, lines: list[str]) -> None:
        self.client = client
        self.uri = uri
        self.lines = lines
        self.version = 1

    def open(self) -> float:
        return self.client.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": self.uri,
                    "languageId": "markdown",
                    "version": self.version,
                    "text": "\n".join(self.lines) + "\n",
                }
            },
        )

    def set_line(self, index: int, text: str) -> float:
        """Replace line ``index`` by an incremental change, as an editor sends it."""
        old = self.lines[index]
        self.lines[index] = text
        self.version += 1
        change = {
            "range": {
                "start": {"line": index, "character": 0},
                "end": {"line": index, "character": utf16(old)},
            },
            "text": text,
        }
        return self.client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": self.uri, "version": self.version},
                "contentChanges": [change],
            },
        )

    def close(self) -> float:
        return self.client.notify("textDocument/didClose", {"textDocument": {"uri": self.uri}})

    def position(self, line: int, column: int) -> dict[str, Any]:
        """Request params at ``column`` (a Python index) of ``line``."""
        return {
            "textDocument": {"uri": self.uri},
            "position": {"line": line, "character": utf16(self.lines[line][:column])},
        }


def _filler(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choices(WORDS, k=words))
    return text[0].upper() + text[1:] + "."


def prompt_lines(rng: random.Random, prepared: Prepared, count: int) -> list[str]:
    """A prompt-like Markdown document: headings, paragraphs, a list, a few references."""
    claims = prepared.claims
    lines = ["# Notes for the assistant", ""]
    while len(lines) < count:
        roll = rng.random()
        if roll < 0.08:
            lines += [f"## {_filler(rng, 3)[:-1]}", ""]
        elif roll < 0.2:
            lines.append(f"- {_filler(rng, rng.randint(4, 10))}")
        elif roll < 0.35:
            ref = rng.choice(
                [
                    "@" + rng.choice(claims["claim_fids"]),
                    "@" + rng.choice(claims["context_fids"]),
                    f"#{rng.randint(1, len(claims['claim_fids']))}",
                    f"[[{rng.choice(prepared.titles)}]]",
                ]
            )
            lines.append(f"{_filler(rng, rng.randint(4, 10))} See {ref} too.")
        else:
            lines.append(_filler(rng, rng.randint(8, 18)))
    return lines[:count]


def diagnostic_lines(rng: random.Random, prepared: Prepared) -> tuple[list[str], dict[str, int]]:
    """A 1 000-line document with 200 references: claims (some inactive), ``#N``, contexts,
    entities, tags, ``[[links]]`` (by title, with a label, by path), and unresolved ones."""
    claims = prepared.claims
    count = len(claims["claim_fids"])
    kinds: list[tuple[str, Callable[[], str]]] = [
        ("claim", lambda: "@" + rng.choice(claims["claim_fids"])),
        ("number", lambda: f"#{rng.randint(1, count)}"),
        ("context", lambda: "@" + rng.choice(claims["context_fids"])),
        ("entity", lambda: "@" + rng.choice(claims["entity_fids"])),
        ("tag", lambda: "@" + rng.choice(claims["tag_fids"])),
        ("link", lambda: f"[[{rng.choice(prepared.titles)}]]"),
        ("link_label", lambda: f"[[{rng.choice(prepared.titles)}|{rng.choice(WORDS)}]]"),
        ("link_path", lambda: f"[[{rng.choice(prepared.paths).removesuffix('.md')}]]"),
        ("unresolved", lambda: f"@{rng.choice(WORDS)}_{rng.choice(WORDS)}_{rng.randrange(9999)}"),
        ("unresolved_number", lambda: f"#{count + rng.randint(1000, 999999)}"),
        ("broken_link", lambda: f"[[{rng.choice(WORDS).title()} Missing {rng.randrange(999)}]]"),
    ]
    plan = dict(
        zip(
            [name for name, _ in kinds],
            (50, 20, 20, 10, 10, 30, 5, 5, 20, 10, 20),
            strict=True,
        )
    )
    references = [make() for name, make in kinds for _ in range(plan[name])]
    rng.shuffle(references)
    lines = ["# Working notes", ""]
    while len(lines) < DIAGNOSTIC_LINES:
        roll = rng.random()
        if roll < 0.05:
            lines += ["", f"## {_filler(rng, 3)[:-1]}", ""]
        elif roll < 0.15:
            lines.append(f"- {_filler(rng, rng.randint(4, 10))}")
        else:
            lines.append(_filler(rng, rng.randint(6, 16)))
    lines = lines[:DIAGNOSTIC_LINES]
    lines[500:503] = ["```text", "not a reference: @code_sample and #12 in a fence", "```"]
    slots = rng.sample([i for i, line in enumerate(lines) if line and line[0].isupper()], 200)
    for slot, reference in zip(slots, references, strict=False):
        lines[slot] = f"{lines[slot][:-1]}, see {reference}."
    return lines, plan


# -- inputs -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Probe:
    """One request's input: the line to type and where the cursor goes in it."""

    text: str
    column: int
    meta: str = ""  # e.g. a context's level


def typed(rng: random.Random, prepared: Prepared, trigger: str, length: int) -> Probe:
    """``trigger`` and ``length`` leading characters of something a user would complete."""
    claims = prepared.claims
    if trigger == "@":
        roll = rng.random()
        pool = (
            claims["claim_fids"]
            if roll < 0.6
            else claims["context_fids"]
            if roll < 0.8
            else claims["entity_fids"]
            if roll < 0.9
            else claims["tag_fids"]
        )
        source = rng.choice(pool)
    elif trigger == "#":
        source = str(rng.randint(1, len(claims["claim_fids"])))
    else:
        title = rng.choice(prepared.titles)
        words = title.split()
        source = rng.choice(words) if rng.random() < 0.3 else title
        if rng.random() < 0.3:
            source = source.lower()
    fragment = source[:length]
    while len(fragment) < length:  # a short id or number: pad as typed further
        fragment += rng.choice("0123456789" if trigger == "#" else "abcdefghij")
    text = f"Tell me about {trigger}{fragment}"
    return Probe(text, len(text), meta=fragment)


def reference(rng: random.Random, prepared: Prepared, kind: str) -> Probe:
    """A line holding one reference of ``kind``, the cursor inside it."""
    claims = prepared.claims
    meta = ""
    if kind == "claim":
        token = "@" + rng.choice(claims["claim_fids"])
    elif kind == "number":
        token = f"#{rng.randint(1, len(claims['claim_fids']))}"
    elif kind == "context":
        index = rng.randrange(len(claims["context_fids"]))
        token = "@" + claims["context_fids"][index]
        meta = f"level {claims['context_levels'][index]}"
    elif kind == "entity":
        token = "@" + rng.choice(claims["entity_fids"])
    else:
        token = f"[[{rng.choice(prepared.titles)}]]"
    head = "Compare this with "
    return Probe(f"{head}{token} before answering.", len(head) + len(token) // 2, meta)


# -- measuring ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Timings:
    """Round trips of one case."""

    label: str
    samples: list[float] = field(default_factory=list)
    items: list[int] = field(default_factory=list)
    incomplete: list[bool] = field(default_factory=list)
    meta: list[str] = field(default_factory=list)
    sent: list[float] = field(default_factory=list)
    planned: int = 0
    checks_fired: int = 0  # debounced diagnostics that ran during the case

    def figures(self, target_ms: float | None) -> dict[str, Any]:
        stats = percentiles(self.samples)
        figures: dict[str, Any] = {
            "label": self.label,
            "runs": len(self.samples),
            "runs_planned": self.planned,
            **stats,
            "items_mean": statistics.fmean(self.items) if self.items else None,
            "items_max": max(self.items) if self.items else None,
            "empty_share": sum(1 for i in self.items if i == 0) / len(self.items)
            if self.items
            else None,
            "incomplete_share": sum(self.incomplete) / len(self.incomplete)
            if self.incomplete
            else None,
            "checks_fired": self.checks_fired,
            "target_p99_ms": target_ms,
            "met": None if target_ms is None else stats["p99_ms"] <= target_ms,
        }
        if any(self.meta) and self.label.startswith(("hover @context", "definition @context")):
            by: dict[str, list[float]] = {}
            for meta, sample in zip(self.meta, self.samples, strict=True):
                by.setdefault(meta, []).append(sample * 1000)
            figures["by_level"] = {
                meta: {"runs": len(v), "median_ms": statistics.median(v), "max_ms": max(v)}
                for meta, v in sorted(by.items())
            }
        return figures


def _kinds(result: Any) -> dict[str, int]:
    """How many completion items of each CompletionItemKind (by name) an answer holds."""
    names = {1: "text (claim)", 19: "folder (context)", 7: "class (entity)", 14: "keyword (tag)"}
    names |= {9: "module (domain)", 17: "file (note)", 18: "reference (heading)"}
    items = result.get("items", ()) if isinstance(result, dict) else result or ()
    found: dict[str, int] = {}
    for item in items:
        name = names.get(item.get("kind"), str(item.get("kind")))
        found[name] = found.get(name, 0) + 1
    return found


def _count(method: str, result: Any) -> tuple[int, bool]:
    if result is None:
        return 0, False
    if method == "textDocument/completion":
        if isinstance(result, list):
            return len(result), False
        return len(result.get("items") or ()), bool(result.get("isIncomplete"))
    return 1, False


def run_case(
    doc: Document,
    line: int,
    method: str,
    label: str,
    probes: Sequence[Probe],
    *,
    warmup: Sequence[Probe],
    minimum: int,
) -> Timings:
    """For each probe: rewrite ``line`` (didChange), then the request at the cursor, timed.
    Untimed over ``warmup`` first; a slow case stops after CASE_CAP_S of timed work once it
    has CAPPED_RUNS runs."""
    client = doc.client
    since = client.mark()
    for probe in warmup:
        doc.set_line(line, probe.text)
        client.request(method, doc.position(line, probe.column))
    case = Timings(label, planned=len(probes))
    spent = 0.0
    first = time.perf_counter()
    edited = since
    for probe in probes:
        edited = client.mark()
        doc.set_line(line, probe.text)
        reply = client.request(method, doc.position(line, probe.column))
        count, incomplete = _count(method, reply.result)
        case.samples.append(reply.seconds)
        case.items.append(count)
        case.incomplete.append(incomplete)
        case.meta.append(probe.meta)
        case.sent.append(reply.sent)
        spent += reply.seconds
        if spent > CASE_CAP_S and len(case.samples) >= min(minimum, CAPPED_RUNS):
            break
    ended = time.perf_counter()
    # The last edit's debounced check: let it run before the next case starts.
    client.diagnostics(doc.uri, edited)
    case.checks_fired = sum(
        1
        for received, message in client.notices[since:]
        if message.get("method") == "textDocument/publishDiagnostics"
        and message["params"]["uri"] == doc.uri
        and first <= received < ended
    )
    return case


@dataclass(slots=True)
class Inputs:
    """Every request's input, timed and warm-up, drawn once from the seed."""

    completion: dict[tuple[str, int], list[Probe]]
    references: dict[str, list[Probe]]
    warm_completion: dict[tuple[str, int], list[Probe]]
    warm_references: dict[str, list[Probe]]


@dataclass(slots=True)
class Bench:
    """What every step needs: the corpus, the client's capabilities, the inputs, a scratch
    folder for documents and logs, and the random source of the documents."""

    prepared: Prepared
    capabilities: dict[str, Any]
    inputs: Inputs
    work: Path
    rng: random.Random
    seed: int


def make_inputs(rng: random.Random, prepared: Prepared, samples: int) -> Inputs:
    count = samples
    completion = {
        (t, n): [typed(rng, prepared, t, n) for _ in range(count)]
        for t in TRIGGERS
        for n in range(1, 5)
    }
    warm_completion = {
        (t, n): [typed(rng, prepared, t, n) for _ in range(WARMUP)]
        for t in TRIGGERS
        for n in range(1, 5)
    }
    references = {k: [reference(rng, prepared, k) for _ in range(count)] for k in KINDS}
    warm_references = {k: [reference(rng, prepared, k) for _ in range(WARMUP)] for k in KINDS}
    return Inputs(completion, references, warm_completion, warm_references)


def latency_suite(
    client: Client,
    bench: Bench,
    samples: int,
    *,
    selection: set[str] | None = None,
    large_document: bool = True,
) -> dict[str, dict[str, Any]]:
    """Completion, hover and definition cases on an open 100-line prompt (and two in a
    1 000-line document). ``selection`` limits the cases to those keys."""
    prepared, inputs, work, rng = bench.prepared, bench.inputs, bench.work, bench.rng
    lines = prompt_lines(rng, prepared, PROMPT_LINES)
    typing = PROMPT_LINES // 2
    lines[typing] = ""
    doc = Document(client, (work / f"prompt-{client.pid}.md").as_uri(), lines)
    since = client.mark()
    doc.open()
    client.diagnostics(doc.uri, since)  # the check on open, out of the way
    cases: dict[str, dict[str, Any]] = {}

    def wanted(key: str) -> bool:
        return selection is None or key in selection

    for trigger in TRIGGERS:
        for length in range(1, 5):
            key = f"completion {trigger} {length}"
            if not wanted(key):
                continue
            probes = inputs.completion[(trigger, length)][:samples]
            case = run_case(
                doc,
                typing,
                "textDocument/completion",
                f"completion {trigger}{'x' * length}",
                probes,
                warmup=inputs.warm_completion[(trigger, length)],
                minimum=samples,
            )
            cases[key] = case.figures(TARGET_COMPLETION_P99_MS)
            cases[key]["samples_ms"] = [s * 1000 for s in case.samples]
            cases[key]["sent"] = case.sent
            cases[key]["prefixes"] = [p.meta for p in probes[: len(case.samples)]]
    for method, name in (
        ("textDocument/hover", "hover"),
        ("textDocument/definition", "definition"),
    ):
        for kind in KINDS:
            key = f"{name} {kind}"
            if not wanted(key):
                continue
            case = run_case(
                doc,
                typing,
                method,
                f"{name} {KIND_LABELS[kind]}",
                inputs.references[kind],
                warmup=inputs.warm_references[kind],
                minimum=samples,
            )
            cases[key] = case.figures(TARGET_HOVER_P99_MS)
            cases[key]["sent"] = case.sent
            cases[key]["samples_ms"] = [s * 1000 for s in case.samples]
    doc.close()
    if large_document and (selection is None or "large completion @ 2" in selection):
        big, _ = diagnostic_lines(rng, prepared)
        middle = DIAGNOSTIC_LINES // 2 + 10
        doc = Document(client, (work / f"large-{client.pid}.md").as_uri(), big)
        since = client.mark()
        doc.open()
        client.diagnostics(doc.uri, since)
        for key, method, label, probes, warm, target in (
            (
                "large completion @ 2",
                "textDocument/completion",
                "completion @xx, 1 000-line document",
                inputs.completion[("@", 2)],
                inputs.warm_completion[("@", 2)],
                TARGET_COMPLETION_P99_MS,
            ),
            (
                "large hover claim",
                "textDocument/hover",
                "hover @friendly_id, 1 000-line document",
                inputs.references["claim"],
                inputs.warm_references["claim"],
                TARGET_HOVER_P99_MS,
            ),
        ):
            case = run_case(doc, middle, method, label, probes, warmup=warm, minimum=samples)
            cases[key] = case.figures(target)
            cases[key]["sent"] = case.sent
            cases[key]["samples_ms"] = [s * 1000 for s in case.samples]
        doc.close()
    return cases


def diagnostics_suite(
    client: Client, bench: Bench, samples: int, debounced: int = DEBOUNCE_RUNS
) -> dict[str, Any]:
    """didOpen, didSave and (debounced, the first ``debounced`` runs) didChange →
    publishDiagnostics of 1 000-line documents with 200 references; a fresh document (and
    URI) each run, the same ``index``-th document in every pass. Stops after CASE_CAP_S of
    timed work once it has CAPPED_RUNS runs."""
    prepared, work = bench.prepared, bench.work
    opened = Timings("didOpen", planned=samples)
    saved = Timings("didSave", planned=samples)
    changed = Timings("didChange", planned=debounced)
    found: list[int] = []
    plan: dict[str, int] = {}
    spent = 0.0
    for index in range(DIAGNOSTIC_WARMUP + samples):
        if spent > CASE_CAP_S and len(opened.samples) >= min(samples, CAPPED_RUNS):
            break
        rng = random.Random(f"{bench.seed}-check-{index}")
        lines, plan = diagnostic_lines(rng, prepared)
        doc = Document(client, (work / f"check-{client.pid}-{index}.md").as_uri(), lines)
        since = client.mark()
        sent = doc.open()
        received, message = client.diagnostics(doc.uri, since)
        timed = index >= DIAGNOSTIC_WARMUP
        if timed:
            spent += received - sent
            opened.samples.append(received - sent)
            opened.sent.append(sent)
            found.append(len(message["params"]["diagnostics"]))
        since = client.mark()
        sent = client.notify("textDocument/didSave", {"textDocument": {"uri": doc.uri}})
        received, _ = client.diagnostics(doc.uri, since)
        if timed:
            spent += received - sent
            saved.samples.append(received - sent)
            saved.sent.append(sent)
        if timed and index - DIAGNOSTIC_WARMUP < debounced:
            at = rng.randrange(DIAGNOSTIC_LINES)
            since = client.mark()
            sent = doc.set_line(at, doc.lines[at] + " Edited.")
            received, _ = client.diagnostics(doc.uri, since)
            changed.samples.append(received - sent)
        since = client.mark()
        doc.close()
        client.diagnostics(doc.uri, since)  # the empty list a close publishes
    result: dict[str, Any] = {
        "document": {
            "lines": DIAGNOSTIC_LINES,
            "references": DIAGNOSTIC_REFERENCES,
            "plan": plan,
            "diagnostics_mean": statistics.fmean(found),
        },
        "did_open": opened.figures(TARGET_DIAGNOSTICS_MS),
        "did_save": saved.figures(TARGET_DIAGNOSTICS_MS),
    }
    result["did_open"]["sent"] = opened.sent
    result["did_open"]["samples_ms"] = [s * 1000 for s in opened.samples]
    result["did_save"]["sent"] = saved.sent
    result["did_save"]["samples_ms"] = [s * 1000 for s in saved.samples]
    if len(changed.samples) > 1:
        debounce = _debounce_seconds()
        result["did_change"] = changed.figures(None)
        result["did_change"]["debounce_s"] = debounce
        result["did_change"]["check_after_debounce"] = percentiles(
            [s - debounce for s in changed.samples]
        )
    return result


def _debounce_seconds() -> float:
    from lsp_memory.lsp.features.diagnostics import DEBOUNCE_SECONDS

    return DEBOUNCE_SECONDS


def startup(bench: Bench, spawns: int) -> dict[str, Any]:
    """Process start → initialize reply, and → the first completion with items, per trigger,
    each in a fresh process on the existing index."""
    prepared, work, rng = bench.prepared, bench.work, bench.rng
    rows: list[dict[str, Any]] = []
    for index in range(spawns * len(TRIGGERS)):
        trigger = TRIGGERS[index % len(TRIGGERS)]
        typing = typed(rng, prepared, trigger, 2)
        lines = prompt_lines(rng, prepared, PROMPT_LINES)
        line = PROMPT_LINES // 2
        lines[line] = typing.text
        client = Client(SERVER, prepared.env(), work / "startup.stderr")
        try:
            init = client.initialize(prepared.vault, bench.capabilities)
            doc = Document(client, (work / f"start-{index}.md").as_uri(), lines)
            doc.open()
            attempts = 0
            while True:
                reply = client.request("textDocument/completion", doc.position(line, typing.column))
                attempts += 1
                count, _ = _count("textDocument/completion", reply.result)
                if count or reply.received - client.spawned > STARTUP_TIMEOUT_S:
                    break
                time.sleep(0.01)
            ready = client.logged("index ready")
            rows.append(
                {
                    "trigger": trigger,
                    "typed": typing.text.rsplit(" ", 1)[-1],
                    "initialize_ms": (init.received - client.spawned) * 1000,
                    "first_completion_ms": (reply.received - client.spawned) * 1000,
                    "items": count,
                    "item_kinds": _kinds(reply.result),
                    "attempts": attempts,
                    "index_ready_before": ready is not None and ready <= reply.received,
                    "index_ready_ms": None if ready is None else (ready - client.spawned) * 1000,
                }
            )
        finally:
            client.kill()  # mid-sync: the index writer's lock goes with the process
    initialize = [r["initialize_ms"] / 1000 for r in rows]
    result: dict[str, Any] = {
        "spawns": len(rows),
        "initialize": {
            **percentiles(initialize),
            "median_ms": statistics.median(initialize) * 1000,
            "over_target": sum(1 for s in initialize if s * 1000 > TARGET_INITIALIZE_MS),
            "target_ms": TARGET_INITIALIZE_MS,
            "met": statistics.median(initialize) * 1000 <= TARGET_INITIALIZE_MS,
        },
        "first_completion": {},
        "rows": rows,
    }
    for trigger in TRIGGERS:
        mine = [r for r in rows if r["trigger"] == trigger]
        firsts = [r["first_completion_ms"] for r in mine]
        result["first_completion"][trigger] = {
            "runs": len(mine),
            "median_ms": statistics.median(firsts),
            "min_ms": min(firsts),
            "max_ms": max(firsts),
            "over_target": sum(1 for f in firsts if f > TARGET_FIRST_COMPLETION_MS),
            "attempts_median": statistics.median(r["attempts"] for r in mine),
            "items_median": statistics.median(r["items"] for r in mine),
            "after_index_ready": sum(1 for r in mine if r["index_ready_before"]),
            "item_kinds": sorted({kind for r in mine for kind in r["item_kinds"]}),
            "target_ms": TARGET_FIRST_COMPLETION_MS,
            "met": statistics.median(firsts) <= TARGET_FIRST_COMPLETION_MS,
        }
    return result


# -- ripgrep, as obsidian.nvim runs it ----------------------------------------------------------


def obsidian_commands(rg: str, root: str, term: str) -> tuple[list[str], list[str]]:
    """The two commands of obsidian.nvim's ``Client:find_notes_async`` (3.x,
    ``lua/obsidian/search.lua``) for the ``[[`` completion of ``term``: a content search
    (``--fixed-strings --ignore-case -m=1``) and a file-name search (``--files`` with the glob
    ``*term*.md``), run at once; their paths are then loaded as notes."""
    base = [rg, "--no-config", "--type=md"]
    search = [*base, "--json", "--fixed-strings", "--ignore-case", "-m=1", "-e", term, root]
    find = [*base, "--files", "--ignore-case", "-g", f"*{term}*.md", "--glob-case-insensitive"]
    return search, [*find, root]


def run_both(commands: Sequence[list[str]]) -> tuple[float, list[bytes]]:
    """Start the commands together, read their output to the end; wall seconds."""
    started = time.perf_counter()
    processes = [
        subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) for c in commands
    ]
    outputs = [bytearray() for _ in processes]
    selector = selectors.DefaultSelector()
    for index, process in enumerate(processes):
        assert process.stdout is not None
        os.set_blocking(process.stdout.fileno(), False)
        selector.register(process.stdout, selectors.EVENT_READ, index)
    open_streams = len(processes)
    while open_streams:
        for key, _ in selector.select():
            chunk = os.read(key.fileobj.fileno(), 1 << 16)  # type: ignore[union-attr]
            if chunk:
                outputs[key.data].extend(chunk)
            else:
                selector.unregister(key.fileobj)
                open_streams -= 1
    for process in processes:
        process.wait()
    seconds = time.perf_counter() - started
    selector.close()
    return seconds, [bytes(o) for o in outputs]


def _paths_found(outputs: list[bytes]) -> int:
    paths: set[str] = set()
    for line in outputs[0].splitlines():
        data = json.loads(line)
        if data.get("type") == "match":
            paths.add(data["data"]["path"]["text"])
    paths.update(p.decode() for p in outputs[1].splitlines() if p)
    return len(paths)


def ripgrep(prepared: Prepared, completion: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """obsidian.nvim's ripgrep search for the ``[[`` prefixes our completion answered."""
    rg = shutil.which("rg")
    if rg is None:
        return None
    version = subprocess.run([rg, "--version"], capture_output=True, text=True, check=False)
    result: dict[str, Any] = {
        "rg": rg,
        "version": version.stdout.splitlines()[0] if version.stdout else "",
        "by_length": {},
    }
    root = str(prepared.vault.resolve())
    for length in range(1, 5):
        ours = completion.get(f"completion [[ {length}")
        if ours is None:
            continue
        prefixes = ours["prefixes"][:RG_PREFIXES]
        ours_ms = ours["samples_ms"][: len(prefixes)]
        for term in prefixes[:3]:  # warm-up
            run_both(obsidian_commands(rg, root, term))
        walls: list[float] = []
        singles: list[list[float]] = [[], []]
        found: list[int] = []
        for term in prefixes:
            commands = obsidian_commands(rg, root, term)
            seconds, outputs = run_both(commands)
            walls.append(seconds)
            found.append(_paths_found(outputs))
        for term in prefixes[:20]:  # each command alone, for the split
            for which, command in enumerate(obsidian_commands(rg, root, term)):
                seconds, _ = run_both([command])
                singles[which].append(seconds)
        median_rg = statistics.median(walls) * 1000
        median_ours = statistics.median(ours_ms)
        result["by_length"][str(length)] = {
            "prefixes": len(prefixes),
            "rg": percentiles(walls),
            "rg_content_median_ms": statistics.median(singles[0]) * 1000,
            "rg_files_median_ms": statistics.median(singles[1]) * 1000,
            "notes_found_median": statistics.median(found),
            "ours_median_ms": median_ours,
            "ours_p99_ms": percentiles([s / 1000 for s in ours_ms])["p99_ms"],
            "ratio_rg_over_ours": median_rg / median_ours,
            "example": obsidian_commands("rg", "VAULT", prefixes[0]),
        }
    return result


# -- the cycle collector and the background thread ----------------------------------------------


def _overlaps(
    begin: float, end: float, intervals: Sequence[Sequence[Any]], starts: Sequence[float]
) -> float:
    """Seconds of ``[begin, end]`` covered by ``intervals`` (sorted by start, each at most
    a minute long; ``starts`` their starts)."""
    total = 0.0
    index = bisect.bisect_left(starts, begin - 60.0)
    while index < len(intervals) and intervals[index][0] < end:
        total += max(0.0, min(intervals[index][1], end) - max(intervals[index][0], begin))
        index += 1
    return total


def attribution(
    cases: dict[str, dict[str, Any]],
    events: list[list[float]],
    busy: list[list[Any]],
) -> dict[str, dict[str, Any]]:
    """For each case: which requests overlapped a collection pause (≥ GC_SLOW_MS) or a
    background sync of the indexing thread; the p99 with the pauses' time taken out, and
    the p99 of the requests that overlapped neither."""
    pauses = sorted(e for e in events if (e[1] - e[0]) * 1000 >= GC_SLOW_MS)
    pause_starts = [p[0] for p in pauses]
    syncs = sorted(busy)
    sync_starts = [b[0] for b in syncs]
    found: dict[str, dict[str, Any]] = {}
    for key, case in cases.items():
        sent: list[float] = case.get("sent") or []
        samples: list[float] = case.get("samples_ms") or []
        if len(sent) < 2:
            continue
        in_gc: list[float] = []
        in_sync: list[bool] = []
        for begin, took in zip(sent, samples, strict=True):
            end = begin + took / 1000
            in_gc.append(_overlaps(begin, end, pauses, pause_starts) * 1000)
            in_sync.append(_overlaps(begin, end, syncs, sync_starts) > 0)
        count = max(1, len(samples) // 100)
        slowest = sorted(range(len(samples)), key=samples.__getitem__)[-count:]
        without = [s - g for s, g in zip(samples, in_gc, strict=True)]
        quiet = [
            s / 1000 for s, g, b in zip(samples, in_gc, in_sync, strict=True) if g == 0 and not b
        ]
        found[key] = {
            "runs": len(samples),
            "p50_ms": statistics.median(samples),
            "p99_ms": percentiles([s / 1000 for s in samples])["p99_ms"],
            "p99_without_gc_ms": percentiles([s / 1000 for s in without])["p99_ms"],
            "quiet_runs": len(quiet),
            "quiet_p99_ms": percentiles(quiet)["p99_ms"] if len(quiet) > 1 else None,
            "with_gc_pause": sum(1 for g in in_gc if g > 0),
            "with_sync": sum(in_sync),
            "slowest": count,
            "slowest_with_gc_pause": sum(1 for i in slowest if in_gc[i] > 0),
            "slowest_with_sync": sum(1 for i in slowest if in_sync[i]),
            "gc_ms_in_slowest": [round(in_gc[i], 2) for i in slowest],
        }
    return found


PROBE_CASES = {
    "completion @ 2",
    "completion # 2",
    "completion [[ 2",
    "hover claim",
    "hover context",
    "hover note",
    "definition claim",
    "definition entity",
}


def probe(bench: Bench, samples: int) -> dict[str, Any]:
    """Some cases on a server that records its collections and its background syncs: which
    slow requests overlapped one."""
    prepared, work = bench.prepared, bench.work
    events_file = work / "probe-events.json"
    command = [sys.executable, "-c", PROBE_BOOTSTRAP, str(events_file)]
    client = Client(command, prepared.env(), work / "probe.stderr")
    try:
        client.initialize(prepared.vault, bench.capabilities)
        ready = wait_ready(client)
        idle = wait_idle(client)
        began = time.perf_counter()
        cases = latency_suite(client, bench, samples, selection=PROBE_CASES, large_document=False)
        checks = diagnostics_suite(client, bench, SIDE_PASS_CHECKS, debounced=0)
        took = time.perf_counter() - began
        cases["diagnostics did_open"] = checks["did_open"]
        cases["diagnostics did_save"] = checks["did_save"]
        os.kill(client.pid, signal.SIGUSR1)
        for _ in range(200):
            if events_file.exists():
                break
            time.sleep(0.05)
        data = json.loads(events_file.read_text())
    finally:
        client.close()
    after_ready = client.spawned + ready
    events = [e for e in data["events"] if e[0] >= after_ready]
    busy = [b for b in data["busy"] if b[0] >= after_ready]
    by_generation: dict[str, dict[str, float]] = {}
    for generation in (0, 1, 2):
        mine = sorted((e[1] - e[0]) * 1000 for e in events if e[2] == generation)
        if mine:
            by_generation[str(generation)] = {
                "count": len(mine),
                "median_ms": statistics.median(mine),
                "p99_ms": percentiles([m / 1000 for m in mine])["p99_ms"]
                if len(mine) > 1
                else mine[0],
                "max_ms": mine[-1],
                "total_ms": sum(mine),
            }
    syncs: dict[str, dict[str, float]] = {}
    for name in ("index", "drain"):
        mine = sorted((b[1] - b[0]) * 1000 for b in busy if b[2] == name)
        if mine:
            syncs[name] = {
                "count": len(mine),
                "median_ms": statistics.median(mine),
                "max_ms": mine[-1],
                "share_of_time": sum(mine) / 1000 / took,
            }
    return {
        "ready_s": ready,
        "idle": idle,
        "seconds": took,
        "collections_after_ready": len(events),
        "collections_over_1ms": sum(1 for e in events if (e[1] - e[0]) * 1000 >= GC_SLOW_MS),
        "by_generation": by_generation,
        "frozen_objects": data["frozen"],
        "young_objects_at_end": data["young"],
        "threshold": data["threshold"],
        "background_syncs": syncs,
        "cases": attribution(cases, events, busy),
    }


# -- the runs -----------------------------------------------------------------------------------


def main_server(bench: Bench, samples: int) -> dict[str, Any]:
    """Latency, diagnostics and memory on one server."""
    prepared, work = bench.prepared, bench.work
    client = Client(SERVER, prepared.env(), work / "main.stderr")
    memory: dict[str, dict[str, float]] = {}
    try:
        init = client.initialize(prepared.vault, bench.capabilities)
        ready = wait_ready(client)
        memory["index_ready"] = proc_status(client.pid)
        idle = wait_idle(client)
        memory["idle"] = proc_status(client.pid)
        began = time.perf_counter()
        cases = latency_suite(client, bench, samples)
        latency_s = time.perf_counter() - began
        memory["after_requests"] = proc_status(client.pid)
        began = time.perf_counter()
        checks = diagnostics_suite(client, bench, samples)
        diagnostics_s = time.perf_counter() - began
        memory["after_diagnostics"] = proc_status(client.pid)
        cpu = cpu_seconds(client.pid)
    finally:
        client.close()
    final = memory["after_diagnostics"]
    rss_mb = final.get("vmrss_mib", 0.0) * 1.048576
    hwm_mb = final.get("vmhwm_mib", 0.0) * 1.048576
    return {
        "initialize_ms": init.seconds * 1000,
        "index_ready_s": ready,
        "index_ready_message": client.logged_text("index ready"),
        "idle": idle,
        "latency": cases,
        "latency_s": latency_s,
        "diagnostics": checks,
        "diagnostics_s": diagnostics_s,
        "cpu_s": cpu,
        "memory": {
            "steps": memory,
            "vmrss_mb": rss_mb,
            "vmhwm_mb": hwm_mb,
            "target_mb": TARGET_RSS_MB,
            "met": max(rss_mb, hwm_mb) <= TARGET_RSS_MB,
        },
    }


DRAIN_CASES = {
    "completion @ 2",
    "completion # 2",
    "completion [[ 2",
    "hover claim",
    "definition claim",
}


def while_embedding(bench: Bench, samples: int) -> dict[str, Any]:
    """A few cases on a server whose notes wait to be embedded: the text index copied into
    a cache without vectors, so its background thread embeds the 10 000 notes meanwhile."""
    prepared, work = bench.prepared, bench.work
    app = App(replace(Config(), store=prepared.store, cache=prepared.cache, user=USER))
    index_folder = app.index_folder
    cache_home = work / "drain-cache"
    target = cache_home / "lsp-memory" / index_folder.relative_to(prepared.cache)
    shutil.copytree(index_folder / "fulltext", target / "fulltext")
    client = Client(SERVER, prepared.env(cache_home), work / "drain.stderr")
    try:
        client.initialize(prepared.vault, bench.capabilities)
        ready = wait_ready(client)
        time.sleep(3.0)  # the model and the (empty) vector side load, the drain starts
        before = _pending(target / "queue.sqlite3")
        cpu = cpu_seconds(client.pid)
        began = time.perf_counter()
        cases = latency_suite(client, bench, samples, selection=DRAIN_CASES, large_document=False)
        checks = diagnostics_suite(client, bench, SIDE_PASS_CHECKS, debounced=0)
        took = time.perf_counter() - began
        share = (cpu_seconds(client.pid) - cpu) / took
        after = _pending(target / "queue.sqlite3")
        memory = proc_status(client.pid)
    finally:
        client.kill()
        shutil.rmtree(cache_home, ignore_errors=True)
    cases["diagnostics did_open"] = checks["did_open"]
    return {
        "ready_s": ready,
        "pending_before": before,
        "pending_after": after,
        "embedded_meanwhile": None if before is None or after is None else before - after,
        "server_cpu_share": share,
        "seconds": took,
        "cases": cases,
        "memory": memory,
    }


def _pending(queue: Path) -> int | None:
    try:
        with sqlite3.connect(f"file:{queue}?mode=ro", uri=True) as db:
            row = db.execute("SELECT count(text) FROM docs").fetchone()
    except sqlite3.Error:
        return None
    return int(row[0])


# -- output -------------------------------------------------------------------------------------


def _mark(met: bool | None) -> str:
    return "" if met is None else ("met" if met else "MISSED")


def _strip(data: Any) -> Any:
    """The report without per-request arrays (kept in --json only when asked)."""
    if isinstance(data, dict):
        return {
            k: _strip(v) for k, v in data.items() if k not in ("sent", "samples_ms", "prefixes")
        }
    if isinstance(data, list):
        return [_strip(v) for v in data]
    return data


def _row(label: str, row: dict[str, Any], target: str = "") -> str:
    items = row.get("items_mean")
    incomplete = row.get("incomplete_share")
    extra = ""
    if items is not None:
        extra = f"{items:6.1f}"
        extra += f" {incomplete:5.0%}" if incomplete is not None else "      "
    capped = "*" if row["runs"] < row.get("runs_planned", 0) else " "
    return (
        f"  {label[:40]:40} {row['runs']:5}{capped}{row['p50_ms']:7.2f} {row['p90_ms']:7.2f} "
        f"{row['p99_ms']:7.2f} {row['max_ms']:7.2f} {extra:>12}  {target}"
        f" {_mark(row.get('met'))}"
    )


def print_table(report: dict[str, Any]) -> None:
    facts, params, build = report["machine"], report["parameters"], report["build"]
    print("lsp-memory language-server benchmark (stdio, JSON-RPC client in the harness)")
    print(
        f"machine: {facts['platform']}, {facts['cpus']} CPUs, {facts['memory_gib']} GiB, "
        f"Python {facts['python']}, load {facts['load_average_at_start']}"
    )
    print(
        f"data: {params['claims']} claims, {CONTEXTS} contexts, {ENTITIES} entities, {TAGS} "
        f"tags; {params['notes']} notes; {build['documents']} documents indexed, "
        f"{build['vectors']} vectors; corpus {'reused' if report['corpus_reused'] else 'built'}"
    )
    s = report["startup"]
    i = s["initialize"]
    print(f"\nStart-up ({s['spawns']} processes, existing index)      median     max  over")
    print(
        f"  spawn → initialize reply             {i['median_ms']:9.0f} {i['max_ms']:7.0f} "
        f"{i['over_target']:5}   ≤ {TARGET_INITIALIZE_MS:g} ms {_mark(i['met'])}"
    )
    for trigger, row in s["first_completion"].items():
        print(
            f"  spawn → first completion {trigger:3} items {row['median_ms']:9.0f} "
            f"{row['max_ms']:7.0f} {row['over_target']:5}   ≤ {TARGET_FIRST_COMPLETION_MS:g} ms "
            f"{_mark(row['met'])}  ({row['after_index_ready']}/{row['runs']} after index ready; "
            f"{', '.join(row['item_kinds'])})"
        )
    m = report["main"]
    print(
        f"\nMain server: index ready {m['index_ready_s']:.1f} s after spawn "
        f"({m['index_ready_message']}); idle after {m['idle']['waited_s']:.1f} s more"
    )
    print(
        "\nLatency (ms)                               runs     p50     p90     p99     max  "
        "items incompl  target"
    )
    for key, row in m["latency"].items():
        target = (
            TARGET_COMPLETION_P99_MS
            if key.startswith(("completion", "large comp"))
            else (TARGET_HOVER_P99_MS)
        )
        print(_row(row["label"], row, f"≤ {target:g}"))
    d = m["diagnostics"]
    print(
        f"\nDiagnostics ({d['document']['lines']} lines, {d['document']['references']} "
        f"references, {d['document']['diagnostics_mean']:.0f} diagnostics)"
    )
    print(_row("didOpen → publishDiagnostics", d["did_open"], f"≤ {TARGET_DIAGNOSTICS_MS:g}"))
    print(_row("didSave → publishDiagnostics", d["did_save"], f"≤ {TARGET_DIAGNOSTICS_MS:g}"))
    print(_row("didChange → publishDiagnostics (debounced)", d["did_change"]))
    after = d["did_change"]["check_after_debounce"]
    print(
        f"    … minus the {d['did_change']['debounce_s']:g} s debounce: p50 "
        f"{after['p50_ms']:.2f}, p99 {after['p99_ms']:.2f} ms"
    )
    mem = m["memory"]
    print(
        f"\nMemory after the runs: VmRSS {mem['vmrss_mb']:.0f} MB, VmHWM {mem['vmhwm_mb']:.0f} MB"
        f"   ≤ {TARGET_RSS_MB:g} MB {_mark(mem['met'])}"
    )
    for step, row in mem["steps"].items():
        print(
            f"  {step:20} VmRSS {row.get('vmrss_mib', 0):5.0f} MiB (anon "
            f"{row.get('rssanon_mib', 0):4.0f}, file {row.get('rssfile_mib', 0):3.0f})  "
            f"VmHWM {row.get('vmhwm_mib', 0):5.0f} MiB"
        )
    rg = report.get("ripgrep")
    if rg:
        print(f"\n[[ candidates: obsidian.nvim's two rg commands ({rg['version']}) vs ours (ms)")
        print("  prefix  runs  rg p50  rg p99  content  files  notes  ours p50  rg/ours")
        for length, row in rg["by_length"].items():
            print(
                f"  {length:>6} {row['prefixes']:5} {row['rg']['p50_ms']:7.1f} "
                f"{row['rg']['p99_ms']:7.1f} {row['rg_content_median_ms']:8.1f} "
                f"{row['rg_files_median_ms']:6.1f} {row['notes_found_median']:6.0f} "
                f"{row['ours_median_ms']:9.2f} {row['ratio_rg_over_ours']:8.2f}"
            )
        example = rg["by_length"].get("2", next(iter(rg["by_length"].values())))["example"]
        print("  " + " ".join(example[0]) + "\n  " + " ".join(example[1]))
    e = report.get("while_embedding")
    if e:
        print(
            f"\nWhile the background thread embeds ({e['pending_before']} → "
            f"{e['pending_after']} notes pending, server CPU {e['server_cpu_share']:.0%} of a core)"
        )
        for row in e["cases"].values():
            idle = row["idle_same_inputs"]
            print(
                _row(row["label"], row)
                + f"  idle server, same inputs: p50 {idle['p50_ms']:.2f}, p99 {idle['p99_ms']:.2f}"
            )
    g = report.get("probe")
    if g:
        print(
            f"\nProbe server (collections and background syncs recorded): "
            f"{g['collections_after_ready']} collections after ready, "
            f"{g['collections_over_1ms']} ≥ {GC_SLOW_MS:g} ms; {g['frozen_objects']} objects frozen"
        )
        for generation, row in g["by_generation"].items():
            print(
                f"  generation {generation}: {row['count']:6} collections, median "
                f"{row['median_ms']:.3f} ms, p99 {row['p99_ms']:.2f} ms, max {row['max_ms']:.2f} ms"
            )
        for name, row in g["background_syncs"].items():
            print(
                f"  background {name:5}: {row['count']:4} runs, median {row['median_ms']:.0f} ms, "
                f"max {row['max_ms']:.0f} ms, {row['share_of_time']:.0%} of the time"
            )
        print("  case                     p50     p99  p99-GC  quiet p99 (runs)  slowest: GC sync")
        for key, row in g["cases"].items():
            quiet = row["quiet_p99_ms"]
            print(
                f"  {key:22} {row['p50_ms']:7.2f} {row['p99_ms']:7.2f} "
                f"{row['p99_without_gc_ms']:7.2f} "
                + (f"{quiet:10.2f} ({row['quiet_runs']:3})" if quiet is not None else " " * 16)
                + f"   {row['slowest_with_gc_pause']:3}/{row['slowest']:<3} "
                f"{row['slowest_with_sync']:3}/{row['slowest']}"
            )
    print(f"\ntotal {report['total_s']:.0f} s; load average at end {report['load_average_at_end']}")


# -- main ---------------------------------------------------------------------------------------


def code_version() -> dict[str, Any]:
    """The commit measured, and the files of the package changed since it (others edit it
    while benchmarks run)."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
        return done.stdout.strip()

    changed = git("status", "--porcelain", "--", "lsp_memory").splitlines()
    return {"commit": git("rev-parse", "--short", "HEAD"), "package_changes": changed}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--claims", type=int, default=100_000)
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=300, help="timed requests per case")
    parser.add_argument("--spawns", type=int, default=10, help="fresh processes per trigger")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--raw", action="store_true", help="with --json: every request's time")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cache", type=Path, help="keep the corpus, store and indexes here")
    parser.add_argument("--skip", nargs="*", default=[], choices=["rg", "embedding", "probe"])
    args = parser.parse_args(argv)
    if args.claims < 1000 or args.notes < 100 or args.samples < 10 or args.spawns < 1:
        parser.error("need --claims ≥ 1000, --notes ≥ 100, --samples ≥ 10, --spawns ≥ 1")

    began = time.perf_counter()
    facts = machine()
    if args.cache is not None:
        args.cache.mkdir(parents=True, exist_ok=True)
        base = args.cache.resolve()
    else:
        base = Path(tempfile.mkdtemp(prefix="lsp-memory-server-"))
    key = hashlib.sha1(f"{args.claims}-{args.notes}-{args.seed}".encode()).hexdigest()[:8]
    work = Path(tempfile.mkdtemp(prefix="run-", dir=base))
    try:
        started = time.perf_counter()
        prepared = prepare(base / f"corpus-{key}", args.claims, args.notes, args.seed)
        prepare_s = time.perf_counter() - started
        report = run(args, prepared, work, facts)
        report["prepare_s"] = prepare_s
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if args.cache is None:
            shutil.rmtree(base, ignore_errors=True)
    report["total_s"] = time.perf_counter() - began
    report["load_average_at_end"] = machine()["load_average_at_start"]
    report["peak_rss_mib_harness"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if args.json:
        print(json.dumps(report if args.raw else _strip(report), indent=2, ensure_ascii=False))
    else:
        print_table(report)
    return 0


def run(
    args: argparse.Namespace, prepared: Prepared, work: Path, facts: dict[str, Any]
) -> dict[str, Any]:
    rng = random.Random(args.seed + 1)
    inputs = make_inputs(rng, prepared, args.samples)
    bench = Bench(prepared, vs_code_capabilities(), inputs, work, rng, args.seed)
    started = time.perf_counter()
    start = startup(bench, args.spawns)
    startup_s = time.perf_counter() - started
    main_run = main_server(bench, args.samples)
    report: dict[str, Any] = {
        "benchmark": "server",
        "machine": facts,
        "parameters": {
            "claims": args.claims,
            "notes": args.notes,
            "samples": args.samples,
            "spawns_per_trigger": args.spawns,
            "seed": args.seed,
            "warmup": WARMUP,
            "case_cap_s": CASE_CAP_S,
            "capped_runs": CAPPED_RUNS,
            "client": "hand-written JSON-RPC over pipes, VS Code capabilities",
        },
        "code": code_version(),
        "corpus_reused": prepared.reused,
        "build": prepared.build,
        "startup": start,
        "startup_s": startup_s,
        "main": main_run,
    }
    if "rg" not in args.skip:
        report["ripgrep"] = ripgrep(prepared, main_run["latency"])
    if "embedding" not in args.skip:
        embedding = while_embedding(bench, min(args.samples, SIDE_PASS_SAMPLES))
        for key, row in embedding["cases"].items():
            idle = main_run["latency"].get(key) or main_run["diagnostics"]["did_open"]
            row["idle_same_inputs"] = percentiles(
                [s / 1000 for s in idle["samples_ms"][: row["runs"]]]
            )
        report["while_embedding"] = embedding
    if "probe" not in args.skip:
        report["probe"] = probe(bench, min(args.samples, SIDE_PASS_SAMPLES))
    return report


if __name__ == "__main__":
    sys.exit(main())
