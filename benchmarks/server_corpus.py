"""The language-server benchmark's corpus, built once before any server starts.

The corpus is the search benchmark's (``benchmarks.search``, same seed, same generators):
the foundation benchmark's first user (100 000 claims, 2 000 contexts, 200 tags, 5 000
entities) imported into a store, and 10 000 generated Markdown notes as the one workspace
folder (vault). The full-text index is built before any server starts (``IndexKeeper.index``), and
every document gets a vector in the vector cache (a sample embedded for real, the rest noisy
copies, as the search benchmark does), so a server starts on an existing, fully embedded
index. With ``--cache DIR`` the corpus, store and indexes are kept under DIR and reused
(``prepare_in``: one folder per size and seed, shared by the benchmarks that use it).
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks.common import isolated_env
from benchmarks.foundation import UserData, generate_user
from benchmarks.search import fill_vectors, folder_bytes, generate_vault
from lsp_memory.app import App
from lsp_memory.config import Config
from lsp_memory.services.memory.interchange import import_records
from lsp_memory.services.retrieval.documents import embed_text
from lsp_memory.store.vectors import Embedder, FloatVector

USER = "bench"

CONTEXTS = 2000
ENTITIES = 5000
TAGS = 200
REAL_CLAIM_VECTORS = 256  # embedded for real while building; the rest are noisy copies
REAL_NOTE_VECTORS = 64


@dataclass(slots=True)
class Prepared:
    """A built corpus: where things are and what inputs are drawn from."""

    root: Path
    vault: Path
    store: Path
    xdg: Path
    claims: dict[str, Any]  # claim/context/entity/tag friendly ids, context levels
    titles: list[str]
    paths: list[str]
    build: dict[str, Any]
    reused: bool

    @property
    def cache(self) -> Path:
        """The server's cache folder: ``$XDG_CACHE_HOME/lsp-memory``."""
        return self.xdg / "cache" / "lsp-memory"

    def env(self, cache_home: Path | None = None) -> dict[str, str]:
        """The server's environment: settings from env, every XDG folder inside the corpus."""
        return isolated_env(self.xdg, self.store, USER, cache_home)


def prepare_in(base: Path, claims: int, notes: int, seed: int) -> Prepared:
    """``prepare`` in ``base``'s folder for this size and seed, so that the benchmarks given
    the same ``--cache`` share one corpus."""
    key = hashlib.sha1(f"{claims}-{notes}-{seed}".encode()).hexdigest()[:8]
    return prepare(base.resolve() / f"corpus-{key}", claims, notes, seed)


def prepare(root: Path, claims: int, notes: int, seed: int) -> Prepared:
    """The corpus under ``root``, built unless a complete one is there already."""
    meta = root / "corpus.json"
    vault, store, xdg = root / "vault", root / "store", root / "xdg"
    if meta.exists():
        data = json.loads(meta.read_text())
        return Prepared(
            root, vault, store, xdg, data["claims"], data["titles"], data["paths"],
            data["build"], reused=True,
        )  # fmt: skip
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    rng = random.Random(seed)  # the search benchmark's order: claims, then the vault
    started = time.perf_counter()
    user = generate_user(
        rng, user=None, claims=claims, contexts=CONTEXTS, entities=ENTITIES, tags=TAGS
    )
    corpus = generate_vault(rng, vault, notes, user)
    generated = time.perf_counter() - started
    prepared = Prepared(
        root, vault, store, xdg, _claim_inputs(user), corpus.titles, corpus.paths, {}, False
    )
    for folder in ("home", "cache", "config", "data", "state"):
        (xdg / folder).mkdir(parents=True, exist_ok=True)
    config = replace(
        Config(), store=store, cache=prepared.cache, user=USER, vaults=(vault.resolve(),)
    )
    app = App(config)
    started = time.perf_counter()
    import_records(app.store, user.data, user=USER, source="claims.jsonl")
    imported = time.perf_counter() - started
    started = time.perf_counter()
    report = app.keeper.index(full=True, embed=False)
    indexed = time.perf_counter() - started
    docs = list({d.id: d for d in report.text.docs}.values())
    started = time.perf_counter()
    real = _real_vectors(app, docs, rng)
    vectors = fill_vectors(app, docs, real, rng)
    filled = time.perf_counter() - started
    index_bytes = folder_bytes(app.index_folder / "fulltext")
    app.close()
    prepared.build = {
        "generate_s": generated,
        "import_s": imported,
        "index_s": indexed,
        "vectors_s": filled,
        "documents": len(docs),
        "vectors": vectors["vectors"],
        "vectors_real": vectors["real"],
        "note_bytes": corpus.bytes,
        "index_bytes": index_bytes,
    }
    meta.write_text(
        json.dumps(
            {
                "claims": prepared.claims,
                "titles": prepared.titles,
                "paths": prepared.paths,
                "build": prepared.build,
            }
        )
    )
    return prepared


def _claim_inputs(user: UserData) -> dict[str, Any]:
    return {
        "claim_fids": user.claim_fids,
        "context_fids": user.context_fids,
        "context_levels": user.context_levels,
        "entity_fids": user.entity_fids,
        "tag_fids": user.leaf_tag_fids,
    }


def _real_vectors(app: App, docs: Sequence[Any], rng: random.Random) -> dict[int, FloatVector]:
    """Real vectors for a sample of claims and notes (what ``fill_vectors`` copies)."""
    side = app.vectors
    if side is None:
        raise SystemExit(f"the embedding model cannot be loaded: {app.warnings}")
    claim_rows = [i for i, d in enumerate(docs) if d.kind == "claim"]
    note_rows = [i for i, d in enumerate(docs) if d.kind == "note"]
    rows = rng.sample(claim_rows, min(REAL_CLAIM_VECTORS, len(claim_rows)))
    rows += rng.sample(note_rows, min(REAL_NOTE_VECTORS, len(note_rows)))
    embedder: Embedder = side.embedder  # type: ignore[assignment]
    matrix = embedder.embed([embed_text(docs[i]) for i in rows])
    return dict(zip(rows, matrix, strict=True))
