"""The private parts of pygls lsp-memory uses, each here and nowhere else, so that a new
pygls (pinned ``>=2.1,<3``) that changes them breaks one module and one test
(``tests/unit/test_pygls_internals.py``), not a feature:

- ``LanguageServerProtocol._workspace``: replaced at ``initialize`` by a workspace that
  splits lines as LSP does (``documents.LspWorkspace``);
- ``JsonRPCProtocol._send_data``: an error response whose id is null, which pygls's own
  ``_send_response`` would leave out;
- ``JsonRPCProtocol._send_response``: an error answer to a request pygls could not read;
- ``JsonRPCServer._stop_event`` and ``JsonRPCServer._report_server_error``: serving stdio through
  ``framing`` instead of pygls's own reader loop, stoppable by ``exit`` as pygls's is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.protocol import JsonRPCProtocol, LanguageServerProtocol
from pygls.server import JsonRPCServer
from pygls.workspace import Workspace


def install_workspace(protocol: LanguageServerProtocol, workspace: Workspace) -> None:
    protocol._workspace = workspace


def send_raw(protocol: JsonRPCProtocol, message: dict[str, Any]) -> None:
    protocol._send_data(message)


def send_error(
    protocol: JsonRPCProtocol, request_id: int | str, error: types.ResponseError
) -> None:
    protocol._send_response(request_id, error=error)


def stop_event(server: JsonRPCServer) -> threading.Event:
    """A new event that pygls sets when the client sends ``exit``."""
    server._stop_event = stop = threading.Event()
    return stop


def error_reporter(server: JsonRPCServer) -> Callable[[Exception, Any], None]:
    reporter: Callable[[Exception, Any], None] = server._report_server_error
    return reporter
