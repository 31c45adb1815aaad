"""Hybrid retrieval: BM25 from the full-text index fused with cosine similarity from the
vector index, with user/kind/status filters, a confidence floor, recency as a signal and,
on request, near-duplicates kept once.

Fusion was chosen by measurement on LoCoMo (``python -m benchmarks.locomo --study``,
docs/benchmarks.md): per-query min-max normalisation of both scores over the union of the two
candidate lists (100 from each), then 0.6·cosine + 0.4·BM25 (0.5 each for an episode).
Reciprocal-rank fusion and z-scores were measured too. Every hit carries its signals so
callers (the context assembler) can rank by their own formula.

The relevance floor (``min_similarity``, raw cosine between the query's embedding and a
hit's): a search whose best candidate is below it finds nothing; one that reaches it keeps the
hits down to ``FLOOR_MARGIN`` below it, whichever retriever found them (a BM25 hit is judged by
its cosine too; a search by BM25 alone has no floor: it does not embed the query). A lexical
match — a hit whose title or body holds every word of the query, stop words aside, or whose
title has a word starting with each (``postgres``: "PostgreSQL") — passes whatever its cosine
(``zebracorn``, ``milestones``: a keyword is its own evidence).
Measured on LoCoMo (``python -m benchmarks.locomo --floor``): a floor on each hit alone cost
0.014 nDCG@10 where this costs 0.006 at the same no-answer rate; the
lexical rule never fires on its questions (no claim holds "when did … "), while a looser one
(half the words) only traded no-answers for recall. Episodes have a lower floor and a wider
margin (``EPISODE_FLOOR_BELOW``, ``EPISODE_FLOOR_MARGIN``: a chat turn is further from a
question than a claim is); a search over several kinds finds something when any hit reaches
its kind's floor, then keeps each hit by its kind's margin. Without vectors (no model, nothing
embedded yet) there is no floor: text search keeps working.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from lsp_memory.ids import seconds, stamp_at
from lsp_memory.model import LIVE_STATUSES, doc_key
from lsp_memory.services.kernel.asof import claims_then, live_then
from lsp_memory.store.fulltext import FullTextIndex, TextHit
from lsp_memory.store.sqlite import Store
from lsp_memory.store.vectors import TextEmbedder, VectorIndex

Mode = Literal["hybrid", "bm25", "dense"]
Fusion = Literal["minmax", "rrf", "zscore"]

DENSE_WEIGHT = 0.6
"""Weight of the normalised cosine in min-max fusion (BM25 gets the rest); see module doc."""
EPISODE_DENSE_WEIGHT = 0.5
"""The same for an episode: a chat turn's embedding is a weaker match for a question than a
claim's (LoCoMo, dense alone: episodes 0.36, claims 0.59). Hybrid nDCG@10 over LoCoMo's turns,
tuned / held-out conversations (docs/benchmarks.md): 0.4 → 0.530 / 0.544, 0.5 → 0.534 /
0.547, 0.6 → 0.522 / 0.540."""
DUPLICATE_COSINE = 0.8
"""Hits closer than this to a better hit are near-duplicates, kept once."""
RECENCY_HALF_LIFE_DAYS = 30.0
POOL = 100
"""Candidates taken from each retriever before fusion (at least 5·k)."""
_RRF_K = 60
FLOOR_MARGIN = 0.05
"""How far below the relevance floor a hit may be once the best one reaches it (see module)."""
EPISODE_FLOOR_BELOW = 0.04
"""How much lower the relevance floor is for an episode than ``min_similarity``: a chat turn is
further from a question, in cosine, than a claim is. At 0.51 − 0.04 a question asked of another
LoCoMo conversation's messages finds none 91 % of the time, as the claims' 0.51 does for
claims; the claims' floor cost episodes 0.11 nDCG@10, this 0.024 (docs/benchmarks.md)."""
EPISODE_FLOOR_MARGIN = 0.2
"""``FLOOR_MARGIN`` for an episode: once one hit reaches its floor, episodes down to this far
below it are kept (an answer's turn is often far, in cosine, from the question's)."""


@dataclass(frozen=True, slots=True)
class Hit:
    """A ranked result with the signals it was ranked by."""

    id: str
    kind: str
    key: str  # a friendly id, or a note's vault-relative path
    title: str
    snippet: str
    status: str
    score: float  # the fused score this search ranked by
    bm25: float  # raw BM25 (0 when the text index did not return it)
    similarity: float  # cosine with the query (0 without vectors)
    confidence: float
    recency: float  # 1 for now, halving every RECENCY_HALF_LIFE_DAYS
    updated: int = 0  # when it last changed, seconds since the epoch (0: unknown)


KINDS = ("claim", "context", "entity", "note", "episode")
"""Every kind of document the search indexes hold."""

SCOPES: Mapping[str, tuple[str, ...]] = {
    "claim": ("claim",),
    "note": ("note",),
    "episode": ("episode",),
    "claim+episode": ("claim", "episode"),
    "all": KINDS,
}
"""What each search scope searches, the same at every door: ``search --kind``,
``lspMemory.search`` (which then drops what it cannot insert as a reference: see
``REFERABLE``) and MCP ``search_memory``'s ``search_type`` (``facts`` is ``claim``)."""

REFERABLE = ("claim", "context", "entity", "note")
"""The kinds a document can reference (an episode has no reference to insert)."""


SHOWN_STATUSES: tuple[str, ...] = (*(s.value for s in LIVE_STATUSES), "archived")
"""What a search shows unless asked for every status: live claims (and contexts, entities),
and notes whether archived or not (an archived note is still yours to find)."""


def hit_record(hit: Hit, store: Store, user: str) -> dict[str, Any]:
    """A hit as JSON, the same from ``lsp-memory search --json`` and ``lspMemory.search``:
    its signals, and ``reference``, the text that names it in a document (``@friendly_id``,
    ``[[Title]]``); a claim adds its ``number``, a note its ``path`` in its vault."""
    record: dict[str, Any] = {
        "id": hit.id,
        "kind": hit.kind,
        "key": hit.key,
        "reference": _reference(hit),
        "title": hit.title,
        "snippet": hit.snippet,
        "status": hit.status,
        "score": round(hit.score, 4),
        "bm25": round(hit.bm25, 4),
        "similarity": round(hit.similarity, 4),
        "confidence": hit.confidence,
        "recency": round(hit.recency, 4),
        # When it was last true: a claim's or record's last change, a message's time, a
        # note file's last modification.
        "timestamp": stamp_at(hit.updated) if hit.updated else None,
    }
    if hit.kind == "claim":
        claim = store.claim_by_uuid(user, doc_key(hit.id))
        record["number"] = claim.number if claim is not None else None
        if claim is not None:  # the store's word: consolidation re-indexes only what matters
            record["confidence"] = claim.confidence
            record["status"] = claim.status.value
    elif hit.kind == "note":
        record["path"] = hit.key
    return record


def _reference(hit: Hit) -> str | None:
    """How a document names the hit; None for an episode, which no reference names."""
    if hit.kind == "note":
        return f"[[{hit.title}]]"
    if hit.kind == "episode":
        return None
    return f"@{hit.key}"


def recency(updated: int, now: float) -> float:
    """An exponential decay of age: 1.0 now, 0.5 after the half-life."""
    age_days = max(0.0, now - updated) / 86_400
    return math.pow(0.5, age_days / RECENCY_HALF_LIFE_DAYS)


def _minmax(values: dict[str, float]) -> dict[str, float]:
    if not values:
        return {}
    low, high = min(values.values()), max(values.values())
    if high - low < 1e-12:
        return dict.fromkeys(values, 1.0)
    return {key: (value - low) / (high - low) for key, value in values.items()}


def _zscore(values: dict[str, float]) -> dict[str, float]:
    if len(values) < 2:
        return dict.fromkeys(values, 0.0)
    array = np.fromiter(values.values(), dtype=np.float64)
    mean, std = float(array.mean()), float(array.std()) or 1.0
    return {key: (value - mean) / std for key, value in values.items()}


QUERIES_KEPT = 256
"""Query texts whose embeddings a process keeps (``QueryVectors``: 1.5 KiB each)."""
EMBEDDING_THREADS = 4
"""Queries embedded at once beside their full-text searches (a server's request threads)."""


class QueryVectors:
    """A process's query embeddings: the last ``QUERIES_KEPT`` texts' vectors, by model, and
    the embedding of a new one started on a thread of its own, so that a search runs its
    full-text half while the model (a round trip to the embedding helper in a server)
    embeds the query. An agent asks the same words again (another ``search_type``, a retry)
    and gets the kept vector: the same model gives the same vector for the same text. A text
    is kept by its digest, not itself: a context block's query is its whole document, and
    every edit of a long one is a new text."""

    def __init__(self, kept: int = QUERIES_KEPT) -> None:
        self._kept: OrderedDict[tuple[str, bytes], npt.NDArray[np.float32]] = OrderedDict()
        self._size = kept
        self._lock = threading.Lock()
        self._threads: ThreadPoolExecutor | None = None

    def start(self, embedder: TextEmbedder, query: str) -> Callable[[], npt.NDArray[np.float32]]:
        """What returns ``query``'s vector: at once when kept, else waiting for its embedding,
        started now (an embedding error is raised there, as ``embed`` raises it)."""
        key = (embedder.model_id, _digest(query))
        with self._lock:
            vector = self._kept.get(key)
            if vector is not None:
                self._kept.move_to_end(key)
                return lambda: vector
            if self._threads is None:
                self._threads = ThreadPoolExecutor(
                    EMBEDDING_THREADS, thread_name_prefix="lsp-memory-query"
                )
            future = self._threads.submit(embedder.embed, [query])

        def result() -> npt.NDArray[np.float32]:
            found: npt.NDArray[np.float32] = future.result()[0]
            found.flags.writeable = False  # shared by every search of these words
            with self._lock:
                self._kept[key] = found
                while len(self._kept) > self._size:
                    self._kept.popitem(last=False)
            return found

        return result


def _digest(text: str) -> bytes:
    """A text's key among the kept queries (``store.vectors.content_hash`` refuses the lone
    surrogates an editor's document may hold)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class HybridSearch:
    """Search over one full-text index and (optionally) one vector index.

    Without vectors (no model, or not embedded yet) ``hybrid`` falls back to BM25, so text
    search keeps working. ``bm25`` never embeds the query: no cosine, no relevance floor.
    """

    def __init__(
        self,
        text: FullTextIndex,
        vectors: VectorIndex | None = None,
        embedder: TextEmbedder | None = None,
        *,
        fusion: Fusion = "minmax",
        dense_weight: float | None = None,
        pool: int = POOL,
        floor_margin: float | None = None,
        queries: QueryVectors | None = None,
    ) -> None:
        """``queries``: where query embeddings are kept and started ahead (None: each is
        embedded when the search needs it)."""
        self.text = text
        self.vectors = vectors
        self.embedder = embedder
        self.queries = queries
        self.fusion = fusion
        self.dense_weight = dense_weight
        self.pool = pool
        self.floor_margin = floor_margin  # None: each kind's (``_lowest``)

    @property
    def semantic(self) -> bool:
        return self.vectors is not None and self.embedder is not None and len(self.vectors) > 0

    def query_vector(self, query: str) -> npt.NDArray[np.float32]:
        """``query``'s embedding: the one its last search kept (``QueryVectors``), else
        embedded now."""
        if self.embedder is None:
            raise ValueError("no embedding model")
        if self.queries is not None:
            return self.queries.start(self.embedder, query)()
        found: npt.NDArray[np.float32] = self.embedder.embed([query])[0]
        return found

    def search(
        self,
        query: str,
        *,
        user: str,
        kinds: Collection[str] | None = None,
        statuses: Collection[str] | None = None,
        k: int = 10,
        mode: Mode = "hybrid",
        min_confidence: float = 0.0,
        diverse: bool = False,
        now: float | None = None,
        query_vector: npt.ArrayLike | None = None,
        min_similarity: float | None = None,
    ) -> list[Hit]:
        """The ``k`` best records for ``query`` of ``user`` (notes are everyone's).

        ``diverse`` keeps near-duplicates (cosine > 0.8 to a better hit) once: what a context
        block wants; off by default because a search list should show every match (it costs
        0.01 nDCG@10 on LoCoMo, whose repeated observations each count as relevant).
        ``query_vector``: the query's embedding when the caller has it already (the context
        assembler also ranks claims the search did not return by it). ``min_similarity``:
        the relevance floor (module doc); None for none."""
        if not query.strip() or k <= 0:
            return []
        moment = time.time() if now is None else now
        # BM25 alone is a search by the words: the query is not embedded (a process that
        # searches so never loads the model), so there is no cosine and no floor.
        floor = min_similarity if self.semantic and mode != "bm25" else None
        # BM25 alone ranks by its own order: k candidates suffice; fusion needs a pool.
        pool = k if mode == "bm25" else max(self.pool, 5 * k)
        if mode == "dense" and not self.semantic:
            return []
        vectors = self.vectors
        embedder = self.embedder
        wanted = mode != "bm25"  # a search by the words alone embeds no query
        # The query is embedded while the full-text index is searched.
        ahead: Callable[[], npt.NDArray[np.float32]] | None = None
        if wanted and self.semantic and embedder is not None and self.queries is not None:
            ahead = self.queries.start(embedder, query) if query_vector is None else None
        bm25: dict[str, float] = {}
        fields: dict[str, TextHit] = {}
        if mode != "dense":
            for found in self.text.search(
                query, user=user, kinds=kinds, statuses=statuses, k=pool, snippets=False
            ):
                bm25[found.id] = found.score
                fields[found.id] = found
        cosine: dict[str, float] = {}
        if wanted and self.semantic and vectors is not None and embedder is not None:
            if query_vector is None:
                query_vector = ahead() if ahead is not None else embedder.embed([query])[0]
            for doc_id, score in vectors.search(
                query_vector, k=pool, user=user, kinds=kinds, statuses=statuses
            ):
                cosine[doc_id] = score
            missing = [doc_id for doc_id in bm25 if doc_id not in cosine]
            cosine.update(vectors.similarity(missing, query_vector))
        # Exact lexical matches pass the floor: what was typed is what was written.
        exact = (
            self.text.holding_every_word(query, list(dict.fromkeys([*bm25, *cosine])))
            if floor is not None
            else set()
        )
        lowest: dict[str, float] = {}  # by kind: how low a hit's cosine may be
        if floor is not None:
            lowest = self._lowest(floor)
            if not any(score >= _floor(floor, _kind(d)) for d, score in cosine.items()):
                if not exact:
                    return []
                lowest = dict.fromkeys(lowest, math.inf)
        scores = self._fuse(mode, bm25, cosine)
        ranked = sorted(dict.fromkeys([*bm25, *cosine]), key=lambda d: (-scores.get(d, 0.0), d))
        near = vectors.vectors(ranked[: pool * 2]) if diverse and vectors is not None else {}
        hits: list[Hit] = []
        kept_vectors: list[np.ndarray] = []
        for start in range(0, len(ranked), 2 * k):
            # Stored fields only for what may be shown, a batch at a time.
            batch = ranked[start : start + 2 * k]
            fields.update(self.text.get([d for d in batch if d not in fields]))
            for doc_id in batch:
                hit = fields.get(doc_id)
                if hit is None or hit.confidence < min_confidence:
                    continue
                below = lowest.get(hit.kind, -math.inf)
                if cosine.get(doc_id, math.inf) < below and doc_id not in exact:
                    continue  # (not embedded yet: kept)
                vector = near.get(doc_id)
                if vector is not None and any(
                    float(np.dot(vector, other)) > DUPLICATE_COSINE for other in kept_vectors
                ):
                    continue
                if vector is not None:
                    kept_vectors.append(vector)
                hits.append(
                    Hit(
                        id=doc_id,
                        kind=hit.kind,
                        key=hit.key,
                        title=hit.title,
                        snippet="",
                        status=hit.status,
                        score=scores.get(doc_id, 0.0),
                        bm25=bm25.get(doc_id, 0.0),
                        similarity=cosine.get(doc_id, 0.0),
                        confidence=hit.confidence,
                        recency=recency(hit.updated, moment),
                        updated=hit.updated,
                    )
                )
                if len(hits) == k:
                    break
            if len(hits) == k:
                break
        snippets = self.text.snippets(query, [hit.id for hit in hits])
        return [replace(hit, snippet=snippets.get(hit.id, "")) for hit in hits]

    def _fuse(
        self, mode: Mode, bm25: dict[str, float], cosine: dict[str, float]
    ) -> dict[str, float]:
        if mode == "bm25" or not cosine:
            return bm25
        if mode == "dense":
            return cosine
        ids = list(dict.fromkeys([*bm25, *cosine]))
        if self.fusion == "rrf":
            fused = dict.fromkeys(ids, 0.0)
            for scores in (bm25, cosine):
                for rank, doc_id in enumerate(sorted(scores, key=lambda d: -scores[d])):
                    fused[doc_id] += 1.0 / (_RRF_K + rank + 1)
            return fused
        full_bm25 = {d: bm25.get(d, 0.0) for d in ids}
        full_cos = {d: cosine.get(d, 0.0) for d in ids}
        norm = _zscore if self.fusion == "zscore" else _minmax
        text_part, dense_part = norm(full_bm25), norm(full_cos)
        weights = {d: self._weight(d) for d in ids}
        return {d: weights[d] * dense_part[d] + (1 - weights[d]) * text_part[d] for d in ids}

    def _lowest(self, floor: float) -> dict[str, float]:
        """Per kind, the lowest cosine a hit may have once the search reaches its floor."""
        return {
            kind: _floor(floor, kind)
            - (
                self.floor_margin
                if self.floor_margin is not None
                else EPISODE_FLOOR_MARGIN
                if kind == "episode"
                else FLOOR_MARGIN
            )
            for kind in KINDS
        }

    def _weight(self, doc_id: str) -> float:
        """The cosine's weight for this document: ``dense_weight`` when given, else its
        kind's (``EPISODE_DENSE_WEIGHT`` for an episode, ``DENSE_WEIGHT`` for the rest)."""
        if self.dense_weight is not None:
            return self.dense_weight
        return EPISODE_DENSE_WEIGHT if doc_id.startswith("episode:") else DENSE_WEIGHT


def _kind(doc_id: str) -> str:
    """The kind of a document, from its id (``episode:…``)."""
    return doc_id.partition(":")[0]


def _floor(floor: float, kind: str) -> float:
    """The relevance floor for a document of ``kind``: ``EPISODE_FLOOR_BELOW`` lower for an
    episode."""
    return floor - EPISODE_FLOOR_BELOW if kind == "episode" else floor


def search_records(
    search: HybridSearch,
    store: Store,
    user: str,
    query: str,
    *,
    kinds: Collection[str] | None,
    statuses: Collection[str] | None,
    k: int,
    mode: Mode = "hybrid",
    diverse: bool = False,
    min_similarity: float | None = None,
    as_of: str | None = None,
) -> list[dict[str, Any]]:
    """The hits of ``query`` as ``hit_record`` JSON: what every door's search answers, each
    door passing the configured relevance floor (``min_similarity``). With ``as_of`` (a
    stored moment: ``kernel.asof``), what the memory held then: ``search_then``."""
    options: dict[str, Any] = {
        "user": user,
        "kinds": kinds,
        "k": k,
        "mode": mode,
        "diverse": diverse,
        "min_similarity": min_similarity,
    }
    if as_of is not None:
        return search_then(search, store, query, as_of, statuses=statuses, **options)
    hits = search.search(query, statuses=statuses, **options)
    return [hit_record(hit, store, user) for hit in hits]


AS_OF_ROUNDS = 4
"""How many times a search as of a date asks for four times more hits when too many of them
did not exist then (or were not live then), before it answers with fewer than asked."""


def search_then(
    search: HybridSearch,
    store: Store,
    query: str,
    moment: str,
    *,
    statuses: Collection[str] | None,
    user: str,
    k: int,
    **options: Any,
) -> list[dict[str, Any]]:
    """The ``k`` best hits of ``query`` among what the memory held at ``moment``: each claim
    as it was then (``kernel.asof.claims_then``: its status and confidence then; left out
    if created later, or not of ``statuses`` then), episodes up to then; contexts, entities
    and notes as they are now. The indexes hold today's statuses, so the search asks for
    every status and more hits than ``k``, and keeps those that qualify."""
    wanted = k
    for _ in range(AS_OF_ROUNDS):
        pool = min(MAX_AS_OF_POOL, 4 * wanted + 10)
        hits = search.search(query, user=user, statuses=None, k=pool, **options)
        kept = _then(hits, store, user, moment, statuses)
        if len(kept) >= k or len(hits) < pool or pool == MAX_AS_OF_POOL:
            return kept[:k]
        wanted = pool
    return kept[:k]


MAX_AS_OF_POOL = 4000
"""The most hits a search as of a date looks through."""


def _then(
    hits: list[Hit], store: Store, user: str, moment: str, statuses: Collection[str] | None
) -> list[dict[str, Any]]:
    """``hits`` as ``hit_record`` JSON as they were at ``moment``, without those that did
    not exist then or were not of ``statuses`` then."""
    claim_ids = [doc_key(hit.id) for hit in hits if hit.kind == "claim"]
    now = {c.claim_id: c for c in store.claims_by_ids(user, claim_ids, links=False)}
    then = dict(zip(now, claims_then(store, user, list(now.values()), moment), strict=True))
    cutoff = seconds(moment)
    kept = []
    for hit in hits:
        if hit.kind == "claim":
            claim = then.get(doc_key(hit.id))
            if claim is None:
                continue
            if statuses is not None and (
                claim.status.value not in statuses
                or (claim.status in LIVE_STATUSES and not live_then(claim, moment))
            ):
                continue
            record = hit_record(hit, store, user)
            record["status"] = claim.status.value
            record["confidence"] = claim.confidence
            kept.append(record)
        elif hit.kind == "episode":
            if hit.updated <= cutoff:
                kept.append(hit_record(hit, store, user))
        elif statuses is None or hit.status in statuses:
            kept.append(hit_record(hit, store, user))
    return kept
