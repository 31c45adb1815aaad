"""Consolidation's word rules: which statements negate each other, and what merging one
statement into another would lose."""

from __future__ import annotations

import pytest

from lsp_memory.services.memory.compare import conflict, lost, negated, opposite, slot


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
    # Inflections and word families are one word; numbers and names never are.
    assert lost("My son is 7", "My sons are 8") == {"7"}
    assert lost("I met James at the gym", "I met Jame at the gym") == {"james"}


@pytest.mark.parametrize(
    ("loser", "winner"),
    [
        ("I am allergic to peanuts", "I have an allergy to peanuts"),
        ("My daughter has a peanut allergy", "My daughter is allergic to peanuts"),
        ("I like to run in the morning", "I like running in the mornings"),
        ("I stopped smoking", "I stop smoking"),
        ("I study Japanese", "I am studying Japanese"),
    ],
)
def test_inflections_and_word_families_lose_nothing(loser: str, winner: str) -> None:
    assert lost(loser, winner) == frozenset()
    assert lost(winner, loser) == frozenset()


def test_negations_are_read_through_inflections() -> None:
    assert opposite("I smoke", "I quit smoking")
    assert opposite("I go to the gym on Mondays", "I stopped going to the gym on Mondays")


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("I work as a backend developer", ("i", "occupation", "backend developer")),
        ("I work in frontend now", ("i", "occupation", "frontend")),
        ("I work in Berlin", ("i", "workplace", "berlin")),
        ("I'm currently based in Paris", ("i", "residence", "paris")),
        ("I have recently joined Stripe", ("i", "employer", "stripe")),
        ("My sister lives in Porto, near the river", ("my sister", "residence", "porto")),
        ("My favourite colour is blue", ("i", "favourite colour", "blue")),
        ("Ana's favourite food is sushi", ("ana", "favourite food", "sushi")),
        ("My son is 7 years old", ("my son", "age", "7")),
        ("I no longer live in Lyon", None),  # says no value
        ("She lives in Rome", None),  # whom it is about is not said
        ("I like living in Lyon", None),
    ],
)
def test_slot(statement: str, expected: tuple[str, str, str] | None) -> None:
    assert slot(statement) == expected


def test_a_conflict_is_another_value_of_the_same_slot_of_the_same_person() -> None:
    backend, frontend = "I work as a backend developer", "I work in frontend now"
    assert conflict(backend, frontend) == ("occupation", "backend developer", "frontend")
    assert conflict("I live in Lyon", "I moved to Berlin") == ("residence", "lyon", "berlin")
    assert conflict("I live in Lyon", "My sister lives in Berlin") is None  # another person
    assert conflict("I live in Lyon", "I work in Berlin") is None  # another slot
    assert conflict("I live in Lyon", "I have lived in Lyon") is None  # the same value
    assert conflict("I work as a developer", "I work as a backend developer") is None  # detail
    assert conflict("My budget for the trip is £1,500", "My budget for the trip is £2,000") == (
        "budget for trip",
        "£1,500",
        "£2,000",
    )
    assert conflict("My sister Ana lives in Porto", "My sister Ana is a doctor") is None
