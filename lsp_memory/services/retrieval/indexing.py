"""Keeping the derived indexes in step with the store and the vaults.

The full-text index follows the store's change log (``changes``), so writes made by any
process — the CLI, another server — reach it when the process holding the index writer next
syncs. A missing, rebuilt or other-store index gets a full build. Notes follow their vaults'
rescans. Texts to embed go to the embedding queue, which the vector side drains in the
background.

The queue is written before the full-text index commits, never after. The commit records how
far the index has followed the store (and holds the notes' versions), and the next sync
resumes from there: a process killed between the two writes the same documents again, and
queueing a document again changes nothing (the same text stays queued, or stays embedded).
The other way round, a kill between the two left those documents out of the queue for good:
the next sync found nothing to do.

Which process writes the indexes is ``keeper.IndexKeeper``'s to decide; the documents
written are built by ``documents``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from lsp_memory.model import Note, doc_id
from lsp_memory.runtime import collector_paused
from lsp_memory.services.retrieval.documents import (
    claim_doc,
    context_doc,
    entity_doc,
    episode_doc,
    note_doc,
)
from lsp_memory.store.fulltext import FullTextIndex, TextDoc
from lsp_memory.store.sqlite import Store

Progress = Callable[[str, int, int], None]
"""Called as ``progress(stage, done, total)`` during a build."""

_CHUNK = 2000


@dataclass(slots=True)
class SyncReport:
    """What one sync did."""

    full: bool = False
    upserted: int = 0
    deleted: int = 0
    seconds: float = 0.0
    docs: list[TextDoc] = field(default_factory=list)  # every document written, for the queue
    removed: list[str] = field(default_factory=list)  # ids of documents deleted


def _chunks(rows: Sequence[int], size: int = _CHUNK) -> Iterator[Sequence[int]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


class Indexer:
    """Writes the store's records and the vaults' notes into the full-text index."""

    def __init__(self, store: Store, text: FullTextIndex) -> None:
        self.store = store
        self.text = text

    def sync(
        self,
        notes: Iterable[Note] = (),
        removed: Iterable[str] = (),
        *,
        full: bool = False,
        progress: Progress | None = None,
        before_commit: Callable[[SyncReport], None] | None = None,
    ) -> SyncReport:
        """Bring the index up to date: everything when ``full`` or when the index does not
        follow this store yet, else only what the change log lists since the last sync.
        ``notes`` are written too, ``removed`` note keys deleted. Commits once at the end,
        after ``before_commit`` has been given what was written and deleted, when anything
        was (the embedding queue: see the module docstring)."""
        started = time.perf_counter()
        full = full or self.needs_full()
        # A full build makes ~117 000 documents that live until its end: the cycle
        # collector's passes over them were 2.9 s of a 57 s build (measured at load 5.5-7.7).
        with collector_paused() if full else contextlib.nullcontext():
            report = self._sync(notes, removed, full, progress, before_commit)
        report.seconds = time.perf_counter() - started
        return report

    def _sync(
        self,
        notes: Iterable[Note],
        removed: Iterable[str],
        full: bool,
        progress: Progress | None,
        before_commit: Callable[[SyncReport], None] | None,
    ) -> SyncReport:
        meta = self.text.meta
        store_id = self.store.store_id()
        head = self.store.last_change()
        report = SyncReport(full=full)
        if full:
            self.text.delete_all()
            for kind in ("context", "entity", "claim", "episode"):
                rows = self.store.rows(kind)
                for done, chunk in enumerate(_chunks(rows)):
                    self._write(kind, chunk, report, fresh=True)
                    if progress is not None:
                        progress(kind, min((done + 1) * _CHUNK, len(rows)), len(rows))
        else:
            seen = int(meta.get("seq", 0))
            while changes := self.store.changes_since(seen):
                pending: dict[str, set[int]] = {
                    k: set() for k in ("claim", "context", "entity", "episode")
                }
                claimed: set[int] = set()
                for change in changes:
                    if change.kind == "claim" and change.record_id is None:
                        # An episode is indexed with the claims derived from it.
                        claimed.update(range(change.row, change.last_row + 1))
                    if change.record_id is not None:
                        deleted = doc_id(change.kind, change.record_id)
                        self.text.delete([deleted])
                        report.removed.append(deleted)
                        report.deleted += 1
                        pending[change.kind].discard(change.row)
                    else:
                        pending[change.kind].update(range(change.row, change.last_row + 1))
                # ... and with its neighbours' text: a new message is the reply of the one
                # before it (and, stored late, the previous message of the one after it).
                pending["episode"].update(self._neighbours(sorted(pending["episode"])))
                pending["episode"].update(self._sources(sorted(claimed)))
                for kind, changed in pending.items():
                    for chunk in _chunks(sorted(changed)):
                        self._write(kind, chunk, report)
                seen = changes[-1].seq
            head = max(head, seen)
        note_docs = [note_doc(note) for note in notes]
        report.upserted += self.text.upsert(note_docs, fresh=full)
        report.docs += note_docs
        gone = [doc_id("note", key) for key in removed]
        self.text.delete(gone)
        report.removed += gone
        report.deleted += len(gone)
        if before_commit is not None and (full or report.docs or report.removed):
            before_commit(report)
        if full or report.upserted or report.deleted or head != meta.get("seq"):
            # A commit writes files; a round that found nothing to do skips it.
            self.text.commit({"store_id": store_id, "seq": head})
        self.text.rebuilt = False
        return report

    def needs_full(self) -> bool:
        """Whether the index must be built from scratch: new, rebuilt, or of another store."""
        return self.text.rebuilt or self.text.meta.get("store_id") != self.store.store_id()

    def _sources(self, claim_rows: Sequence[int]) -> set[int]:
        """The rows of the episodes these claims were derived from."""
        rows: set[int] = set()
        for chunk in _chunks(claim_rows):
            for sources in self.store.source_messages(chunk).values():
                rows.update(row for row, _ in sources)
        return rows

    def _neighbours(self, episode_rows: Sequence[int]) -> set[int]:
        """The rows of the messages before and after these episodes in their conversations."""
        rows: set[int] = set()
        for chunk in _chunks(episode_rows):
            rows.update(self.store.neighbour_rows(chunk))
        return rows

    def _write(
        self, kind: str, rows: Sequence[int], report: SyncReport, *, fresh: bool = False
    ) -> None:
        docs: list[TextDoc]
        if kind == "claim":
            claims = self.store.claims_by_rows(rows)
            sources = self.store.source_messages(rows)
            docs = [claim_doc(c, [text for _, text in sources.get(c.claim_id, ())]) for c in claims]
        elif kind == "context":
            docs = [context_doc(c) for c in self.store.contexts_by_rows(rows)]
        elif kind == "episode":
            episodes = self.store.episodes_by_rows(rows)
            before = self.store.previous_messages([e.row for e in episodes])
            after = self.store.next_messages([e.row for e in episodes])
            facts = self.store.derived_statements(episodes)
            docs = [
                episode_doc(
                    e, before.get(e.row, ""), facts.get(e.episode_id, ()), after.get(e.row, "")
                )
                for e in episodes
            ]
        else:
            docs = [entity_doc(e) for e in self.store.entities_by_rows(rows)]
        report.upserted += self.text.upsert(docs, fresh=fresh)
        report.docs += docs
