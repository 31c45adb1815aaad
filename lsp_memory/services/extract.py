"""Extraction: the claims a conversation message states about its user, offline.

A user message is cut into sentences, and a sentence into clauses where "and"/"but"/"so"
start a new first-person statement ("I live in Lyon and I work at Acme"). A clause is kept
when it is a statement about the user — it starts (after fillers such as "oh", "btw",
"actually") with I, I'm, I've, my, we…, or names someone as "my sister", "my boss"… — and is
not a question, a request to the assistant ("can you…", "please…", "write me…"), a
hypothetical ("if I…") or small talk ("I'm fine", "I see", "thanks", "I was wondering").
The kept clause, tidied (fillers and trailing "lol", "!", emoji dropped, first letter in
capitals), is the claim's statement, in the user's own words; the classifier gives its
category. The assistant's reply is never a source of claims.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lsp_memory.services.classify import Classifier

MIN_WORDS = 2
MAX_WORDS = 60


@dataclass(frozen=True, slots=True)
class Extracted:
    """One claim found in a message."""

    statement: str
    category: str


_SENTENCES = re.compile(r"(?<=[.!?;])\s+|\n+")
_CLAUSES = re.compile(
    r",?\s+(?:and|but|so|plus)\s+(?=(?:i|i'm|i’m|i've|i’ve|my|we|we're)\b)", re.IGNORECASE
)
_FILLER = re.compile(
    r"^(?:(?:oh|ah|um+|uh+|well|so|and|but|also|btw|by the way|actually|anyway|ok(?:ay)?|"
    r"yeah|yep|yes|no|nope|hey|hi|hello|lol|haha|fyi|honestly|basically|just so you know|"
    r"for context|fun fact|quick update|update)\b[,:!.]*\s*)+",
    re.IGNORECASE,
)
_TRAILER = re.compile(
    r"(?:\s*(?:lol|haha+|:\)|:\(|:D|;\)|xD)|[\s.!…]+|[\U0001F300-\U0001FAFF☀-➿]+)+$"
)
_ABOUT_ME = re.compile(
    r"^(?:i|i'm|i’m|im|i've|i’ve|i'd|i’d|i'll|i’ll|my|we|we're|we’re|we've|our|me and)\b",
    re.IGNORECASE,
)
_MY_PERSON = re.compile(
    r"\bmy (?:sister|brother|mother|mom|mum|father|dad|wife|husband|partner|son|daughter|"
    r"kids?|children|friend|best friend|boss|manager|colleague|coworker|girlfriend|boyfriend|"
    r"fiancée?|grandma|grandmother|grandpa|grandfather|aunt|uncle|cousin|neighbou?r|cat|dog|"
    r"therapist|doctor|team|roommate|flatmate)\b",
    re.IGNORECASE,
)
_QUESTION = re.compile(
    r"^(?:what|who|whom|where|when|why|how|which|can|could|would|should|will|do|does|did|"
    r"is|are|am|was|were|shall|may|might|any idea|any tips)\b",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"^(?:please|pls|can you|could you|would you|will you|help me|tell me|show me|give me|"
    r"write|draft|make|create|find|list|explain|summari[sz]e|translate|suggest|recommend|"
    r"let's|lets|let me know|remind me|i need you to|i want you to|i'd like you to|"
    r"i would like you to)\b",
    re.IGNORECASE,
)
_HYPOTHETICAL = re.compile(
    r"^(?:if|whenever|unless|suppose|supposing|imagine|maybe|perhaps|in case)\b|"
    r"\b(?:i wonder|i was wondering|i'm wondering|i’m wondering)\b",
    re.IGNORECASE,
)
_SMALL_TALK = re.compile(
    r"^(?:i(?:'m|’m| am) (?:fine|good|ok|okay|great|well|back|here|sorry|glad|happy to hear)"
    r"\b|i see|i think so|i guess|i know|i agree|i understand|i mean|i don'?t know|"
    r"i hope (?:so|you|that helps)|i was just|i just wanted|i wanted to ask|i have a question|"
    r"i need (?:help|some help|advice|some advice|a hand)|i(?:'m|’m| am) (?:asking|curious|"
    r"not sure|just)|i (?:love|like|appreciate|get) (?:it|that|this|you)\b|i(?:'ll|’ll) "
    r"(?:try|check|think|let you know|do that)|i(?:'d|’d) (?:love|like) (?:to know|some|a|an|"
    r"help|advice|ideas|suggestions|recommendations)|thanks|thank you|i forgot to (?:ask|say)|"
    r"my (?:bad|pleasure|question)\b)",
    re.IGNORECASE,
)


def clauses(message: str) -> list[str]:
    """The candidate statements of a message, tidied, in order."""
    found = []
    for part in _SENTENCES.split(message):
        sentence = part.strip()
        if not sentence or sentence.endswith("?"):
            continue
        for clause in _CLAUSES.split(sentence):
            found.append(_tidy(clause))
    return [c for c in found if c]


_ASKING = re.compile(
    r",\s*(?:(?:so|and|but)\s+)?(?:[^,]*\bplease\b|can you|could you|would you|"
    r"keep (?:that|this) in mind|let me know)\b.*$",
    re.IGNORECASE,
)
"""A request trailing a statement ("…, so please keep that in mind"): cut off."""


def _tidy(clause: str) -> str:
    text = " ".join(clause.split())
    text = _FILLER.sub("", text)
    text = _ASKING.sub("", text)
    text = _TRAILER.sub("", text).strip(" ,;:-–—\"'")
    return text[:1].upper() + text[1:] if text else ""


def about_user(clause: str) -> bool:
    """Whether a tidied clause states something about the user."""
    words = clause.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS:
        return False
    if _QUESTION.match(clause) or _REQUEST.match(clause) or _HYPOTHETICAL.search(clause):
        return False
    if _SMALL_TALK.match(clause):
        return False
    return bool(_ABOUT_ME.match(clause) or _MY_PERSON.search(clause))


def extract(
    user_message: str,
    assistant_response: str | None = None,
    *,
    classifier: Classifier | None = None,
) -> list[Extracted]:
    """The claims ``user_message`` states about its user, each once, in order, with its
    category. ``assistant_response`` is not a source of claims."""
    del assistant_response  # the user speaks for themselves
    chosen = classifier or _CLASSIFIER
    seen: set[str] = set()
    found = []
    for clause in clauses(user_message):
        key = clause.lower()
        if key in seen or not about_user(clause):
            continue
        seen.add(key)
        found.append(Extracted(clause, chosen.classify(clause).category))
    return found


_CLASSIFIER = Classifier()
