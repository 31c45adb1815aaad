"""Consolidation's word rules: which statements negate each other, and what merging one
statement into another would lose."""

from __future__ import annotations

import pytest

from lsp_memory.services.memory.compare import lost, negated, opposite


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("I like tea", False),
        ("I don't like tea", True),
        ("I no longer live in Lyon", True),
        ("I never drink coffee after 4pm", True),
        ("I hate cilantro", True),
        ("I don't dislike cilantro", False),  # two negations
        ("I can’t stand loud offices", True),  # a typographic apostrophe
    ],
)
def test_negated(statement: str, expected: bool) -> None:
    assert negated(statement) is expected


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ("I live in Lyon", "I no longer live in Lyon", True),
        ("I love cilantro", "I hate cilantro", True),
        ("I drink coffee after 4pm", "I never drink coffee after 4pm", True),
        # Opposite valence, but about different things: no contradiction.
        ("I don't like dark roast coffee", "I like light roast coffee", False),
        ("I like tea", "I like coffee", False),
        ("I like tea", "I really love tea", False),  # the same valence
    ],
)
def test_opposite(first: str, second: str, expected: bool) -> None:
    assert opposite(first, second) is expected
    assert opposite(second, first) is expected


def test_paraphrases_lose_nothing() -> None:
    assert lost("I really love dark roast coffee", "I like dark roast coffee") == frozenset()
    assert lost("I enjoy hiking", "I really enjoy hiking") == frozenset()
    assert lost("My sister lives in Rome", "my sister lives in Rome") == frozenset()


def test_a_different_value_number_or_name_is_lost() -> None:
    assert lost("I like light roast coffee", "I like dark roast coffee") == {"light"}
    assert lost("My budget is £1,500", "My budget is £2,000") == {"1500"}
    assert lost("I met Anna at the gym", "I met Maria at the gym") == {"anna"}
    assert lost("I like tea and cake", "I like tea") == {"cake"}
