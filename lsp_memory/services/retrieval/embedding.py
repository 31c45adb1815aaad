"""The vector side of indexing: queue documents for embedding, drain the queue in batches
(in the background in the server), and keep an in-memory vector index in step.

New or changed documents are searchable by text at once (the full-text index) and
semantically once drained. Vectors are cached by content hash, so a document whose text did
not change is never embedded again, only re-filtered by its new status.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

import numpy as np

from lsp_memory.services.retrieval.documents import embed_text
from lsp_memory.store.catalog import Entry, VectorCatalog
from lsp_memory.store.fulltext import TextDoc
from lsp_memory.store.vectors import (
    TextEmbedder,
    VectorCache,
    VectorIndex,
    content_hash,
    embed_cached,
)

BATCH = 64
_SCAN_FROM = 20_000
"""From this many embedded documents on, ``load`` reads the whole vector cache in order
instead of looking each vector up (see ``VectorCache.scan``)."""


class VectorSide:
    """The embedding queue, the vector cache and the in-memory index, for one model."""

    def __init__(self, catalog: VectorCatalog, cache: VectorCache, embedder: TextEmbedder) -> None:
        self.catalog = catalog
        self.cache = cache
        self.embedder = embedder
        self.index = VectorIndex(embedder.dim)

    def load(self) -> int:
        """Fill the in-memory index with every embedded document's cached vector. Documents
        whose vector is gone from the cache leave the catalog: they are searched by text
        until they change or ``lsp-memory index --full`` embeds them again. Returns the count
        loaded."""
        entries = self.catalog.embedded()
        dim = self.embedder.dim
        # One matrix, filled in place and adopted by the index (room for 1 024 more upserts):
        # no second copy of the vectors is held. Row by row through ``upsert`` and a lookup
        # per vector, 207k documents took 13 s to load; this way 2.4 s.
        matrix = np.zeros((len(entries) + 1024, dim), dtype=np.float32)
        found = np.zeros(len(entries), dtype=bool)
        where: dict[str, int] = {}
        again: list[tuple[int, int]] = []  # (row, the first row of the same text)
        for row, entry in enumerate(entries):
            first = where.setdefault(entry[4], row)
            if first != row:
                again.append((row, first))
        if len(entries) >= _SCAN_FROM:
            for keys, block in self.cache.scan(self.embedder.model_id, dim):
                at = np.fromiter((where.get(key, -1) for key in keys), np.intp, len(keys))
                wanted = at >= 0
                matrix[at[wanted]] = block[wanted]
                found[at[wanted]] = True
        else:
            for key, vector in self.cache.get_many(self.embedder.model_id, where).items():
                if vector.shape == (dim,):
                    matrix[where[key]] = vector
                    found[where[key]] = True
        for row, first in again:
            matrix[row], found[row] = matrix[first], found[first]
        kept = [entry[:4] for entry, ok in zip(entries, found, strict=True) if ok]
        if len(kept) < len(entries):
            matrix[: len(kept)] = matrix[: len(entries)][found]
        self.index = VectorIndex(dim)
        self.index.fill(kept, matrix)
        self.catalog.remove([entry[0] for entry, ok in zip(entries, found, strict=True) if not ok])
        return len(kept)

    def enqueue(self, docs: Iterable[TextDoc]) -> None:
        entries = []
        for doc in docs:
            text = embed_text(doc)
            entries.append(Entry(doc.id, doc.user, doc.kind, doc.status, content_hash(text), text))
        for entry in self.catalog.enqueue(entries):
            self.index.set_status(entry.doc_id, entry.status)

    def remove(self, doc_ids: Iterable[str]) -> None:
        ids = list(doc_ids)
        self.catalog.remove(ids)
        for doc_id in ids:
            self.index.remove(doc_id)

    def clear(self) -> None:
        self.catalog.clear()
        self.index = VectorIndex(self.embedder.dim)

    def retain(self, doc_ids: Collection[str]) -> None:
        """Remove every document but ``doc_ids``, embedded or waiting (one by one: for the
        few left behind, not to empty the queue)."""
        known = {row[0] for row in self.catalog.embedded()}
        known.update(entry.doc_id for entry in self.catalog.pending(self.catalog.pending_count()))
        self.remove(known.difference(doc_ids))

    def drain(
        self,
        *,
        batch: int = BATCH,
        progress: Callable[[int, int], None] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> int:
        """Embed queued documents until the queue is empty (or ``stop()`` says so), one
        batch at a time so a caller can interleave other work. Returns how many."""
        done = 0
        total = done + self.catalog.pending_count()
        while not (stop is not None and stop()):
            entries = self.catalog.pending(batch)
            if not entries:
                break
            vectors = embed_cached(
                self.embedder, self.cache, [e.text or "" for e in entries], batch_size=32
            )
            for entry, vector in zip(entries, vectors, strict=True):
                self.index.upsert(entry.doc_id, entry.user, entry.kind, entry.status, vector)
            self.catalog.mark_embedded(entries)
            done += len(entries)
            if progress is not None:
                progress(done, total)
        return done
