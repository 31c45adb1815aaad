"""Properties of the reference grammar over arbitrary text (hypothesis)."""

from __future__ import annotations

import itertools
import re

from hypothesis import given
from hypothesis import strategies as st

from lsp_memory.model import Reference, RefKind
from lsp_memory.refs import parse, utf16_len

# Pieces that exercise every branch: tokens, near-tokens, code markers, line breaks of all
# three kinds, white space, non-ASCII and astral characters.
FRAGMENTS = [
    "@",
    "#",
    "@abc",
    "@ab",
    "@claim_42",
    "@memory:",
    "@mem:",
    "@memory",
    "550e8400-e29b",
    "uuid",
    "#42",
    "42",
    "_",
    "-",
    "[[",
    "]]",
    "[",
    "]",
    "|",
    "!",
    "Note",
    "`",
    "``",
    "```",
    "~~~",
    "   ",
    "    ",
    " ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    "\u00a0",
    "\u2028",
    "(",
    '"',
    "'",
    ".",
    "é",
    "日本",
    "😀",
    "x",
]

documents = st.one_of(
    st.text(),
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=3)), max_size=60).map("".join),
)

LINE_BREAK = re.compile(r"\r\n|\r|\n")


def text_at_span(text: str, reference: Reference) -> str:
    """The text an LSP client would see at ``reference.span``."""
    start, end = reference.span.start, reference.span.end
    assert start.line == end.line
    line = LINE_BREAK.split(text)[start.line].encode("utf-16-le", "surrogatepass")
    return line[2 * start.character : 2 * end.character].decode("utf-16-le", "surrogatepass")


@given(documents, st.booleans())
def test_offsets_and_spans_point_at_the_token(text: str, markdown: bool) -> None:
    for reference in parse(text, markdown=markdown).references:
        assert text[reference.offset : reference.end] == reference.text
        assert text_at_span(text, reference) == reference.text
        width = reference.span.end.character - reference.span.start.character
        assert width == utf16_len(reference.text)


@given(documents, st.booleans())
def test_tokens_are_in_order_and_disjoint(text: str, markdown: bool) -> None:
    references = parse(text, markdown=markdown).references
    for before, after in itertools.pairwise(references):
        assert before.end <= after.offset
        assert (before.span.end.line, before.span.end.character) <= (
            after.span.start.line,
            after.span.start.character,
        )


@given(documents, st.booleans())
def test_clean_text_is_the_text_without_tokens_folded(text: str, markdown: bool) -> None:
    document = parse(text, markdown=markdown)
    clean = document.clean_text
    assert clean == clean.strip()
    assert not re.search(r"\s\s", clean)
    assert not re.search(r"[^\S ]", clean)
    pieces, start = [], 0
    for reference in document.references:
        pieces.append(text[start : reference.offset])
        start = reference.end
    pieces.append(text[start:])
    assert clean == " ".join("".join(pieces).split())


@given(documents)
def test_markdown_tokens_are_plain_text_tokens(text: str) -> None:
    plain = parse(text).references
    for reference in parse(text, markdown=True).references:
        # A plain-text note can swallow a token that Markdown sees once a code span cuts
        # the note short; no other difference is possible.
        assert reference in plain or any(
            note.kind is RefKind.NOTE
            and note.offset < reference.end
            and reference.offset < note.end
            for note in plain
        )
