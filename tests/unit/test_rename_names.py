"""The pure parts of rename: where a note's title is written (notes/parse.py ``title_spot``),
how a front-matter title is written, which link form names a note (notes/resolve.py
``link_form``), which file name follows a title, and which new ids and titles are valid."""

from __future__ import annotations

import pytest
import yaml

from lsp_memory.model import Note
from lsp_memory.notes import link_form
from lsp_memory.notes.parse import front_matter_scalar, title_spot
from lsp_memory.services.editor.rename import BadName, follow_name, valid_id, valid_title


def spot(text: str) -> tuple[str, str, str | None]:
    found = title_spot(text)
    return found.source, text[found.start : found.end], found.title


def test_the_title_spot_follows_the_title_rule() -> None:
    assert spot("---\ntitle: Alice Notes\n---\n# Alice\n") == (
        "front-matter",
        "Alice Notes",
        "Alice Notes",
    )
    assert spot('---\ntitle: "Q: A"  \n---\n') == ("front-matter", '"Q: A"', "Q: A")
    assert spot("---\naliases: [x]\n---\n\n# Project Plan #\n") == (
        "heading",
        "Project Plan",
        "Project Plan",
    )
    assert spot("```\n# not a heading\n```\n## Level two\n") == ("file", "", None)
    assert spot("😀 line\r\n#   Spaced   \r\n")[1] == "Spaced"


def test_the_title_spot_says_where_a_title_line_can_go() -> None:
    assert title_spot("---\naliases: [x]\n---\nbody").front_matter == 4
    assert title_spot("no front matter").front_matter is None
    broken = title_spot("---\n: [\n---\nbody")
    assert broken.broken and broken.front_matter is None
    assert title_spot("---\nnever closed\n").broken
    block = title_spot("---\ntitle: >\n  folded\n---\n")
    assert block.source == "front-matter" and not block.editable


@pytest.mark.parametrize("title", ["Plain", "Q: A", "yes", "a #b", "- x", "café ☕", "[x]", "2024"])
def test_a_front_matter_title_reads_back_as_written(title: str) -> None:
    data = yaml.safe_load(f"title: {front_matter_scalar(title)}")
    assert str(data["title"]) == title


def note(path: str, title: str, aliases: tuple[str, ...] = ()) -> Note:
    return Note("/v", path, title, aliases, (), False, (), (), "", 0, 0, "")


def test_link_form_is_the_first_rule_that_names_the_note() -> None:
    alice = note("people/alice.md", "Alice Notes", ("Alice",))
    assert link_form(alice, "people/alice") == "path"
    assert link_form(alice, "./people/alice.md") == "path"
    assert link_form(alice, " alice notes ") == "title"
    assert link_form(alice, "ALICE") == "alias"
    assert link_form(alice, "alice.md") == "name"
    assert link_form(alice, "Bob") is None
    same = note("meeting.md", "meeting")
    assert link_form(same, "meeting") == "title"  # title comes before the file name


def test_a_file_name_follows_the_title_in_its_style_or_not_at_all() -> None:
    assert follow_name("project-plan.md", "Project Plan", "Road Map 2") == "road-map-2.md"
    assert follow_name("project_plan.md", "Project Plan", "Road Map") == "road_map.md"
    assert follow_name("Project Plan.md", "Project Plan", "Q3: Plan?") == "Q3- Plan-.md"
    assert follow_name("meeting.markdown", "meeting", "Weekly Sync") == "Weekly Sync.markdown"
    assert follow_name("alice.md", "Alice Notes", "Alice Smith") is None
    assert follow_name("x.md", "x", "...") is None


def test_valid_ids_and_titles() -> None:
    assert valid_id(" @leaf_branch ") == "leaf_branch"
    assert valid_id("a-b_c") == "a-b_c"
    for bad in ("", "@", "ab", "9abc", "a b c", "abc-", "mem", "claim_12", "x_domain", "é_abc"):
        with pytest.raises(BadName):
            valid_id(bad)
    assert valid_title("  Weekly Sync ") == "Weekly Sync"
    for bad in ("", "a#b", "a|b", "a]]b", "a/b", "a\\b", "two\nlines"):
        with pytest.raises(BadName):
            valid_title(bad)
