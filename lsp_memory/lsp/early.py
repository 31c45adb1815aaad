"""Answering ``initialize`` before the server's imports.

Importing pygls and lsprotocol takes 0.35–0.45 s on a small machine, our own modules
another 0.2 s, and building the session more: an editor waited ~0.6 s for the first reply.
The reply itself is data that depends only on this program's code and on the capabilities
the client declares. So the reply pygls gives a client is kept in the cache folder, keyed by
both, and the next start that meets the same client sends it at once, before importing
anything heavy; the server then reads the same ``initialize`` (``Replay``) and answers it
as it always does, and that second answer is dropped (``Filtered``). Were the two ever to
differ, the kept one is replaced for the next start and the difference logged.

The key holds the program's version and the size and modification time of every module of
the language server and of the pygls modules that build the capabilities, so an upgrade or
an edit makes a new key. Standard library only: nothing here may import pygls.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from lsp_memory import __version__, cachefiles
from lsp_memory.jsonrpc import Unreadable, read_object

MAX_FIRST = 1024 * 1024
"""The largest first message (bytes) answered early; a larger one is left to the server."""
MAX_KEPT = 256 * 1024
"""The largest kept reply read (bytes)."""
FOLDER = "initialize"
"""The cache folder's subfolder that holds the kept replies."""

_NAME = re.compile(rb"[A-Za-z0-9-]+")
logger = logging.getLogger(__name__)


@dataclass(slots=True)
class Handshake:
    """What was read of the client's stream before the server started, and whether its
    ``initialize`` was answered from a kept reply."""

    prefix: bytes
    request_id: int | str | None = None
    path: Path | None = None  # where this client's reply is kept
    sent: dict[str, Any] | None = field(default=None)  # the reply sent early, if one was


_taken: list[Handshake] = []


def taken() -> Handshake | None:
    """The handshake this process made on its standard input, once: the server that reads
    that input next takes it over."""
    return _taken.pop() if _taken else None


def _stamp() -> list[Any]:
    """What the capabilities are built from: this version, and every language-server
    module's and pygls's capability code's size and modification time."""
    here = Path(__file__).parent
    files = sorted([*here.glob("*.py"), *here.glob("features/*.py")])
    spec = importlib.util.find_spec("pygls")
    if spec is not None and spec.origin:
        pygls = Path(spec.origin).parent
        files += [pygls / "capabilities.py", pygls / "protocol" / "language_server.py"]
    found: list[Any] = [__version__]
    for path in files:
        try:
            info = path.stat()
        except OSError:
            found.append([path.name, None])
            continue
        found.append([str(path), info.st_size, info.st_mtime_ns])
    return found


def kept_path(cache: Path, capabilities: Any) -> Path:
    """The file that keeps the reply to a client declaring ``capabilities``."""
    text = json.dumps([capabilities, _stamp()], sort_keys=True, separators=(",", ":"))
    return cache / FOLDER / f"{hashlib.sha256(text.encode()).hexdigest()[:32]}.json"


def _read_message(stdin: BinaryIO) -> tuple[bytes, bytes | None]:
    """The raw bytes of the first message and its body (None when it is not one framed
    message of at most ``MAX_FIRST`` bytes: the server reads it again and says why)."""
    raw = b""
    length: int | None = None
    while True:
        line = stdin.readline(MAX_FIRST)
        raw += line
        if not line.endswith(b"\n") or len(raw) > MAX_FIRST:
            return raw, None
        if line in (b"\r\n", b"\n"):
            break
        name, colon, value = line.partition(b":")
        if not colon or not _NAME.fullmatch(name):
            return raw, None  # the server says what is wrong with it
        if name.lower() == b"content-length":
            digits = value.strip()
            if not digits.isdigit() or int(digits) > MAX_FIRST:
                return raw, None
            length = int(digits)
    if length is None:
        return raw, None
    body = stdin.read(length)
    return raw + body, body if len(body) == length else None


def _kept(path: Path) -> dict[str, Any] | None:
    try:
        kept = json.loads(cachefiles.read_bytes(path, limit=MAX_KEPT))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, cachefiles.Distrusted) as error:
        logger.info("the kept initialize reply is not used: %s", error)
        return None
    if isinstance(kept, dict) and isinstance(kept.get("capabilities"), dict):
        return kept
    return None


def frame(message: dict[str, Any]) -> bytes:
    """``message`` with its base-protocol header."""
    body = json.dumps(message, separators=(",", ":")).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def answer(stdin: BinaryIO, stdout: BinaryIO, cache: Path) -> Handshake:
    """Read the client's first message and, when it is an ``initialize`` whose reply is
    kept, send that reply; either way the message is kept for the server to read."""
    raw, body = _read_message(stdin)
    handshake = Handshake(raw)
    _taken[:] = [handshake]
    if body is None:
        return handshake
    try:
        message = read_object(body)
    except Unreadable:
        return handshake
    params = message.get("params")
    request_id = message.get("id")
    if (
        message.get("method") != "initialize"
        or isinstance(request_id, bool)
        or not isinstance(request_id, int | str)
        or not isinstance(params, dict)
        or not isinstance(params.get("capabilities"), dict)
    ):
        return handshake
    handshake.request_id = request_id
    handshake.path = kept_path(cache, params["capabilities"])
    kept = _kept(handshake.path)
    if kept is not None:
        stdout.write(frame({"jsonrpc": "2.0", "id": request_id, "result": kept}))
        stdout.flush()
        handshake.sent = kept
    return handshake


class Replay:
    """The client's stream as the server reads it: what the handshake read, then the rest."""

    def __init__(self, prefix: bytes, rest: BinaryIO) -> None:
        self._prefix = prefix
        self._rest = rest

    def readline(self, limit: int = -1) -> bytes:
        if not self._prefix:
            return self._rest.readline(limit)
        end = self._prefix.find(b"\n") + 1 or len(self._prefix)
        line, self._prefix = self._prefix[:end], self._prefix[end:]
        if not line.endswith(b"\n"):
            line += self._rest.readline()
        return line

    def read(self, size: int = -1) -> bytes:
        if not self._prefix:
            return self._rest.read(size)
        if size < 0:
            part, self._prefix = self._prefix, b""
            return part + self._rest.read()
        part, self._prefix = self._prefix[:size], self._prefix[size:]
        if len(part) < size:
            part += self._rest.read(size - len(part))
        return part


class Filtered:
    """The server's writer, less its own reply to an ``initialize`` already answered; that
    reply is kept for the next start whenever it differs from the one kept."""

    def __init__(self, writer: Any, handshake: Handshake) -> None:
        self._writer = writer
        self._handshake = handshake
        self._settled = handshake.path is None

    def close(self) -> Any:
        return self._writer.close()

    def write(self, data: bytes) -> Any:
        if not self._settled and self._is_reply(data):
            self._settled = True
            if self._handshake.sent is not None:
                return None
        return self._writer.write(data)

    def _is_reply(self, data: bytes) -> bool:
        _, _, body = data.partition(b"\r\n\r\n")
        try:
            message = json.loads(body)
        except ValueError:
            return False
        if not isinstance(message, dict) or message.get("method") is not None:
            return False
        if message.get("id") != self._handshake.request_id:
            return False
        result = message.get("result")
        if isinstance(result, dict) and result != self._handshake.sent:
            self._keep(result)
        elif "error" in message and self._handshake.path is not None:
            cachefiles.remove(self._handshake.path)
        if self._handshake.sent is not None and message.get("result") != self._handshake.sent:
            logger.warning(
                "the initialize reply sent early differs from the server's; the server's "
                "is kept for the next start: %s",
                json.dumps(message.get("error") or message.get("result"))[:300],
            )
        return True

    def _keep(self, result: dict[str, Any]) -> None:
        path = self._handshake.path
        if path is None:
            return
        try:
            cachefiles.write_bytes(path, json.dumps(result, sort_keys=True).encode())
        except OSError as error:
            logger.info("cannot keep the initialize reply in %s: %s", path, error)


def cache_folder() -> Path:
    """Where the kept replies live: the default cache folder (the settings that could move
    it are read only after the reply)."""
    from platformdirs import user_cache_path

    return user_cache_path("lsp-memory")


def wants_early(argv: list[str]) -> bool:
    """Whether ``argv`` runs the language server over standard input with no option that
    could end it before it serves (help, TCP, an unknown option)."""
    if "serve" not in argv:
        return False
    at = argv.index("serve")
    known = {"--store", "--user", "--vault"}
    words = argv[:at] + argv[at + 1 :]
    index = 0
    while index < len(words):
        word = words[index]
        name = word.split("=", 1)[0]
        if name not in known:
            return False
        index += 1 if "=" in word else 2
    return index == len(words)


def _environment_allows() -> bool:
    return os.environ.get("LSP_MEMORY_EARLY_INITIALIZE", "1") != "0"


def start(argv: list[str], stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Answer ``initialize`` early when ``argv`` serves over stdio (see ``wants_early``)."""
    if wants_early(argv) and _environment_allows():
        answer(stdin, stdout, cache_folder())
