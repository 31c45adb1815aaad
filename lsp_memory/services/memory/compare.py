"""How two statements of one category relate, read from their words (consolidation's rules
beside the cosine): whether one negates the other, and whether one says nothing the other
does not (so merging them loses nothing).

Both are deliberately plain word rules: predictable, explainable in a review item, and fast
enough for every similar pair of a 100k-claim memory.
"""

from __future__ import annotations

import re
from functools import lru_cache

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
    for word in content(statement):
        if word in _AGAINST_LIKING:
            words.add("like")
        elif not (word in _NEGATIONS or word in _NEGATIVE or word.endswith("n't")):
            words.add(word)
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


def _stem(word: str) -> str:
    for ending in ("ing", "ed", "es", "s"):
        if len(word) > len(ending) + 2 and word.endswith(ending):
            return word[: -len(ending)]
    return word


@lru_cache(maxsize=65_536)
def content(statement: str) -> frozenset[str]:
    """The words that carry a statement: numbers as written without separators, names and
    content words stemmed, words of liking as one word, stop words left out."""
    found = set()
    for word in _words(statement):
        if word[0].isdigit():
            found.add(word.replace(",", "").rstrip("."))
        elif word in _LIKE:
            found.add("like")
        elif word not in _STOP:
            found.add(_stem(word.strip("'-")))
    return frozenset(found)


def lost(loser: str, winner: str) -> frozenset[str]:
    """What merging ``loser`` into ``winner`` would lose: its numbers, names and content
    words that ``winner`` lacks (empty: nothing lost, the two are paraphrases)."""
    return content(loser) - content(winner)
