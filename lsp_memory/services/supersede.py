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
(``services.records``); an import never does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from lsp_memory.model import Claim, doc_id
from lsp_memory.services.embedding import VectorSide
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
) -> list[Claim]:
    """The live claims of ``claim``'s type that ``claim`` supersedes, by number.

    ``vectors`` is the embedder and the vector index, or a function giving them, called only
    when a cosine is needed (loading the model takes a while). It may be, or give, None (no
    model, or not loaded yet): then the cosine test is skipped and only the rules on the
    text apply. A candidate the index has no vector for (not embedded yet) is likewise
    judged by the text alone.
    """
    rule = rule_for(claim.claim_type, overrides)
    if rule == "none":
        return []
    candidates = [
        c for c in store.live_claims_of_type(user, claim.claim_type) if c.claim_id != claim.claim_id
    ]
    if rule == "all" or not candidates:
        return candidates
    if rule == "person":
        return [c for c in candidates if same_person(claim, c)]
    side = vectors() if callable(vectors) else vectors
    similar = _similar(claim, candidates, side)
    fact = subject_predicate(claim.statement)
    chosen = []
    for candidate in candidates:
        if candidate.claim_id in similar:
            chosen.append(candidate)
        elif fact is not None:
            other = subject_predicate(candidate.statement)
            if other is not None and other[:2] == fact[:2] and other[2] != fact[2]:
                chosen.append(candidate)
    return chosen


def _similar(claim: Claim, candidates: Sequence[Claim], vectors: VectorSide | None) -> set[str]:
    """The ids of ``candidates`` whose vector has cosine ≥ ``SIMILAR`` with the statement."""
    if vectors is None:
        return set()
    ids = {doc_id("claim", c.claim_id): c.claim_id for c in candidates}
    known = [key for key in ids if key in vectors.index]
    if not known:
        return set()
    query = vectors.embedder.embed([claim.statement])[0]
    scores = vectors.index.similarity(known, query)
    return {ids[key] for key, score in scores.items() if score >= SIMILAR}


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


def same_person(new: Claim, old: Claim) -> bool:
    """Whether two relationship claims are about the same person: a linked entity in
    common, or the same person named as the subject."""
    if set(new.entities or ()) & set(old.entities or ()):
        return True
    who = person(new.statement)
    return who is not None and who == person(old.statement)
