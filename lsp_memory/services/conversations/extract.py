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

A short answer to the assistant's yes/no question before it is read with that question
(``answered``): "Do you have kids?" + "yes, two kids" → "I have two kids", "Are you
vegetarian?" + "no" → "I'm not vegetarian"; an answer that is more than yes or no and a noun
phrase, or a question that is not about the user, gives nothing. A pair of subjects stays
whole: "Abby and I are planning a trip" is not cut before "and I".

The assistant's reply is never a source of claims (only the question a short answer needs).
Statements without a subject ("Not really a fan of jazz" aside) and facts given only through
a pronoun ("she was 17") are out of reach of these rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lsp_memory.model import KNOWN_TYPES
from lsp_memory.services.kernel.command import CommandFailed
from lsp_memory.services.memory.classify import Classifier
from lsp_memory.services.memory.interchange import statement_problem
from lsp_memory.slots import ADJECTIVES, RELATIONS
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
_NAME = (
    r"(?!(?:I|Sure|Yes|Yeah|Yep|Ok|Okay|Well|Now|Then|Today|Tonight|Yesterday|Tomorrow|Also|"
    r"So|And|But|Oh|Hi|Hello|Thanks|Honestly|Actually|Anyway|Btw)\b)"
    r"[A-ZÀ-Þ][\w'’-]*(?: [A-ZÀ-Þ][\w'’-]*)?"
)
_NAMED = re.compile(_NAME)
"""A piece before "and I" that is someone's name ("Abby", "Mary Jane"; case matters): the
pair is the subject ("Abby and I are planning…"), not cut."""
_NAMED_PAIR = re.compile(rf"^{_NAME} and (?:I|me)\b")
"""A statement whose subject is the user and someone named: about the user too."""
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
            bare = _LEAD.sub("", _FILLER.sub("", left.strip()))
            if _COUPLE.fullmatch(bare) or (_NAMED.fullmatch(bare) and match[1].strip() == "and"):
                continue  # "my girlfriend and I broke up", "Abby and I…": one subject
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
    return bool(
        _ABOUT_ME.match(text)
        or _NAMED_PAIR.match(text)
        or _SUBJECTLESS.match(text)
        or _TO_ME.match(text)
    )


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


# -- short answers --------------------------------------------------------------------------

_YES = re.compile(
    r"^(?:yes|yeah|yep|yup|yea|ya|sure|correct|right|indeed|i do|i am|i have|absolutely|"
    r"definitely)\b[\s,.!:;-]*",
    re.IGNORECASE,
)
_NO = re.compile(
    r"^(?:no|nope|nah|not really|i don't|i do not|i'm not|i am not)\b[\s,.!:;-]*", re.I
)
_ECHO = re.compile(
    r"^(?:(?:i|we) (?:do|am|have|did|don't|do not|haven't|am not)|i['’]m(?: not)?|"
    r"we['’]re(?: not)?|not (?:yet|really|at all|anymore|any more)|never(?: have| did)?|"
    r"of course|both|absolutely|definitely|indeed|haha\w*|lol)"
    r"[\s.!]*$",
    re.IGNORECASE,
)
_HOW_MANY = r"one|two|three|four|five|six|seven|eight|nine|ten|\d+|a few|several|a couple"
_COUNT = re.compile(rf"^(?:{_HOW_MANY})$", re.IGNORECASE)
"""An answer that is only how many ("yes, two"): of the thing asked about."""
_NOUN_PHRASE = re.compile(
    rf"^(?:a|an|{_HOW_MANY}(?: of)?|twins|some|lots of|loads of|many)(?: [\w'’-]+){{0,4}}$",
    re.IGNORECASE,
)
"""An answer that names what one has ("yes, a dog and a cat")."""
_ASKED = re.compile(
    r"^(?:and |so |also |out of interest,? |by the way,? )?(?:"
    r"(?P<have>do you (?:currently |still )?have|have you got)\s+(?P<owned>.+)|"
    r"(?P<does>do you (?:currently |still |usually |often )?)(?P<verb>(?!(?:want|need|mean|know|"
    r"think|remember|see|understand|agree|mind|feel like|prefer|like me|have)\b)[a-z]+)"
    r"(?:\s+(?P<object>.+))?|"
    r"are you (?P<state>(?!(?:sure|ok|okay|there|still there|ready|asking|referring|talking|"
    r"able|looking for|free to|happy with (?:that|this|it))\b).+))$",
    re.IGNORECASE,
)
"""A yes/no question of the assistant's about the user: "Do you have kids?", "Do you eat
meat?", "Are you vegetarian?" (not a request: "do you want me to…", "are you sure")."""
_YOURS = {"your": "my", "yours": "mine", "yourself": "myself", "you": "me"}
_POINTER = re.compile(r"\b(?:it|this|that|these|those|them|me|or)\b", re.IGNORECASE)
MAX_ANSWER_WORDS = 8


def short_answer(message: str) -> bool:
    """Whether ``message`` looks like a short yes/no answer (then the question before it is
    worth reading)."""
    text = " ".join(without_controls(message).split())
    return len(text.split()) <= MAX_ANSWER_WORDS and bool(_YES.match(text) or _NO.match(text))


def answered(question: str, message: str) -> str | None:
    """The statement a short answer makes with the assistant's yes/no question before it
    ("Do you have kids?" + "yes, two kids" → "I have two kids"; "Are you vegetarian?" + "no" →
    "I'm not vegetarian"), or None when the pair cannot be turned into one: not a yes/no
    question about the user, or an answer that is more than yes/no and a noun phrase."""
    if not short_answer(message):
        return None
    asked = _last_question(question)
    found = _ASKED.match(asked) if asked else None
    if found is None:
        return None
    text = " ".join(without_controls(message).split())
    yes = _YES.match(text)
    head = yes or _NO.match(text)
    assert head is not None
    rest = _TRAILER.sub("", text[head.end() :]).strip(" ,;:-–—")
    if rest and _ECHO.match(rest):
        rest = ""
    if found["state"]:
        state = _yours(found["state"])
        if rest or state is None:
            return None
        return f"I'm {state}" if yes else f"I'm not {state}"
    verb = "have" if found["have"] else found["verb"].lower()
    if found["verb"] and not found["object"]:  # "Do you smoke?"
        return None if rest else (f"I {verb}" if yes else f"I don't {verb}")
    thing = _yours(found["owned"] or found["object"])
    if thing is None:
        return None
    if not rest:
        return f"I {verb} {thing}" if yes else f"I don't {verb} {thing}"
    if not yes or verb not in ("have", "own"):
        return None  # "Do you speak Spanish?" "yes, a little": not a thing to have
    if _COUNT.match(rest):  # "Do you have any pets?" "yes, two" → "I have two pets"
        bare = re.sub(r"^(?:any|some|a|an)\s+", "", thing, flags=re.IGNORECASE)
        return f"I {verb} {rest} {bare}"
    if _NOUN_PHRASE.match(rest) and not _POINTER.search(rest):
        return f"I {verb} {rest}"
    return None


def _last_question(text: str) -> str | None:
    """The assistant message's last sentence, when it asks something."""
    sentences = [s.strip() for s in _SENTENCES.split(without_controls(text)) if s.strip()]
    if not sentences or not sentences[-1].endswith("?"):
        return None
    return sentences[-1].rstrip("?").strip()


def _yours(phrase: str) -> str | None:
    """The question's object in the user's words ("your own car" → "my own car"); None
    when it points at something the answer cannot name ("it", "this or that")."""
    phrase = phrase.strip(" ,")
    if not phrase or len(phrase.split()) > 8 or _POINTER.search(phrase):
        return None
    return re.sub(
        r"\b(?:your|yours|yourself|you)\b", lambda m: _YOURS[m[0].lower()], phrase, flags=re.I
    )


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
    question: str | None = None,
) -> list[Extracted]:
    """The claims ``user_message`` states about its user, each once, in order, with its
    category. ``assistant_response`` is not a source of claims. ``question``: the assistant's
    message before ``user_message``, which a short answer ("yes, two kids") is read with."""
    del assistant_response  # the user speaks for themselves
    seen: set[str] = set()
    kept: list[tuple[str, bool]] = []
    first, *rest = _SENTENCES.split(user_message.strip(), maxsplit=1)
    answer = answered(question, first) if question else None
    statements = [(answer, False), *clauses(rest[0] if rest else "")] if answer else None
    for statement, standing in statements or clauses(user_message):
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
