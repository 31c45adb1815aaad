"""What the server knows about its workspace: settings, the vaults, and two views of the
same indexes — one for requests (on the event loop's thread) and one for the indexing thread,
which alone writes. The full-text index object and the vaults are shared; each thread has its
own SQLite connection.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pygls.workspace import TextDocument

from lsp_memory.app import App, IndexReport
from lsp_memory.config import Config, apply_settings, load_config
from lsp_memory.model import Note
from lsp_memory.services.completion import Completer
from lsp_memory.services.context import Assembler, ContextBlock, read_note
from lsp_memory.services.describe import Describer
from lsp_memory.services.embedding import VectorSide
from lsp_memory.services.resolver import Resolver
from lsp_memory.services.search import HybridSearch
from lsp_memory.services.tokens import o200k

Progress = Callable[[str, int, int], None]
SYNC_SECONDS = 2.0
"""How often the indexing thread looks for changes nobody told it about (the CLI's writes)."""
RESCAN_FACTOR = 10
"""The vaults are rescanned unasked at most every ``RESCAN_FACTOR`` times the last scan's
duration (and every ``SYNC_SECONDS`` at the most): on 10 000 notes a sync with a rescan took
~0.4 s of the GIL, and rescanning every 2 s slowed every request (docs/benchmarks.md). File
events from the editor and ``reindex`` rescan at once."""


class Session:
    """One workspace: built at ``initialize``, indexed from ``initialized``."""

    def __init__(self, config: Config, warnings: Sequence[str] = ()) -> None:
        self.config = config
        self.warnings = list(warnings)
        self.app = App(config)
        self.ready = threading.Event()  # set once the first index sync has finished
        self.index_error: str | None = None
        self.on_error: Callable[[str], None] | None = None  # reports a failed background sync
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._files = threading.Event()  # the vaults changed: rescan on the next sync
        self._stop = threading.Event()
        self.vectors: VectorSide | None = None  # the indexing thread's, once loaded
        self._edits: dict[Path, str | None] = {}  # open notes' latest unsaved text
        self._edits_lock = threading.Lock()
        # What from_client was given, to rebuild the settings when the editor's change.
        self.origin: tuple[dict[str, Any] | None, tuple[Path, ...]] = (None, ())

    @classmethod
    def from_client(
        cls,
        options: Mapping[str, Any] | None,
        folders: Sequence[Path],
        settings: Mapping[str, Any] | None = None,
    ) -> Session:
        """Settings from ``lsp-memory.toml`` at the (first) workspace root, then the client's
        ``initializationOptions``, then its ``workspace/configuration`` (``settings``);
        every workspace folder is a vault."""
        root = folders[0] if folders else Path.cwd()
        config, warnings = load_config(cwd=root)
        for given, origin in ((options, "initializationOptions"), (settings, "settings")):
            if given:
                config, found = apply_settings(config, given, base=root, origin=origin)
                warnings += found
        vaults = tuple(dict.fromkeys([*config.vaults, *(f.resolve() for f in folders)]))
        session = cls(replace(config, vaults=vaults), warnings)
        session.origin = (dict(options) if options else None, tuple(folders))
        return session

    def reconfigured(self, settings: Mapping[str, Any]) -> Session:
        """A new session for the same client and folders with these editor settings (not
        started: the caller closes this one first when the configuration differs)."""
        options, folders = self.origin
        return Session.from_client(options, folders, settings)

    @property
    def completer(self) -> Completer:
        app = self.app
        text = app.text_index if self.ready.is_set() else None
        return Completer(app.store, text, app.vaults, self.config.user)

    @property
    def search(self) -> HybridSearch:
        """Hybrid search over the shared indexes (text only until vectors are loaded)."""
        side = self.vectors
        if side is None:
            return HybridSearch(self.app.text_index)
        return HybridSearch(self.app.text_index, side.index, side.embedder)

    @property
    def resolver(self) -> Resolver:
        """A resolver for requests. Not ``App.resolver``: that one scans the vaults first,
        and here only the indexing thread scans them (a vault has one writer)."""
        app = self.app
        return Resolver(app.store, self.config.user, app.vaults)

    def assembler(self, buffers: Mapping[str, str]) -> Assembler:
        """The context assembler (SPEC §6) over the shared indexes; ``buffers`` (file path →
        text) are open documents, whose unsaved text a pinned note shows."""
        config = self.config

        def note_text(note: Note) -> str:
            text = buffers.get(str(Path(note.vault) / note.path))
            return read_note(note) if text is None else text

        return Assembler(
            self.app.store,
            self.resolver,
            lambda: self.search,
            user=config.user,
            tiers=config.tiers,
            budget=config.budget,
            note_text=note_text,
        )

    def build_context(
        self, doc: TextDocument, buffers: Mapping[str, str], **options: Any
    ) -> ContextBlock:
        """The context block of an open document (``build-context``'s options), open notes
        as ``buffers`` has them."""
        return self.assembler(buffers).build(
            doc.source, language_id=doc.language_id, path=doc.uri, **options
        )

    @property
    def describer(self) -> Describer:
        app = self.app
        return Describer(app.store, self.config.user, app.vaults)

    def start_indexing(
        self, progress: Progress, done: Callable[[IndexReport | None, str | None], None]
    ) -> None:
        """Keep the indexes in step on a background thread: a first sync (reported through
        ``progress`` and ``done``), then, every ``SYNC_SECONDS`` or when ``poke``d, another
        sync (the store's change log — writes by the CLI or another server — and the vaults'
        changed files), and in between the embedding queue, a batch at a time, yielding to
        new work. Requests are answered meanwhile."""
        text = self.app.text_index  # opened here, shared with the indexing thread
        vaults = self.app.vaults

        def run() -> None:
            worker = App(self.config, vaults=vaults, text_index=text)
            try:
                try:
                    if text.try_write():
                        report = worker.index(embed=False, progress=progress)
                    else:  # another process writes the index: follow it, scan the vaults
                        report = worker.read_indexes()
                except Exception as error:
                    self.index_error = f"indexing failed: {error}"
                    done(None, self.index_error)
                else:
                    done(report, None)
                finally:
                    self.ready.set()
                o200k()  # the context block's tokenizer (~0.2 s): loaded before it is asked
                self._follow(worker)
            finally:
                worker.close()

        self._thread = threading.Thread(target=run, name="lsp-memory-index", daemon=True)
        self._thread.start()

    def _follow(self, worker: App) -> None:
        """The indexing thread's loop after the first sync, until ``close``."""
        next_scan = 0.0
        while not self._stop.is_set():
            try:
                with self._edits_lock:
                    edits, self._edits = self._edits, {}
                if edits:
                    worker.index_buffers(edits)
                started = time.monotonic()
                scan = self._files.is_set() or started >= next_scan
                if scan:
                    self._files.clear()
                if worker.text_index.writable:
                    worker.index(embed=False, scan=scan)
                elif worker.text_index.try_write():
                    self._files.set()
                    continue  # took the writer over from another process: sync at once
                else:
                    worker.read_indexes(scan=scan)  # another process writes: follow it
                if scan:
                    took = time.monotonic() - started
                    next_scan = time.monotonic() + max(SYNC_SECONDS, RESCAN_FACTOR * took)
                side = worker.vectors if worker.text_index.writable else None
                self.vectors = side  # requests search with it; one model per process
                if side is not None:
                    side.drain(stop=lambda: self._wake.is_set() or self._stop.is_set())
            except Exception as error:
                self.index_error = f"index sync failed: {error}"
                if self.on_error is not None:
                    self.on_error(self.index_error)
            self._wake.wait(timeout=SYNC_SECONDS)
            self._wake.clear()

    def note_edited(self, path: Path, text: str | None) -> None:
        """An open document's text, to index in place of its file if it is a note in a
        vault (``None`` once it is closed: the file is the truth again). Applied by the
        indexing thread, the vaults' one writer; only the latest text per path is kept."""
        with self._edits_lock:
            self._edits[path] = text
        self.poke()

    def poke(self, *, files: bool = False) -> None:
        """Ask the indexing thread to sync now (a claim was added); with ``files``, to
        rescan the vaults too (the editor reported changed files)."""
        if files:
            self._files.set()
        self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.app.close()
