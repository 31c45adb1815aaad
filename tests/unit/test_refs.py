"""The reference grammar (docs/reference.md, Reference grammar): tokens, code regions, LSP
ranges and clean text."""

from __future__ import annotations

import sys

import pytest

from lsp_memory.model import Position, Reference, RefKind, Span
from lsp_memory.refs import in_code, is_markdown, parse, parse_document, reference_at, utf16_len

ID = RefKind.ID
UUID = RefKind.UUID
NUMBER = RefKind.NUMBER
NOTE = RefKind.NOTE


def found(text: str, *, markdown: bool = False) -> list[tuple[RefKind, str]]:
    """The (kind, target) of every token of ``text``."""
    return [(ref.kind, ref.target) for ref in parse(text, markdown=markdown).references]


def only(text: str, *, markdown: bool = False) -> Reference:
    """The single token of ``text``."""
    (reference,) = parse(text, markdown=markdown).references
    return reference


def start(reference: Reference) -> tuple[int, int]:
    """The LSP start position of a token as (line, character)."""
    return reference.span.start.line, reference.span.start.character


# The examples of docs/reference.md, Reference grammar, verbatim.
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("@prefer_morning_a3f2 what time?", [(ID, "prefer_morning_a3f2")]),
        ("@ssdva project details", [(ID, "ssdva")]),
        ("user@domain.com", []),
        ("@memory:uuid and @friendly_id", [(UUID, "uuid"), (ID, "friendly_id")]),
        ("@claim_42 details", [(ID, "claim_42")]),
        ("@ab is too short", []),
        ("@abc is ok", [(ID, "abc")]),
    ],
)
def test_spec_seed_cases(text: str, expected: list[tuple[RefKind, str]]) -> None:
    assert found(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("#42", [(NUMBER, "42")]),
        ("see #42 now", [(NUMBER, "42")]),
        ("#42a", []),
        ("#42_", []),
        ("#42.", [(NUMBER, "42")]),
        ("#42-", [(NUMBER, "42")]),
        ("a#42", []),
        ("(#42)", [(NUMBER, "42")]),
        ("#", []),
        ("# 42", []),
        ("#007", [(NUMBER, "007")]),
    ],
)
def test_number_tokens(text: str, expected: list[tuple[RefKind, str]]) -> None:
    assert found(text) == expected


@pytest.mark.parametrize(
    "text",
    ['"@abc"', "'@abc'", "[@abc]", "{@abc}", "(@abc)", "x @abc", "x\t@abc", "x\n@abc"],
)
def test_id_after_opening_characters_and_white_space(text: str) -> None:
    assert found(text) == [(ID, "abc")]


@pytest.mark.parametrize(
    "text", ["x@abc", "user@domain.com", "a.@abc", "-@abc", "@@abc", "é@abc", "`@abc`"]
)
def test_at_sign_after_other_characters_is_not_a_reference(text: str) -> None:
    assert found(text) == []


@pytest.mark.parametrize(
    ("text", "target", "token"),
    [
        ("see @ssdva.", "ssdva", "@ssdva"),
        ("@ssdva,", "ssdva", "@ssdva"),
        ("@ssdva!?", "ssdva", "@ssdva"),
        ("@abc-", "abc", "@abc"),
        ("@abc--- x", "abc", "@abc"),
        ("@abc's", "abc", "@abc"),
        ("@abc: yes", "abc", "@abc"),
        ("@abc;", "abc", "@abc"),
        ('"@abc"', "abc", "@abc"),
        ("@a-b", "a-b", "@a-b"),
        ("@my-context_2", "my-context_2", "@my-context_2"),
        ("@abc😀", "abc", "@abc"),
    ],
)
def test_trailing_punctuation_is_not_part_of_an_id(text: str, target: str, token: str) -> None:
    reference = only(text)
    assert (reference.kind, reference.target, reference.text) == (ID, target, token)


@pytest.mark.parametrize("text", ["@ab-", "@ab--", "@a", "@1abc", "@_abc", "@abcé", "@abc日本"])
def test_not_an_id(text: str) -> None:
    assert found(text) == []


@pytest.mark.parametrize(
    ("text", "target", "token"),
    [
        ("@memory:uuid", "uuid", "@memory:uuid"),
        ("@mem:uuid", "uuid", "@mem:uuid"),
        (
            "@memory:550e8400-e29b-41d4-a716-446655440000.",
            "550e8400-e29b-41d4-a716-446655440000",
            "@memory:550e8400-e29b-41d4-a716-446655440000",
        ),
        ("(@mem:1a2b-)", "1a2b", "@mem:1a2b"),
        ("@mem:x", "x", "@mem:x"),
    ],
)
def test_uuid_tokens(text: str, target: str, token: str) -> None:
    reference = only(text)
    assert (reference.kind, reference.target, reference.text) == (UUID, target, token)


@pytest.mark.parametrize(
    "text",
    ["@memory", "@mem", "@memory.", "@mem-", "@memory:", "@mem: x", "@memory:-abc", "@mem:abc_d"],
)
def test_bare_memory_prefix_is_not_a_reference(text: str) -> None:
    assert found(text) == []


@pytest.mark.parametrize(
    ("text", "target"), [("@memoryx", "memoryx"), ("@memo", "memo"), ("@mem-x", "mem-x")]
)
def test_ids_that_start_like_memory_are_ordinary_ids(text: str, target: str) -> None:
    assert found(text) == [(ID, target)]


def test_memory_uuid_is_one_token() -> None:
    (reference,) = parse("@memory:uuid").references
    assert reference.kind is UUID


@pytest.mark.parametrize(
    ("text", "target", "heading", "label"),
    [
        ("[[a]]", "a", None, None),
        ("[[a|b]]", "a", None, "b"),
        ("[[a#h]]", "a", "h", None),
        ("[[a#h|b]]", "a", "h", "b"),
        (
            "[[ Project Alpha Kickoff # Goals | the goals ]]",
            "Project Alpha Kickoff",
            "Goals",
            "the goals",
        ),
        ("[[a#]]", "a", None, None),
        ("[[a|]]", "a", None, None),
        ("[[a|b|c]]", "a", None, "b|c"),
        ("[[a#h#i]]", "a", "h#i", None),
        ("[[projects/alpha.md]]", "projects/alpha.md", None, None),
        ("x[[a]]y", "a", None, None),
    ],
)
def test_note_tokens(text: str, target: str, heading: str | None, label: str | None) -> None:
    reference = only(text)
    assert (reference.kind, reference.target) == (NOTE, target)
    assert (reference.heading, reference.label) == (heading, label)


def test_note_token_text_is_as_written() -> None:
    assert only("see [[Note#H|x]].").text == "[[Note#H|x]]"


def test_embed_token_starts_at_the_brackets() -> None:
    reference = only("![[a]]")
    assert (reference.kind, reference.target, reference.text, reference.offset) == (
        NOTE,
        "a",
        "[[a]]",
        1,
    )


@pytest.mark.parametrize("text", ["[[]]", "[[ ]]", "[[#H]]", "[[|x]]", "[[a", "[[a]", "[[a\nb]]"])
def test_not_a_note(text: str) -> None:
    assert found(text) == []


def test_tokens_in_document_order() -> None:
    text = "[[n]] #1 @abc @mem:u1 [[m|l]]"
    assert found(text) == [(NOTE, "n"), (NUMBER, "1"), (ID, "abc"), (UUID, "u1"), (NOTE, "m")]


def test_offsets_index_the_text() -> None:
    text = "see @claim_42, #42 and [[Note#H|x]] or @memory:uuid."
    document = parse(text)
    assert [text[ref.offset : ref.end] for ref in document.references] == [
        ref.text for ref in document.references
    ]
    assert [ref.text for ref in document.references] == [
        "@claim_42",
        "#42",
        "[[Note#H|x]]",
        "@memory:uuid",
    ]


# Markdown code regions.

CODE_CASES = [
    "` @abc `",
    "x `(@abc)` y",
    "`` @abc ` #1 ``",
    "``` @abc ```",
    "`[[note]]`",
    "`a\n@abc`",
    "```\n@abc\n```",
    "```python\n@abc\n```",
    "~~~\n@abc\n~~~",
    "~~~ info with ` backtick\n@abc\n~~~",
    "   ```\n@abc\n```",
    "```\n@abc",
    "```\n@abc\n~~~\n```",
    "```\n@abc\n``\n```",
    "````\n@abc\n```\n#1\n````",
    "```\n@abc\n`````  \n",
    "```\r\n@abc\r\n```",
    "```\r@abc\r```",
]


@pytest.mark.parametrize("text", CODE_CASES)
def test_markdown_code_hides_references(text: str) -> None:
    assert found(text, markdown=True) == []


@pytest.mark.parametrize("text", CODE_CASES)
def test_plain_text_has_no_code(text: str) -> None:
    assert found(text) != []


@pytest.mark.parametrize(
    "text",
    [
        "` @abc",  # an unmatched backtick is literal
        "`` @abc `",  # runs of different lengths do not pair
        "`x` @abc `y`",
        "`a\n\n@abc`",  # a code span does not cross a blank line
        "`a\r\n\r\n@abc`",
        "`a\r  \r@abc`",
        "    ```\n@abc\n```",  # four spaces: not a fence
        "x ```\n@abc\n```",  # not at the start of a line
        "```a`b\n@abc\n```x",  # a backtick fence's info string has no backticks
        "```\nx\n```\n@abc",
        "```\nx\n   ```\n@abc",
        "~~~\nx\n~~~\n@abc",
        "```\nx\n```\n\n`y` @abc",
    ],
)
def test_markdown_references_outside_code(text: str) -> None:
    assert found(text, markdown=True) == [(ID, "abc")]


def test_closing_fence_must_not_have_an_info_string() -> None:
    assert found("```\nx\n``` y\n@abc\n```\n@def", markdown=True) == [(ID, "def")]


def test_note_overlapping_a_code_span_is_not_a_reference() -> None:
    text = "`a [[b` @cde]]"
    assert found(text, markdown=True) == [(ID, "cde")]
    assert found(text) == [(NOTE, "b` @cde")]


def test_token_right_after_a_code_span_needs_a_boundary() -> None:
    assert found("`x`@abc `x` @def", markdown=True) == [(ID, "def")]


# LSP ranges.


def test_span_of_a_simple_token() -> None:
    assert only("see @abc").span == Span(Position(0, 4), Position(0, 8))


@pytest.mark.parametrize(
    ("text", "positions"),
    [
        ("a\n@abc\nb #1", [(1, 0), (2, 2)]),
        ("a\r\n@abc\r\nb #1", [(1, 0), (2, 2)]),
        ("a\r@abc\rb #1", [(1, 0), (2, 2)]),
        ("a\r\r\n\n\r @abc #1", [(4, 1), (4, 6)]),
        ("\n\n\n[[x]]", [(3, 0)]),
    ],
)
def test_lines_break_at_lf_crlf_and_cr(text: str, positions: list[tuple[int, int]]) -> None:
    assert [start(ref) for ref in parse(text).references] == positions


@pytest.mark.parametrize(
    ("text", "column", "width"),
    [
        ("é @abc", 2, 4),
        ("日本語 @abc", 4, 4),
        ("😀 @abc", 3, 4),
        ("😀😀 x @abc", 7, 4),
        ("x\n😀 [[😀]]", 3, 6),
        ("é\r\nü @abc", 2, 4),
        ("\ud800 @abc", 2, 4),  # a lone surrogate is one UTF-16 code unit
    ],
)
def test_columns_count_utf16_code_units(text: str, column: int, width: int) -> None:
    reference = parse(text).references[-1]
    assert reference.span.start.character == column
    assert reference.span.end.character - reference.span.start.character == width
    assert reference.span.start.line == reference.span.end.line


def test_columns_continue_along_a_line_with_several_tokens() -> None:
    document = parse("😀 @abc é #1 😀 [[n]]\n😀 @def")
    assert [ref.span.start.character for ref in document.references] == [3, 10, 16, 3]


def test_utf16_len() -> None:
    assert [utf16_len(s) for s in ["", "abc", "é", "日本", "😀", "a😀b", "\ud800"]] == [
        0,
        3,
        1,
        2,
        2,
        4,
        1,
    ]


# Clean text.


@pytest.mark.parametrize(
    ("text", "clean"),
    [
        ("@memory:uuid and @friendly_id", "and"),
        ("  @ssdva   project\n\n details  ", "project details"),
        ("see @ssdva. ok", "see . ok"),
        ("read [[Note|label]] and #42 today", "read and today"),
        ("x[[a]]y", "xy"),
        ("a\t\r\n\x0b\x0c b", "a b"),
        ("café  😀\u00a0\u3000ok @abc", "café 😀 ok"),
        ("", ""),
        ("@abc", ""),
        ("user@domain.com", "user@domain.com"),
    ],
)
def test_clean_text(text: str, clean: str) -> None:
    assert parse(text).clean_text == clean


def test_clean_text_keeps_markdown_code_but_not_its_neighbours() -> None:
    assert parse("`@abc` and @def", markdown=True).clean_text == "`@abc` and"


def test_clean_text_folds_every_kind_of_white_space() -> None:
    spaces = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    for space in spaces:
        assert parse(f"a{space}{space}b{space}").clean_text == "a b", repr(space)
        assert parse(f"é{space}{space}b").clean_text == "é b", repr(space)


# Document kinds.


@pytest.mark.parametrize(
    ("language_id", "path", "expected"),
    [
        ("markdown", None, True),
        ("Markdown", None, True),
        (None, "notes/a.md", True),
        (None, "file:///home/u/Notes/A.MD", True),
        (None, "a.markdown", True),
        ("plaintext", "a.md", True),
        ("plaintext", "a.txt", False),
        (None, "a.mdx", False),
        (None, "md", False),
        ("python", None, False),
        (None, None, False),
    ],
)
def test_is_markdown(language_id: str | None, path: str | None, expected: bool) -> None:
    assert is_markdown(language_id, path) is expected


def test_parse_document_uses_the_document_kind() -> None:
    text = "` @abc` @def"
    assert [ref.target for ref in parse_document(text, "markdown").references] == ["def"]
    assert [ref.target for ref in parse_document(text, path="x.md").references] == ["def"]
    assert [ref.target for ref in parse_document(text, "python").references] == ["abc", "def"]


# Claim numbers.


@pytest.mark.parametrize(
    ("text", "number"),
    [("#7", 7), ("@claim_7", 7), ("@claim_42 x", 42), ("@claimx", None), ("@claim_7x", None)],
)
def test_claim_number(text: str, number: int | None) -> None:
    assert only(text).claim_number == number


@pytest.mark.parametrize(
    ("text", "offset", "inside"),
    [
        ("```\n@leaf", 9, True),  # an open fence runs to the end, cursor included
        ("```\ncode\n```\n@leaf", 17, False),
        ("a `code` b", 4, True),
        ("a `code` b", 8, False),  # right after the closing backtick
        ("plain @leaf", 11, False),
    ],
)
def test_in_code(text: str, offset: int, inside: bool) -> None:
    assert in_code(text, offset) is inside


# The reference under the cursor.


def test_reference_at_holds_start_and_end_and_prefers_the_next_token() -> None:
    text = "see @leaf_ctx, [[a]][[b]] and `see @mid_ctx`"
    assert reference_at(text, 3, "markdown") is None
    for offset in (4, 8, 13):  # "@", inside, just after the token
        found = reference_at(text, offset, "markdown")
        assert found is not None and found.text == "@leaf_ctx"
    assert reference_at(text, 14, "markdown") is None  # after ","
    between = reference_at(text, text.index("[[b"), "markdown")
    assert between is not None and between.target == "b"
    assert reference_at(text, text.index("@mid"), "markdown") is None  # code span
    found = reference_at(text, text.index("@mid"), "plaintext", "x.txt")
    assert found is not None and found.target == "mid_ctx"
    assert reference_at("", 0) is None


def test_an_escaped_pipe_separates_the_label_as_in_a_table_row() -> None:
    """Obsidian users write ``[[Note\\|label]]`` inside a table, whose cells ``|`` divides:
    before, the target was ``Note\\`` and the link broken (17 of them in Obsidian's own help)."""
    row = "| a | [[Cards view\\|Cards]] | [[Basic formatting syntax#Comments\\|Comments]] |"
    cards, comments = parse(row, markdown=True).references
    assert (cards.target, cards.heading, cards.label) == ("Cards view", None, "Cards")
    assert (comments.target, comments.heading, comments.label) == (
        "Basic formatting syntax",
        "Comments",
        "Comments",
    )
    assert cards.text == "[[Cards view\\|Cards]]"  # the token is what is written
    assert found("[[\\|x]]", markdown=True) == []  # an escape and no target: no link
    assert only("[[a\\b]]").target == "a\\b"  # a backslash without a pipe stays


def test_nothing_inside_an_obsidian_comment_is_a_reference() -> None:
    """``%% … %%`` is a comment Obsidian never renders nor resolves; one left open runs to the
    end of the note. A ``%%`` in code opens nothing."""
    text = (
        "[[Seen]] %% [[Hidden]] @hidden_id\n#12 %% @after `%% [[in code]]` [[Also seen]]\n"
        "%%\n[[Unclosed]] @to_the_end"
    )
    assert found(text, markdown=True) == [(NOTE, "Seen"), (ID, "after"), (NOTE, "Also seen")]
    assert in_code(text, text.index("Hidden")) and in_code(text, len(text) - 2)
    assert found("a %% [[b]] %% c", markdown=False) == [(NOTE, "b")]  # Markdown only


def test_a_documents_parse_is_kept_for_the_next_request_on_the_same_text() -> None:
    """After a keystroke the editor asks several things of one text: it is parsed once."""
    text = "See @leaf_ctx and [[Note]].\n" * 3
    first = parse_document(text, "markdown")
    assert parse_document(text, "markdown") is first
    assert parse_document(text, "plaintext") is not first  # parsed as plain text
