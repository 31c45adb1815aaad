"""Unlinked mentions over a vault on ``tmp_path``: where a document names another note
without linking it, the link that replaces it, and which notes mention a note."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_memory.errors import UnresolvedReference
from lsp_memory.notes import Vault
from lsp_memory.services.editor.mentions import LinkSuggestion, Mentions, mention_record
from lsp_memory.services.editor.references import Document

NOTES = {
    "project-plan.md": "# Project Plan\n\nThe plan.\n",
    "alice.md": "---\ntitle: Alice Notes\naliases: [Alice, A. Example]\n---\n\nShe leads.\n",
    "search.md": "# Search\n\nHow Search works.\n",
    "go.md": "# Go\n\nA language.\n",
    "c.md": "# C++\n\nAnother one.\n",
}


@pytest.fixture
def mentions(tmp_path: Path) -> Mentions:
    root = tmp_path / "vault"
    root.mkdir()
    for name, text in NOTES.items():
        (root / name).write_text(text, encoding="utf-8")
    vault = Vault(root)
    vault.scan()
    return Mentions([vault.view()])


def document(mentions: Mentions, text: str, name: str = "draft.md") -> Document:
    root = mentions.vaults[0].root
    return Document(None, root / name, text, "markdown")


def applied(text: str, found: list[LinkSuggestion]) -> str:
    for suggestion in reversed(found):
        text = text[: suggestion.start] + suggestion.new_text + text[suggestion.end :]
    return text


def test_a_mention_becomes_a_link_keeping_the_text_as_its_label(mentions: Mentions) -> None:
    text = "See the project plan and the Project Plan, then ask alice.\n"
    found = mentions.in_document(document(mentions, text))
    assert [s.title for s in found] == [
        "Link to [[Project Plan]]",
        "Link to [[Project Plan]]",
        "Link to [[Alice Notes]]",
    ]
    assert applied(text, found) == (
        "See the [[Project Plan|project plan]] and the [[Project Plan]], then ask "
        "[[Alice Notes|alice]].\n"
    )


@pytest.mark.parametrize(
    "text",
    [
        "---\ntitle: Draft\nabout: Project Plan\n---\nBody.\n",
        "See [[Alice Notes|the project plan]] (a label is inside the link).\n",
        "![[Alice Notes#Project Plan]]\n",
        "`Project Plan` in code.\n",
        "```\nProject Plan\n```\n",
        "%% Project Plan %% hidden.\n",
        "%% open comment\nProject Plan\n",
        "[Project Plan](https://example.com/plan) and ![Project Plan](plan.png)\n",
        "https://x.org/Project_Plan/project plan.html and <b title='Project Plan'>x</b>\n",
        "Tagged #project-plan, #Project/Plan and #Search.\n",
        "ProjectPlan and Project Plans and project-planning are other words.\n",
        "Project\nPlan across a line break.\n",
    ],
)
def test_nothing_inside_links_code_comments_front_matter_or_urls(
    mentions: Mentions, text: str
) -> None:
    found = mentions.in_document(document(mentions, text))
    assert [(text[s.start : s.end], s.target) for s in found if s.target != "Alice Notes"] == []
    # The same text after a line that mentions the note: that one is found.
    control = mentions.in_document(document(mentions, "Project Plan.\n" + text))
    assert (control[0].start, control[0].target) == (0, "Project Plan")


def test_one_word_titles_match_as_written_and_aliases_in_any_case(mentions: Mentions) -> None:
    text = "Search finds it; search the vault. ALICE and Go and C++ here.\n"
    found = mentions.in_document(document(mentions, text))
    assert [text[s.start : s.end] for s in found] == ["Search", "ALICE", "C++"]


def test_the_note_itself_and_notes_it_links_are_not_offered(mentions: Mentions) -> None:
    own = "# Project Plan\n\nThe project plan; Alice Notes.\n"
    assert mentions.in_document(document(mentions, own, "project-plan.md"))[0].target == (
        "Alice Notes"
    )
    elsewhere = [s.target for s in mentions.in_document(document(mentions, own))]
    assert elsewhere == ["Project Plan", "Project Plan", "Alice Notes"]
    linking = "Ask Alice. Then [[alice|her]] again.\n"
    assert mentions.in_document(document(mentions, linking)) == []


def test_only_the_requested_range_is_scanned(mentions: Mentions) -> None:
    text = "Project Plan\nnothing\nAlice\n"
    found = mentions.in_document(document(mentions, text), text.index("nothing"), text.index("g"))
    assert found == []
    found = mentions.in_document(document(mentions, text), text.index("Alice") + 2)
    assert [s.target for s in found] == ["Alice Notes"]


def test_notes_that_mention_a_note_without_linking_it(mentions: Mentions, tmp_path: Path) -> None:
    root = tmp_path / "vault"
    (root / "a.md").write_text("# A\n\nWe follow the project plan.\n", encoding="utf-8")
    (root / "b.md").write_text("# B\n\nThe [[Project Plan]]; the project plan.\n", "utf-8")
    vault = Vault(root)
    vault.scan()
    service = Mentions([vault.view()])
    plan = service.note_named("[[Project Plan]]")
    found = service.of_note(plan)
    assert [(note.path, place.document.text[place.start : place.end]) for note, place in found] == [
        ("a.md", "project plan")
    ]
    record = mention_record(*found[0])
    assert record["range"] == {
        "start": {"line": 2, "character": 14},
        "end": {"line": 2, "character": 26},
    }
    assert record["snippet"] == "We follow the project plan."
    assert record["title"] == "A"


def test_a_bad_note_is_one_line(mentions: Mentions) -> None:
    with pytest.raises(UnresolvedReference, match="Note not found: Nope"):
        mentions.note_named("Nope")
    assert mentions.note_named("alice").title == "Alice Notes"
