"""``lsp-memory mcp --http HOST:PORT``: the MCP server over streamable HTTP (the SDK's
transport, at ``/mcp``, run by uvicorn), for clients that do not start a process.

Who may call it:

- **Loopback only** unless told: a host other than 127.0.0.1, ::1 or localhost is refused
  without ``--allow-remote`` (the memory would be open to the network).
- **A bearer token** on every request (``Authorization: Bearer TOKEN``, else 401): the one
  in the file ``--token-file`` names (its first line), else ``$LSP_MEMORY_MCP_TOKEN``, else
  one generated for this run and written to stderr. ``--no-auth`` leaves it out, on
  loopback only (what the conformance suite needs: it sends no header).
- **DNS rebinding protection**: a request whose ``Host`` is not a loopback name, the bound
  host or one given with ``--allow-host`` is refused (421), as is one whose ``Origin`` names
  another host (403) — a web page the user visits cannot reach the server through a name it
  points at 127.0.0.1. Checked before the token, and again by the SDK's transport
  (``TransportSecuritySettings``).
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import re
import secrets
import socket
import sys
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from lsp_memory.errors import UserError

TOKEN_ENV = "LSP_MEMORY_MCP_TOKEN"
"""The environment variable a token is read from when no ``--token-file`` is given."""
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
PATH = "/mcp"
"""Where the server answers."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGI = Callable[[Scope, Receive, Send], Awaitable[None]]

_ADDRESS = re.compile(r"^(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:\[\]]+)):(?P<port>\d{1,5})$")


@dataclass(frozen=True, slots=True)
class HttpSettings:
    """Where to listen and who may call: what ``--http`` and its options say."""

    host: str
    port: int
    token: str | None
    allowed_hosts: frozenset[str]
    """Host names (no port) a request's ``Host`` and ``Origin`` may name."""

    @property
    def url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}{PATH}"


def settings_from(
    address: str,
    *,
    token_file: str | None = None,
    no_auth: bool = False,
    allow_remote: bool = False,
    allow_hosts: Iterable[str] = (),
) -> tuple[HttpSettings, bool]:
    """The settings ``--http ADDRESS`` and its options give, and whether the token was
    generated (to be told to the user); ``UserError`` for a bad address, a host off
    loopback without ``allow_remote``, ``no_auth`` off loopback, or an unreadable or empty
    token file."""
    found = _ADDRESS.match(address.strip())
    if found is None:
        raise UserError(f"--http {address!r}: expected HOST:PORT, e.g. 127.0.0.1:8765")
    host = found["v6"] or found["host"]
    port = int(found["port"])
    if port > 65_535:
        raise UserError(f"--http {address!r}: a port is at most 65535")
    loopback = _is_loopback(host)
    if not loopback and not allow_remote:
        raise UserError(
            f"--http {address!r} is not a loopback address: pass --allow-remote to serve "
            "your memory to the network (with a bearer token)"
        )
    generated = False
    if no_auth:
        if not loopback:
            raise UserError("--no-auth is for a loopback address only")
        token = None
    elif token_file:
        token = _read_token(Path(token_file).expanduser())
    elif os.environ.get(TOKEN_ENV, "").strip():
        token = os.environ[TOKEN_ENV].strip()
    else:
        token, generated = secrets.token_urlsafe(32), True
    names = {*LOOPBACK_NAMES, *(h.strip().lower() for h in allow_hosts if h.strip())}
    if host not in ("0.0.0.0", "::"):
        names.add(host.lower())
    return HttpSettings(host, port, token, frozenset(names)), generated


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _read_token(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"--token-file {path}: cannot read it ({error})") from None
    token = lines[0].strip() if lines else ""
    if not token:
        raise UserError(f"--token-file {path}: its first line is empty")
    return token


class Guard:
    """The ASGI layer before the SDK's app: the Host and Origin checks, then the token."""

    def __init__(self, app: ASGI, settings: HttpSettings) -> None:
        self._app = app
        self._settings = settings
        self._expected = f"Bearer {settings.token}".encode() if settings.token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan: the SDK's session manager starts there
            await self._app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v for k, v in scope.get("headers", [])}
        host = headers.get("host", b"").decode("latin-1")
        if not self._allowed(_host_name(host)):
            await _refuse(send, 421, "Invalid Host header")
            return
        origin = headers.get("origin")
        if origin is not None:
            name = urlsplit(origin.decode("latin-1")).hostname or ""
            if not self._allowed(name):
                await _refuse(send, 403, "Invalid Origin header")
                return
        if self._expected is not None:
            given = headers.get("authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                await _refuse(
                    send, 401, "Missing or wrong bearer token", [(b"www-authenticate", b"Bearer")]
                )
                return
        await self._app(scope, receive, send)

    def _allowed(self, name: str) -> bool:
        return name.lower().strip("[]") in self._settings.allowed_hosts


def _host_name(host: str) -> str:
    """A ``Host`` header's name without its port."""
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


async def _refuse(
    send: Send, status: int, reason: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = reason.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), *(extra or [])]
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def serve_http(server: Any, settings: HttpSettings, *, generated: bool) -> None:
    """Serve ``server`` (the built ``MCPServer``) over streamable HTTP until interrupted:
    the socket bound first (so a port of 0 is told as the one chosen), the URL and a
    generated token written to stderr, uvicorn's own log at warnings only."""
    import anyio
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((settings.host, settings.port))
    except OSError as error:
        sock.close()
        raise UserError(f"cannot listen on {settings.url}: {error.strerror or error}") from None
    bound = HttpSettings(
        settings.host, sock.getsockname()[1], settings.token, settings.allowed_hosts
    )
    names = [f"[{n}]" if ":" in n else n for n in sorted(settings.allowed_hosts)]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*names, *(f"{n}:*" for n in names)],
        allowed_origins=[
            f"{scheme}://{n}{port}"
            for n in names
            for scheme in ("http", "https")
            for port in ("", ":*")
        ],
    )
    app = server.streamable_http_app(
        streamable_http_path=PATH, transport_security=security, host=settings.host
    )
    said = f"lsp-memory mcp: serving {bound.url}"
    if generated:
        said += f"\nlsp-memory mcp: bearer token for this run: {settings.token}"
    elif settings.token is None:
        said += " (no token: --no-auth)"
    sys.stderr.write(said + "\n")
    sys.stderr.flush()
    config = uvicorn.Config(Guard(app, bound), log_level="warning", access_log=False, lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [sock])
