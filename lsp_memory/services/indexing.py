"""Keeping the derived indexes in step with the store and the vaults.

The full-text index follows the store's change log (``changes``), so writes made by any
process — the CLI, another server — reach it when the process holding the index writer next
syncs. A missing, rebuilt or other-store index gets a full build. Notes follow their vaults'
rescans. Texts to embed go to the embedding queue, which the vector side drains in the
background.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from lsp_memory.model import Claim, Context, Entity, Note
from lsp_memory.store.fulltext import FullTextIndex, TextDoc
from lsp_memory.store.sqlite import Store

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
        id=f"claim:{claim.claim_id}",
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
        id=f"context:{context.context_id}",
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
        id=f"entity:{entity.entity_id}",
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
        id=f"note:{note.key}",
        kind="note",
        user="",
        status="archived" if note.archived else "active",
        title=note.title,
        body="\n".join(
            [" ".join(note.aliases), " ".join(h.text for h in note.headings), note.body]
        ),
        keys=(note.path,),
        updated=note.mtime_ns // 1_000_000_000,
    )


def embed_text(doc: TextDoc) -> str:
    """What the vector side embeds for a document: the claim itself, or a note's title and
    opening (the model reads 256 tokens at most)."""
    if doc.kind == "claim":
        return doc.title
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
    ) -> SyncReport:
        """Bring the index up to date: everything when ``full`` or when the index does not
        follow this store yet, else only what the change log lists since the last sync.
        ``notes`` are written too, ``removed`` note keys deleted. Commits once at the end."""
        started = time.perf_counter()
        meta = self.text.meta
        store_id = self.store.store_id()
        head = self.store.last_change()
        full = full or self.needs_full()
        report = SyncReport(full=full)
        if full:
            self.text.delete_all()
            for kind in ("context", "entity", "claim"):
                rows = self.store.rows(kind)
                for done, chunk in enumerate(_chunks(rows)):
                    self._write(kind, chunk, report)
                    if progress is not None:
                        progress(kind, min((done + 1) * _CHUNK, len(rows)), len(rows))
        else:
            seen = int(meta.get("seq", 0))
            while changes := self.store.changes_since(seen):
                pending: dict[str, set[int]] = {"claim": set(), "context": set(), "entity": set()}
                for change in changes:
                    if change.record_id is not None:
                        deleted = f"{change.kind}:{change.record_id}"
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
        gone = [f"note:{key}" for key in removed]
        self.text.delete(gone)
        report.removed += gone
        report.deleted += len(gone)
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
        else:
            docs = [entity_doc(e) for e in self.store.entities_by_rows(rows)]
        report.upserted += self.text.upsert(docs)
        report.docs += docs
