"""The composition root: configuration → store → indexes → services. The only place objects
are wired; the command line and the language server ask it for what they need."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from lsp_memory.config import Config
from lsp_memory.errors import UserError
from lsp_memory.model import Note
from lsp_memory.notes import Vault
from lsp_memory.services.context import Assembler
from lsp_memory.services.embedding import VectorSide
from lsp_memory.services.indexing import Indexer, Progress, SyncReport
from lsp_memory.services.resolver import Resolver
from lsp_memory.services.search import HybridSearch
from lsp_memory.store.catalog import VectorCatalog
from lsp_memory.store.fulltext import FullTextIndex, open_index
from lsp_memory.store.sqlite import Store, open_store
from lsp_memory.store.vectors import Embedder, VectorCache


@dataclass(slots=True)
class IndexReport:
    """What ``App.index`` did."""

    text: SyncReport
    embedded: int = 0
    pending: int = 0
    vectors: int = 0
    warnings: list[str] = field(default_factory=list)


class App:
    """Services for one user over one store, each opened on first use."""

    def __init__(
        self,
        config: Config,
        *,
        vaults: list[Vault] | None = None,
        text_index: FullTextIndex | None = None,
    ) -> None:
        """``vaults`` and ``text_index`` may be shared with another ``App`` of the same
        process (the language server's request and indexing threads); this one then does not
        close the index."""
        self.config = config
        self.warnings: list[str] = []
        self._owns_index = text_index is None
        self._scanned: set[int] = set()  # vaults (by id) this App has scanned before
        if vaults is not None:
            self.__dict__["vaults"] = vaults
        if text_index is not None:
            self.__dict__["text_index"] = text_index

    @cached_property
    def store(self) -> Store:
        return open_store(self.config.store, busy_timeout_ms=self.config.busy_timeout_ms)

    @cached_property
    def resolver(self) -> Resolver:
        for vault in self.vaults:
            self.warnings += list(vault.scan().warnings)
        return Resolver(self.store, self.config.user, self.vaults)

    # -- derived indexes --------------------------------------------------------------------

    @cached_property
    def index_folder(self) -> Path:
        """This store's indexes in the cache folder: one folder per store path."""
        key = hashlib.sha1(str(self.config.store.resolve()).encode()).hexdigest()[:16]
        return self.config.cache / "indexes" / key

    @cached_property
    def text_index(self) -> FullTextIndex:
        try:
            return open_index(self.index_folder / "fulltext")
        except (OSError, ValueError) as error:
            raise UserError(
                f"cannot open the search index in {self.index_folder}: {error}"
            ) from None

    @cached_property
    def vectors(self) -> VectorSide | None:
        """The vector side, or None (with a warning) when the model cannot be loaded: text
        search keeps working without it."""
        from lsp_memory.store.vectors import ModelError

        try:
            embedder = Embedder.load(self.config.model)
        except ModelError as error:
            self.warnings.append(f"{error}; searching by text only")
            return None
        side = VectorSide(
            VectorCatalog(self.index_folder / "queue.sqlite3"),
            VectorCache(self.config.cache / "vectors.sqlite3"),
            embedder,
        )
        side.load()
        return side

    @cached_property
    def vaults(self) -> list[Vault]:
        return [Vault(root, excludes=self.config.excludes) for root in self.config.vaults]

    @cached_property
    def search(self) -> HybridSearch:
        side = self.vectors
        if side is None:
            return HybridSearch(self.text_index)
        return HybridSearch(self.text_index, side.index, side.embedder)

    @cached_property
    def assembler(self) -> Assembler:
        """The context assembler (SPEC §6), behind ``build-context`` and
        ``lspMemory.buildContext``; the hybrid search (and its model) opens when first
        needed."""
        return Assembler(
            self.store,
            self.resolver,
            lambda: self.search,
            user=self.config.user,
            tiers=self.config.tiers,
            budget=self.config.budget,
        )

    def index(
        self,
        *,
        full: bool = False,
        embed: bool = True,
        progress: Progress | None = None,
        scan: bool = True,
    ) -> IndexReport:
        """Bring the indexes up to date with the store and the vaults: text at once, then
        (with ``embed``) the embedding queue drained. Without ``scan`` only the store's
        changes are followed (a vault is still scanned the first time). Needs the index
        writer; when another process holds it, that process keeps the index current and this
        one only reads."""
        text = self.text_index
        if not text.try_write():
            raise UserError(
                f"another lsp-memory process is writing the index in {self.index_folder}; "
                "it keeps the index up to date (try again when it exits)"
            )
        indexer = Indexer(self.store, text)
        everything = full or indexer.needs_full()
        notes: list[Note] = []
        gone: list[str] = []
        first: list[Vault] = []
        for vault in self.vaults:
            if not (scan or everything or id(vault) not in self._scanned):
                continue
            scanned = vault.scan()
            self.warnings += [w for w in scanned.warnings if w not in self.warnings]
            if everything or id(vault) not in self._scanned:
                first.append(vault)
                notes += list(vault.notes.values())
            else:
                # Later scans report what changed since the one before.
                current = vault.notes
                notes += [current[p] for p in (*scanned.added, *scanned.changed) if p in current]
                gone += [f"{vault.root}::{p}" for p in scanned.removed]
            self._scanned.add(id(vault))
        if first:
            # A vault's first scan in this process cannot tell what was deleted since the
            # index last saw it: compare with the notes the index holds for that vault.
            present = {f"note:{note.key}" for note in notes}
            roots = tuple(f"note:{vault.root}::" for vault in first)
            gone += [
                doc_id.removeprefix("note:")
                for doc_id in text.ids("note") - present
                if doc_id.startswith(roots)
            ]
        report = IndexReport(indexer.sync(notes, gone, full=full, progress=progress))
        side = self.vectors
        if side is not None:
            if report.text.full:
                side.clear()
            side.remove(report.text.removed)
            side.enqueue(report.text.docs)
            if embed:
                tick: Callable[[int, int], None] | None = None
                if progress is not None:
                    tick = lambda done, total: progress("embedding", done, total)  # noqa: E731
                report.embedded = side.drain(progress=tick)
            report.vectors = len(side.index)
            report.pending = side.catalog.counts()[1]
        report.warnings = self.warnings
        return report

    def read_indexes(self, *, scan: bool = True) -> IndexReport:
        """What a process that does not write the index does instead of ``index``: bring its
        vaults up to date (links, completion, backlinks are its own; with ``scan``) and read
        the writer's latest commit."""
        warnings = [w for vault in self.vaults if scan for w in vault.scan().warnings]
        self.text_index.reload()
        return IndexReport(SyncReport(), warnings=warnings)

    def index_buffers(self, edits: Mapping[Path, str | None]) -> SyncReport | None:
        """Index open editor buffers' unsaved text in place of their notes' files (``None``:
        the buffer was closed, the disk is the truth again), then whatever else changed in
        the store. Paths outside every vault are left alone; an unchanged text costs a hash.
        Without the index writer only the vaults are updated (links and backlinks)."""
        notes: list[Note] = []
        gone: list[str] = []
        for path, text in edits.items():
            for vault in self.vaults:
                before = vault.notes  # the snapshot as it is now: a later publish replaces it
                if text is None:
                    scanned = vault.update(path)
                    current = vault.notes
                    notes += [
                        current[p] for p in (*scanned.added, *scanned.changed) if p in current
                    ]
                    gone += [f"{vault.root}::{p}" for p in scanned.removed]
                    continue
                try:
                    note = vault.update_text(path, text)
                except ValueError:
                    continue  # not in this vault
                previous = before.get(note.path)
                indexed = vault.notes.get(note.path) is note
                if indexed and (previous is None or previous.content_hash != note.content_hash):
                    notes.append(note)
        text_index = self.text_index
        if not (notes or gone) or not text_index.writable:
            return None
        report = Indexer(self.store, text_index).sync(notes, gone)
        side = self.vectors
        if side is not None:
            side.remove(report.removed)
            side.enqueue(report.docs)
        return report

    def close(self) -> None:
        if "text_index" in self.__dict__ and self._owns_index:
            self.text_index.close()
        if "store" in self.__dict__:
            self.store.close()
