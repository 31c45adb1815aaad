"""``[[link]]`` resolution (docs/reference.md, Notes) and backlinks: the fixture vault in
``tests/data/notes``
exactly as its README says, then the resolution order, ties, paths that leave the vault and
headings, on vaults built in ``tmp_path``."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_memory.notes import Vault
from tests.conftest import DATA

NOTES = DATA / "notes"


def write(root: Path, path: str, text: str = "") -> Path:
    file = root / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text, encoding="utf-8")
    return file


def scanned(root: Path) -> Vault:
    vault = Vault(root)
    result = vault.scan()
    assert result.warnings == ()
    return vault


@pytest.fixture(scope="module")
def fixture_vault() -> Vault:
    return scanned(NOTES)


# The fixture vault (tests/data/README.md) ----------------------------------------------------


def test_fixture_notes_titles_aliases_and_archived(fixture_vault: Vault) -> None:
    summary = {
        path: (note.title, note.aliases, note.archived)
        for path, note in fixture_vault.notes.items()
    }
    assert summary == {
        "alice.md": ("Alice Notes", ("Alice", "A. Example"), False),
        "project-plan.md": ("Project Plan", (), False),
        "meeting.md": ("meeting", (), False),
        "sub/deep-note.md": ("Deep Note", ("Nested Note",), False),
        "old-plan.md": ("Old Plan", (), True),
    }


# Every link of the fixture vault: (source, written) → (resolved path, heading text) or error.
FIXTURE_LINKS: dict[tuple[str, str], tuple[str | None, str | None]] = {
    ("alice.md", "[[Project Plan#Milestones]]"): ("project-plan.md", "Milestones"),
    ("alice.md", "[[meeting|the last meeting]]"): ("meeting.md", None),
    ("project-plan.md", "[[Alice Notes]]"): ("alice.md", None),
    ("project-plan.md", "[[Missing Target]]"): (None, None),
    ("meeting.md", "[[project-plan]]"): ("project-plan.md", None),
    ("meeting.md", "[[sub/deep-note]]"): ("sub/deep-note.md", None),
    ("sub/deep-note.md", "[[Alice Notes#Working Style|Alice's style]]"): (
        "alice.md",
        "Working Style",
    ),
    ("old-plan.md", "[[Project Plan]]"): ("project-plan.md", None),
}


def test_every_fixture_link_resolves_as_documented(fixture_vault: Vault) -> None:
    seen: dict[tuple[str, str], tuple[str | None, str | None]] = {}
    for path, note in fixture_vault.notes.items():
        for link in note.links:
            found = fixture_vault.resolve(link.target, link.heading)
            assert (found.error is None) == (found.note is not None), found
            seen[path, link.text] = (
                found.note.path if found.note else None,
                found.heading.text if found.heading else None,
            )
    assert seen == FIXTURE_LINKS


def test_fixture_broken_link_says_not_found(fixture_vault: Vault) -> None:
    found = fixture_vault.resolve("Missing Target")
    assert found.note is None and found.candidates == ()
    assert found.error == "Note not found: Missing Target"


def test_fixture_archived_note_resolves_and_says_archived(fixture_vault: Vault) -> None:
    found = fixture_vault.resolve("Old Plan")
    assert found.note is not None and found.note.archived and found.error is None


def test_fixture_backlinks(fixture_vault: Vault) -> None:
    def sources(path: str) -> list[tuple[str, str]]:
        return [(note.path, link.text) for note, link in fixture_vault.backlinks(path)]

    assert sources("project-plan.md") == [
        ("alice.md", "[[Project Plan#Milestones]]"),
        ("meeting.md", "[[project-plan]]"),
        ("old-plan.md", "[[Project Plan]]"),
    ]
    assert sources("alice.md") == [
        ("project-plan.md", "[[Alice Notes]]"),
        ("sub/deep-note.md", "[[Alice Notes#Working Style|Alice's style]]"),
    ]
    assert sources("old-plan.md") == []


# Resolution order and ties --------------------------------------------------------------------


def test_path_beats_title_beats_alias_beats_file_name(tmp_path: Path) -> None:
    write(tmp_path, "x/target.md", "# Path Note")
    write(tmp_path, "titled.md", "---\ntitle: x/target\n---\n")
    write(tmp_path, "alpha-title.md", "# Alpha")
    write(tmp_path, "alpha-alias.md", "---\naliases: [Alpha, Gamma]\n---\n")
    write(tmp_path, "gamma.md", "# Not Gamma By Title")
    vault = scanned(tmp_path)

    def path(target: str) -> str | None:
        note = vault.resolve(target).note
        return note.path if note else None

    assert path("x/target") == "x/target.md"  # path beats title
    assert path("Alpha") == "alpha-title.md"  # title beats alias
    assert path("gamma") == "alpha-alias.md"  # alias beats file name
    assert path("Not Gamma By Title") == "gamma.md"
    assert path("alpha-alias") == "alpha-alias.md"  # file name, last
    assert path("alpha-alias.md") == "alpha-alias.md"  # file name with extension


def test_a_title_with_a_slash_resolves_when_no_path_matches(tmp_path: Path) -> None:
    write(tmp_path, "q.md", "---\ntitle: Q1/Q2 plan\n---\n")
    found = scanned(tmp_path).resolve("q1/q2 PLAN")
    assert found.note is not None and found.note.path == "q.md"


@pytest.mark.parametrize(
    "target", ["sub/deep-note", "SUB/Deep-Note", "sub/deep-note.md", "Sub/DEEP-NOTE.MD"]
)
def test_paths_with_or_without_extension_ignore_case(tmp_path: Path, target: str) -> None:
    write(tmp_path, "sub/deep-note.md")
    found = scanned(tmp_path).resolve(target)
    assert found.note is not None and found.note.path == "sub/deep-note.md"


def test_ties_go_to_the_shorter_path_then_alphabetical(tmp_path: Path) -> None:
    for path in ["sub/aa.md", "bb.md", "aa.md", "deeper/sub/c.md"]:
        write(tmp_path, path, "# Same")
    found = scanned(tmp_path).resolve("same")
    assert [n.path for n in found.candidates] == ["aa.md", "bb.md", "sub/aa.md", "deeper/sub/c.md"]
    assert found.note is found.candidates[0]


def test_same_file_name_in_two_folders_is_ambiguous(tmp_path: Path) -> None:
    write(tmp_path, "two/note.md", "text")
    write(tmp_path, "one/note.md", "text")
    write(tmp_path, "one/note.markdown", "text")
    found = scanned(tmp_path).resolve("NOTE")
    assert [n.path for n in found.candidates] == ["one/note.md", "two/note.md", "one/note.markdown"]


def test_candidates_are_those_of_the_winning_step_only(tmp_path: Path) -> None:
    write(tmp_path, "a.md", "# Shared")
    write(tmp_path, "b.md", "---\naliases: [Shared]\n---\n")
    found = scanned(tmp_path).resolve("Shared")
    assert [n.path for n in found.candidates] == ["a.md"]


def test_titles_compare_case_insensitively_with_folded_white_space(tmp_path: Path) -> None:
    write(tmp_path, "s.md", "# Straße  Plan")
    found = scanned(tmp_path).resolve("STRASSE plan")
    assert found.note is not None and found.note.path == "s.md"


@pytest.mark.parametrize(
    "target", ["../outside", "sub/../alice", "..", "/etc/passwd", "\\\\server\\x", "C:/x", "c:\\x"]
)
def test_targets_leaving_the_vault_are_rejected(tmp_path: Path, target: str) -> None:
    write(tmp_path, "alice.md")
    write(tmp_path, "sub/x.md")
    found = scanned(tmp_path).resolve(target)
    assert found.note is None
    assert found.error == f"Outside the vault: {target}"


def test_dot_segments_and_double_slashes_in_paths(tmp_path: Path) -> None:
    write(tmp_path, "sub/x.md")
    found = scanned(tmp_path).resolve("./sub//x")
    assert found.note is not None and found.note.path == "sub/x.md"


# Headings -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("heading", "line"),
    [
        ("Working Style", 3),
        ("working style", 3),
        ("WORKING-STYLE", 3),
        ("working_style", 3),
        ("  Working   Style ", 3),
        ("Q&A: Open?", 5),
        ("qa open", 5),
        ("Working Style#Q&A: Open?", 5),  # a sub-heading path, as Obsidian writes it
    ],
)
def test_headings_match_ignoring_case_and_punctuation(
    tmp_path: Path, heading: str, line: int
) -> None:
    write(tmp_path, "a.md", "# A\n\n## Other\n## Working Style\n\n### Q&A: Open?\n")
    found = scanned(tmp_path).resolve("a", heading)
    assert found.heading is not None and found.heading.line == line
    assert found.error is None


def test_a_missing_heading_still_resolves_the_note(tmp_path: Path) -> None:
    write(tmp_path, "a.md", "# A\n## Present\n")
    found = scanned(tmp_path).resolve("a", "Absent")
    assert found.note is not None and found.note.path == "a.md"
    assert found.heading is None
    assert found.error == "Heading not found in a.md: Absent"


def test_the_first_of_equal_headings_wins(tmp_path: Path) -> None:
    write(tmp_path, "a.md", "## Notes\ntext\n## Notes\n")
    found = scanned(tmp_path).resolve("a", "notes")
    assert found.heading is not None and found.heading.line == 0


def test_backlinks_follow_resolution_and_skip_self_links(tmp_path: Path) -> None:
    write(tmp_path, "target.md", "---\naliases: [T]\n---\n[[target]] self link")
    write(tmp_path, "b.md", "[[T]] and [[T#Part]] and [[other]]")
    write(tmp_path, "a.md", "[[sub/../target]] [[TARGET.md]]")
    vault = scanned(tmp_path)
    links = [(note.path, link.text) for note, link in vault.backlinks("target.md")]
    assert links == [("a.md", "[[TARGET.md]]"), ("b.md", "[[T]]"), ("b.md", "[[T#Part]]")]


def test_backlinks_follow_unsaved_edits_as_a_full_rebuild_gives_them(tmp_path: Path) -> None:
    """Editing open notes (no title, alias or path changed) updates the reverse links from
    the previous note set's; each step gives what building them all again gives."""
    from lsp_memory.notes.vault import _all_links, _reverse_links

    write(tmp_path, "target.md", "# Target\n\n## Part\n")
    write(tmp_path, "b.md", "[[Target]] and [[c]]")
    write(tmp_path, "c.md", "nothing yet")
    vault = scanned(tmp_path)
    assert [n.path for n, _ in vault.backlinks("target.md")] == ["b.md"]
    edits = [
        ("c.md", "[[Target#Part]] then [[Target]]"),
        ("b.md", "now [[c]] only"),
        ("c.md", "[[b]] and [[Target]]"),
        ("target.md", "# Target\n\n## Part\n\nSelf: [[Target]] and [[b]]\n"),
    ]
    for path, text in edits:
        vault.update_text(tmp_path / path, text)
        noteset = vault.view()._noteset
        assert _reverse_links(noteset) == _all_links(noteset), (path, text)
    links = [(n.path, link.text) for n, link in vault.backlinks("target.md")]
    assert links == [("c.md", "[[Target]]")]
    assert [n.path for n, _ in vault.backlinks("b.md")] == ["c.md", "target.md"]


def test_an_unchanged_buffer_publishes_no_new_note_set(tmp_path: Path) -> None:
    """Opening a note (its buffer the file's text) keeps the note set, and with it what was
    derived from it (the reverse links: ~0.5 s to build again on 10 000 notes)."""
    write(tmp_path, "a.md", "# A\n[[b]]\n")
    write(tmp_path, "b.md", "# B\n")
    vault = scanned(tmp_path)
    before = vault.view().notes["a.md"]
    vault.update_text(tmp_path / "a.md", "# A\n[[b]]\n")
    assert vault.view().notes["a.md"] is before
    vault.update_text(tmp_path / "a.md", "# A\n[[b]] edited\n")
    assert vault.view().notes["a.md"] is not before


# Attachments and blocks (as Obsidian resolves them) -------------------------------------------


def test_a_link_or_embed_to_any_file_of_the_vault_resolves_to_that_file(tmp_path: Path) -> None:
    """``![[pic.png]]``, ``[[doc.pdf]]``: Obsidian resolves links to the vault's other files
    by name or path. Before, each was "Note not found" (249 of the 270 broken links reported
    on Obsidian's own help vault)."""
    write(
        tmp_path, "note.md", "# Note\n\n![[Pic.PNG]] [[img/pic.png]] [[report.pdf]] [[gone.png]]\n"
    )
    write(tmp_path, "img/pic.png", "\x89PNG")
    write(tmp_path, "deeper/img/pic.png", "\x89PNG")
    write(tmp_path, "files/report.pdf", "%PDF")
    write(tmp_path, ".obsidian/hidden.png", "")
    vault = scanned(tmp_path)
    by_name = vault.resolve("Pic.PNG")  # by name, any case: the shortest path
    assert (by_name.note, by_name.file, by_name.error) == (
        None,
        str(tmp_path / "img/pic.png"),
        None,
    )
    assert vault.resolve("deeper/img/pic.png").file == str(tmp_path / "deeper/img/pic.png")
    assert vault.resolve("report.pdf").file == str(tmp_path / "files/report.pdf")
    assert vault.resolve("gone.png").error == "Note not found: gone.png"
    assert vault.resolve("hidden.png").file is None  # hidden folders are not the vault's
    assert vault.resolve("note").note is not None  # notes first, as before
    # A file added, then removed, is seen by the next scan and by a one-file update.
    write(tmp_path, "new.jpg", "")
    assert vault.update(tmp_path / "new.jpg").warnings == ()
    assert vault.resolve("new.jpg").file == str(tmp_path / "new.jpg")
    (tmp_path / "new.jpg").unlink()
    vault.update(tmp_path / "new.jpg")
    assert vault.resolve("new.jpg").file is None


def test_a_block_reference_resolves_to_the_line_of_its_id(tmp_path: Path) -> None:
    """``[[Note#^id]]`` links to the paragraph or list item ending ``^id`` (or followed by a
    line holding only ``^id``). Before, it was "Heading not found"."""
    write(
        tmp_path,
        "source.md",
        "# Source\n\nA paragraph. ^para-1\n\n- an item ^item2\n\n> a quote\n\n^quote-3\n\n"
        "![[pic.png]]^image-4\n\n```\ncode ^not-a-block\n```\nnot^inside\n",
    )
    vault = scanned(tmp_path)
    note = vault.notes["source.md"]
    assert [(b.id, b.line) for b in note.blocks] == [
        ("para-1", 2),
        ("item2", 4),
        ("quote-3", 8),
        ("image-4", 10),
    ]
    found = vault.resolve("Source", "^quote-3")
    assert (found.note, found.block, found.error) == (note, note.blocks[2], None)
    missing = vault.resolve("Source", "^not-a-block")
    assert (missing.note, missing.block) == (note, None)
    assert missing.error == "Block not found in source.md: ^not-a-block"
