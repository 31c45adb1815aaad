"""The pygls server: one ``MemoryServer``, its features registered in order, stdio or TCP.

Nothing here writes to stdout: over stdio it is the JSON-RPC channel. Messages go to the
client (``window/logMessage``, ``window/showMessage``) or to stderr.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, BinaryIO, TypeVar

from lsprotocol import types
from pygls.io_ import StdinAsyncReader, StdoutWriter
from pygls.lsp.server import LanguageServer

from lsp_memory import __version__
from lsp_memory.config import Config
from lsp_memory.lsp import dispatch, early, internals
from lsp_memory.lsp.documents import Readable
from lsp_memory.lsp.features import (
    code_lens,
    commands,
    completion,
    definition,
    diagnostics,
    document_links,
    file_renames,
    highlights,
    hover,
    inlay_hints,
    lifecycle,
    mentions,
    references,
    rename,
    semantic_tokens,
    symbols,
)
from lsp_memory.lsp.framing import serve_stream
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
    file_renames,
    highlights,
    code_lens,
    mentions,
    semantic_tokens,
)
"""Every capability module, registered in this order."""

logger = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])


class MemoryServer(LanguageServer):
    """The lsp-memory language server; ``session`` exists from ``initialize`` on.
    ``overrides`` are the settings given on its command line (``--store``, ``--user``,
    ``--vault``)."""

    def __init__(self, overrides: Mapping[str, Any] | None = None) -> None:
        super().__init__(name="lsp-memory", version=__version__, protocol_cls=MemoryProtocol)
        self.session: Session | None = None
        self.overrides = dict(overrides or {})
        self.files_watched = False  # the client reports changes to Markdown files
        self._too_large: set[str] = set()  # open documents the user was told are too large
        # Run on the event loop when what requests read has changed (``Session.on_changed``):
        # each feature whose answers the client keeps asks for them again.
        self.on_memory_changed: list[Callable[[MemoryServer], None]] = []
        self._asking: set[asyncio.Task[None]] = set()

    def feature(self, feature_name: str, options: Any | None = None) -> Callable[[F], F]:
        """pygls's ``feature``, the handler run where ``dispatch.TABLE`` says."""
        register = super().feature(feature_name, options)
        return lambda handler: register(dispatch.routed(feature_name, handler))  # type: ignore[return-value]

    def command(self, command_name: str) -> Callable[[F], F]:
        """pygls's ``command``, the handler run where ``dispatch.TABLE`` says."""
        register = super().command(command_name)
        return lambda handler: register(dispatch.routed(command_name, handler))  # type: ignore[return-value]

    @property
    def documents(self) -> Readable:
        """The open documents requests read: those above ``max_document_bytes`` left out
        (see ``documents``), each said once."""
        limit = (
            self.session.config.max_document_bytes if self.session else Config().max_document_bytes
        )

        def told(uri: str, size: int) -> None:
            name = uri.rsplit("/", 1)[-1]
            self.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Warning,
                    message=f"lsp-memory: {name} is {size / 1e6:.1f} MB, above the "
                    f"max_document_bytes setting ({limit / 1e6:.1f} MB): its references "
                    "are not read",
                )
            )

        return Readable(self.workspace.text_documents, limit, self._too_large, told)

    def memory_changed(self) -> None:
        for hook in self.on_memory_changed:
            try:
                hook(self)
            except Exception:  # one feature's failure must not keep the others stale
                logger.exception("after the memory changed")

    def ask(self, request: Coroutine[Any, Any, Any], what: str) -> None:
        """Send a request to the client without waiting for its answer (e.g. to refresh
        code lenses); an error answer is logged, not raised."""

        async def asking() -> None:
            try:
                await request
            except Exception as error:
                logger.info("the client refused %s: %s", what, error)

        task = asyncio.get_running_loop().create_task(asking())
        self._asking.add(task)
        task.add_done_callback(self._asking.discard)

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve over stdio until the client exits or the stream ends. A broken message
        header (see ``framing``) stops the server: one line on stderr, exit code 1."""
        stop = internals.stop_event(self)
        source = stdin or sys.stdin.buffer
        writer: Any = StdoutWriter(stdout or sys.stdout.buffer)
        if stdin is None and (handshake := early.taken()) is not None:
            # ``initialize`` was read (and perhaps answered) before the imports: see early.
            source = early.Replay(handshake.prefix, source)
            writer = early.Filtered(writer, handshake)
        reader = StdinAsyncReader(source, self.thread_pool)
        self.protocol.set_writer(writer)
        broken = None
        try:
            broken = asyncio.run(
                serve_stream(stop, reader, self.protocol, internals.error_reporter(self))
            )
        except BrokenPipeError:
            logger.error("the client closed the connection: stopping")
        except (KeyboardInterrupt, SystemExit):  # ``exit``: as pygls, the process ends
            pass
        finally:
            self.shutdown()  # type: ignore[no-untyped-call]
        if broken:
            logger.error("stopping: a broken message from the client: %s", broken)
            raise SystemExit(1)

    def report_server_error(self, error: Exception, source: Any) -> None:
        """A body that is not JSON is answered, not shown; the rest as pygls does."""
        if not answer_parse_error(self.protocol, error):
            super().report_server_error(error, source)


def build(overrides: Mapping[str, Any] | None = None) -> MemoryServer:
    server = MemoryServer(overrides)
    for feature in FEATURES:
        feature.register(server)
    return server


def serve(tcp: str | None = None, overrides: Mapping[str, Any] | None = None) -> None:
    """Run until the client exits: over stdio, or ``HOST:PORT`` (one connection), with the
    command line's settings (``overrides``) above the config file and the environment and
    below the editor's."""
    configure_logging()
    server = build(overrides)
    if tcp is None:
        server.start_io()
        return
    host, _, port = tcp.rpartition(":")
    server.start_tcp(host or "127.0.0.1", int(port))
