"""Extraction: the claims a conversation message states about its user, offline.

The steps, each a few regular expressions:

1. **Protect** what must not be cut: parentheses and quoted passages ("proofread this: 'Dear
   Sir, I am writing…'" — a quote is never the user speaking about themselves), and the
   dots of "e.g.", "Dr.".
2. **Sentences**: cut after ``.``, ``!``, ``?``, ``…``, an emoji, or a line break.
3. **Pieces**: a sentence is cut at ``,``, ``;``, ``:`` and dashes, and before "and"/"but"/
   "so"/"plus" when a new first-person statement follows ("I live in Lyon and I work at
   Acme"; not "my girlfriend and I broke up"). A piece that starts a statement about the user
   (I, I'm, my, we, our, "me and…", "… stresses me out", "… works better for me") opens a
   new clause; a piece that comments on it ("it keeps crashing", "which makes…", "so please
   keep that in mind", "thanks for listening") ends the clause and is dropped; anything else
   ("mostly Java and Kotlin", "Miso and Tofu") stays with the clause it follows. In a
   question, the piece holding the question is dropped, and what comes before it is kept only
   when it is a statement of its own ("I'm on blood thinners, is ibuprofen ok?").
4. **Tidy** each clause: fillers at the start ("oh", "btw", "honestly", "so", "just so you
   know", "remember that") and at the end ("lol", "tbh", "!", emoji) go, a lone "i" becomes
   "I", the first letter a capital. Nothing else is reworded: the statement is the user's.
5. **Keep** a clause when it is about the user and is not a question, a request ("can
   you…", "I'd like a recipe…", "I need help…", "I want you to…"), a hypothetical or hedge
   ("if I…", "imagine…", "I might…"), small talk ("I see", "thanks", "I'll try that", "I love
   it"), a problem brought for help ("my code throws a KeyError"), or what one of the user's
   people said about the world ("my friend thinks Rome is overrated"). A standing
   instruction ("please always answer in British English", "from now on, don't use emojis")
   is kept as a ``preference``.
6. **Classify** the kept statements (one ``classify_all`` call): the classifier's category,
   except a standing instruction (``preference``) and a statement whose subject is one of the
   user's people and which says nothing of the user (``relationship``: the README's rule that
   another person is a relationship).

The assistant's reply is never a source of claims. Statements without a subject ("Not
really a fan of jazz" aside), facts given only through a pronoun ("she was 17") and answers
that need the previous turn ("yes, two kids") are out of reach of these rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lsp_memory.model import KNOWN_TYPES
from lsp_memory.services.kernel.command import CommandFailed
from lsp_memory.services.memory.classify import Classifier
from lsp_memory.services.memory.interchange import statement_problem
from lsp_memory.services.memory.slots import ADJECTIVES, RELATIONS
from lsp_memory.text import blank, without_controls

MIN_WORDS = 2
MAX_WORDS = 60
MAX_EXTRACTED = 20
"""The most statements an ``extractor_command`` may find in one message pair: more is a
failed answer (the built-in extractor answers instead)."""


@dataclass(frozen=True, slots=True)
class Extracted:
    """One claim found in a message."""

    statement: str
    category: str


# -- 1. protect ---------------------------------------------------------------------------------

_PROTECTED = re.compile(
    r"\([^()\n]*\)|“[^”\n]*”|\"[^\"\n]*\"|(?<![\w'’])'(?=\S)[^'\n]*(?<=\S)'(?![\w'’])"
)
"""Parentheses and quotations: never cut inside."""
_ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|etc|vs|approx|dr|mr|mrs|ms|st|prof|jr|sr)\.", re.I)
_MARK = "\x00"
_SLOT = re.compile("\x00(\\d+)\x00")


def _protect(text: str) -> tuple[str, list[str]]:
    """``text`` with its protected spans replaced by numbered marks, and the spans. Control
    characters in the text itself are dropped first: the NUL is the mark (a message holding
    one spun ``_restore`` forever, or named a span that was never kept), and no claim may
    hold one."""
    text = without_controls(text)
    kept: list[str] = []

    def hide(match: re.Match[str]) -> str:
        kept.append(match[0])
        return f"{_MARK}{len(kept) - 1}{_MARK}"

    text = _ABBREVIATION.sub(hide, text)
    return _PROTECTED.sub(hide, text), kept


def _restore(text: str, kept: list[str]) -> str:
    while _MARK in text:
        text = _SLOT.sub(lambda m: kept[int(m[1])], text)
    return text


# -- 2. sentences, 3. pieces and clauses --------------------------------------------------------

_EMOJI = "\U0001f300-\U0001faff\u2600-\u27bf\u2b50\u2764"
_SENTENCES = re.compile(rf"(?<=[.!?…])\s+|\n+|(?<=[{_EMOJI}])\s+")
_FIRST = (
    r"(?:i|i'm|i’m|im|i've|i’ve|i'd|i’d|i'll|i’ll|my|we|we're|we’re|we've|we’ve|we'd|we’d|"
    r"our|me and)"
)
_PERSON = RELATIONS
_PUNCTUATION_CUT = re.compile(r"(\s*[,;:]\s+|\s+[—–-]+\s+|\s*[—–]\s*)")
_CONJUNCTION_CUT = re.compile(
    rf"(\s+(?:and|but|so|plus)\s+)(?=(?:{_FIRST}|it|it's|it’s|that's|that’s|which|this|"
    rf"nothing|no|please|any)\b)",
    re.IGNORECASE,
)
_COUPLE = re.compile(
    rf"(?:me|(?:my|our)\s+(?:{ADJECTIVES}\s+)?{_PERSON}"
    rf"(?:\s+[A-ZÀ-Þ][\w'’-]*)?)",
    re.IGNORECASE,
)
"""A piece before "and" that starts a pair of subjects ("my girlfriend and I", "me and my
sister"): no cut."""
_LEAD = re.compile(
    r"^(?:(?:and|but|so|plus|also|then|because|cause|'cause|or)\b[,]?\s*)+", re.IGNORECASE
)
_TAIL = re.compile(
    r"^(?:it|it's|it’s|its|which|that|that's|that’s|this|there|there's|there’s|here's|here’s|"
    r"thanks|thank|nothing|just|who|lol|haha\w*|please|any|anyway|idk|not that|hence|"
    r"otherwise|no)\b",
    re.IGNORECASE,
)
"""A piece that comments on the clause before it, or asks for something: dropped."""


def _pieces(sentence: str) -> list[tuple[str, str]]:
    """``(separator, piece)`` pairs: the sentence cut at punctuation and at conjunctions
    before a new statement."""
    parts = _PUNCTUATION_CUT.split(sentence)
    found = [("", parts[0])] + [(parts[i], parts[i + 1]) for i in range(1, len(parts), 2)]
    pieces: list[tuple[str, str]] = []
    for separator, piece in found:
        start, pending = 0, separator
        for match in _CONJUNCTION_CUT.finditer(piece):
            left = piece[start : match.start()]
            if _COUPLE.fullmatch(left.strip()):
                continue  # "my girlfriend and I broke up", "me and my friend…": one subject
            pieces.append((pending, left))
            pending, start = match[1], match.end()
        pieces.append((pending, piece[start:]))
    return [(s, p) for s, p in pieces if p.strip()]


def _clauses(sentence: str, kept: list[str]) -> list[tuple[str, bool]]:
    """The candidate clauses of one sentence, with whether each is a standing instruction."""
    text = sentence.strip()
    question = _restore(text, kept).rstrip(f" \"'’”){_EMOJI}").endswith("?")
    standing = False
    instruction = _STANDING.match(text)
    if instruction:
        standing, text = True, text[instruction.end() :]
    pieces = _pieces(text)
    if question:
        if len(pieces) < 2:
            return []
        pieces = pieces[:-1]  # the piece that asks
    clauses: list[tuple[str, bool]] = []
    current: list[str] = []
    dropping = False
    for separator, piece in pieces:
        stripped = piece.strip()
        bare = _LEAD.sub("", _FILLER.sub("", stripped))
        if not current or _starts_about_user(bare):
            if current:
                clauses.append(("".join(current), standing))
                standing = False
            current, dropping = [piece], False
        elif _TAIL.match(bare) or _REQUEST.match(bare) or not _attachable(stripped):
            dropping = True
        elif not dropping:
            current.append(separator + piece)
    if current:
        clauses.append(("".join(current), standing))
    return clauses


def _attachable(piece: str) -> bool:
    """A piece after "and"/"but" that continues its clause ("…, and a very grumpy tortoise",
    "…, but she micromanages a bit") rather than adding a consequence ("…, so the party
    food has to be safe")."""
    return not re.match(r"^(?:so|because|cause|then)\b", piece, re.IGNORECASE)


# -- 4. tidy -------------------------------------------------------------------------------------

_FILLER = re.compile(
    r"^(?:(?:oh|ah|aw|um+|uh+|hmm+|well|so|and|but|also|plus|btw|by the way|actually|"
    r"anyway|anyways|ok(?:ay)?|k|yeah|yep|yup|yes|no|nope|hey|hi|hello|lol|haha\w*|omg|ugh|"
    r"wow|fyi|honestly|basically|tbh|to be honest|quick update|update|fun fact|for context|"
    r"context|background|for the record|just so you know|just fyi|side note|also fyi|"
    r"(?:please )?(?:remember|note|keep in mind|don't forget|do not forget)(?: that)?"
    r"(?=\s+(?:i|my|we|our)\b))\b[,:!.]*\s*)+",
    re.IGNORECASE,
)
_TRAILER = re.compile(
    rf"(?:\s*\b(?:lol|lmao|haha+|hehe|btw|tbh|fyi|imo|xx?|jk)\b|\s*(?::\)|:\(|:D|;\)|xD|<3)|"
    rf"[\s.!…,;:]+|[{_EMOJI}\ufe0f\u200d]+)+$",
    re.IGNORECASE,
)
_LONE_I = re.compile(r"(?<![\w.'’])i(?=['’](?:m|ve|d|ll)\b|\s|$|[,;:!?])")


def _tidy(clause: str, kept: list[str]) -> str:
    text = " ".join(clause.split())
    text = _LEAD.sub("", _FILLER.sub("", text))
    text = _FILLER.sub("", text)
    text = _restore(text, kept)
    text = _TRAILER.sub("", text).strip(" ,;:-–—")
    text = _LONE_I.sub("I", text)
    return text[:1].upper() + text[1:] if text else ""


# -- 5. keep ------------------------------------------------------------------------------------

_ABOUT_ME = re.compile(rf"^{_FIRST}\b", re.IGNORECASE)
_SUBJECTLESS = re.compile(
    r"^(?:not (?:really |much of |exactly )?(?:a |the )?(?:big |huge )?fan of|"
    r"(?:a |a big |a huge |big |huge )fan of|currently \w+ing|(?:allergic|intolerant) to|"
    r"(?:can't|can’t|cannot|can not) (?:eat|drink|have|stand|afford|drive|do|handle))\b|"
    r"^(?!(?:same|me|you|us|everyone|nobody|anyone|nothing|new|hi|hello|ok)\b)"
    r"[\w'’-]+(?: [\w'’-]+)? here$",
    re.IGNORECASE,
)
_TO_ME = re.compile(
    r"^(?!(?:it|it's|that|that's|this|he|she|they|you|there|what|which|who|nothing)\b)"
    r"(?:[\w'’-]+ ){1,8}?(?:(?:really|always|kind of|totally|just|still|so) )?"
    r"(?:(?:makes?|made|stress(?:es)?|scares?|terrif(?:y|ies)|annoys?|bothers?|upsets?|"
    r"calms?|relax(?:es)?|exhausts?|drains?|frustrates?|excites?|worr(?:y|ies)|depress(?:es)?|"
    r"bores?|overwhelms?|triggers?|hurts?) me\b|.*\b(?:works?|worked|suits?|is|are)\b.{0,24}"
    r"\bfor me\b|.*\b(?:don't|doesn't|do not|does not|never) (?:work|suit)s? (?:for )?me\b)",
    re.IGNORECASE,
)
"""A statement about the user whose subject is a thing: "crowded trains stress me out"."""
_QUESTION = re.compile(
    r"^(?:what|what's|who|whom|whose|where|when|why|how|which|can|could|would|should|will|"
    r"do|does|did|is|isn't|are|aren't|am|was|were|shall|may|might|any idea|any tips|"
    r"anyone|any advice|any suggestions|is there|are there)\b(?![’'])",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"^(?:please|pls|plz|can you|could you|would you|will you|help me|tell me|show me|give me|"
    r"send me|write|draft|make|create|find|list|explain|summari[sz]e|translate|suggest|"
    r"recommend|proofread|rewrite|rephrase|generate|compare|describe|calculate|convert|"
    r"continue|let's|lets|let me know|remind me|act as|pretend|go ahead|keep going|"
    r"i need you to|i want you to|i'd like you to|i’d like you to|i would like you to|"
    r"i(?:'d|’d| would) like (?:a|an|some|the|to know|to ask|to see|help|more|your)\b|"
    r"i need (?:a|an|some|help|advice|ideas|a hand)\b|"
    r"i(?:'m|’m| am) looking for (?:a |an |some )?(?:[\w-]+ ){0,4}(?:ideas?|recipes?|tips|"
    r"recommendations?|suggestions?|advice|help|books?|podcasts?|films?|movies?|gifts?|"
    r"names?|places?|restaurants?|resources?|examples?)\b)",
    re.IGNORECASE,
)
_HYPOTHETICAL = re.compile(
    r"^(?:if|whenever|unless|suppose|supposing|imagine|maybe|perhaps|in case|what if|"
    r"say|hypothetically)\b|\b(?:i wonder|i was wondering|i(?:'m|’m| am) wondering)\b|"
    r"^(?:i think |i guess |i suppose )?i (?:might|may|could|probably)\b",
    re.IGNORECASE,
)
_SMALL_TALK = re.compile(
    r"^(?:i(?:'m|’m| am) (?:fine|good|ok|okay|great|well|back|here|sorry|glad|happy to hear|"
    r"not sure|confused|lost|kidding|joking|done|ready|in)\b|i see\b|i think so|i guess|"
    r"i know\b|i agree|i understand|i mean\b|i meant|i don'?t (?:know|get|understand|think so)|"
    r"i get (?:it|that|you)\b|i hope\b|i was (?:just|only)\b|i just wanted|i wanted to ask|"
    r"i(?:'ve|’ve| have) (?:a|got a) (?:quick )?question|i have a question|"
    r"i(?:(?:'ve|’ve| have) been meaning| meant| wanted) to (?:ask|say|tell you|check)|"
    r"i need (?:help|some help|advice|some advice|a hand)|i(?:'m|’m| am) (?:asking|curious|"
    r"just)\b|i (?:love|like|appreciate|get|hate) (?:it|that|this|you|them)$|"
    r"i (?:love|like|appreciate) (?:it|that|this|you)\b|"
    r"i(?:'ll|’ll| will) (?:try|give (?:it|that|this) a|have a look|look into|check|think|"
    r"get back|let you know|do that|keep that|go with)|i(?:'ve|’ve| have) (?:already |just )?"
    r"tried (?:that|this|it|both|those)|i(?:'d|’d) (?:love|like) (?:to know|some|a|an|help|"
    r"advice|ideas|suggestions|recommendations)|thanks|thank you|i forgot to (?:ask|say)|"
    r"my (?:bad|pleasure|question)\b|we (?:discussed|talked|spoke|covered|went over|were "
    r"(?:talking|discussing))\b)",
    re.IGNORECASE,
)
_TROUBLE = re.compile(r"(?:error|exception)\b|\btraceback\b|\bstack ?trace\b|\bsegfault", re.I)
"""A problem brought to the assistant ("my code throws a KeyError"): not a fact to keep."""
_ONLY_A_POINTER = re.compile(r"^\S+(?: \S+){0,3} (?:it|that|this|them|those)$", re.IGNORECASE)
"""A short statement about "it" or "that" ("I can't go over it"): nothing without the
sentence before."""
_REPORTED = re.compile(
    r"^(?:my|our) (?:[\w'’-]+ ){0,3}?(?:said|says|thinks|think|reckons|believes|believe|"
    r"mentioned|claims|feels|told (?:me|us)(?! to\b))(?: that)?\b(.*)$",
    re.IGNORECASE,
)
_MINE = re.compile(r"\b(?:i|i'm|i’m|me|my|mine|we|us|our)\b", re.IGNORECASE)
_STANDING = re.compile(
    r"^(?:(?:from now on|going forward|in future|in the future|for future reference)"
    r"\s*[,:]?\s*(?:please\s+)?(?=\w)|(?:please\s+)?(?=(?:always|never)\s+\w)|"
    r"please\s+(?=(?:don't|do not)\s+(?:ever\s+)?\w+.*\b(?:again|ever|anymore)\b))",
    re.IGNORECASE,
)
"""A standing instruction on how to answer: a preference, not a one-off request."""


def _starts_about_user(text: str) -> bool:
    return bool(_ABOUT_ME.match(text) or _SUBJECTLESS.match(text) or _TO_ME.match(text))


def about_user(statement: str) -> bool:
    """Whether a tidied statement states something about the user."""
    words = statement.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS or statement[:1] in "'\"“‘(":
        return False
    if _QUESTION.match(statement) or _REQUEST.match(statement):
        return False
    if _HYPOTHETICAL.search(statement) or _SMALL_TALK.match(statement):
        return False
    if _TROUBLE.search(statement) or _ONLY_A_POINTER.match(statement):
        return False
    reported = _REPORTED.match(statement)
    if reported and not _MINE.search(reported[1]):
        return False  # what one of the user's people said about the world
    return _starts_about_user(statement)


def _standing_instruction(statement: str) -> bool:
    words = statement.split()
    return len(words) >= 3 and not _QUESTION.match(statement)


# -- 6. classify ----------------------------------------------------------------------------------

_PERSON_SUBJECT = re.compile(
    rf"^(?:my|our) (?:{ADJECTIVES} )?(?!team\b){_PERSON}\b"
    r"(?: [A-ZÀ-Þ][\w'’-]*)?",
    re.IGNORECASE,
)


def _about_a_person(statement: str) -> bool:
    """The statement's subject is one of the user's people, and it says nothing of the user
    ("my sister Ana lives in Porto", "my wife's birthday is…"; not "my dentist told me to…")."""
    match = _PERSON_SUBJECT.match(statement)
    return bool(match) and not _MINE.search(statement[match.end() :] if match else "")


def clauses(message: str) -> list[tuple[str, bool]]:
    """The candidate statements of a message, tidied, in order, each with whether it is a
    standing instruction."""
    text, kept = _protect(message)
    found: list[tuple[str, bool]] = []
    for sentence in _SENTENCES.split(text):
        if not sentence.strip():
            continue
        for clause, standing in _clauses(sentence, kept):
            tidy = _tidy(clause, kept)
            if tidy:
                found.append((tidy, standing))
    return found


def extract(
    user_message: str,
    assistant_response: str | None = None,
    *,
    classifier: Classifier | None = None,
) -> list[Extracted]:
    """The claims ``user_message`` states about its user, each once, in order, with its
    category. ``assistant_response`` is not a source of claims."""
    del assistant_response  # the user speaks for themselves
    seen: set[str] = set()
    kept: list[tuple[str, bool]] = []
    for statement, standing in clauses(user_message):
        key = " ".join(re.findall(r"\w+", statement.lower()))
        if key in seen:
            continue
        if _standing_instruction(statement) if standing else about_user(statement):
            seen.add(key)
            kept.append((statement, standing))
    if not kept:
        return []
    decisions = (classifier or _CLASSIFIER).classify_all([s for s, _ in kept])
    found = []
    for (statement, standing), decision in zip(kept, decisions, strict=True):
        category = decision.category
        if standing:
            category = "preference"
        elif _about_a_person(statement):
            category = "relationship"
        found.append(Extracted(statement, category))
    return found


def answers_to_extracted(answer: Any) -> list[Extracted]:
    """An ``extractor_command``'s answer, ``[{"statement": str, "category": str}, …]``, as
    claims; anything else is a ``CommandFailed`` saying why in one line."""
    if not isinstance(answer, list) or not all(isinstance(a, dict) for a in answer):
        raise CommandFailed('output is not a JSON list of {"statement", "category"} objects')
    if len(answer) > MAX_EXTRACTED:
        raise CommandFailed(
            f"{len(answer)} statements for one message; an extractor may give {MAX_EXTRACTED}"
        )
    found = []
    for item in answer:
        statement, category = item.get("statement"), item.get("category")
        if not isinstance(statement, str) or blank(statement):
            raise CommandFailed("an answer without a statement")
        if category not in KNOWN_TYPES:
            raise CommandFailed(f"unknown category {category!r}")
        statement = " ".join(without_controls(statement).split())
        problem = statement_problem(statement)
        if problem:
            raise CommandFailed(problem)
        found.append(Extracted(statement, str(category)))
    return found


_CLASSIFIER = Classifier()
