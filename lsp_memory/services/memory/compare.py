"""How two statements of one category relate, read from their words (consolidation's rules
beside the cosine): whether one negates the other, and whether one says nothing the other
does not (so merging them loses nothing).

Both are deliberately plain word rules: predictable, explainable in a review item, and fast
enough for every similar pair of a 100k-claim memory.
"""

from __future__ import annotations

import re
from functools import lru_cache

from lsp_memory.slots import USER, fact

_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d[\d,.]*\d|\d")

_NEGATIONS = frozenset(
    "not no never nothing nobody none neither nor without cannot".split()
    + "stopped quit anymore".split()
)
"""Words that turn a statement around ("n't" endings and "no longer" count too)."""

_NEGATIVE = frozenset(
    "dislike dislikes disliked hate hates hated detest detests loathe loathes avoid avoids "
    "avoided can't cant".split()
)
"""Verbs that state the opposite of liking or doing."""

_LIKE = frozenset("like likes liked love loves loved enjoy enjoys enjoyed adore adores".split())
"""Words of liking: a statement saying "love" where another says "like" loses nothing."""

_STOP = frozenset(
    """a an the and or but of to in on at for with from by as is are was were be been being
    am i i'm im me my mine we our us you your it its this that these those there here
    have has had do does did so very really quite truly just actually also too much lot
    lots always still now currently definitely absolutely rather pretty some any""".split()
)
"""Words whose absence loses nothing."""


def _words(text: str) -> list[str]:
    return [w.lower().replace("’", "'") for w in _WORD.findall(text)]


def negated(statement: str) -> bool:
    """Whether a statement says the negative: an odd number of negations ("not", "never",
    "no longer", "don't") and negative verbs ("dislike", "hate", "avoid")."""
    count = 0
    for word in _words(statement):
        if word in _NEGATIONS or word in _NEGATIVE or word.endswith("n't"):
            count += 1
    return count % 2 == 1


_AGAINST_LIKING = frozenset(
    "dislike dislikes disliked hate hates hated detest detests loathe loathes".split()
)


def core(statement: str) -> frozenset[str]:
    """A statement's content words with its negations taken out ("I don't like tea" and "I
    hate tea" → like, tea): what two statements must share to negate each other."""
    words = set()
    for key, word in _content(statement).items():
        if word in _AGAINST_LIKING:
            words.add("like")
        elif not (word in _NEGATIONS or word in _NEGATIVE or word.endswith("n't")):
            words.add(key)
    return frozenset(words - {"longer"})


def opposite(first: str, second: str) -> bool:
    """Whether one statement negates the other: opposite valence ("I like tea" / "I don't
    like tea", "I love cilantro" / "I hate cilantro") about the same thing (the content words
    of one, negations aside, are all in the other: "I don't like dark roast" does not negate
    "I like light roast")."""
    if negated(first) == negated(second):
        return False
    a, b = core(first), core(second)
    return a <= b or b <= a


_ENDINGS = (
    ("ically", 3), ("ical", 3), ("ily", 3), ("ies", 3), ("ied", 3), ("ing", 2), ("ed", 3),
    ("ly", 4), ("es", 3), ("ic", 3), ("s", 3),
)  # fmt: skip
"""Endings cut from a word, the first that fits, with the fewest letters left before it:
inflections ("peanuts", "liked", "running") and the endings that turn one word of a family
into another ("allergic" / "allergy", "musical" / "music", "happily" / "happy")."""
_IRREGULAR = {
    "children": "child", "people": "person", "men": "man", "women": "woman", "wives": "wife",
    "feet": "foot", "teeth": "tooth", "mice": "mouse", "went": "go", "gone": "go",
    "goes": "go", "does": "do", "news": "news", "evening": "evening", "during": "during",
}  # fmt: skip
"""Words whose family no ending tells, and words that look inflected but are not."""
_VOWEL = re.compile(r"[aeiouy]")


def _cut(word: str) -> str:
    """``word`` without the first of ``_ENDINGS`` it has; a plural's "s" and then the
    word's own ending ("mornings" → morn, like "morning")."""
    for ending, least in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= least:
            if (ending == "s" and word.endswith(("ss", "us", "is"))) or word.endswith("eed"):
                break  # "class", "bus", "analysis", "speed": not an ending
            if not _VOWEL.search(word[: -len(ending)]):
                break  # "string", "thing": the ending is the word
            cut = word[: -len(ending)]
            return _cut(cut) if ending == "s" and cut.endswith("ing") else cut
    return word


def stem(word: str) -> str:
    """A word's family in lower case: one ending cut (``_ENDINGS``), then a final "e", "y" or
    "i" and a doubled last consonant ("allergic", "allergy", "allergies" → allerg; "stopped",
    "stop" → stop; "liking", "likes" → lik). Crude but predictable: two words of one family
    get the same stem far more often than two different words do, and a miss only keeps a
    pair apart."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    word = _cut(word)
    if len(word) > 3 and word[-1] in "eyi":
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]
    return word


def content(statement: str) -> frozenset[str]:
    """The words that carry a statement: numbers as written without separators, names (a
    capitalised word after the first) whole, other content words by their ``stem``, words
    of liking as one word, stop words left out: two statements with the same content say
    the same thing however inflected ("I'm allergic to peanuts" / "peanut allergy")."""
    return frozenset(_content(statement))


@lru_cache(maxsize=65_536)
def _content(statement: str) -> dict[str, str]:
    """``content``'s words, each with the word as written (in lower case)."""
    found: dict[str, str] = {}
    for position, written in enumerate(_WORD.findall(statement)):
        word = written.lower().replace("’", "'")
        if word[0].isdigit():
            number = word.replace(",", "").rstrip(".")
            found[number] = number
        elif word in _LIKE:
            found["like"] = word
        elif word in _STOP:
            continue
        elif position and written[0].isupper():
            found[word.strip("'-")] = word  # a name: never merged into another
        else:
            found[stem(word.strip("'-"))] = word
    return found


def lost(loser: str, winner: str) -> frozenset[str]:
    """What merging ``loser`` into ``winner`` would lose: its numbers, names and content
    words (as written) whose stem ``winner`` lacks (empty: nothing lost, the two are
    paraphrases)."""
    kept = _content(winner)
    return frozenset(word for key, word in _content(loser).items() if key not in kept)


# -- values on one slot -----------------------------------------------------------------------
# Who a statement is about and which of their slots it fills are read as supersede on write
# reads them (``lsp_memory.slots``): one vocabulary for both rules.

_SPLIT = re.compile(r" (?:and|but|because|since|so|as well|while|where|who|which) ", re.I)
_TIME_WORDS = frozenset("now currently anymore again nowadays lately today still".split())


@lru_cache(maxsize=65_536)
def slot(statement: str) -> tuple[str, str, str] | None:
    """``(who, slot, value)`` when the statement gives one value of a slot of a person ("I
    live in Lyon" → ``("i", "residence", "lyon")``; who is "i", "my <relation>" or a
    name), in lower case, the value cut at the first clause and without articles or words
    of time; None for anything else (a negative statement included: "I no longer live in
    Lyon" says no value)."""
    text = statement.strip().replace("’", "'")
    if negated(text):
        return None
    found = fact(text)
    if found is None:
        return None
    who = found.who
    key = "i" if who == USER else (who.name or f"my {who.relation}")
    return _slot(key, found.slot, found.value)


def _slot(who: str, name: str, value: str) -> tuple[str, str, str] | None:
    clause = re.split(r"[,;](?:\s|$)", value.strip().lower())[0]  # "£1,500" stays whole
    words = _SPLIT.split(clause, maxsplit=1)[0].split()
    while words and words[0] in ("a", "an", "the"):
        words.pop(0)
    while words and words[-1] in _TIME_WORDS:
        words.pop()
    if not words:
        return None
    return who, name, " ".join(words)


def conflict(first: str, second: str) -> tuple[str, str, str] | None:
    """``(slot, value of first, value of second)`` when the two statements give different
    values of one slot of the same person ("I work as a backend developer" / "I work in
    frontend now"); None when they give none, the same, or one a part of the other ("a
    developer" / "a backend developer": a detail, not another value)."""
    a, b = slot(first), slot(second)
    if a is None or b is None or a[:2] != b[:2]:
        return None
    words_a, words_b = content(a[2]), content(b[2])
    if words_a <= words_b or words_b <= words_a:
        return None
    return a[1], a[2], b[2]
