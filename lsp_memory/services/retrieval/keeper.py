"""Which process writes the search indexes, and keeping them in step.

``IndexKeeper`` owns the one rule for which process writes: the process that holds (or can
take) the full-text index's writer lock syncs the store and the vaults into it (through
``indexing.Indexer``) and drains the embedding queue; every other process scans its own
vaults and reads the writer's latest commit. The command line and the language server both
sync through it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lsp_memory.errors import UserError
from lsp_memory.model import Note, doc_id, doc_key, note_key
from lsp_memory.notes import Vault
from lsp_memory.services.retrieval.indexing import Indexer, Progress, SyncReport
from lsp_memory.store.fulltext import FullTextIndex
from lsp_memory.store.sqlite import Store

if TYPE_CHECKING:
    from lsp_memory.services.retrieval.embedding import VectorSide


@dataclass(slots=True)
class IndexReport:
    """What one ``IndexKeeper`` sync did."""

    text: SyncReport
    embedded: int = 0
    pending: int = 0
    vectors: int = 0
    warnings: list[str] = field(default_factory=list)


class IndexKeeper:
    """The search indexes of one store and its vaults, kept by whichever process may write
    them (see the module docstring). One keeper per process; in the language server it runs
    on the indexing thread, the vaults' and the indexes' one writer."""

    def __init__(
        self,
        store: Callable[[], Store],
        text: FullTextIndex,
        vaults: Sequence[Vault],
        vectors: Callable[[], VectorSide | None],
        warnings: list[str],
    ) -> None:
        """``store`` gives the calling thread's connection; ``vectors`` opens the vector
        side on first call (None without a model); ``warnings`` collects the vaults' scan
        warnings (shared with the caller, each warning once)."""
        self._store = store
        self.text = text
        self.vaults = vaults
        self._vectors = vectors
        self.warnings = warnings
        self._scanned: set[int] = set()  # vaults (by id) this keeper has scanned before

    @property
    def writing(self) -> bool:
        """Whether this process writes the indexes: it holds the writer lock, or takes it
        now that nobody else does (the writer's process exited)."""
        return self.text.try_write()

    def sync(
        self, *, scan: bool = True, embed: bool = False, progress: Progress | None = None
    ) -> IndexReport:
        """``index`` when this process may write the indexes, else ``follow``."""
        if self.writing:
            return self.index(scan=scan, embed=embed, progress=progress)
        return self.follow(scan=scan)

    def index(
        self,
        *,
        full: bool = False,
        embed: bool = True,
        progress: Progress | None = None,
        scan: bool = True,
        embed_at_most: int | None = None,
    ) -> IndexReport:
        """Bring the indexes up to date with the store and the vaults: text at once, then
        (with ``embed``) the embedding queue drained — only if it holds no more than
        ``embed_at_most`` documents, when that is given. Without ``scan`` only the store's
        changes are followed (a vault is still scanned the first time). Needs the index
        writer; when another process holds it, that process keeps the index current and this
        one only reads."""
        text = self.text
        if not self.writing:
            raise UserError(
                f"another lsp-memory process is writing the index in {text.folder.parent}; "
                "it keeps the index up to date (try again when it exits)"
            )
        indexer = Indexer(self._store(), text)
        everything = full or indexer.needs_full()
        notes: list[Note] = []
        gone: list[str] = []
        first: list[Vault] = []
        for vault in self.vaults:
            if not (scan or everything or id(vault) not in self._scanned):
                continue
            scanned = vault.scan()
            self._warn(scanned.warnings)
            if everything or id(vault) not in self._scanned:
                first.append(vault)
                notes += list(vault.notes.values())
            else:
                # Later scans report what changed since the one before.
                current = vault.notes
                notes += [current[p] for p in (*scanned.added, *scanned.changed) if p in current]
                gone += [note_key(vault.root, p) for p in scanned.removed]
            self._scanned.add(id(vault))
        if first:
            # A vault's first scan in this process cannot tell what was deleted since the
            # index last saw it, nor what changed: compare with the notes the index holds
            # (every start rewrote all 10 000 notes of the benchmark's vault, ~5 s of work).
            indexed = text.versions("note")
            present = {doc_id("note", note.key) for note in notes}
            roots = tuple(doc_id("note", note_key(vault.root, "")) for vault in first)
            gone += [
                doc_key(found) for found in indexed.keys() - present if found.startswith(roots)
            ]
            if not everything:
                notes = [n for n in notes if indexed.get(doc_id("note", n.key)) != n.content_hash]
        report = IndexReport(
            indexer.sync(notes, gone, full=full, progress=progress, before_commit=self._queue)
        )
        side = self._vectors()
        if side is not None:
            short = embed_at_most is None or side.catalog.pending_count() <= embed_at_most
            if embed and short:
                tick: Callable[[int, int], None] | None = None
                if progress is not None:
                    tick = lambda done, total: progress("embedding", done, total)  # noqa: E731
                report.embedded = side.drain(progress=tick)
            report.vectors = len(side.index)
            report.pending = side.catalog.pending_count()
        report.warnings = self.warnings
        return report

    def follow(self, *, scan: bool = True) -> IndexReport:
        """What a process that does not write the index does instead of ``index``: bring its
        vaults up to date (links, completion, backlinks are its own; with ``scan``) and read
        the writer's latest commit."""
        warnings = [w for vault in self.vaults if scan for w in vault.scan().warnings]
        self.text.reload()
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
                    gone += [note_key(vault.root, p) for p in scanned.removed]
                    continue
                try:
                    note = vault.update_text(path, text)
                except ValueError:
                    continue  # not in this vault
                previous = before.get(note.path)
                indexed = vault.notes.get(note.path) is note
                if indexed and (previous is None or previous.content_hash != note.content_hash):
                    notes.append(note)
        if not (notes or gone) or not self.text.writable:
            return None
        return Indexer(self._store(), self.text).sync(notes, gone, before_commit=self._queue)

    def _queue(self, synced: SyncReport) -> None:
        """Record what a sync wrote and deleted in the embedding queue, before the full-text
        index commits it (see the module docstring). A full sync wrote every document there
        is, and the queue keeps no other: when the index did not follow this store yet, the
        queue is emptied first (a kill before the commit leaves the index as unfollowing, so
        the next sync is a full one again); when it did (``index --full``), only the entries
        of no document are removed, so that a kill leaves none of the others out."""
        side = self._vectors()
        if side is None:
            return
        if synced.full:
            if Indexer(self._store(), self.text).needs_full():
                side.clear()
            else:
                side.retain({doc.id for doc in synced.docs})
        side.remove(synced.removed)
        side.enqueue(synced.docs)

    def _warn(self, found: Iterable[str]) -> None:
        self.warnings += [w for w in found if w not in self.warnings]
