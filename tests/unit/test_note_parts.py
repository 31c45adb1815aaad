"""The parts of a note a block link or an embed names (notes/parts.py), and the edit that
writes a new block id (services/editor/completion.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_memory.errors import UserError
from lsp_memory.model import Block, Heading
from lsp_memory.notes.parse import build_note
from lsp_memory.notes.parts import block_of, embedded_part, new_block_id, text_blocks
from lsp_memory.refs import parse
from lsp_memory.services.editor.completion import block_id_write, typed_at

NOTE = """\
---
title: Source
---
# Source

First paragraph
goes on. ^para1

- item one
- item two
  continued

| a | b |
|---|---|

^tbl

```
code line ^not-a-block
```

## Later

Last words here.
"""


def test_paragraphs_and_list_items_are_blocks_with_their_ids() -> None:
    blocks = text_blocks(NOTE)
    assert [(b.kind, b.first, b.last, b.id) for b in blocks] == [
        ("paragraph", 5, 6, "para1"),
        ("item", 8, 8, None),
        ("item", 9, 10, None),
        ("paragraph", 12, 13, "tbl"),  # the ^id alone on a line after a blank line
        ("paragraph", 23, 23, None),
    ]
    assert blocks[0].text == "First paragraph\ngoes on."
    assert blocks[0].id_line == 6 and blocks[3].id_line == 15
    assert blocks[2].label == "item two continued"  # the list marker left out
    assert len(text_blocks("word " * 40)[0].label) <= 61


def test_block_ids_agree_with_the_parser() -> None:
    note = build_note("/v", "source.md", NOTE.encode(), size=len(NOTE), content_hash="", mtime_ns=0)
    assert [(b.id, b.line) for b in note.blocks] == [("para1", 6), ("tbl", 15)]
    for block in note.blocks:
        found = block_of(NOTE, block)
        assert found is not None and found.id == block.id


def test_an_embed_shows_the_note_a_section_or_a_block() -> None:
    whole = embedded_part(NOTE)
    assert whole.startswith("# Source") and "title:" not in whole
    later = embedded_part(NOTE, Heading("Later", 2, 21))
    assert later == "## Later\n\nLast words here."
    assert embedded_part(NOTE, block=Block("para1", 6)) == "First paragraph\ngoes on."
    assert embedded_part(NOTE, block=Block("gone", 6)) == ""


def test_an_embed_is_a_link_marked_as_such() -> None:
    first, second = parse("![[Source#^para1]] and [[Source]]", markdown=True).references
    assert first.embed and first.heading == "^para1" and first.text == "[[Source#^para1]]"
    assert not second.embed


def test_new_ids_are_short_stable_and_unique_in_the_note() -> None:
    one = new_block_id("some text", set())
    assert len(one) == 6 and one.isalnum() and one == new_block_id("some text", set())
    other = new_block_id("some text", {one})
    assert other != one and len(other) == 6


def test_the_id_goes_at_the_end_of_the_blocks_last_line() -> None:
    write = block_id_write(Path("source.md"), NOTE, 9, "abc123")
    assert (write.line, write.text) == (10, " ^abc123")
    written = NOTE[: write.offset] + write.text + NOTE[write.offset :]
    assert "  continued ^abc123\n" in written
    assert [b.id for b in text_blocks(written)][2] == "abc123"
    crlf = NOTE.replace("\n", "\r\n")
    write = block_id_write(Path("source.md"), crlf, 23, "last1")
    assert crlf[write.offset - 5 : write.offset] == "here."


def test_a_table_gets_its_id_on_a_line_of_its_own() -> None:
    text = "| a | b |\n|---|---|\n\nAfter.\n"
    write = block_id_write(Path("t.md"), text, 0, "tab1")
    written = text[: write.offset] + write.text + text[write.offset :]
    assert written == "| a | b |\n|---|---|\n\n^tab1\n\nAfter.\n"
    assert text_blocks(written)[0].id == "tab1"


@pytest.mark.parametrize(
    ("first", "block_id", "message"),
    [
        (4, "x1", "no paragraph or list item starts on line 5"),
        (5, "x1", "has an id: ^para1"),
        (8, "para1", "^para1 names another block already"),
        (8, "bad id", "letters, digits and hyphens"),
    ],
)
def test_a_write_that_cannot_be_made_says_why(first: int, block_id: str, message: str) -> None:
    with pytest.raises(UserError, match=message.replace("^", r"\^")):
        block_id_write(Path("source.md"), NOTE, first, block_id)


def test_typing_after_hash_caret_completes_a_block() -> None:
    typed = typed_at("See [[Source#^fir", 17)
    assert typed is not None and typed.kind == "block"
    assert (typed.note, typed.prefix, typed.start) == ("Source", "fir", 13)
    heading = typed_at("See [[Source#La", 15)
    assert heading is not None and heading.kind == "heading"
