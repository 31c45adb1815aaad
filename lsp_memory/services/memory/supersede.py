"""Supersede on write: which of the user's live claims a new claim replaces.

Each claim type has a rule, chosen by the ``supersede`` setting or else the built-in one:

- ``similar`` (identity, preference, project-active, goal, constraint): the older claim says
  the same thing (cosine ≥ 0.85 between the statements), or gives another value for the same
  subject and predicate ("I live in Lyon", then "I moved to Berlin").
- ``person`` (relationship): the older claim is about the same person: a shared linked
  entity, or the same person named at the start ("Anna …", "my sister …").
- ``all`` (emotional): every older claim of the type; the newest feeling wins.
- ``none`` (technical and every other type): claims of the type accumulate.

Only claims of the new claim's own type are candidates. Single writes use this
(``services.memory.records``); an import never does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from lsp_memory.model import LIVE_STATUSES, Claim, doc_key
from lsp_memory.services.retrieval.embedding import VectorSide
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
    model, or not loaded yet): then the cosine test is skipped and only the rules on the
    text apply. A candidate the index has no vector for (not embedded yet) is likewise
    judged by the text alone. ``query_vector``: the statement's embedding, when the caller
    embedded a batch of statements at once.
    """
    rule = rule_for(claim.claim_type, overrides)
    if rule == "none":
        return []
    # The claims themselves are loaded only for those superseded: a type may have thousands
    # of live claims (loading each with its links took 0.4 s a write at 100k claims), so
    # each rule asks the store or the vector index for its few candidates.
    if rule == "all":
        chosen = {c for c, _ in store.live_statements_of_type(user, claim.claim_type)}
    elif rule == "person":
        chosen = _same_person(store, user, claim)
    elif not store.has_claim_type(user, claim.claim_type):
        return []  # the first claim of its type (and no model to load for it)
    else:
        side = vectors() if callable(vectors) else vectors
        chosen = _similar(store, user, claim, side, query_vector)
        chosen |= _same_fact(store, user, claim)
    chosen.discard(claim.claim_id)
    if not chosen:
        return []
    found = store.claims_by_ids(user, sorted(chosen))
    return [c for c in found if c.claim_type == claim.claim_type and c.status in LIVE_STATUSES]


def _same_person(store: Store, user: str, claim: Claim) -> set[str]:
    """Ids of live claims of ``claim``'s type about the same person: a linked entity in
    common, or the same person named at the start."""
    chosen: set[str] = set()
    if claim.entities:
        chosen |= store.live_claims_with_entities(user, claim.claim_type, claim.entities)
    who = person(claim.statement)
    if who is not None:
        for claim_id, statement in store.live_statements_like(user, claim.claim_type, [who]):
            if person(statement) == who:
                chosen.add(claim_id)
    return chosen


SIMILAR_POOL = 200
"""How many of the user's most similar live claims (any type) the cosine test looks at."""


def _similar(
    store: Store, user: str, claim: Claim, vectors: VectorSide | None, query: Any = None
) -> set[str]:
    """Ids of the user's live claims whose vector has cosine ≥ ``SIMILAR`` with the
    statement (their type is checked by the caller): the vector index's nearest, not a scan
    of every claim of the type."""
    if vectors is None:
        return set()
    if query is None:
        query = vectors.embedder.embed([claim.statement])[0]
    nearest = vectors.index.search(
        query, k=SIMILAR_POOL, user=user, kinds=("claim",), statuses=LIVE_STATUSES
    )
    return {doc_key(key) for key, score in nearest if score >= SIMILAR}


def _same_fact(store: Store, user: str, claim: Claim) -> set[str]:
    """Ids of live claims of ``claim``'s type giving another value for its subject and
    predicate ("I live in Lyon" for "I moved to Berlin")."""
    fact = subject_predicate(claim.statement)
    if fact is None:
        return set()
    subject, predicate, value = fact
    favourite = predicate.startswith("favourite")
    if subject == "user":
        prefixes = ["my "] if favourite else ["I ", "I'm ", "I’m "]
    else:  # "anna", "my sister": the statement starts with it (or "Anna's favourite …")
        prefixes = [subject + ("'" if favourite else " ")]
    words = _PREDICATE_WORDS["favourite" if favourite else predicate]
    chosen = set()
    for claim_id, statement in store.live_statements_like(user, claim.claim_type, prefixes, words):
        other = subject_predicate(statement)
        if other is not None and other[:2] == (subject, predicate) and other[2] != value:
            chosen.add(claim_id)
    return chosen


# -- subject and predicate --------------------------------------------------------------------

_SUBJECT = r"(?P<subject>I|[Mm]y [a-z]+|[A-Z][a-z]+)"
_VALUE = r"(?P<value>.+?)"
_END = r"\s*[.!]?\s*$"

_FACTS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), predicate)
    for pattern, predicate in (
        # I live in Lyon / Anna lives in Rome / I'm now living in Berlin / I'm based in Oslo
        (rf"^{_SUBJECT} (?:now )?(?:live|lives|reside|resides) in {_VALUE}{_END}", "residence"),
        (rf"^{_SUBJECT} (?:have |has |just )?moved to {_VALUE}{_END}", "residence"),
        (rf"^{_SUBJECT}(?:'m| am| is) (?:now )?(?:based|living) in {_VALUE}{_END}", "residence"),
        # I work at Acme / Anna works for Initech / I joined Globex
        (rf"^{_SUBJECT} (?:now )?(?:work|works) (?:at|for) {_VALUE}{_END}", "employer"),
        (rf"^{_SUBJECT} (?:have |has |just |recently )?joined {_VALUE}{_END}", "employer"),
    )
)
_PREDICATE_WORDS: Mapping[str, tuple[str, ...]] = {
    "residence": ("live", "reside", "moved", "based", "living"),
    "employer": ("work", "joined"),
    "favourite": ("favourite", "favorite"),
}
"""Words one of which every statement of a predicate has: the store's cheap pre-filter."""
_FAVOURITE = re.compile(
    rf"^(?:[Mm]y|(?P<subject>[Mm]y [a-z]+|[A-Z][a-z]+)'s) favou?rite (?P<what>[a-z][a-z -]*?) "
    rf"is {_VALUE}{_END}"
)


def subject_predicate(statement: str) -> tuple[str, str, str] | None:
    """``(subject, predicate, value)`` of a statement of a common form, or None.

    A few precise forms only: where someone lives ("I live in Lyon", "I moved to Berlin",
    "I'm based in Oslo"), works ("I work at Acme", "I joined Globex") and a favourite ("my
    favourite tea is sencha"), in the first person or with a name or "my <relation>" as the
    subject. The subject "I" is ``user``; values and subjects are compared in lower case.
    """
    text = " ".join(statement.split())
    found = None
    match = _FAVOURITE.match(text)
    if match:
        found = (match["subject"] or "I", f"favourite {match['what'].strip()}", match["value"])
    for pattern, predicate in _FACTS:
        match = pattern.match(text) if found is None else None
        if match:
            found = (match["subject"], predicate, match["value"])
    if found is None or found[0] in _NOT_NAMES - {"I"}:
        return None  # "She lives in Rome": who "she" is, the text does not say
    subject, predicate, value = found
    return _subject(subject), predicate, _value(value)


def _subject(subject: str) -> str:
    return "user" if subject == "I" else subject.lower()


def _value(value: str) -> str:
    return re.sub(r"^(?:the|a|an) ", "", value.strip().lower())


# -- the same person --------------------------------------------------------------------------

_NOT_NAMES = frozenset(
    "I My We Our He She They It The A An This That These Those There Today Yesterday".split()
)
_PERSON = re.compile(r"^(?:(?P<relation>[Mm]y [a-z]+(?:-in-law)?)|(?P<name>[A-Z][a-z]+))\b")


def person(statement: str) -> str | None:
    """The person a statement starts with: "my <relation>" or a capitalised name (not a
    pronoun or an article), in lower case; None otherwise."""
    match = _PERSON.match(statement.strip())
    if match is None:
        return None
    if match["relation"]:
        return match["relation"].lower()
    name = match["name"]
    return None if name in _NOT_NAMES else name.lower()
