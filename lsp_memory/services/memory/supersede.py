"""Supersede on write: which of the user's live claims a new claim replaces.

Each claim type has a rule, chosen by the ``supersede`` setting or else the built-in one:

- ``similar`` (identity, preference, project-active, goal, constraint): the older claim says
  the same thing (cosine ≥ 0.85 between the statements), or fills the same slot of the same
  subject ("I live in Lyon", then "I moved to Berlin"; "My budget is £1,500", then "My
  budget is now £2,000"; see ``lsp_memory.slots``).
- ``person`` (relationship): the older claim says the same thing (cosine ≥ 0.85), or fills
  the same slot of the same person — the same person named at the start ("my sister Ana",
  "Ana") or a linked entity in common. "My sister Ana is a doctor" leaves "My sister Ana
  lives in Porto" alone: everything else about a person accumulates.
- ``all`` (emotional): every older claim of the type; the newest feeling wins.
- ``none`` (technical and every other type): claims of the type accumulate.

Only claims of the new claim's own type are candidates. The cosine test sees the vector
index's nearest claims and, for the type's newest claims the index has no vector for yet (a
command-line process embeds only at ``index``/``search``), vectors from the vector cache or
embedded on the spot, at most ``EMBED_AT_MOST`` a write (``_unindexed``). Single writes use
this (``services.memory.records``); an import never does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lsp_memory.model import LIVE_STATUSES, Claim, doc_id, doc_key
from lsp_memory.services.retrieval.embedding import VectorSide
from lsp_memory.slots import SOMEONE, USER, Person, fact, key_of
from lsp_memory.store.sqlite import Store

SIMILAR = 0.85
"""The cosine from which two statements of a type are the same statement."""

DEFAULT_RULES: Mapping[str, str] = {
    "identity": "similar",
    "preference": "similar",
    "project-active": "similar",
    "goal": "similar",
    "constraint": "similar",
    "relationship": "person",
    "emotional": "all",
}
"""The built-in rule of each claim type; a type left out has ``none``."""


def rule_for(claim_type: str, overrides: Mapping[str, str] | None = None) -> str:
    """The rule for ``claim_type``: the setting's, else the built-in one."""
    if overrides and claim_type in overrides:
        return overrides[claim_type]
    return DEFAULT_RULES.get(claim_type, "none")


def superseded(
    store: Store,
    user: str,
    claim: Claim,
    vectors: VectorSide | Callable[[], VectorSide | None] | None = None,
    overrides: Mapping[str, str] | None = None,
    *,
    query_vector: Any = None,
) -> list[Claim]:
    """The live claims of ``claim``'s type that ``claim`` supersedes, by number.

    ``vectors`` is the embedder and the vector index, or a function giving them, called only
    when a cosine is needed (loading the model takes a while). It may be, or give, None (no
    model, or not loaded yet): then the cosine test is skipped and only the slot rule
    applies. ``query_vector``: the statement's embedding, when the caller embedded a batch of
    statements at once.
    """
    rule = rule_for(claim.claim_type, overrides)
    if rule == "none":
        return []
    # The claims themselves are loaded only for those superseded: a type may have thousands
    # of live claims (loading each with its links took 0.4 s a write at 100k claims), so
    # each rule asks the store or the vector index for its few candidates.
    if rule == "all":
        chosen = {c for c, _ in store.live_statements_of_type(user, claim.claim_type)}
    elif not store.has_claim_type(user, claim.claim_type):
        return []  # the first claim of its type (and no model to load for it)
    else:
        side = vectors() if callable(vectors) else vectors
        chosen = _similar(store, user, claim, side, query_vector)
        chosen |= _same_slot(store, user, claim, by_entity=rule == "person")
    chosen.discard(claim.claim_id)
    if not chosen:
        return []
    found = store.claims_by_ids(user, sorted(chosen))
    return [c for c in found if c.claim_type == claim.claim_type and c.status in LIVE_STATUSES]


SIMILAR_POOL = 200
"""How many of the user's most similar live claims (any type) the cosine test looks at."""
UNINDEXED_WINDOW = 64
"""How many of the type's most recently stored live claims are checked for a missing vector."""
EMBED_AT_MOST = 8
"""The most candidates a write embeds (about 2.5 ms each on one core); a candidate past it
waits for ``index``, and is judged by the slot rule alone until then."""


def _similar(
    store: Store, user: str, claim: Claim, vectors: VectorSide | None, query: Any = None
) -> set[str]:
    """Ids of the user's live claims whose vector has cosine ≥ ``SIMILAR`` with the
    statement (their type is checked by the caller): the vector index's nearest, not a scan
    of every claim of the type, and the type's newest claims not in the index yet."""
    if vectors is None:
        return set()
    from lsp_memory.store.vectors import embed_cached, normalise

    if query is None:  # kept in the vector cache: indexing the new claim costs nothing
        query = embed_cached(vectors.embedder, vectors.cache, [claim.statement])[0]
    nearest = vectors.index.search(
        query, k=SIMILAR_POOL, user=user, kinds=("claim",), statuses=LIVE_STATUSES
    )
    chosen = {doc_key(key) for key, score in nearest if score >= SIMILAR}
    missing = _unindexed(store, user, claim, vectors)
    if missing:  # one matrix product (normalising 64 vectors one by one took 1.6 ms)
        import numpy as np

        scores = normalise(np.stack(list(missing.values()))) @ normalise(query)
        chosen.update(c for c, score in zip(missing, scores, strict=True) if score >= SIMILAR)
    return chosen


def _unindexed(store: Store, user: str, claim: Claim, vectors: VectorSide) -> dict[str, Any]:
    """Vectors of the type's newest live claims that the vector index lacks: from the
    vector cache, or embedded now (at most ``EMBED_AT_MOST``, newest first) and kept there."""
    from lsp_memory.store.vectors import content_hash, embed_cached

    waiting = [
        (claim_id, statement)
        for claim_id, statement in store.newest_live_statements(
            user, claim.claim_type, UNINDEXED_WINDOW
        )
        if claim_id != claim.claim_id and doc_id("claim", claim_id) not in vectors.index
    ]
    if not waiting:
        return {}
    side = vectors.embedder
    keys = {claim_id: content_hash(statement) for claim_id, statement in waiting}
    cached = vectors.cache.get_many(side.model_id, keys.values())
    found = {
        claim_id: cached[key]
        for claim_id, key in keys.items()
        if key in cached and cached[key].shape == (side.dim,)
    }
    fresh = [(claim_id, text) for claim_id, text in waiting if claim_id not in found]
    fresh = fresh[:EMBED_AT_MOST]
    if fresh:
        embedded = embed_cached(side, vectors.cache, [text for _, text in fresh])
        found.update((claim_id, embedded[row]) for row, (claim_id, _) in enumerate(fresh))
    return found


def _same_slot(store: Store, user: str, claim: Claim, *, by_entity: bool) -> set[str]:
    """Ids of live claims of ``claim``'s type filling the same slot of the same subject
    ("I live in Lyon" for "I moved to Berlin"). With ``by_entity`` (the ``person`` rule), a
    claim linked to an entity of the new one is about the same person unless its words name
    another ("She is a nurse now" and "Ana is a doctor", both linked to @ana)."""
    linked = by_entity and bool(claim.entities)
    new = fact(claim.statement, pronouns=linked)
    if new is None:
        return set()
    chosen: set[str] = set()
    if new.who != SOMEONE:
        # By the store's slot key (an index lookup: a LIKE scan over the type's statements
        # was 11-13 ms a write at 100k claims), then read again as the old rule did.
        slot = key_of(new.who, new.slot)
        candidates = store.live_statements_in_slot(user, claim.claim_type, slot)
        for claim_id, statement in candidates:
            old = fact(statement, slot=new.slot)
            if old is not None and old.slot == new.slot and old.who.same(new.who):
                chosen.add(claim_id)
    if linked:
        others = store.live_claims_with_entities(user, claim.claim_type, claim.entities or ())
        others -= chosen | {claim.claim_id}
        for other in store.claims_by_ids(user, sorted(others), links=False):
            old = fact(other.statement, pronouns=True, slot=new.slot)
            if old is not None and old.slot == new.slot and not _others(old.who, new.who):
                chosen.add(other.claim_id)
    return chosen


def _others(one: Person, two: Person) -> bool:
    """Whether two subjects are plainly two people: the user and someone else, or two
    different names."""
    if (one == USER) != (two == USER):
        return True
    return bool(one.name and two.name and one.name != two.name)
