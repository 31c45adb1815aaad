"""The automatic memories of a context block (docs/reference.md, The context block): claims
from the tiers in the configuration, ranked, near-duplicates of what is shown left out, and
the moment recency is measured from.

Automatic memories come from the tiers in the configuration (core, active, semantic,
recent); the semantic tier only claims that pass the relevance floor (``min_similarity``,
``services.retrieval.search``), and a warning when none does; only live claims (``active``,
``contested``) of confidence 0.5 or more, none already shown under another label. They are
ranked by ``0.6·similarity + 0.3·confidence + 0.1·recency`` (similarity: cosine between
the claim's stored embedding and the query's; with no embeddings, the semantic hits' BM25
over the best BM25, others 0), ties by claim number;
a claim whose embedding is closer than cosine 0.8 to a live claim already shown (any label),
or whose statement is the same text, is left out (a referenced superseded claim does not hide
its live successor).

Determinism: the same document and store give the same block, byte for byte. So "now" is
not the wall clock but the newest ``updated_at`` among the user's claims: recency is measured
from it and the active tier's window (14 days) ends at it. An unchanged store then gives the
same block tomorrow, and a store left alone for a month still has an "active" tier. Every
ordering breaks ties by claim number (or document order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

import numpy as np

from lsp_memory.config import TierSettings
from lsp_memory.ids import seconds, stamp_at
from lsp_memory.model import LIVE_STATUSES, MIN_CONFIDENCE, Claim, doc_id, doc_key
from lsp_memory.services.block.claims import claim_data, claim_line
from lsp_memory.services.block.pieces import MEMORY, P_AUTO, Build, Piece, fold
from lsp_memory.services.kernel.asof import LiveThen
from lsp_memory.services.retrieval.search import DUPLICATE_COSINE, HybridSearch, recency
from lsp_memory.store.sqlite import Store

WEIGHTS = (0.6, 0.3, 0.1)
"""Similarity, confidence and recency in an automatic memory's rank."""

_LIVE = tuple(status.value for status in LIVE_STATUSES)


def anchor(store: Store, user: str) -> float:
    """The moment recency is measured from: the user's newest claim update (the wall
    clock only for a user with no claims, when there is nothing to rank)."""
    stamp = store.last_update(user)
    if stamp is None:
        return datetime.now(UTC).timestamp()
    return seconds(stamp)


def add_automatic(
    build: Build,
    query: str,
    now: float,
    *,
    store: Store,
    user: str,
    tiers: TierSettings,
    load_search: Callable[[], HybridSearch | None] | None,
    min_similarity: float | None = None,
    then: LiveThen | None = None,
) -> None:
    """The automatic memories for ``query`` as AUTO claims, ``now`` (seconds since the
    epoch) the moment recency is measured from; ``load_search`` gives the hybrid search
    (without it, or without a query, the semantic tier is empty); ``min_similarity`` is
    the semantic tier's relevance floor (None: none). ``then``: a block as of a date — the
    claims live then as they were (``kernel.asof.live_claims_then``), which the tiers are
    read from instead of the store, and the only semantic hits kept."""
    shown = build.shown
    extra = min(len(shown), 50)
    candidates: dict[str, tuple[Claim, str]] = {}

    def take(tier: str, claims: Iterable[Claim], limit: int) -> None:
        taken = 0
        for claim in claims:
            if taken >= limit:
                break
            if claim.claim_id in shown:
                continue
            taken += 1
            candidates.setdefault(claim.claim_id, (claim, tier))

    core_limit = tiers.core.max + extra
    core_types = tuple(tiers.core.types)
    take(
        "core",
        then.newest(core_limit, types=core_types, min_confidence=MIN_CONFIDENCE)
        if then is not None
        else remembered(
            store,
            ("core", user, core_types, core_limit),
            lambda: store.claims_of_types(
                user, core_types, limit=core_limit, min_confidence=MIN_CONFIDENCE
            ),
        ),
        tiers.core.max,
    )
    since = None
    if tiers.active.days is not None:
        since = stamp_at(now - tiers.active.days * 86_400)
    active_limit = tiers.active.max + extra
    active_types = tuple(tiers.active.types)
    take(
        "active",
        then.newest(active_limit, types=active_types, since=since, min_confidence=MIN_CONFIDENCE)
        if then is not None
        else remembered(
            store,
            ("active", user, active_types, active_limit, since),
            lambda: store.claims_of_types(
                user,
                active_types,
                limit=active_limit,
                min_confidence=MIN_CONFIDENCE,
                since=since,
            ),
        ),
        tiers.active.max,
    )
    # Built even without a query: its vectors also find near-duplicates.
    search = load_search() if load_search is not None else None
    text_scores: dict[str, float] = {}
    query_vector = None
    if search is not None and query.strip() and tiers.semantic.max > 0:
        wanted = tiers.semantic.max + extra
        hits = search.search(
            query,
            user=user,
            kinds=("claim",),
            # As of a date the index holds today's statuses: ask for every claim, keep those
            # live then.
            statuses=_LIVE if then is None else None,
            k=wanted if then is None else THEN_POOL * wanted,
            min_confidence=MIN_CONFIDENCE if then is None else 0.0,
            now=now,
            min_similarity=min_similarity,  # the query embedded while its words are searched
        )
        if not hits and min_similarity is not None and search.semantic:
            # An LLM told "relevant memories" believes it: say that none was found.
            build.warn(
                f"no automatic memory reached the relevance floor (cosine {min_similarity:g}) "
                "for the query"
            )
        # The hits' claims in one query (one lookup each took ~6 ms a block), in hit order.
        if then is None:
            keys = [doc_key(h.id) for h in hits]
            by_id = {c.claim_id: c for c in store.claims_by_ids(user, keys)}
        else:
            by_id = then.of([doc_key(h.id) for h in hits], MIN_CONFIDENCE)
        claims = []
        for hit in hits:
            claim = by_id.get(doc_key(hit.id))
            if claim is not None:
                claims.append(claim)
                text_scores[claim.claim_id] = hit.bm25
        take("semantic", claims, tiers.semantic.max)
    recent_limit = tiers.recent.max + extra
    take(
        "recent",
        then.newest(recent_limit, min_confidence=MIN_CONFIDENCE)
        if then is not None
        else remembered(
            store,
            ("recent", user, recent_limit),
            lambda: store.newest_claims(user, limit=recent_limit, min_confidence=MIN_CONFIDENCE),
        ),
        tiers.recent.max,
    )
    if not candidates:
        return
    if query.strip() and search is not None and search.semantic:
        query_vector = search.query_vector(query)  # the search's, kept: embedded once
    ids = [doc_id("claim", claim_id) for claim_id in candidates]
    similarity: dict[str, float] = {}
    vectors: dict[str, Any] = {}
    if query_vector is not None and search is not None and search.vectors is not None:
        similarity = search.vectors.similarity(ids, query_vector)
    elif text_scores:
        best = max(text_scores.values()) or 1.0
        similarity = {doc_id("claim", k): v / best for k, v in text_scores.items()}
    if search is not None and search.vectors is not None:
        vectors = search.vectors.vectors([*ids, *(doc_id("claim", c) for c in shown)])
    weight_sim, weight_conf, weight_rec = WEIGHTS
    ranked: list[tuple[float, int, Claim, str, float, float]] = []
    for claim_id, (claim, tier) in candidates.items():
        sim = similarity.get(doc_id("claim", claim_id), 0.0)
        rec = recency(int(seconds(claim.updated_at)), now)
        score = weight_sim * sim + weight_conf * claim.confidence + weight_rec * rec
        ranked.append((round(score, 9), claim.number, claim, tier, sim, rec))
    ranked.sort(key=lambda row: (-row[0], row[1]))
    # A claim shown for not being live (a referenced superseded claim) must not hide
    # its live successor, however alike their texts.
    live = [c for c in shown.values() if c.status in LIVE_STATUSES]
    kept = _Kept([vectors[k] for c in live if (k := doc_id("claim", c.claim_id)) in vectors])
    kept_texts = {fold(c.statement).lower() for c in live}
    for score, _, claim, tier, sim, rec in ranked:
        text = fold(claim.statement).lower()
        vector = vectors.get(doc_id("claim", claim.claim_id))
        if text in kept_texts or (vector is not None and kept.closest(vector) > DUPLICATE_COSINE):
            continue
        kept_texts.add(text)
        if vector is not None:
            kept.add(vector)
        shown[claim.claim_id] = claim
        data = claim_data("AUTO", None, claim)
        data.update(
            tier=tier, score=round(score, 4), similarity=round(sim, 4), recency=round(rec, 4)
        )
        build.add(
            Piece(
                MEMORY,
                P_AUTO,
                "claim",
                doc_id("claim", claim.claim_id),
                claim_line("AUTO", claim),
                data,
            )
        )


THEN_POOL = 8
"""How many times more semantic hits a block as of a date asks for: the index ranks every
claim, and only those live then are kept."""


def remembered(store: Store, key: tuple[Any, ...], read: Callable[[], list[Claim]]) -> list[Claim]:
    """``read()``'s claims, read once per store change (``key`` names the query and its
    arguments): for what a block shows whatever its prompt — pinned claims, the typed and
    recent tiers — whose reads took ~20 ms of each block on 100k claims. A fresh list."""
    found: list[Claim] = store.remembered(("context tier", *key), read)
    return list(found)


class _Kept:
    """The vectors of the claims a block shows, for the near-duplicate check: one
    matrix-vector product per candidate, not a dot product per shown claim (~6 ms a block)."""

    def __init__(self, vectors: list[Any]) -> None:
        self._rows = list(vectors)
        self._matrix: Any = None

    def add(self, vector: Any) -> None:
        self._rows.append(vector)
        self._matrix = None

    def closest(self, vector: Any) -> float:
        """The highest cosine of ``vector`` with a kept one (-1 when none is kept)."""
        if not self._rows:
            return -1.0
        if self._matrix is None:
            self._matrix = np.array(self._rows, dtype=np.float32)
        return float(np.max(self._matrix @ np.asarray(vector, dtype=np.float32)))
