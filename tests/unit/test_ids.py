"""Friendly ids, name keys and timestamps (docs/reference.md, Interchange format: Ids)."""

from __future__ import annotations

import re
from itertools import cycle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsp_memory import ids

SHAPE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+){0,2}_[0-9a-f]{4}")


def test_friendly_id_keeps_meaningful_words_and_adds_hex_suffix() -> None:
    fid = ids.friendly_id("I prefer morning meetings before 10am", suffix=lambda: "a3f2")
    assert fid == "prefer_morning_meetings_a3f2"


def test_friendly_id_skips_stop_words_and_takes_at_most_three_words() -> None:
    fid = ids.friendly_id(
        "The user is working on the Alpha project with Bob", suffix=lambda: "0b1c"
    )
    assert fid == "working_alpha_project_0b1c"


def test_friendly_id_of_one_word() -> None:
    assert ids.friendly_id("Vegetarian.", suffix=lambda: "1234") == "vegetarian_1234"


def test_friendly_id_starts_with_a_letter_even_after_numbers() -> None:
    fid = ids.friendly_id("2024 was the year I moved to Berlin", suffix=lambda: "beef")
    assert fid == "year_moved_berlin_beef"


def test_friendly_id_folds_accents_and_falls_back_for_non_latin_text() -> None:
    assert ids.friendly_id("Café crème", suffix=lambda: "abcd") == "cafe_creme_abcd"
    assert ids.friendly_id("我喜欢茶", suffix=lambda: "abcd") == "claim_abcd"
    assert ids.friendly_id("", fallback="context", suffix=lambda: "abcd") == "context_abcd"


def test_friendly_id_is_never_one_already_taken() -> None:
    suffixes = cycle(["aaaa", "aaaa", "bbbb"])
    taken = {"prefer_tea_aaaa"}
    assert ids.friendly_id("prefer tea", taken, suffix=lambda: next(suffixes)) == (
        "prefer_tea_bbbb"
    )


@given(st.text(max_size=400))
def test_friendly_id_shape_for_any_text(text: str) -> None:
    fid = ids.friendly_id(text)
    assert len(fid) <= ids.MAX_FRIENDLY_ID
    assert SHAPE.fullmatch(fid), fid
    assert ids.FRIENDLY_ID.fullmatch(fid)


def test_a_generated_id_is_never_a_claim_number_form() -> None:
    """A statement with no usable word got ``claim_<4 hex>``, and when the four were digits
    (``claim_1234``) ``@claim_1234`` named claim number 1234 instead."""
    suffixes = iter(["1234", "0042", "a1b2"])
    assert ids.friendly_id("!!!", suffix=lambda: next(suffixes)) == "claim_a1b2"


def test_long_words_stay_within_sixty_characters() -> None:
    fid = ids.friendly_id("x" * 100 + " " + "y" * 100 + " " + "z" * 100)
    assert len(fid) <= 60
    assert SHAPE.fullmatch(fid)


def test_named_ids_for_entities_and_tags() -> None:
    assert ids.named_id("Alice Person", "entity") == "alice_person_entity"
    assert ids.named_id("Sleep", "tag") == "sleep_tag"
    assert ids.named_id("2024", "tag") == "tag_2024_tag"
    taken = {"sleep_tag"}
    assert re.fullmatch(r"sleep_[0-9a-f]{4}_tag", ids.named_id("Sleep", "tag", taken))


def test_name_key_matches_spec_example() -> None:
    assert ids.name_key("My Health Goals") == "my_health_goals"
    assert ids.name_key("  Two   Spaces ") == "two_spaces"


@pytest.mark.parametrize(
    ("given_value", "stored"),
    [
        ("2024-05-01", "2024-05-01T00:00:00.000000Z"),
        ("2024-05-01T10:00:00Z", "2024-05-01T10:00:00.000000Z"),
        ("2024-05-01T12:00:00+02:00", "2024-05-01T10:00:00.000000Z"),
        ("2024-05-01T10:00:00.5", "2024-05-01T10:00:00.500000Z"),
    ],
)
def test_timestamps_are_stored_in_utc_fixed_width(given_value: str, stored: str) -> None:
    assert ids.timestamp(given_value) == stored


@pytest.mark.parametrize("bad", ["yesterday", "2024-13-45T25:61:00Z", ""])
def test_bad_timestamps_raise(bad: str) -> None:
    with pytest.raises(ValueError):
        ids.timestamp(bad)


def test_text_order_of_stored_timestamps_is_time_order() -> None:
    early = ids.timestamp("2024-05-01T10:00:00Z")
    late = ids.timestamp("2024-05-01T10:00:00.5Z")
    assert early < late
