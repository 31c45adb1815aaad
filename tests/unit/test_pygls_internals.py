"""The pygls internals ``lsp/internals.py`` uses are still there, shaped as it uses them, in
the pygls installed; and nothing else in the package reaches into pygls's private parts."""

from __future__ import annotations

import inspect
import re
import threading
from pathlib import Path

from pygls.protocol import JsonRPCProtocol
from pygls.workspace import Workspace

from lsp_memory.lsp import internals
from lsp_memory.lsp.documents import LspWorkspace
from lsp_memory.lsp.server import build

PACKAGE = Path(internals.__file__).parents[1]
PRIVATE = re.compile(r"\._(workspace|send_data|send_response|stop_event|report_server_error)\b")


def test_the_workspace_is_what_the_protocol_serves() -> None:
    server = build()
    replaced = LspWorkspace.like(Workspace(None))
    internals.install_workspace(server.protocol, replaced)
    assert server.workspace is replaced


def test_send_methods_take_what_we_give_them() -> None:
    data = inspect.signature(JsonRPCProtocol._send_data).parameters
    assert list(data)[:2] == ["self", "data"]
    response = inspect.signature(JsonRPCProtocol._send_response).parameters
    assert list(response)[:2] == ["self", "msg_id"] and "error" in response
    sent: list[object] = []
    protocol = build().protocol
    protocol._send_data = sent.append  # type: ignore[method-assign,assignment]
    internals.send_raw(protocol, {"id": None})
    assert sent == [{"id": None}]


def test_exit_sets_the_stop_event() -> None:
    server = build()
    stop = internals.stop_event(server)
    assert isinstance(stop, threading.Event) and not stop.is_set()
    server.shutdown()  # type: ignore[no-untyped-call]  # what pygls runs on `exit`
    assert stop.is_set()
    assert callable(internals.error_reporter(server))


def test_no_other_module_reaches_into_pygls() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in PACKAGE.rglob("*.py")
        if path.name != "internals.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if PRIVATE.search(line)
    ]
    assert found == []
