"""Start-up and shutdown: settings from the workspace and the client, workspace folders as
vaults, and the first index sync in the background with ``$/progress``."""

from __future__ import annotations

import asyncio
import gc
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from lsp_memory.lsp.session import Session

if TYPE_CHECKING:
    from lsp_memory.app import IndexReport
    from lsp_memory.lsp.server import MemoryServer


def _folders(params: types.InitializeParams) -> list[Path]:
    uris = [f.uri for f in params.workspace_folders or ()]
    if not uris and params.root_uri:
        uris = [params.root_uri]
    paths = [to_fs_path(uri) for uri in uris]
    return [Path(p) for p in paths if p]


def register(server: MemoryServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: MemoryServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        ls.session = Session.from_client(
            options if isinstance(options, dict) else None, _folders(params)
        )

    @server.feature(types.INITIALIZED)
    async def initialized(ls: MemoryServer, _params: types.InitializedParams) -> None:
        session = ls.session
        if session is None:
            return
        for warning in session.warnings:
            ls.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message=warning)
            )
        loop = asyncio.get_running_loop()
        token: str | None = None
        window = ls.client_capabilities.window
        if window is not None and window.work_done_progress:
            token = f"lsp-memory-index-{uuid.uuid4().hex[:8]}"
            await ls.work_done_progress.create_async(token)
            ls.work_done_progress.begin(
                token, types.WorkDoneProgressBegin(title="lsp-memory: indexing", percentage=0)
            )
        stages: dict[str, int] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if token is None or stages.get(stage) == done:
                return
            stages[stage] = done
            percent = int(100 * done / total) if total else 100
            report = types.WorkDoneProgressReport(
                message=f"{stage} {done}/{total}", percentage=percent
            )
            loop.call_soon_threadsafe(ls.work_done_progress.report, token, report)

        def finished(report: IndexReport | None, error: str | None) -> None:
            loop.call_soon_threadsafe(_finished, ls, token, report, error)

        def failed(message: str) -> None:
            params = types.LogMessageParams(type=types.MessageType.Error, message=message)
            loop.call_soon_threadsafe(ls.window_log_message, params)

        session.on_error = failed
        session.start_indexing(progress, finished)
        await _watch_notes(ls)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def files_changed(ls: MemoryServer, _params: types.DidChangeWatchedFilesParams) -> None:
        # The indexing thread rescans: stat-based, it finds what changed by itself.
        if ls.session is not None:
            ls.session.poke()

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: MemoryServer, _params: Any) -> None:
        if ls.session is not None:
            ls.session.close()


async def _watch_notes(ls: MemoryServer) -> None:
    """Ask the client to report changes to Markdown files, where it can register watchers
    dynamically; otherwise the indexing thread's periodic rescan finds them."""
    workspace = ls.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace is not None else None
    if watched is None or not watched.dynamic_registration:
        return
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern="**/*.{md,markdown}")]
    )
    registration = types.Registration(
        id="lsp-memory-notes",
        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=options,
    )
    try:
        await ls.client_register_capability_async(
            types.RegistrationParams(registrations=[registration])
        )
    except Exception as error:
        ls.window_log_message(
            types.LogMessageParams(
                type=types.MessageType.Warning,
                message=f"lsp-memory: file watching unavailable ({error}); rescanning instead",
            )
        )


def _finished(
    ls: MemoryServer, token: str | None, report: IndexReport | None, error: str | None
) -> None:
    if report is not None:
        text = report.text
        message = f"index ready: {text.upserted} written, {text.deleted} removed"
    else:
        message = error or "indexing stopped"
    if token is not None:
        ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
    kind = types.MessageType.Info if error is None else types.MessageType.Error
    ls.window_log_message(types.LogMessageParams(type=kind, message=f"lsp-memory: {message}"))
    # What exists now (modules, the vaults' notes, caches) lives as long as the server: keep
    # it out of the cycle collector's full passes, which otherwise set a request's p99.
    gc.freeze()
