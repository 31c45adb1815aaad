"""One note file's bytes → Note (docs/reference.md, Notes): front matter, title rules,
headings, link ranges, the plain-text body, and bad input (broken YAML, wrong types,
non-UTF-8, CRLF, huge notes)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from lsp_memory.model import Note
from lsp_memory.notes import MAX_NOTE_BYTES, parse_note

VAULT = Path("/vault")


def note(text: str | bytes, path: str = "folder/my-note.md") -> Note:
    data = text.encode() if isinstance(text, str) else text
    return parse_note(VAULT, Path(path), data, mtime_ns=7)


def headings(text: str) -> list[tuple[str, int, int]]:
    return [(h.text, h.level, h.line) for h in note(text).headings]


# Front matter ------------------------------------------------------------------------------


def test_front_matter_fields_in_list_form() -> None:
    parsed = note(
        "---\n"
        "title: Alice Notes\n"
        "aliases:\n  - Alice\n  - A. Example\n"
        "tags: [people, '#team', people]\n"
        "archived: true\n"
        "---\n"
        "# Heading\n"
    )
    assert parsed.title == "Alice Notes"
    assert parsed.aliases == ("Alice", "A. Example")
    assert parsed.tags == ("people", "team")
    assert parsed.archived is True
    assert parsed.warnings == ()


def test_front_matter_fields_in_string_form() -> None:
    parsed = note("---\naliases: A. Example, Jr.\ntags: 'work, #health  sleep'\n---\nbody\n")
    assert parsed.aliases == ("A. Example, Jr.",)  # one string is one alias
    assert parsed.tags == ("work", "health", "sleep")
    assert parsed.archived is False


def test_numbers_and_dates_count_as_written() -> None:
    parsed = note("---\ntitle: 2024\naliases: [1.5, 2024-03-01]\n---\n")
    assert parsed.title == "2024"
    assert parsed.aliases == ("1.5", "2024-03-01")
    assert parsed.warnings == ()


def test_dot_dot_dot_closes_front_matter() -> None:
    parsed = note("---\ntitle: Dotted\n...\n# Not the title\n")
    assert parsed.title == "Dotted"
    assert parsed.headings[0].line == 3


def test_empty_front_matter_is_fine() -> None:
    parsed = note("---\n---\n# Heading\n")
    assert parsed.title == "Heading"
    assert parsed.warnings == ()


def test_broken_yaml_gives_one_warning_and_still_a_note() -> None:
    text = "---\ntitle: Alice\naliases: [unclosed\n---\n# From The Heading\n\nBody text.\n"
    parsed = note(text, "alice.md")
    (warning,) = parsed.warnings
    assert warning.startswith("alice.md: front matter is not valid YAML (line ")
    assert parsed.title == "From The Heading"
    assert parsed.aliases == ()
    assert parsed.body == "From The Heading\n\nBody text."  # the front matter is not body


def test_yaml_error_names_the_file_line() -> None:
    text = "---\ntitle: ok\nbad: : :\n---\n"
    (warning,) = note(text, "a.md").warnings
    assert "(line 3)" in warning


@pytest.mark.parametrize(
    ("front_matter", "problem"),
    [
        ("title: [a, b]", "'title' should be a string, not a list"),
        ("aliases: {a: 1}", "'aliases' should be a string or a list of strings, not a mapping"),
        ("aliases: [ok, {a: 1}]", "'aliases' item 2 should be a string, not a mapping"),
        ("tags: true", "'tags' should be a string or a list of strings, not a boolean"),
        ("archived: maybe", "'archived' should be true or false, not a str"),
        ("archived: 1", "'archived' should be true or false, not a int"),
    ],
)
def test_wrong_types_give_a_warning(front_matter: str, problem: str) -> None:
    parsed = note(f"---\n{front_matter}\n---\n# Title\n", "w.md")
    assert parsed.warnings == (f"w.md: front matter {problem}",)
    assert parsed.title == "Title"
    assert parsed.archived is False


def test_wrong_item_types_keep_the_good_items() -> None:
    parsed = note("---\naliases: [ok, [x], fine]\n---\n")
    assert parsed.aliases == ("ok", "fine")
    assert len(parsed.warnings) == 1


@pytest.mark.parametrize("front_matter", ["- a list\n- not a mapping", "just a string"])
def test_front_matter_that_is_not_a_mapping(front_matter: str) -> None:
    parsed = note(f"---\n{front_matter}\n---\n", "x.md")
    assert parsed.warnings == ("x.md: front matter is not a mapping of keys to values",)
    assert parsed.title == "x"


def test_odd_values_the_safe_loader_rejects_do_not_raise() -> None:
    parsed = note("---\ntitle: !!python/object:os.system echo\n---\n", "x.md")
    assert len(parsed.warnings) == 1 and parsed.title == "x"


def test_front_matter_without_a_closing_line_is_text() -> None:
    parsed = note("---\ntitle: Never closed\n\n# Real Title\n", "open.md")
    assert parsed.warnings == ("open.md: front matter has no closing '---' line; read as text",)
    assert parsed.title == "Real Title"
    assert "title: Never closed" in parsed.body


# Title ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("---\ntitle: From Front Matter\n---\n# From Heading\n", "From Front Matter"),
        ("---\ntitle: ''\n---\n# From Heading\n", "From Heading"),
        ("Intro\n\n## Second level\n\n# First Level #\n", "First Level"),
        ("```\n# in code\n```\n# After Code\n", "After Code"),
        ("#hashtag is not a heading\n", "my-note"),
        ("#\n# \n# Not Empty\n", "Not Empty"),
        ("no headings at all\n", "my-note"),
        ("", "my-note"),
    ],
)
def test_title_rules(text: str, title: str) -> None:
    assert note(text).title == title


def test_title_falls_back_to_the_file_name_without_extension() -> None:
    assert note("text", "a/Meeting Notes.markdown").title == "Meeting Notes"


# Headings -------------------------------------------------------------------------------------


def test_headings_levels_and_lines_count_front_matter_lines() -> None:
    text = "---\ntitle: T\n---\n# One\n\n## Two ##\n### C#\n####### seven\n   #### Indented\n"
    assert headings(text) == [("One", 1, 3), ("Two", 2, 5), ("C#", 3, 6), ("Indented", 4, 8)]


def test_headings_inside_fenced_code_are_not_headings() -> None:
    text = (
        "# Real\n"  # 0
        "```python\n"  # 1
        "# comment\n"  # 2
        "```\n"  # 3
        "~~~~\n"  # 4
        "# tilde code\n"  # 5
        "~~~\n"  # 6: too short to close a four-tilde fence
        "~~~~~\n"  # 7: closes it
        "## After\n"  # 8
        "    # indented code\n"  # 9: four spaces, not a heading
        "````\n"  # 10: unclosed: code to the end
        "# never\n"
    )
    assert headings(text) == [("Real", 1, 0), ("After", 2, 8)]


def test_a_backtick_line_with_backticks_after_is_not_a_fence() -> None:
    assert headings("``` not `a fence`\n# Heading\n") == [("Heading", 1, 1)]


# Links ------------------------------------------------------------------------------------


def test_link_ranges_point_at_the_file_positions() -> None:
    text = (
        "---\n"
        "title: Links\n"
        "related: '[[In Front Matter]]'\n"
        "---\n"
        "# Links\n"
        "See [[Alpha]] and [[Beta#Part|the beta]].\n"
        "`[[in code]]` and\n"
        "```\n[[in a fence]]\n```\n"
        "![[Embedded]]\n"
    )
    parsed = note(text)
    lines = text.splitlines()
    assert [link.target for link in parsed.links] == [
        "In Front Matter",
        "Alpha",
        "Beta",
        "Embedded",
    ]
    for link in parsed.links:
        start, end = link.span.start, link.span.end
        assert start.line == end.line
        assert lines[start.line][start.character : end.character] == link.text
        assert text[link.offset : link.end] == link.text
    beta = parsed.links[2]
    assert (beta.heading, beta.label) == ("Part", "the beta")


def test_link_ranges_count_utf16_code_units() -> None:
    text = "# Ünïcode 🎉\n🎉 é [[Target]]\n"
    (link,) = note(text).links
    line = text.splitlines()[1].encode("utf-16-le")
    start, end = link.span.start.character, link.span.end.character
    assert line[2 * start : 2 * end].decode("utf-16-le") == "[[Target]]"


def test_only_note_links_are_kept() -> None:
    parsed = note("@claim_42 #42 @ssdva [[Note]]")
    assert [link.target for link in parsed.links] == ["Note"]


# Body -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("markdown", "plain"),
    [
        ("# Heading #\n\nText", "Heading\n\nText"),
        (
            "**bold**, *em*, _em_, ***both***, ~~gone~~, ==marked==",
            "bold, em, em, both, gone, marked",
        ),
        ("snake_case_name and 2 * 3 and \\*literal\\*", "snake_case_name and 2 * 3 and *literal*"),
        ("Use `inline *code*` here", "Use inline code here"),
        (
            "A [link](http://x.org/a_b) and [ref][1] and <https://auto.link>",
            "A link and ref and https://auto.link",
        ),
        ("An ![image](pic.png) and ![[photo.png]] gone", "An and gone"),
        ("[[Target]], [[Target|Label]], [[Target#Part]]", "Target, Label, Target"),
        ("<div class='x'>Some <b>html</b></div><!-- hidden\ncomment -->", "Some html"),
        (
            "- item\n* star\n+ plus\n1. one\n2) two\n- [ ] todo\n- [x] done",
            "item\nstar\nplus\none\ntwo\ntodo\ndone",
        ),
        ("> quoted\n> > nested\n>- listed", "quoted\nnested\nlisted"),
        ("Above\n\n---\n\n***\n\nBelow\n===", "Above\n\nBelow"),
        ("  spaced \t out   text  \n\n\n\nnext", "spaced out text\n\nnext"),
        ("| a | b |\n|---|:-:|\n| 1 | 2 |", "a b\n\n1 2"),
        ("[1]: http://example.org\nText &amp; more", "Text & more"),
    ],
)
def test_body_strips_markdown(markdown: str, plain: str) -> None:
    assert note(markdown).body == plain


def test_body_keeps_fenced_code_text_and_drops_front_matter() -> None:
    text = "---\ntitle: T\n---\nBefore\n```python\nx = a_b * 2  # *kept*\n```\nAfter\n"
    assert note(text).body == "Before\nx = a_b * 2 # *kept*\nAfter"


# Bad input ------------------------------------------------------------------------------------


def test_non_utf8_bytes_are_replaced_with_a_warning() -> None:
    parsed = note(b"# Caf\xe9\n\nna\xefve [[Link]]\n", "latin.md")
    assert parsed.title == "Caf\ufffd"
    assert parsed.warnings == (
        "latin.md: not valid UTF-8 (byte 5); undecodable bytes were replaced",
    )
    assert [link.target for link in parsed.links] == ["Link"]


def test_crlf_files() -> None:
    text = "---\r\ntitle: Windows\r\n---\r\n# One\r\n\r\nSee [[Alpha]].\r\n## Two\r\n"
    parsed = note(text)
    assert parsed.title == "Windows"
    assert [(h.text, h.line) for h in parsed.headings] == [("One", 3), ("Two", 6)]
    (link,) = parsed.links
    assert (link.span.start.line, link.span.start.character) == (5, 4)
    assert text.splitlines()[5][4:13] == "[[Alpha]]"
    assert "\r" not in parsed.body
    assert parsed.body == "One\n\nSee Alpha.\nTwo"


def test_a_byte_order_mark_is_not_text() -> None:
    parsed = note("\ufeff---\ntitle: BOM\n---\n[[A]]".encode())
    assert parsed.title == "BOM"
    assert parsed.links[0].span.start.character == 0


def test_size_hash_path_and_vault() -> None:
    data = b"# Title\n"
    parsed = parse_note(VAULT, VAULT / "sub" / "n.md", data, mtime_ns=42)
    assert parsed.path == "sub/n.md"
    assert parsed.vault == str(VAULT)
    assert parsed.size == len(data)
    assert parsed.mtime_ns == 42
    assert parsed.content_hash == hashlib.sha256(data).hexdigest()
    assert parsed.key == "/vault::sub/n.md"


def test_a_huge_note_is_cut_with_a_warning() -> None:
    filler = ("x" * 99 + "\n") * (MAX_NOTE_BYTES // 100 + 1)
    head = ("# Huge\n[[Before]]\n" + filler).encode()[: MAX_NOTE_BYTES - 1]
    # "é" is two bytes, the limit falls between them; the link lies beyond the limit.
    data = head + "é [[After]]\n".encode() + b"y" * 1000
    parsed = note(data, "huge.md")
    assert parsed.warnings == ("huge.md: 10 MB, only the first 10 MB are indexed",)
    assert parsed.size == len(data)
    assert parsed.content_hash == hashlib.sha256(data).hexdigest()
    assert parsed.title == "Huge"
    assert [link.target for link in parsed.links] == ["Before"]
    assert parsed.body.endswith("x")  # cut before the "é", not inside it
    assert len(parsed.body.encode()) < MAX_NOTE_BYTES
