"""Slots: who a statement is about and which of their attributes it gives a value for.

Pure (standard library only), below the store: the store keeps each claim's ``slot_key``
(``key_of``), so a write finds the claims of its slot by an index lookup. Supersede on
write (``services.memory.supersede``) replaces an older claim by slot: "My
sister Ana lives in Porto" and "My sister Ana moved to Lisbon" fill the same slot (Ana's
residence), so the newer wins; "My sister Ana is a doctor" fills another (her occupation), so
both stay. A statement is read as a **subject** — the user ("I", "my …" of the user's own
attributes), one of the user's people ("my sister", "my sister Ana", "Ana", "my sister's …")
— and a **slot** from a small vocabulary (``SLOT_FORMS``, ``ATTRIBUTES``), each a few
precise forms. What falls outside them has no slot: it supersedes nothing by slot and is
superseded by nothing by slot.

The words for the user's people (``RELATIONS``) are the conversation extractor's too
(``services.conversations.extract``): one list of who counts as a person.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

RELATIONS = (
    r"(?:sister|brother|mother|mom|mum|father|dad|parents|wife|husband|partner|son|daughter|"
    r"kids?|children|friend|boss|manager|colleague|coworker|co-worker|girlfriend|boyfriend|"
    r"fianc[ée]e?|grandma|grandmother|grandpa|grandfather|grandparents|aunt|uncle|cousin|"
    r"niece|nephew|neighbou?r|therapist|doctor|dentist|gp|roommate|flatmate|housemate|"
    r"mother-in-law|father-in-law|[a-z]+-in-law|stepmother|stepfather|stepmum|stepdad|twin|"
    r"landlord|landlady|mentor|coach|cat|dog|family|team)"
)
"""The user's people (and pets) by relation, as a regular expression (no groups)."""
ADJECTIVES = r"(?:best|old|little|big|older|younger|ex|new|late)"
"""Words that may stand between "my" and a relation ("my little sister")."""


@dataclass(frozen=True, slots=True)
class Person:
    """Whom a statement is about: the user (``relation`` "me"), or one of the user's people
    by relation ("sister"), name ("ana"), or both; lower case."""

    relation: str | None
    name: str | None

    def same(self, other: Person) -> bool:
        """Whether both name the same person: the same name (and no two different
        relations), or, with no name on either, the same relation. "my sister" and "my
        sister Ana" are not known to be the same (the user may have two sisters)."""
        if self.name or other.name:
            if self.name != other.name:
                return False
            return not (self.relation and other.relation and self.relation != other.relation)
        return self.relation == other.relation


USER = Person("me", None)


@dataclass(frozen=True, slots=True)
class Fact:
    """A statement's subject, slot and value (lower case, a leading article dropped)."""

    who: Person
    slot: str
    value: str


# -- the vocabulary -----------------------------------------------------------------------------

OCCUPATIONS = (
    r"(?:doctor|nurse|teacher|professor|lecturer|engineer|developer|programmer|designer|"
    r"architect|lawyer|solicitor|barrister|accountant|dentist|pharmacist|surgeon|vet|"
    r"veterinarian|scientist|researcher|student|chef|cook|baker|waiter|waitress|barista|"
    r"journalist|writer|editor|artist|musician|actor|actress|photographer|pilot|driver|"
    r"mechanic|electrician|plumber|carpenter|builder|farmer|nurse practitioner|paramedic|"
    r"firefighter|police officer|officer|soldier|consultant|analyst|manager|director|"
    r"founder|ceo|cto|entrepreneur|freelancer|contractor|therapist|psychologist|"
    r"social worker|librarian|pharmacist|economist|translator|secretary|receptionist|"
    r"cleaner|carer|caregiver|midwife|physiotherapist|optician|banker|trader|salesperson|"
    r"data scientist|product manager|civil servant|retiree|pensioner|illustrator|nanny|"
    r"paediatrician|pediatrician|gp|tutor|coach|professional \w+)"
)
"""Jobs "is a/an X" names (with up to two words before: "a senior backend developer")."""

_NOW = r"(?:(?:now|currently|still|just|recently|finally|actually|also) )*"
_BE = r"(?:is|are|am|'s|’s|'m|’m)"
_VALUE = r"(?P<value>.+?)"

SLOT_FORMS: tuple[tuple[str, str], ...] = (
    # residence: lives in Porto, moved to Lisbon, is based in Oslo, relocated to Kyoto
    ("residence", rf"{_NOW}(?:lives?|resides?|live) in {_VALUE}"),
    ("residence", rf"(?:has |have )?{_NOW}(?:moved|relocated) (?:back )?to {_VALUE}"),
    ("residence", rf"{_BE} {_NOW}(?:based|living|residing) in {_VALUE}"),
    # employer: works at/for Acme, joined Globex
    ("employer", rf"{_NOW}works? (?:at|for) {_VALUE}"),
    ("employer", rf"(?:has |have )?{_NOW}joined {_VALUE}"),
    # workplace: works in Berlin (a name); occupation: works in frontend (a field of work)
    ("workplace", rf"{_NOW}works? in (?P<value>(?-i:[A-Z]).*)"),
    ("occupation", rf"{_NOW}works? in (?P<value>(?-i:[a-z]).*)"),
    # occupation: works as a nurse, is a doctor, is now a senior backend developer
    ("occupation", rf"{_NOW}works? as (?:an? )?{_VALUE}"),
    (
        "occupation",
        rf"{_BE} {_NOW}an? (?P<value>(?:[\w-]+ ){{0,2}}{OCCUPATIONS}(?: (?:at|in|for) .+)?)",
    ),
    # age: is 34, is 34 years old, turned 40
    ("age", rf"{_BE} {_NOW}(?P<value>\d{{1,3}})(?: years? old)?"),
    ("age", rf"(?:has )?{_NOW}turned (?P<value>\d{{1,3}})"),
    # partner: is married (to Tom), is single, got engaged, is dating Sam, broke up
    (
        "partner",
        rf"(?:{_BE}|got|has got|have got) {_NOW}"
        r"(?P<value>married|single|divorced|engaged|separated|widowed)(?: (?:to|from) .+)?",
    ),
    ("partner", rf"{_BE} {_NOW}(?P<value>dating .+|seeing someone|in a relationship.*)"),
    ("partner", rf"(?:has |have )?{_NOW}(?P<value>broken up|broke up|split up)(?: with .+)?"),
    # birthday: was born on 3 May
    ("birthday", rf"(?:was|were) born on {_VALUE}"),
    # health, the state of it: is ill, is in hospital, is pregnant, is recovering, is better
    (
        "health",
        rf"{_BE} {_NOW}(?P<value>ill|sick|unwell|in (?:the )?hospital|pregnant|"
        r"recovering(?: from .+)?|(?:feeling )?better|well again|healthy|in remission)",
    ),
)
"""Each slot's forms, read after the subject ("lives in Porto" of "My sister Ana lives in
Porto"); the first that matches the whole rest of the statement names the slot."""

ATTRIBUTES: Mapping[str, str] = {
    "budget": "budget",
    "salary": "salary",
    "income": "salary",
    "rent": "rent",
    "name": "name",
    "full name": "name",
    "nickname": "nickname",
    "email": "email",
    "email address": "email",
    "phone number": "phone",
    "phone": "phone",
    "number": "phone",
    "address": "address",
    "home address": "address",
    "timezone": "timezone",
    "time zone": "timezone",
    "job": "occupation",
    "job title": "occupation",
    "occupation": "occupation",
    "profession": "occupation",
    "role": "occupation",
    "employer": "employer",
    "company": "employer",
    "age": "age",
    "birthday": "birthday",
    "date of birth": "birthday",
    "height": "height",
    "weight": "weight",
    "diet": "diet",
    "deadline": "deadline",
}
"""Attributes named outright — "my budget is £1,500", "Ana's birthday is 3 May", "my
sister's job is …" — and the slot each fills ("job" and "occupation" are one slot)."""

# -- reading a statement ---------------------------------------------------------------------------

_NOT_NAMES = frozenset(
    "I My We Our He She They It The A An This That These Those There Today Yesterday Since "
    "When After Before Last Next Every Each Your His Her Their Its".split()
)
_NAME = r"[A-ZÀ-Þ][a-zà-ÿ]+(?:-[A-ZÀ-Þ][a-zà-ÿ]+)?"
_APOSTROPHE = r"['’]"
_SUBJECT = re.compile(
    rf"^(?:(?P<me>I|User)\b|[Mm]y (?:{ADJECTIVES} )?(?P<relation>{RELATIONS})(?![\w-])"
    rf"(?:(?P<comma>,)? (?P<named>{_NAME})\b(?(comma),))?|(?P<name>{_NAME}))"
    rf"(?P<possessive>{_APOSTROPHE}s\b)?"
)
_USER_ATTRIBUTE = re.compile(r"^[Mm]y (?P<what>[a-z][a-z ]*?) (?:is|are) ")
_ATTRIBUTE = re.compile(r"^(?P<what>[a-z][a-z ]*?)(?: for (?P<purpose>[\w ]+?))? (?:is|are) ")
_FAVOURITE = re.compile(r"^favou?rite (?P<what>[a-z][a-z -]*?) (?:is|are) (?P<value>.+)$")
_FORMS = tuple((slot, re.compile(rf"^{form}$", re.IGNORECASE)) for slot, form in SLOT_FORMS)
_SLOT_FORMS = {slot: tuple(f for f in _FORMS if f[0] == slot) for slot, _ in SLOT_FORMS}
_RELATION = re.compile(rf"^(?:{ADJECTIVES} )?{RELATIONS}\b")
_LATELY = re.compile(r",? (?:now|these days|nowadays|again|at the moment)$", re.IGNORECASE)
"""A trailing "now": "She is a nurse now" reads as "She is a nurse"."""
_SECOND_FACT = re.compile(
    r"(?:,|;|\band\b|\bbut\b|\bwho\b|\bwhich\b|\bwhere\b)\s+(?:(?:also|now|still|then) )?"
    r"(?:I|he|she|they|we|is|are|was|has|have|had|works?|lives?|moved|joined|turned|got)\b",
    re.IGNORECASE,
)
"""A value holding a second statement ("Porto and works at a hospital"): no slot, since
replacing it would drop the other fact."""


SOMEONE = Person(None, None)
"""The subject of "He/She/They …": a person the words do not name (an entity link may)."""
_PRONOUN = re.compile(r"^(?:He|She|They)\b(?!['’])")


def fact(statement: str, *, pronouns: bool = False, slot: str | None = None) -> Fact | None:
    """The subject, slot and value of ``statement``, or None when it is not one of the
    vocabulary's forms (or holds a second statement). With ``pronouns``, "He/She/They …"
    has the subject ``SOMEONE`` rather than none. With ``slot``, only that slot's forms are
    tried: a write reads a thousand candidates at 100k claims, for one slot."""
    text = _LATELY.sub("", " ".join(statement.split()).rstrip(" .!"))
    pronoun = _PRONOUN.match(text) if pronouns else None
    found = (SOMEONE, text[pronoun.end() :].strip(), False) if pronoun else _subject(text)
    if found is None:
        return None
    who, rest, possessive = found
    if possessive:
        slot_value = _attribute(rest)
    else:
        slot_value = _predicate(rest, _FORMS if slot is None else _SLOT_FORMS.get(slot, ()))
    if slot_value is None or _SECOND_FACT.search(slot_value[1]):
        return None
    return Fact(who, slot_value[0], _clean(slot_value[1]))


def _subject(text: str) -> tuple[Person, str, bool] | None:
    """``(person, the rest of the text, whether the subject is possessive)``."""
    user = _USER_ATTRIBUTE.match(text)
    if user and not _RELATION.match(user["what"]):
        return USER, text[3:], True  # "my budget is …": the user's own attribute
    match = _SUBJECT.match(text)
    if match is None:
        return None
    if match["me"]:
        who = USER
    elif match["relation"]:
        named = match["named"]
        if named in _NOT_NAMES:
            return None
        who = Person(match["relation"].lower(), named.lower() if named else None)
    else:
        if match["name"] in _NOT_NAMES:
            return None
        who = Person(None, match["name"].lower())
    return who, text[match.end() :].strip(), bool(match["possessive"])


def _attribute(rest: str) -> tuple[str, str] | None:
    """Slot and value of "<attribute> is X" (after "my" or "Ana's")."""
    favourite = _FAVOURITE.match(rest)
    if favourite:
        return f"favourite {favourite['what'].strip()}", favourite["value"]
    match = _ATTRIBUTE.match(rest)
    if match is None:
        return None
    slot = ATTRIBUTES.get(match["what"].strip())
    if slot is None:
        return None
    if match["purpose"]:  # "my budget for the holiday": a slot of its own
        slot += " for " + _clean(match["purpose"])
    return slot, rest[match.end() :]


def _predicate(rest: str, forms: Sequence[tuple[str, re.Pattern[str]]]) -> tuple[str, str] | None:
    """Slot and value of the predicate after a plain subject ("lives in Porto")."""
    for slot, form in forms:
        match = form.match(rest)
        if match:
            return slot, match["value"]
    return None


def _clean(value: str) -> str:
    value = re.sub(r"^(?:now|currently|still|actually) ", "", value.strip().lower())
    return re.sub(r"^(?:the|a|an) ", "", value)


# -- the slot key the store keeps ---------------------------------------------------------------

VERSION = 1
"""The version of how this module reads a statement. Bump it with any change to the reading
(a form, a word, a rule): a store keeps each claim's ``slot_key`` and reads them all again
when a version with another number opens it (``store.schema.refresh_slot_keys``, about 2 s
per 100 000 claims). ``tests/store/test_write_cost.py`` pins this file's text to it."""


def key_of(who: Person, slot: str) -> str:
    """The store's ``slot_key`` for ``slot`` of ``who``: the slot and the person's name, or
    their relation when unnamed ("me" for the user). Two subjects that are the ``same``
    have one key; the key does not tell "my sister Ana" from "my brother Ana" (the caller
    checks ``same``)."""
    return f"{slot}\t{'@' + who.name if who.name else who.relation}"


def slot_key(statement: str) -> str | None:
    """The ``slot_key`` written with a claim: ``key_of`` the statement's subject and slot
    as ``fact`` reads it (no pronouns), or None when it fills no slot."""
    found = fact(statement)
    return None if found is None else key_of(found.who, found.slot)
