"""Start-up, settings and shutdown: settings from ``lsp-memory.toml`` at the workspace root,
the environment, the server's command line, the client's ``initializationOptions`` and its
``workspace/configuration`` (section ``lspMemory``; read again on ``didChangeConfiguration``,
restarting the session when they change it), each above the one before; workspace folders as
vaults; the first index sync in the background with ``$/progress``."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from lsp_memory.lsp import internals
from lsp_memory.lsp.documents import LspWorkspace
from lsp_memory.lsp.session import Session

SECTION = "lspMemory"
"""The editor settings' section the server reads (``lspMemory.store``, ``lspMemory.user``…)."""
CLIENT_KEYS = frozenset(
    {
        "trace",
        "server",
        "serverPath",
        "serverCommand",
        "documentSelector",
        "folders",
        "plainText",
        "untitled",
    }
)
"""Keys an editor extension keeps in the same section for itself: not server settings."""

if TYPE_CHECKING:
    from lsp_memory.lsp.server import MemoryServer
    from lsp_memory.services.retrieval.keeper import IndexReport


def _folders(params: types.InitializeParams) -> list[Path]:
    uris = [f.uri for f in params.workspace_folders or ()]
    if not uris and params.root_uri:
        uris = [params.root_uri]
    paths = [to_fs_path(uri) for uri in uris]
    return [Path(p) for p in paths if p]


def register(server: MemoryServer) -> None:
    # Starting a session and replacing it on new settings both await the client: one at a
    # time, or a didChangeConfiguration sent right after initialized (Neovim >= 0.10 does)
    # compares against a session about to be replaced and starts a second one beside it.
    starting = asyncio.Lock()

    @server.feature(types.INITIALIZE)
    def initialize(ls: MemoryServer, params: types.InitializeParams) -> None:
        # Before any document opens: documents split into lines as LSP says (see documents).
        internals.install_workspace(ls.protocol, LspWorkspace.like(ls.workspace))
        ls.session = Session.from_client(
            _options(params.initialization_options),
            _folders(params),
            overrides=ls.overrides,
        )

    @server.feature(types.INITIALIZED)
    async def initialized(ls: MemoryServer, _params: types.InitializedParams) -> None:
        async with starting:
            session = ls.session
            if session is None or session.started:
                return  # a second `initialized` (a client bug) changes nothing
            settings = await _editor_settings(ls)
            if settings:
                # Requests are answered meanwhile (on the loop, by the serving session):
                # the first one serves until the new one replaces it, and is closed only
                # then. Closed before, a hover read a closed store, or one being closed in
                # another thread (the server died of a segmentation fault).
                fresh = await asyncio.to_thread(session.reconfigured, settings)
                ls.session = fresh
                await asyncio.to_thread(session.close)  # nothing was started yet
                session = fresh
            await _start(ls, session)
        await _watch_notes(ls)
        await _watch_settings(ls)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def settings_changed(
        ls: MemoryServer, params: types.DidChangeConfigurationParams
    ) -> None:
        """Read the settings again (pulled where the client answers
        ``workspace/configuration``, else from the notification) and, when they change what
        the server is, restart the session on them."""
        async with starting:
            settings = await _editor_settings(ls)
            if settings is None and isinstance(params.settings, dict):
                section = params.settings.get(SECTION)
                settings = _given(section) if isinstance(section, dict) else None
            session = ls.session  # read after every await: the one serving now
            if settings is None or session is None:
                return
            # Opening a store, and closing one (it waits for its indexing thread), off the
            # loop: requests are answered by the serving session meanwhile.
            fresh = await asyncio.to_thread(session.reconfigured, settings)
            if fresh.config == session.config:
                await asyncio.to_thread(fresh.close)
                return
            ls.session = fresh
            await asyncio.to_thread(session.close)
            ls.window_log_message(
                types.LogMessageParams(
                    type=types.MessageType.Info,
                    message="lsp-memory: settings changed; reindexing",
                )
            )
            if ls.files_watched:
                fresh.files_watched()
            await _start(ls, fresh)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def files_changed(ls: MemoryServer, _params: types.DidChangeWatchedFilesParams) -> None:
        # The indexing thread rescans: stat-based, it finds what changed by itself.
        if ls.session is not None:
            ls.session.poke(files=True)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: MemoryServer, _params: Any) -> None:
        if ls.session is not None:
            ls.session.close()


async def _start(ls: MemoryServer, session: Session) -> None:
    """Show the session's setting warnings, then index in the background with
    ``$/progress`` where the client shows it."""
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
        report = types.WorkDoneProgressReport(message=f"{stage} {done}/{total}", percentage=percent)
        loop.call_soon_threadsafe(ls.work_done_progress.report, token, report)

    def finished(report: IndexReport | None, error: str | None) -> None:
        loop.call_soon_threadsafe(_finished, ls, token, report, error)

    def failed(message: str) -> None:
        params = types.LogMessageParams(type=types.MessageType.Error, message=message)
        loop.call_soon_threadsafe(ls.window_log_message, params)

    def told(message: str) -> None:
        params = types.LogMessageParams(type=types.MessageType.Info, message=message)
        loop.call_soon_threadsafe(ls.window_log_message, params)

    def changed() -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed: the server stops
            loop.call_soon_threadsafe(ls.memory_changed)

    session.on_error = failed
    session.on_info = told
    session.on_changed = changed
    session.start_indexing(progress, finished)


def _given(settings: dict[str, Any]) -> dict[str, Any]:
    """The server's settings among an editor's: unset ones (null, "") and the editor
    extension's own keys left out."""
    return {
        key: value
        for key, value in settings.items()
        if value is not None and value != "" and key not in CLIENT_KEYS
    }


def _options(options: Any) -> dict[str, Any] | None:
    """The server's settings in ``initializationOptions``: flat, or nested under
    ``lspMemory`` as some clients send them (Helix passes its ``config`` both ways); nested
    ones win."""
    if not isinstance(options, dict):
        return None
    nested = options.get(SECTION)
    flat = {key: value for key, value in options.items() if key != SECTION}
    found = _given(flat) | (_given(nested) if isinstance(nested, dict) else {})
    return found or None


async def _editor_settings(ls: MemoryServer) -> dict[str, Any] | None:
    """The ``lspMemory`` section of the editor's settings, where the client answers
    ``workspace/configuration``; None otherwise."""
    workspace = ls.client_capabilities.workspace
    if workspace is None or not workspace.configuration:
        return None
    try:
        found = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])
        )
    except Exception as error:
        _warn(ls, f"cannot read the editor's settings ({error}); using lsp-memory.toml")
        return None
    section = found[0] if found else None
    return _given(section) if isinstance(section, dict) else None


async def _watch_settings(ls: MemoryServer) -> None:
    """Ask to be told when settings change, where the client registers that dynamically
    (VS Code sends ``didChangeConfiguration`` only then)."""
    workspace = ls.client_capabilities.workspace
    changes = workspace.did_change_configuration if workspace is not None else None
    if changes is None or not changes.dynamic_registration:
        return
    registration = types.Registration(
        id="lsp-memory-settings",
        method=types.WORKSPACE_DID_CHANGE_CONFIGURATION,
        register_options=types.DidChangeConfigurationRegistrationOptions(section=SECTION),
    )
    try:
        await ls.client_register_capability_async(
            types.RegistrationParams(registrations=[registration])
        )
    except Exception as error:
        _warn(ls, f"settings changes will not be seen until a restart ({error})")


def _warn(ls: MemoryServer, message: str) -> None:
    ls.window_log_message(
        types.LogMessageParams(type=types.MessageType.Warning, message=f"lsp-memory: {message}")
    )


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
        _warn(ls, f"file watching unavailable ({error}); rescanning instead")
        return
    ls.files_watched = True
    if ls.session is not None:
        ls.session.files_watched()


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
