"""The vector side of indexing: queue documents for embedding, drain the queue in batches
(in the background in the server), and keep the vector index in step: a memory-mapped vector
file per store, written by the process that drains, with what changed since as an overlay.

New or changed documents are searchable by text at once (the full-text index) and
semantically once drained. Vectors are cached by content hash, so a document whose text did
not change is never embedded again, only re-filtered by its new status.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

import numpy as np

from lsp_memory.services.retrieval.documents import embed_text
from lsp_memory.store.catalog import Entry, VectorCatalog
from lsp_memory.store.fulltext import TextDoc
from lsp_memory.store.vectorfile import Stamp, Unusable, VectorFile
from lsp_memory.store.vectors import (
    TextEmbedder,
    VectorCache,
    VectorIndex,
    content_hash,
    embed_cached,
)

log = logging.getLogger(__name__)

BATCH = 64
VECTOR_FILE = "vectors.lmvf"
"""The vector file's name in a store's index folder, beside its queue and full-text index."""
_SCAN_FROM = 20_000
"""From this many embedded documents on, a rebuild reads the whole vector cache in order
instead of looking each vector up (see ``VectorCache.scan``)."""
REWRITE_AT_LEAST = 1024
REWRITE_SHARE = 0.02
"""After a drain the vector file is written anew once more than ``max(1024, 2 %)`` of its
rows changed since it was written: every process that opens it holds those changes in memory
(read from the vector cache at start), a rewrite costs about a second at 117k rows."""


class VectorSide:
    """The embedding queue, the vector cache and the vector index, for one model.

    With ``file`` the index searches that vector file (``store.vectorfile``) in place, with
    the documents changed since it was written as an in-memory overlay; the process that
    drains the queue writes it anew (``REWRITE_AT_LEAST``). Without, every vector is loaded.
    """

    def __init__(
        self,
        catalog: VectorCatalog,
        cache: VectorCache,
        embedder: TextEmbedder,
        file: Path | None = None,
    ) -> None:
        self.catalog = catalog
        self.cache = cache
        self.embedder = embedder
        self.file = file
        self.index = VectorIndex(embedder.dim)
        self.warnings: list[str] = []
        # The queue's generation the index was last brought up to (``load``); this
        # process's own writes since are in it too, other processes' are not.
        self._seen = -1

    def _warn(self, message: str) -> None:
        log.warning("%s", message)
        self.warnings.append(message)

    def load(self) -> int:
        """Open the index of every embedded document: the vector file mapped, with what
        changed since it was written read from the queue and the vector cache; or, when
        there is no usable file, every cached vector read (and the file written). Documents
        whose vector is gone from the cache leave the catalog: they are searched by text
        until they change or ``lsp-memory index --full`` embeds them again. Returns the count
        of documents with vectors."""
        mapped = self._open_file()
        if mapped is None:
            return self._rebuild()
        (token, generation), changed, gone = self.catalog.changes(mapped.stamp.generation)
        if mapped.stamp.token != token or mapped.stamp.generation > generation:
            mapped.close()
            if not self.catalog.recreated:  # else the queue's own warning says it all
                self._warn(f"vector file {self.file}: written for another embedding queue; rebuilt")
            return self._rebuild()
        index = VectorIndex.over(mapped)
        for doc_id in gone:
            index.remove(doc_id)
        for doc_id, *_ in (row for row in changed if not row[5]):
            index.remove(doc_id)  # waiting for a new vector: searched by text meanwhile
        embedded = [row for row in changed if row[5]]
        found = self.cache.get_many(self.embedder.model_id, {row[4] for row in embedded})
        lost = []
        for doc_id, user, kind, status, key, _ in embedded:
            vector = found.get(key)
            if vector is None or vector.shape != (self.embedder.dim,):
                index.remove(doc_id)
                lost.append(doc_id)
            else:
                index.upsert(doc_id, user, kind, status, vector)
        self.catalog.remove(lost)
        self.index, self._seen = index, generation
        return len(index)

    def _open_file(self) -> VectorFile | None:
        """The vector file, if there is one and it may be used (else a warning)."""
        if self.file is None:
            return None
        try:
            return VectorFile(self.file, self.embedder.model_id, self.embedder.dim)
        except FileNotFoundError:
            return None
        except (Unusable, OSError) as error:
            self._warn(f"vector file: {getattr(error, 'strerror', None) or error}; rebuilt")
            return None

    def _rebuild(self) -> int:
        """Read every embedded document's vector from the cache into the index, then write
        the vector file from it (and search that instead)."""
        (token, generation), rows, _ = self.catalog.changes(-1)
        entries = [row[:5] for row in rows if row[5]]
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
        self._seen = self.catalog.covered(generation)
        self._save(token, self._seen)
        return len(kept)

    def _save(self, token: str, generation: int) -> None:
        """Write the index to the vector file stamped with the queue's state (when it has
        one); a cache folder that cannot be written leaves the index as it is."""
        if self.file is None:
            return
        stamp = Stamp(self.embedder.model_id, self.embedder.dim, token, generation)
        try:
            self.index.save(self.file, stamp)
        except (OSError, Unusable) as error:
            said = getattr(error, "strerror", None) or error
            self._warn(f"cannot write the vector file {self.file}: {said}; vectors kept in memory")

    def compact(self) -> bool:
        """Write the vector file anew when enough changed since it was written
        (``REWRITE_AT_LEAST``), or when there is none and the index holds anything. Whether
        it was written."""
        if self.file is None:
            return False
        base = self.index.base
        if base is None:
            due = len(self.index) > 0
        else:
            changed = self.catalog.changed_since(base.stamp.generation)
            due = changed > max(REWRITE_AT_LEAST, REWRITE_SHARE * base.count)
        if not due:
            return False
        # Stamped with what the index holds: documents another process embedded since
        # this one loaded are not in it, and the next reader must apply them from the queue.
        token, _ = self.catalog.state()
        self._seen = self.catalog.covered(self._seen)
        self._save(token, self._seen)
        return True

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
        self._seen = self.catalog.clear()
        self.index = VectorIndex(self.embedder.dim)
        if self.file is not None:
            self.file.unlink(missing_ok=True)  # stale now: the next drain writes it anew

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
        # Also when nothing needed embedding: a status-only change (a full rebuild of the
        # same texts, a consolidation) moves every row past the file's generation, and each
        # later process would read them all back from the vector cache (8 s at 117k rows).
        self.compact()
        return done
