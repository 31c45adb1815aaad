"""What the server knows about its workspace: settings, the ``App`` it wires, the indexing
thread, and where requests run.

Three kinds of thread share one ``App`` (each with its own SQLite connection); which
request runs where is declared in ``dispatch.TABLE``:

- the event loop answers the fast requests (completion, hover, definition, links, hints),
  each on a ``Snapshot`` taken when it starts;
- ``REQUEST_WORKERS`` worker threads answer the slow ones and every write (code lens,
  buildContext, references, rename, workspace symbols, diagnostics, addClaim, Remember
  selection) through ``run``, so completion and hover never wait behind them;
- the indexing thread is the one writer of the vaults and the indexes (``App.keeper``), and
  consolidates every ``consolidate_every`` when that is set.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from lsp_memory.app import App, IndexReport, Snapshot
from lsp_memory.config import Config, apply_settings, load_config
from lsp_memory.errors import UserError
from lsp_memory.lsp import dispatch
from lsp_memory.model import Note
from lsp_memory.services.block import ContextBlock, read_note
from lsp_memory.services.conversations.recall import recalled
from lsp_memory.services.editor.references import Document
from lsp_memory.services.kernel.tokens import o200k

T = TypeVar("T")
log = logging.getLogger(__name__)
Progress = Callable[[str, int, int], None]
SYNC_SECONDS = 2.0
"""How often the indexing thread looks for changes nobody told it about (the CLI's writes)."""
RESCAN_FACTOR = 10
"""The vaults are rescanned unasked at most every ``RESCAN_FACTOR`` times the last scan's
duration (and every ``SYNC_SECONDS`` at the most): on 10 000 notes a sync with a rescan took
~0.4 s of the GIL, and rescanning every 2 s slowed every request (docs/benchmarks.md). File
events from the editor and ``reindex`` rescan at once."""
WATCHED_RESCAN_SECONDS = 60.0
"""How often the vaults are rescanned unasked when the editor reports file changes for all
of them (every vault inside a workspace folder, the client watching): only in case an event
was missed. A rescan of 10 000 notes holds the interpreter ~60 ms, and every 2 s that set
the p99 of the requests it overlapped."""
REQUEST_WORKERS = 2
"""Threads for slow requests: one per core here; more would only queue on the GIL."""
KEPT_BLOCKS = 32
RECALLED_CONVERSATIONS = 8
"""How many conversations, those blocks were built for last, have their recall made ahead."""
"""Context blocks kept, one per document, the least recently built dropped first (each
holds its document's text; closed documents are not reported here)."""


class Session:
    """One workspace: built at ``initialize``, indexed from ``initialized``."""

    def __init__(
        self,
        config: Config,
        warnings: Sequence[str] = (),
        overrides: Mapping[str, Any] | None = None,
    ) -> None:
        self.config = config
        self.warnings = list(warnings)
        self.app = App(config, background=True)
        self.ready = threading.Event()  # set once the first index sync has finished
        self.generation = 0  # counts background syncs that changed what requests may read
        self.index_error: str | None = None
        self.on_error: Callable[[str], None] | None = None  # reports a failed background sync
        self.on_info: Callable[[str], None] | None = None  # reports a background consolidation
        # What requests read has changed: the first sync ended, a later one indexed changed
        # notes or records (or an open note's new text), embeddings were added, a
        # consolidation changed claims (called on the indexing thread).
        self.on_changed: Callable[[], None] | None = None
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._files = threading.Event()  # the vaults changed: rescan on the next sync
        self._stop = threading.Event()
        self._edits: dict[Path, str | None] = {}  # open notes' latest unsaved text
        self._edits_lock = threading.Lock()
        self._workers = ThreadPoolExecutor(REQUEST_WORKERS, thread_name_prefix="lsp-memory")
        self._blocks: dict[str, tuple[Hashable, ContextBlock]] = {}  # uri → key, block
        self._blocks_lock = threading.Lock()  # both workers build blocks
        # The conversations blocks were built for lately, whose recall is made ahead.
        self._conversations: dict[str, None] = {}
        # What from_client was given, to rebuild the settings when the editor's change.
        self.origin: tuple[dict[str, Any] | None, tuple[Path, ...]] = (None, ())
        self.overrides = dict(overrides or {})  # the command line's settings
        self._watched = False  # the editor reports changes to every vault's files

    @classmethod
    def from_client(
        cls,
        options: Mapping[str, Any] | None,
        folders: Sequence[Path],
        settings: Mapping[str, Any] | None = None,
        overrides: Mapping[str, Any] | None = None,
    ) -> Session:
        """The settings, lowest first: defaults, ``lsp-memory.toml`` at the (first)
        workspace root, the environment, the command line that started the server
        (``overrides``: ``lsp-memory --store DIR --user NAME serve``), the client's
        ``initializationOptions``, then its ``workspace/configuration`` (``settings``).
        Every workspace folder is a vault, beside the configured ones."""
        root = folders[0] if folders else Path.cwd()
        config, warnings = load_config(overrides, cwd=root)
        for given, origin in ((options, "initializationOptions"), (settings, "settings")):
            if given:
                config, found = apply_settings(config, given, base=root, origin=origin)
                warnings += found
        vaults = tuple(dict.fromkeys([*config.vaults, *(f.resolve() for f in folders)]))
        session = cls(replace(config, vaults=vaults), warnings, overrides or {})
        session.origin = (dict(options) if options else None, tuple(folders))
        return session

    def reconfigured(self, settings: Mapping[str, Any]) -> Session:
        """A new session for the same client and folders with these editor settings (not
        started: the caller puts it in this one's place, then closes this one)."""
        options, folders = self.origin
        return Session.from_client(options, folders, settings, self.overrides)

    # -- requests ---------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        """Whether its background indexing has been started."""
        return self._thread is not None

    def status(self) -> dict[str, Any]:
        """What this memory holds and where, as ``lsp-memory status --json`` gives it."""
        return self.app.status()

    def reads(self) -> Snapshot:
        """A read view for a request, in the calling thread (never on the event loop in a
        handler that ``dispatch`` runs in a worker)."""
        refused = dispatch.reading_on_the_loop()
        if refused is not None:
            raise RuntimeError(refused)
        return self.app.snapshot(indexed=self.ready.is_set())

    async def run(self, work: Callable[[Snapshot], T]) -> T:
        """``work`` on a fresh read view in a worker thread, off the event loop. Whatever
        it needs from the editor's documents is taken before, on the loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._workers, lambda: work(self.reads()))

    def build_context(
        self,
        reads: Snapshot,
        document: Document,
        buffers: Mapping[str, str],
        **options: Any,
    ) -> ContextBlock:
        """The context block of an open document (``build-context``'s options), open notes
        as ``buffers`` (file path → text) has them. The last block of each document is kept
        (``KEPT_BLOCKS``) and given again while nothing it depends on has changed — the
        text, the options, the open buffers, the store and the indexes — so the code lens
        and ``lspMemory.buildContext`` build a block once per change, not once each."""
        key = (
            document.text,
            document.language_id,
            repr(sorted(options.items())),
            tuple(sorted(buffers.items())),
            reads.store_version(),
            self.generation,
        )
        uri = document.uri or ""
        with self._blocks_lock:
            kept = self._blocks.get(uri)
        if kept is not None and kept[0] == key:
            return kept[1]
        block = self._build(reads, document, buffers, dict(options))
        with self._blocks_lock:
            self._blocks.pop(uri, None)
            self._blocks[uri] = (key, block)
            while len(self._blocks) > KEPT_BLOCKS:
                self._blocks.pop(next(iter(self._blocks)))
        return block

    def _build(
        self,
        reads: Snapshot,
        document: Document,
        buffers: Mapping[str, str],
        options: dict[str, Any],
    ) -> ContextBlock:
        def note_text(note: Note) -> str:
            text = buffers.get(str(Path(note.vault) / note.path))
            return read_note(note) if text is None else text

        assembler = reads.assembler(note_text)
        conversation = options.pop("conversation", None)
        if conversation is not None:
            with self._blocks_lock:
                self._conversations.pop(conversation, None)
                self._conversations[conversation] = None
                while len(self._conversations) > RECALLED_CONVERSATIONS:
                    self._conversations.pop(next(iter(self._conversations)))
            return recalled(
                assembler,
                reads.conversations(),
                conversation,
                document.text,
                language_id=document.language_id,
                path=document.uri,
                **options,
            )
        return assembler.build(
            document.text, language_id=document.language_id, path=document.uri, **options
        )

    # -- the indexing thread ----------------------------------------------------------------

    def start_indexing(
        self, progress: Progress, done: Callable[[IndexReport | None, str | None], None]
    ) -> None:
        """Keep the indexes in step on a background thread: a first sync (reported through
        ``progress`` and ``done``), then, every ``SYNC_SECONDS`` or when ``poke``d, another
        sync (the store's change log — writes by the CLI or another server — and the vaults'
        changed files), and in between the embedding queue, a batch at a time, yielding to
        new work and to the next sync. Requests are answered meanwhile."""

        def run() -> None:
            try:
                for vault in self.app.vaults:  # `[[` completes from the saved scans at once
                    vault.preload()
                # The first sync writes the indexes, or follows another process that does.
                report = self.app.keeper.sync(progress=progress)
            except Exception as error:
                self.index_error = f"indexing failed: {error}"
                done(None, self.index_error)
            else:
                done(report, None)
            finally:
                self.ready.set()
            self._changed()
            o200k()  # the context block's tokenizer (~0.2 s): loaded before it is asked
            self.app.count_claim_tokens()  # hovers then read the kept sizes whole
            self._follow()

        self._thread = threading.Thread(target=run, name="lsp-memory-index", daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        """The indexing thread's loop after the first sync, until ``close``."""
        keeper = self.app.keeper
        scanned, took = time.monotonic(), 0.0  # the first sync has just scanned the vaults
        while not self._stop.is_set():
            try:
                with self._edits_lock:
                    edits, self._edits = self._edits, {}
                # An open note's new text (a note made by a quick fix opens with its text;
                # the file's own change then looks like nothing new) changes what others
                # read too: its title resolves links, its headings are linked to.
                if edits and keeper.index_buffers(edits) is not None:
                    self.generation += 1
                    self._changed()
                started = time.monotonic()
                pause = max(SYNC_SECONDS, RESCAN_FACTOR * took)
                if self._watched:
                    pause = max(pause, WATCHED_RESCAN_SECONDS)
                scan = self._files.is_set() or started >= scanned + pause
                if scan:
                    self._files.clear()
                # Taking the writer over from another process that exited syncs in full:
                # the keeper has not indexed these vaults yet.
                report = keeper.sync(scan=scan)
                self.app.count_claim_tokens()  # claims the CLI or another server added
                next_sync = time.monotonic() + SYNC_SECONDS
                if report.text.upserted or report.text.deleted:
                    self.generation += 1
                    self._changed()
                elif not keeper.text.writable:  # another process may have indexed changes
                    self.generation += 1
                if scan:
                    scanned = time.monotonic()
                    took = scanned - started
                if self._recall_ahead():
                    self.generation += 1  # blocks built meanwhile are built again from it
                # One model per process, opened here; requests search with it once open.
                side = self.app.vectors if keeper.text.writable else None
                if side is not None:  # its ids hashed here, not on a search (~0.1 s)
                    side.index.prepare(copy=False)

                def stop(until: float = next_sync) -> bool:
                    return self._wake.is_set() or self._stop.is_set() or time.monotonic() >= until

                # A long queue (minutes, on a new vault) is embedded between syncs, never
                # instead of them: the store's changes and renamed notes keep coming in.
                if side is not None and side.drain(stop=stop):
                    self.generation += 1
                    self._changed()  # searches by meaning find more: code lenses change
                queued = side is not None and side.catalog.pending_count() > 0
                if keeper.text.writable and self._consolidation_due():
                    self._consolidate()
            except Exception as error:
                queued = False
                self.index_error = f"index sync failed: {error}"
                if self.on_error is not None:
                    self.on_error(self.index_error)
            if not queued:  # else straight on: sync, then the next stretch of the queue
                self._wake.wait(timeout=SYNC_SECONDS)
            self._wake.clear()

    def _recall_ahead(self) -> bool:
        """Make the passive recall of the conversations blocks were built for lately, whose
        messages have changed since (seed 001's mode A: a message stored by the command line
        or the MCP server is recalled from here, before the next block asks); True when any
        was made."""
        with self._blocks_lock:
            conversations = list(self._conversations)
        if not conversations:
            return False
        made = False
        assembler = self.app.snapshot().assembler()
        for conversation in conversations:
            try:
                made = self.app.conversations().prepare(assembler, conversation) or made
            except UserError:  # gone (no message of it left)
                with self._blocks_lock:
                    self._conversations.pop(conversation, None)
        return made

    def _consolidation_due(self) -> bool:
        """Whether ``consolidate_every`` has passed since the user's last consolidation
        (by anyone: the command line, cron or a server). Only the index writer consolidates,
        so two servers on one store do not both run it."""
        every = self.config.consolidate_every
        if every is None or self._wake.is_set() or self._stop.is_set():
            return False
        return self.app.consolidation().due(every)

    def _consolidate(self) -> None:
        """One consolidation in the indexing thread (it owns the vector side), then the
        ``review_command``, if any; what it did goes to the log."""
        report = self.app.consolidation().run(self.app.consolidation().clock())
        summary = report.to_json()
        message = (
            f"lsp-memory: consolidated (run {report.run_id}): {len(report.changes)} changes, "
            f"{summary['merged']} merged, {summary['contradictions']} contradictions, "
            f"{summary['deprecated']} deprecated, {len(report.review)} for review"
        )
        decided, failed = self.app.review().ask_command()
        lines = [message, *report.warnings, *(o.message for o in decided)]
        if failed:
            lines.append(failed)
        if self.on_info is not None:
            for line in lines:
                self.on_info(line)
        if report.changes or decided:
            self.generation += 1
            self._changed()

    def _changed(self) -> None:
        if self.on_changed is not None:
            self.on_changed()

    def note_edited(self, path: Path, text: str | None) -> None:
        """An open document's text, to index in place of its file if it is a note in a
        vault (``None`` once it is closed: the file is the truth again). Applied by the
        indexing thread, the vaults' one writer; only the latest text per path is kept."""
        with self._edits_lock:
            self._edits[path] = text
        self.poke()

    def query_expected(self) -> None:
        """The user is editing: a query may follow (a context block, a search), so have the
        embedding helper started if it stopped when idle (see ``store.embedhelper``)."""
        side = self.app.loaded_vectors
        warm = getattr(side.embedder, "warm", None) if side is not None else None
        if warm is not None:
            warm()

    def files_watched(self) -> None:
        """The editor now reports changes to Markdown files in its workspace folders: when
        every vault is inside one, rescan unasked only every ``WATCHED_RESCAN_SECONDS``."""
        folders = [folder.resolve() for folder in self.origin[1]]
        self._watched = bool(folders) and all(
            any(vault.resolve().is_relative_to(folder) for folder in folders)
            for vault in self.config.vaults
        )

    def poke(self, *, files: bool = False) -> None:
        """Ask the indexing thread to sync now (a claim was added); with ``files``, to
        rescan the vaults too (the editor reported changed files)."""
        if files:
            self._files.set()
        self._wake.set()

    def close(self) -> None:
        """Stop the indexing thread and the request workers, then close the memory. Call it
        once this session serves no more (a request reading a store closed under it could
        crash the process); an indexing thread still busy after 10 s keeps its stores open
        rather than have them closed under it."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._workers.shutdown(wait=True, cancel_futures=True)
        if self._thread is not None and self._thread.is_alive():
            log.warning("the indexing thread did not stop within 10 s; its stores stay open")
            return
        self.app.close()
