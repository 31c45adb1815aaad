"""The dispatch table (``lsp/dispatch.py``) names every method the server handles — its own
features, its commands and pygls's built-in ones — and nothing else; a handler missing from
it, or a worker's handler that cannot await its work, stops the server being built; a worker's
handler that reads the memory on the event loop is refused."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lsp_memory.lsp import dispatch
from lsp_memory.lsp.server import build


def test_every_registered_method_is_in_the_table_and_nothing_else() -> None:
    manager = build().protocol.fm
    registered = {*manager.builtin_features, *manager.features, *manager.commands}
    assert registered == set(dispatch.TABLE)


def test_worker_handlers_are_coroutines() -> None:
    manager = build().protocol.fm
    for name, handler in {**manager.features, **manager.commands}.items():
        if dispatch.TABLE[name] is dispatch.WORKER:
            assert asyncio.iscoroutinefunction(handler), name


def test_a_method_missing_from_the_table_stops_the_build() -> None:
    server = build()
    with pytest.raises(LookupError, match="textDocument/foldingRange is not in"):
        server.feature("textDocument/foldingRange")(lambda ls, params: None)


def test_a_synchronous_worker_handler_stops_the_build() -> None:
    server = build()
    with pytest.raises(TypeError, match="must be async"):
        server.command("lspMemory.addClaim")(lambda ls, *args: None)


async def test_a_worker_handler_may_not_read_on_the_loop_but_its_work_may() -> None:
    seen: list[Any] = []

    async def handler() -> None:
        seen.append(dispatch.reading_on_the_loop())  # on the loop: refused
        seen.append(await asyncio.to_thread(dispatch.reading_on_the_loop))  # a worker: fine

    await dispatch.routed("lspMemory.search", handler)()
    assert seen[0] is not None and "event loop" in seen[0]
    assert seen[1] is None
    assert dispatch.reading_on_the_loop() is None  # the handler's mark stays in its own task


def test_a_loop_handler_reads_on_the_loop() -> None:
    async def run() -> object:
        return dispatch.routed("textDocument/hover", dispatch.reading_on_the_loop)()

    assert asyncio.run(run()) is None
