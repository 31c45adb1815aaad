"""Where every message runs: the one table that says, for each LSP request, notification
and ``workspace/executeCommand`` command the server handles, whether it runs on the event
loop or in a worker thread.

- ``LOOP``: the whole handler runs on the event loop, so it must be quick and never wait —
  document sync, bookkeeping, and reads of a few store rows on a snapshot (completion,
  hover, definition, links, hints, highlights, prepare-rename). Everything else queues
  behind it.
- ``WORKER``: the handler copies what it needs from the open documents on the event loop,
  then awaits its work in a worker thread (``Session.run``, or a thread of its own for
  the lifecycle's waits). Everything that writes, may wait (a lock, an external command, the
  client) or may take longer than a keystroke runs so.

``MemoryServer.feature`` and ``MemoryServer.command`` look every handler up here when it is
registered: a method missing from the table, or a ``WORKER`` handler that is not a
coroutine (it could not await its work), stops the server being built. While a ``WORKER``
handler runs on the loop, taking a snapshot there (``Session.reads``) raises: its reads
belong in its worker. ``tests/unit/test_dispatch.py`` checks that the table and the
registered handlers are the same set.
"""

from __future__ import annotations

import asyncio
import contextvars
import enum
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from lsprotocol import types


class Runs(enum.Enum):
    LOOP = "event loop"
    WORKER = "worker thread"


LOOP, WORKER = Runs.LOOP, Runs.WORKER

TABLE: Mapping[str, Runs] = {
    # The lifecycle. ``initialize`` answers before anything else can be asked; ``shutdown``
    # is the last request (closing the session waits for the indexing thread, ≤ 10 s).
    types.INITIALIZE: LOOP,
    types.INITIALIZED: WORKER,  # awaits the client's settings; builds and closes sessions
    types.WORKSPACE_DID_CHANGE_CONFIGURATION: WORKER,  # the same, on new settings
    types.WORKSPACE_DID_CHANGE_WATCHED_FILES: LOOP,  # wakes the indexing thread
    types.WORKSPACE_DID_RENAME_FILES: LOOP,  # hands the moved paths to the indexing thread
    types.SHUTDOWN: LOOP,
    types.EXIT: LOOP,
    # pygls's own bookkeeping.
    types.SET_TRACE: LOOP,
    types.WINDOW_WORK_DONE_PROGRESS_CANCEL: LOOP,
    types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS: LOOP,
    types.NOTEBOOK_DOCUMENT_DID_OPEN: LOOP,
    types.NOTEBOOK_DOCUMENT_DID_CHANGE: LOOP,
    types.NOTEBOOK_DOCUMENT_DID_CLOSE: LOOP,
    types.WORKSPACE_EXECUTE_COMMAND: LOOP,  # finds the command's handler, listed below
    # Document sync: pygls applies the change; diagnostics schedule a check (a worker).
    types.TEXT_DOCUMENT_DID_OPEN: LOOP,
    types.TEXT_DOCUMENT_DID_CHANGE: LOOP,
    types.TEXT_DOCUMENT_DID_SAVE: LOOP,
    types.TEXT_DOCUMENT_DID_CLOSE: LOOP,
    # Reads of a few store rows, answered at once.
    types.TEXT_DOCUMENT_COMPLETION: LOOP,
    types.TEXT_DOCUMENT_HOVER: LOOP,
    types.TEXT_DOCUMENT_DEFINITION: LOOP,
    types.TEXT_DOCUMENT_DOCUMENT_LINK: LOOP,
    types.TEXT_DOCUMENT_INLAY_HINT: LOOP,
    types.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT: LOOP,
    types.TEXT_DOCUMENT_PREPARE_RENAME: LOOP,
    types.WORKSPACE_SYMBOL_RESOLVE: LOOP,
    # Whole-memory work.
    types.TEXT_DOCUMENT_CODE_ACTION: WORKER,  # the document's checks; related notes by meaning
    types.TEXT_DOCUMENT_CODE_LENS: WORKER,  # the document's context block
    types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL: WORKER,  # resolves every reference
    types.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE: WORKER,
    types.TEXT_DOCUMENT_REFERENCES: WORKER,
    types.TEXT_DOCUMENT_RENAME: WORKER,
    types.WORKSPACE_WILL_RENAME_FILES: WORKER,  # the links to the moved notes
    types.WORKSPACE_SYMBOL: WORKER,
    # Commands.
    "lspMemory.reindex": LOOP,  # wakes the indexing thread
    "lspMemory.search": WORKER,
    "lspMemory.buildContext": WORKER,
    "lspMemory.status": WORKER,
    "lspMemory.review": WORKER,
    "lspMemory.addClaim": WORKER,  # may classify, embed, or wait out another writer's lock
    "lspMemory.rememberSelection": WORKER,  # the same, then asks the client to edit
    "lspMemory.createNote": WORKER,  # writes a file
    "lspMemory.pinClaim": WORKER,  # writes a claim
    "lspMemory.unpinClaim": WORKER,
    "lspMemory.addBlockId": WORKER,  # may read the note's file, then asks the client to edit
    "lspMemory.unlinkedMentions": WORKER,  # reads the notes that may mention a note
    "lspMemory.showReferences": WORKER,  # reads the files that link a note
}

_running: contextvars.ContextVar[Runs | None] = contextvars.ContextVar("running", default=None)


def where(method: str) -> Runs:
    """Where ``method`` (an LSP method or a command name) runs; an unlisted one is a
    programming error, caught when the server is built."""
    try:
        return TABLE[method]
    except KeyError:
        raise LookupError(f"{method} is not in lsp/dispatch.py's table") from None


def routed(method: str, handler: Callable[..., Any]) -> Callable[..., Any]:
    """``handler`` as registered for ``method``: checked against the table, and marked
    while it runs on the loop (see ``reading_on_the_loop``)."""
    runs = where(method)
    if inspect.iscoroutinefunction(handler):

        @functools.wraps(handler)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            token = _running.set(runs)  # in this task's context: other tasks are unaffected
            try:
                return await handler(*args, **kwargs)
            finally:
                _running.reset(token)

        return run_async
    if runs is WORKER:
        raise TypeError(f"{method} runs in a worker: its handler must be async to await it")

    @functools.wraps(handler)
    def run(*args: Any, **kwargs: Any) -> Any:
        token = _running.set(runs)
        try:
            return handler(*args, **kwargs)
        finally:
            _running.reset(token)

    return run


def reading_on_the_loop() -> str | None:
    """The reason a snapshot may not be taken here: a ``WORKER`` handler is running on the
    loop (its work in a worker thread reads as it likes: no loop runs there)."""
    if _running.get() is not WORKER:
        return None
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return None
    return "a handler that runs in a worker read the memory on the event loop"
