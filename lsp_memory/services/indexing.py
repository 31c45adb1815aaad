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

``IndexKeeper`` owns the one rule for which process writes: the process that holds (or can
take) the full-text index's writer lock syncs the store and the vaults into it and drains
the embedding queue; every other process scans its own vaults and reads the writer's latest
commit. The command line and the language server both sync through it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from lsp_memory.errors import UserError
from lsp_memory.model import Claim, Context, Entity, Note, doc_id, doc_key, note_key
from lsp_memory.notes import Vault
from lsp_memory.store.fulltext import FullTextIndex, TextDoc
from lsp_memory.store.sqlite import Episode, Store

if TYPE_CHECKING:
    from lsp_memory.services.embedding import VectorSide

Progress = Callable[[str, int, int], None]
"""Called as ``progress(stage, done, total)`` during a build."""

_CHUNK = 2000


def epoch(stamp: str | None) -> int:
    """A stored timestamp as seconds since the epoch (0 when absent)."""
    if not stamp:
        return 0
    return int(datetime.fromisoformat(stamp.rstrip("Z")).replace(tzinfo=UTC).timestamp())


def _words(ids: Iterable[str] | None) -> str:
    """Friendly ids as words (``project_alpha`` → ``project alpha``) for full-text matching."""
    return " ".join(i.replace("_", " ") for i in ids or ())


def claim_doc(claim: Claim) -> TextDoc:
    return TextDoc(
        id=doc_id("claim", claim.claim_id),
        kind="claim",
        user=claim.user,
        status=claim.status.value,
        title=claim.statement,
        body="\n".join(
            part
            for part in (
                " ".join(claim.possible_questions),
                " ".join(claim.claim_types),
                " ".join(claim.domains),
                _words(claim.contexts),
                _words(claim.tags),
                _words(claim.entities),
            )
            if part
        ),
        keys=(claim.friendly_id, f"claim_{claim.number}"),
        confidence=claim.confidence,
        updated=epoch(claim.updated_at),
    )


def context_doc(context: Context) -> TextDoc:
    return TextDoc(
        id=doc_id("context", context.context_id),
        kind="context",
        user=context.user,
        status="active",
        title=context.name,
        body=context.description,
        keys=(context.friendly_id,),
        updated=epoch(context.updated_at),
    )


def _field_text(value: object) -> str:
    if isinstance(value, list):
        return " ".join(str(item) for item in value)
    return "" if value is None else str(value)


def entity_doc(entity: Entity) -> TextDoc:
    return TextDoc(
        id=doc_id("entity", entity.entity_id),
        kind="entity",
        user=entity.user,
        status="trashed" if entity.trashed else "active",
        title=entity.name,
        body="\n".join(
            [entity.type, *(f"{k}: {_field_text(v)}" for k, v in entity.fields.items())]
        ),
        keys=(entity.friendly_id,),
        updated=epoch(entity.updated_at),
    )


def note_doc(note: Note) -> TextDoc:
    return TextDoc(
        id=doc_id("note", note.key),
        kind="note",
        user="",
        status="archived" if note.archived else "active",
        title=note.title,
        body="\n".join(
            [" ".join(note.aliases), " ".join(h.text for h in note.headings), note.body]
        ),
        keys=(note.path,),
        version=note.content_hash,
        updated=note.mtime_ns // 1_000_000_000,
    )


def episode_doc(episode: Episode, before: str = "") -> TextDoc:
    """An episode as the index holds it: the message as its body (no title: a title field
    would count its words twice, and short messages — "Cool! What did it look like?" — rose
    above the ones that answer), ``before`` (the previous message of its session) as its
    context."""
    return TextDoc(
        id=doc_id("episode", episode.episode_id),
        kind="episode",
        user=episode.user,
        status="active",
        title="",
        body=episode.text,
        keys=(episode.episode_id, episode.session_id),
        context=before,
        updated=epoch(episode.occurred_at),
    )


_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")


def statements(text: str) -> str:
    """``text`` without its questions, or the whole text when it is only questions: what a
    message's embedding should be close to. A question in a message ("How did it make you
    feel?") is close to every question a user asks of the memory, and tells nothing."""
    kept = [s for s in _SENTENCE_END.split(text) if s.strip() and not s.rstrip().endswith("?")]
    return " ".join(kept) if kept else text


def embed_text(doc: TextDoc) -> str:
    """What the vector side embeds for a document: the claim itself, an episode's statements,
    or a note's title and opening (the model reads 256 tokens at most)."""
    if doc.kind == "claim":
        return doc.title
    if doc.kind == "episode":
        return statements(doc.body)[:1200]
    return f"{doc.title}\n{doc.body[:1200]}"


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
        meta = self.text.meta
        store_id = self.store.store_id()
        head = self.store.last_change()
        full = full or self.needs_full()
        report = SyncReport(full=full)
        if full:
            self.text.delete_all()
            for kind in ("context", "entity", "claim", "episode"):
                rows = self.store.rows(kind)
                for done, chunk in enumerate(_chunks(rows)):
                    self._write(kind, chunk, report)
                    if progress is not None:
                        progress(kind, min((done + 1) * _CHUNK, len(rows)), len(rows))
        else:
            seen = int(meta.get("seq", 0))
            while changes := self.store.changes_since(seen):
                pending: dict[str, set[int]] = {
                    k: set() for k in ("claim", "context", "entity", "episode")
                }
                for change in changes:
                    if change.record_id is not None:
                        deleted = doc_id(change.kind, change.record_id)
                        self.text.delete([deleted])
                        report.removed.append(deleted)
                        report.deleted += 1
                        pending[change.kind].discard(change.row)
                    else:
                        pending[change.kind].update(range(change.row, change.last_row + 1))
                for kind, changed in pending.items():
                    for chunk in _chunks(sorted(changed)):
                        self._write(kind, chunk, report)
                seen = changes[-1].seq
            head = max(head, seen)
        note_docs = [note_doc(note) for note in notes]
        report.upserted += self.text.upsert(note_docs)
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
        report.seconds = time.perf_counter() - started
        return report

    def needs_full(self) -> bool:
        """Whether the index must be built from scratch: new, rebuilt, or of another store."""
        return self.text.rebuilt or self.text.meta.get("store_id") != self.store.store_id()

    def _write(self, kind: str, rows: Sequence[int], report: SyncReport) -> None:
        docs: list[TextDoc]
        if kind == "claim":
            docs = [claim_doc(c) for c in self.store.claims_by_rows(rows)]
        elif kind == "context":
            docs = [context_doc(c) for c in self.store.contexts_by_rows(rows)]
        elif kind == "episode":
            episodes = self.store.episodes_by_rows(rows)
            before = self.store.previous_messages([e.row for e in episodes])
            docs = [episode_doc(e, before.get(e.row, "")) for e in episodes]
        else:
            docs = [entity_doc(e) for e in self.store.entities_by_rows(rows)]
        report.upserted += self.text.upsert(docs)
        report.docs += docs


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
