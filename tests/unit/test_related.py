"""The pure parts of related-note suggestions: which paragraph the cursor is in (none in a
heading, front matter, code or a blank line), what of it is embedded, and the
``related_similarity`` setting (a cosine, or off; a bad value is a warning and the default)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_memory.config import DEFAULT_RELATED_SIMILARITY, Config, apply_settings
from lsp_memory.services.editor.related import paragraph_at, query_text

NOTE = (
    "---\ntitle: Trip\n---\n"  # lines 0-2
    "# Trip\n"  # 3
    "First line of the paragraph\nand its second line.\n"  # 4-5
    "\n"  # 6
    "```\ncode inside a fence\n```\n"  # 7-9
    "- a list item\n- another one  \n"  # 10-11
)


def offset_of(line: int, column: int = 2) -> int:
    return sum(len(x) + 1 for x in NOTE.split("\n")[:line]) + column


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (4, "First line of the paragraph\nand its second line."),
        (5, "First line of the paragraph\nand its second line."),
        (10, "- a list item\n- another one"),
        (0, None),  # front matter
        (1, None),
        (3, None),  # a heading
        (6, None),  # a blank line
        (8, None),  # code
    ],
)
def test_the_paragraph_at_a_line(line: int, expected: str | None) -> None:
    found = paragraph_at(NOTE, offset_of(line))
    assert (NOTE[found.start : found.end] if found is not None else None) == expected


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_paragraph_right_under_the_front_matter_leaves_it_out(newline: str) -> None:
    text = "---\ntitle: A\n---\nFirst words right below.\nSecond line.\n".replace("\n", newline)
    found = paragraph_at(text, text.index("Second"))
    assert found is not None
    assert text[found.start : found.end] == f"First words right below.{newline}Second line."
    assert paragraph_at(text, text.index("title")) is None


def test_front_matter_never_closed_is_text() -> None:
    text = "---\ntitle: A\nwords go on"
    found = paragraph_at(text, text.index("words"))
    assert found is not None and text[found.start : found.end] == text


def test_a_document_without_front_matter_starts_with_a_paragraph() -> None:
    text = "Plain words here.\r\nMore words.\r\n\r\nNext."
    found = paragraph_at(text, 3)
    assert found is not None and text[found.start : found.end] == "Plain words here.\r\nMore words."


def test_links_are_read_as_their_words_and_references_left_out() -> None:
    assert (
        query_text("See [[Project Plan|the plan]] and [[Alice Notes]] with @tea_pref, #2.")
        == "See the plan and Alice Notes with , ."
    )


@pytest.mark.parametrize(
    ("given", "expected"),
    [(0.4, 0.4), ("0.8", 0.8), ("off", None), (False, None)],
)
def test_the_setting(given: object, expected: float | None) -> None:
    config, warnings = apply_settings(
        _default(), {"relatedSimilarity": given}, base=Path(), origin="test"
    )
    assert config.related_similarity == expected and warnings == []


def test_a_bad_setting_is_a_warning_and_the_default() -> None:
    config, warnings = apply_settings(
        _default(), {"related_similarity": 3}, base=Path(), origin="test"
    )
    assert config.related_similarity == DEFAULT_RELATED_SIMILARITY
    assert len(warnings) == 1 and "related_similarity" in warnings[0]


def _default() -> Config:
    return Config(store=Path("/nonexistent"), user="u", cache=Path("/nonexistent"))
