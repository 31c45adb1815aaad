"""The pygls server: one ``MemoryServer``, its features registered in order, stdio or TCP.

Nothing here writes to stdout: over stdio it is the JSON-RPC channel. Messages go to the
client (``window/logMessage``, ``window/showMessage``) or to stderr.
"""

from __future__ import annotations

from typing import Any

from pygls.lsp.server import LanguageServer

from lsp_memory import __version__
from lsp_memory.lsp.features import (
    code_lens,
    commands,
    completion,
    definition,
    diagnostics,
    document_links,
    highlights,
    hover,
    inlay_hints,
    lifecycle,
    references,
    rename,
    symbols,
)
from lsp_memory.lsp.protocol import MemoryProtocol, answer_parse_error, configure_logging
from lsp_memory.lsp.session import Session

FEATURES = (
    lifecycle,
    completion,
    hover,
    definition,
    diagnostics,
    commands,
    document_links,
    inlay_hints,
    symbols,
    references,
    rename,
    highlights,
    code_lens,
)
"""Every capability module, registered in this order."""


class MemoryServer(LanguageServer):
    """The lsp-memory language server; ``session`` exists from ``initialize`` on."""

    def __init__(self) -> None:
        super().__init__(name="lsp-memory", version=__version__, protocol_cls=MemoryProtocol)
        self.session: Session | None = None

    def report_server_error(self, error: Exception, source: Any) -> None:
        """A body that is not JSON is answered, not shown; the rest as pygls does."""
        if not answer_parse_error(self.protocol, error):
            super().report_server_error(error, source)


def build() -> MemoryServer:
    server = MemoryServer()
    for feature in FEATURES:
        feature.register(server)
    return server


def serve(tcp: str | None = None) -> None:
    """Run until the client exits: over stdio, or ``HOST:PORT`` (one connection)."""
    configure_logging()
    server = build()
    if tcp is None:
        server.start_io()
        return
    host, _, port = tcp.rpartition(":")
    server.start_tcp(host or "127.0.0.1", int(port))
