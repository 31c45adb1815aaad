"""The composition root: configuration → store → indexes → services. The only place objects
are wired; the command line and the language server ask it for what they need.

- ``App.store`` is the calling thread's connection to the store (one per thread: the
  language server answers slow requests in worker threads and indexes in another).
- ``App.keeper`` keeps the search indexes (``services.retrieval.keeper.IndexKeeper``).
- ``App.snapshot()`` is a request's read view and builds the services over it.

With ``background`` (the language server) a background thread owns the vaults and the
vector side: it scans the vaults and starts the embedding helper (the model runs in a process
of its own, stopped when idle), and requests only read what it has published. Without it (the
command line) the first read scans the vaults and the first search loads the model.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable, Iterator
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsp_memory.app.snapshot import Snapshot
from lsp_memory.config import Config
from lsp_memory.errors import UserError
from lsp_memory.notes import Vault
from lsp_memory.services.retrieval.embedding import VECTOR_FILE, VectorSide
from lsp_memory.services.retrieval.keeper import IndexKeeper, IndexReport
from lsp_memory.services.retrieval.search import HybridSearch, QueryVectors, search_records
from lsp_memory.store.catalog import VectorCatalog
from lsp_memory.store.fulltext import FullTextIndex, open_index
from lsp_memory.store.sqlite import Store, open_store
from lsp_memory.store.vectors import DeferredEmbedder, Embedder, TextEmbedder, VectorCache

if TYPE_CHECKING:
    from lsp_memory.notes.files import NoteFiles
    from lsp_memory.services.conversations.ingest import Ingester
    from lsp_memory.services.conversations.recall import Conversations, RecallCache
    from lsp_memory.services.memory.classify import Classifier
    from lsp_memory.services.memory.consolidate import Consolidation
    from lsp_memory.services.memory.interchange import ImportSummary
    from lsp_memory.services.memory.records import Records
    from lsp_memory.services.memory.review import Review

# Every service but the indexes' is imported where it is built (as in ``snapshot``): a
# command line process imports what its command uses, not every room of ``services``.

__all__ = ["App", "IndexReport", "Snapshot"]

PAGES = "pages"
"""The folder of generated record pages, inside the store's index folder (one subfolder per
user: two users' records may share a friendly id)."""


_UNWRITABLE = (
    ("no space left", "the disk is full"),
    ("disk is full", "the disk is full"),
    ("read-only file system", "it is read-only"),
    ("readonly", "it is read-only"),
    ("permission denied", "it cannot be written"),
    # tantivy hides the io::Error of a writer thread that died mid-write behind this
    # (the folder is writable, or no writer would have been taken): the disk filled up.
    ("worker thread encountered an error", "its writer failed (most likely the disk is full)"),
)


def unwritable(error: BaseException) -> str | None:
    """Why a write to the cache failed, when it is the disk or folder refusing it: "the disk
    is full", "it is read-only"; None for any other error."""
    text = str(error).lower()
    for words, said in _UNWRITABLE:
        if words in text:
            return said
    return None


EMBED_AT_ONCE = 256
"""The most documents a command embeds before answering; more wait for ``index``."""


class _ModelAhead(threading.Thread):
    """The embedding model loading in a thread: ``loaded`` is the model, or what the load
    raised, once the thread has ended."""

    def __init__(self, load: Callable[[], TextEmbedder]) -> None:
        # Not a daemon: the interpreter waits for it at exit. A daemon thread still inside
        # onnxruntime when the process ends aborts it ("terminate called without an
        # active exception", exit 134: a `claim add` that needed no vector).
        super().__init__(name="lsp-memory model")
        self._load = load
        self.loaded: TextEmbedder | BaseException | None = None

    def run(self) -> None:
        try:
            self.loaded = self._load()
        except BaseException as error:  # raised again in the thread that asks for it
            self.loaded = error


class App:
    """Services for one user over one store, each opened on first use."""

    def __init__(self, config: Config, *, background: bool = False) -> None:
        self.config = config
        self.background = background
        self.warnings: list[str] = []
        self._cache_warned = False
        self._local = threading.local()
        self._stores: list[Store] = []
        self._lock = threading.Lock()
        self._scanned = background  # a background thread scans the vaults, not the reads
        self._model_ahead: _ModelAhead | None = None
        self._model_deferred = False

    @cached_property
    def recalls(self) -> RecallCache:
        """Passive recall made ahead, for this process's blocks."""
        from lsp_memory.services.conversations.recall import RecallCache

        return RecallCache()

    @property
    def store(self) -> Store:
        """This thread's connection to the store, opened on its first use."""
        store: Store | None = getattr(self._local, "store", None)
        if store is None:
            store = open_store(self.config.store, busy_timeout_ms=self.config.busy_timeout_ms)
            self._local.store = store
            with self._lock:
                self._stores.append(store)
        return store

    @cached_property
    def vaults(self) -> list[Vault]:
        """The vaults, each with its last scan saved in the cache folder (a new process
        reads only the notes changed since)."""
        excludes = self.config.excludes
        vaults = []
        for root in self.config.vaults:
            key = hashlib.sha1(repr((str(root.resolve()), tuple(excludes))).encode())
            saved = self.config.cache / "vaults" / f"{key.hexdigest()[:16]}.scan"
            vaults.append(Vault(root, excludes=excludes, saved=saved))
        return vaults

    # -- derived indexes --------------------------------------------------------------------

    @cached_property
    def index_folder(self) -> Path:
        """This store's indexes in the cache folder: one folder per store path."""
        key = hashlib.sha1(str(self.config.store.resolve()).encode()).hexdigest()[:16]
        return self.config.cache / "indexes" / key

    @property
    def pages(self) -> Path:
        """Where go-to-definition writes this user's records' read-only pages: a folder of
        their own, so another user's page of the same friendly id is another file."""
        user = hashlib.sha1(self.config.user.encode()).hexdigest()[:16]
        return self.index_folder / PAGES / user

    @cached_property
    def text_index(self) -> FullTextIndex:
        try:
            opened = open_index(self.index_folder / "fulltext")
        except (OSError, ValueError) as error:
            raise UserError(
                f"cannot open the search index in {self.index_folder}: {error}"
            ) from None
        if opened.distrusted:
            self.warnings.append(f"search index: {opened.distrusted}; rebuilt")
        return opened

    @cached_property
    def vectors(self) -> VectorSide | None:
        """The vector side, or None (with a warning) when the model cannot be loaded: text
        search keeps working without it. In the language server only the indexing thread
        opens it (its queue is that thread's SQLite connection)."""
        from lsp_memory.store.vectors import ModelError

        try:
            embedder = self._embedder()
        except ModelError as error:
            self.warnings.append(f"{error}; searching by text only")
            return None
        try:
            side = VectorSide(
                VectorCatalog(self.index_folder / "queue.sqlite3"),
                VectorCache(self.config.cache / "vectors.sqlite3"),
                embedder,
                file=self.index_folder / VECTOR_FILE,
            )
            if side.catalog.distrusted:
                self.warnings.append(f"embedding queue: {side.catalog.distrusted}; rebuilt")
            self.warnings += side.cache.warnings
            side.load()
            self.warnings += side.warnings
        except (OSError, sqlite3.Error) as error:
            # The one cache warning of the process: the index sync that opened it (to queue
            # what it writes) would otherwise warn a second time on the same disk.
            self._cache_warning(
                "cannot open the vector index: "
                f"{getattr(error, 'strerror', None) or error}; searching by text only"
            )
            return None
        return side

    def _embedder(self) -> TextEmbedder:
        """The embedding model: in a helper process for the language server (the model
        leaves its memory when idle: ``store.embedhelper``), unless ``embed_idle_seconds`` is
        0; in this process for the command line, where a spawn would cost more than it saves."""
        idle = self.config.embed_idle_seconds
        if self.background and idle > 0:
            from lsp_memory.store.embedhelper import RemoteEmbedder

            return RemoteEmbedder.start(self.config.model, idle_seconds=idle)
        ahead = self._model_ahead
        if ahead is not None:
            ahead.join()
            self._model_ahead = None
            if isinstance(ahead.loaded, BaseException):
                raise ahead.loaded
            if ahead.loaded is not None:
                return ahead.loaded
        if self._model_deferred and self.config.model is None:
            return DeferredEmbedder()
        return Embedder.load(self.config.model)

    def defer_model(self) -> None:
        """For a command that embeds nothing (``search --mode bm25``): the vector side opens
        with the default model deferred (``DeferredEmbedder``: loaded only if something is
        embedded after all), so the process imports no onnxruntime. A model set in
        ``model`` is still loaded when the side opens (its vector length is its own)."""
        self._model_deferred = True

    def load_model_ahead(self, *, helper: bool = False) -> None:
        """Start loading the embedding model in a thread, for a command line process that
        will search by meaning: onnxruntime builds its session (0.3–0.4 s) while the vaults
        are scanned and the full-text index opened. ``vectors`` takes it when first asked
        (a load that failed raises there, as it would have). Nothing happens when the model
        runs in a helper process (``background``), or once the vector side is open.

        ``helper``: for a process that lives on (the MCP server), the model is started in a
        helper process that stops when idle (``embed_idle_seconds``, as the language
        server's; 0 keeps it in this process): the server's idle memory holds no model."""
        if self.background or self._model_ahead is not None or "vectors" in self.__dict__:
            return
        model, idle = self.config.model, self.config.embed_idle_seconds
        if helper and idle > 0:
            from lsp_memory.store.embedhelper import RemoteEmbedder

            self._model_ahead = _ModelAhead(lambda: RemoteEmbedder.start(model, idle_seconds=idle))
        else:
            self._model_ahead = _ModelAhead(lambda: Embedder.load(model))
        self._model_ahead.start()

    @property
    def loaded_vectors(self) -> VectorSide | None:
        """The vector side if it is open (requests never open it themselves: loading the
        model takes the indexing thread a while, and until then search is by text)."""
        found: VectorSide | None = self.__dict__.get("vectors")
        return found

    @cached_property
    def keeper(self) -> IndexKeeper:
        """The search indexes' keeper: writes them when this process may, follows the
        writer otherwise (see ``services.retrieval.keeper``)."""
        return IndexKeeper(
            lambda: self.store, self.text_index, self.vaults, lambda: self.vectors, self.warnings
        )

    def count_claim_tokens(self) -> int:
        """Count the tokens of the claims that have no count yet (new or edited ones, every
        claim of a store just migrated), so that a context's, tag's or domain's hover reads
        its kept size whole; how many were counted (0 when the store is read-only)."""
        from lsp_memory.services.kernel.tokens import count_claims

        try:
            return count_claims(self.store)
        except UserError:
            return 0

    def refresh_indexes(self, *, embed: bool = True) -> None:
        """Bring the search indexes up to date with the store quietly, embedding only a
        short queue (a long one is ``index``'s job; none without ``embed``), or read the
        other writer's latest commit (a command line process, the MCP server)."""
        try:
            keeper = self.keeper
            if not keeper.writing:
                keeper.follow(scan=False)
                self._unwritable_index()
                return
            # Counted after the text sync has queued what changed: a store never indexed
            # (or an interrupted ``index``) queues everything, minutes of embedding.
            report = keeper.index(embed=embed, embed_at_most=EMBED_AT_ONCE)
            # That scanned every vault (its warnings are in ``warnings``): the snapshot
            # needs no second walk (10 000 notes: ~0.1 s of a command's second).
            self._scanned = True
        except (OSError, ValueError, RuntimeError, sqlite3.Error, UserError) as error:
            said = unwritable(error)
            if said is None:
                raise
            self._cache_warning(f"cannot update the search index: {said}; searching it as it was")
            return
        if report.pending > EMBED_AT_ONCE:
            self.warnings.append(
                f"{report.pending} records and notes are not embedded yet, so they are "
                "found by their words only; run `lsp-memory index` to embed them"
            )

    def _unwritable_index(self) -> None:
        """Say so when the index is read only because its folder cannot be written (not
        because another process writes it)."""
        said = self.text_index.unwritable
        if said is not None:
            self._cache_warning(f"cannot update the search index: {said}; searching it as it was")

    def _cache_warning(self, what: str) -> None:
        """One warning about the cache folder per process (even once the warnings said so
        far were printed and cleared)."""
        if self._cache_warned:
            return
        self._cache_warned = True
        self.warnings.append(f"cache {self.config.cache}: {what}")

    def cache_errors(self, error: BaseException) -> UserError | None:
        """A write to the cache that failed because its disk is full or read-only, as one
        line naming the cache; None for other errors."""
        said = unwritable(error)
        return None if said is None else UserError(f"cache {self.config.cache}: {said}")

    def status(self) -> dict[str, Any]:
        """What this memory holds and where (``lsp-memory status``): the user's records,
        the vaults' notes, and the search indexes' embedded and pending documents (read from
        the embedding queue: no model is loaded)."""
        found: dict[str, Any] = {"user": self.config.user, **self.store.counts(self.config.user)}
        self.snapshot()  # scans the vaults
        found["notes"] = sum(len(vault.view().notes) for vault in self.vaults)
        queue = self.index_folder / "queue.sqlite3"
        embedded = pending = 0
        if queue.exists():
            try:
                catalog = VectorCatalog(queue)
            except (OSError, sqlite3.Error) as error:
                said = unwritable(error) or str(error)
                self._cache_warning(f"cannot read the embedding queue: {said}")
            else:
                try:
                    embedded, pending = catalog.counts()
                finally:
                    catalog.close()
        found["index"] = {"embedded": embedded, "pending": pending}
        found["paths"] = {
            "store": str(self.store_file),
            "index": str(self.index_folder),
            "vaults": [str(root) for root in self.config.vaults],
        }
        return found

    # -- reading and writing ----------------------------------------------------------------

    @property
    def store_file(self) -> Path:
        """The store's SQLite file (what ``import`` names as written into)."""
        return self.store.path

    def import_records(
        self, data: bytes, *, source: str, progress: Callable[[str, int, int], None] | None = None
    ) -> ImportSummary:
        """Import a JSONL file's records for this user, all or none (``import``)."""
        from lsp_memory.services.memory.interchange import import_records

        return import_records(
            self.store, data, user=self.config.user, source=source, progress=progress
        )

    def export_records(self) -> Iterator[str]:
        """This user's records as JSONL lines (``export``)."""
        from lsp_memory.services.memory.interchange import export_records

        return export_records(self.store, self.config.user)

    def search_records(self, query: str, **options: Any) -> list[dict[str, Any]]:
        """``search.search_records`` (its options: kinds, statuses, k, mode, diverse) over the
        indexes as they are — without scanning the vaults as a snapshot would (``search``,
        the MCP server's ``search_memory``)."""
        return search_records(self.hybrid_search(), self.store, self.config.user, query, **options)

    def records(self) -> Records:
        """Single-record writes (claim add, context add, retract) on this thread's store,
        without scanning the vaults as a snapshot would."""
        from lsp_memory.services.memory.records import Records

        return Records(
            self.store,
            self.config.user,
            self.classifier(),
            vectors=self._write_vectors,
            supersede=self.config.supersede,
        )

    def note_files(self) -> NoteFiles:
        """The vaults' note files, read and written one at a time, never outside a vault
        (the MCP server's note tools); a write is read again by its vault."""
        from lsp_memory.notes.files import NoteFiles

        return NoteFiles(self.vaults)

    def _write_vectors(self) -> VectorSide | None:
        """The vector side a write compares statements with: in the language server only
        once the indexing thread has loaded it (a write never waits for the model)."""
        return self.loaded_vectors if self.background else self.vectors

    def classifier(self) -> Classifier:
        """The claim classifier: the configured command, if any, else the built-in one; its
        warnings join ``warnings`` (the command line prints them), or in the language server
        (``background``) go to the log, since nothing there reads ``warnings`` again."""
        from lsp_memory.services.memory.classify import Classifier

        return Classifier(
            self.config.classifier_command,
            timeout_s=self.config.classifier_timeout_s,
            warn=None if self.background else self.warnings.append,
        )

    def consolidation(self) -> Consolidation:
        """Consolidation and its undoing for this user, with the vector side (in the language
        server, the indexing thread's: only that thread runs it)."""
        from lsp_memory.services.memory.consolidate import Consolidation

        side = self.loaded_vectors if self.background else self.vectors
        return Consolidation(self.store, self.config.user, side, decay=self.config.decay)

    def review(self) -> Review:
        """This user's review items and decisions, with the configured ``review_command``."""
        from lsp_memory.services.memory.review import Review

        return Review(
            self.store,
            self.config.user,
            command=self.config.review_command,
            timeout_s=self.config.review_timeout_s,
        )

    def ingester(self) -> Ingester:
        """Conversation ingestion for this user: episodes, their references, extraction
        (the configured ``extractor_command``, if any), claims written like ``claim add``."""
        from lsp_memory.services.conversations.ingest import Ingester

        return Ingester(
            self.store,
            self.config.user,
            self.records(),
            lambda: self.snapshot().resolver(),
            command=self.config.extractor_command,
            timeout_s=self.config.extractor_timeout_s,
            warn=None if self.background else self.warnings.append,
        )

    def conversations(self) -> Conversations:
        """This user's conversations."""
        from lsp_memory.services.conversations.recall import Conversations

        return Conversations(
            self.store, self.config.user, lambda: self.snapshot().resolver(), self.recalls
        )

    def hybrid_search(self) -> HybridSearch:
        """Hybrid search over the indexes as they are: by text alone until the vector side
        is open (in the background mode, until the indexing thread has opened it)."""
        side = self.loaded_vectors if self.background else self.vectors
        if side is None:
            return HybridSearch(self.text_index)
        return HybridSearch(self.text_index, side.index, side.embedder, queries=self.query_vectors)

    @cached_property
    def query_vectors(self) -> QueryVectors:
        """This process's query embeddings, kept and started ahead (``search.QueryVectors``)."""
        return QueryVectors()

    def snapshot(self, *, indexed: bool = True) -> Snapshot:
        """A read view for the calling thread. ``indexed``: the full-text index has had its
        first sync and may be read (completion falls back to the store before)."""
        if not self._scanned:
            for vault in self.vaults:
                self.warnings += [w for w in vault.scan().warnings if w not in self.warnings]
            self._scanned = True
        return Snapshot(
            config=self.config,
            store=self.store,
            vaults=tuple(vault.view() for vault in self.vaults),
            text=(lambda: self.text_index) if indexed else None,
            searcher=self.hybrid_search,
            pages=self.pages,
            records=self.records,
            reviewer=self.review,
            conversations=self.conversations,
        )

    def close(self) -> None:
        side = self.loaded_vectors
        stop = getattr(side.embedder, "close", None) if side is not None else None
        if stop is not None:  # the embedding helper, if any, goes with the App
            stop()
        ahead, self._model_ahead = self._model_ahead, None
        if ahead is not None:  # started ahead, never taken: a helper goes too
            ahead.join()
            stop = getattr(ahead.loaded, "close", None)
            if stop is not None:
                stop()
        if "text_index" in self.__dict__:
            try:
                self.text_index.close()
            except (OSError, ValueError) as error:  # its last write failed (disk full)
                if unwritable(error) is None:
                    raise
        with self._lock:
            stores, self._stores = self._stores, []
        for store in stores:
            store.close()
