"""Find references and rename (services/editor/references.py, services/editor/rename.py) over
the fixture
knowledge base and a copy of the fixture vault with one more note that mentions records in
every form; and ``Store.rename`` / ``Store.set_entity_fields`` on their own."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from lsp_memory.errors import StoreError
from lsp_memory.notes import Vault
from lsp_memory.services.editor.references import Document, Place, ReferenceFinder, read_note
from lsp_memory.services.editor.rename import BadName, CannotRename, Plan, Renamer
from lsp_memory.services.kernel.resolver import Resolver, parse_argument
from lsp_memory.store.sqlite import STORE_FILE, Store, open_store
from tests.conftest import DATA, USER, snapshot

MENTIONS = """\
# Mentions 😀

😀 café @leaf_superseded_a004, then #4 and @claim_4.
Context @leaf_ctx, by its name @leaf_context; entity @alice_ent; tag @health_tag.
`@leaf_ctx in code` is no reference, nor is mail@leaf_ctx.com.
Alice: [[Alice Notes]], [[A. Example]], [[alice.md]], [[./alice]], [[Alice|Al]],
[[Alice Notes#Working Style|her style]]. Plan: [[project-plan]], [[Project Plan#Risks]].
"""


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    root = tmp_path / "vault"
    shutil.copytree(DATA / "notes", root)
    (root / "mentions.md").write_text(MENTIONS, encoding="utf-8")
    opened = Vault(root)
    opened.scan()
    return opened


@pytest.fixture
def resolver(kb: Store, vault: Vault) -> Resolver:
    return Resolver(kb, USER, [vault])


def note(vault: Vault, path: str) -> Document:
    found = read_note(vault.root / path)
    assert found is not None
    return found


def at(document: Document, needle: str, delta: int = 1) -> int:
    return document.text.index(needle) + delta


def shown(places: list[Place]) -> list[tuple[str, str]]:
    """Each place as (file or URI, the text there)."""
    return [
        (
            p.document.uri or (p.document.path.name if p.document.path else ""),
            p.document.text[p.start : p.end],
        )
        for p in places
    ]


def find(
    resolver: Resolver, document: Document, needle: str, *open_docs: Document
) -> list[tuple[str, str]]:
    finder = ReferenceFinder(resolver)
    found = finder.target_at(document, at(document, needle))
    assert found is not None
    return shown(finder.find(found[0], list(open_docs)))


# -- references --------------------------------------------------------------------------------


def test_a_claim_is_found_in_every_form_and_nowhere_in_code(
    resolver: Resolver, vault: Vault
) -> None:
    mentions = note(vault, "mentions.md")
    expected = [
        ("mentions.md", "@leaf_superseded_a004"),
        ("mentions.md", "#4"),
        ("mentions.md", "@claim_4"),
    ]
    for needle in ("#4", "@claim_4", "@leaf_superseded"):
        assert find(resolver, mentions, needle) == expected
    prompt = Document("untitled:prompt", None, "x @memory:00000000-0000-4000-a000-000000000004")
    assert find(resolver, prompt, "@memory", prompt) == [
        ("untitled:prompt", prompt.text[2:]),
        *expected,
    ]
    assert find(resolver, mentions, "#4", prompt) == [
        ("untitled:prompt", prompt.text[2:]),
        *expected,
    ]


def test_a_context_by_id_and_by_name_an_entity_and_a_tag(resolver: Resolver, vault: Vault) -> None:
    mentions = note(vault, "mentions.md")
    context = [("mentions.md", "@leaf_ctx"), ("mentions.md", "@leaf_context")]
    assert find(resolver, mentions, "@leaf_ctx") == context
    assert find(resolver, mentions, "@leaf_context") == context
    assert find(resolver, mentions, "@alice_ent") == [("mentions.md", "@alice_ent")]
    assert find(resolver, mentions, "@health_tag") == [("mentions.md", "@health_tag")]


def test_a_note_is_found_through_every_link_form(resolver: Resolver, vault: Vault) -> None:
    mentions = note(vault, "mentions.md")
    expected = [
        ("mentions.md", "[[Alice Notes]]"),
        ("mentions.md", "[[A. Example]]"),
        ("mentions.md", "[[alice.md]]"),
        ("mentions.md", "[[./alice]]"),
        ("mentions.md", "[[Alice|Al]]"),
        ("mentions.md", "[[Alice Notes#Working Style|her style]]"),
        ("project-plan.md", "[[Alice Notes]]"),
        ("deep-note.md", "[[Alice Notes#Working Style|Alice's style]]"),
    ]
    assert find(resolver, mentions, "[[A. Example]]") == expected
    # Off any reference inside the note itself: the note.
    alice = note(vault, "alice.md")
    assert find(resolver, alice, "manages the") == expected
    finder = ReferenceFinder(resolver)
    target = finder.target_at(alice, at(alice, "manages"))
    assert target is not None
    declaration = finder.declaration(target[0], [])
    assert declaration is not None
    assert alice.text[declaration.start : declaration.end] == "Alice Notes"


def test_an_open_document_wins_over_its_file(resolver: Resolver, vault: Vault) -> None:
    path = vault.root / "mentions.md"
    edited = "Now only one: 😀 #4 here, and a new @claim_4.\n"
    buffer = Document(path.as_uri(), path, edited, "markdown")
    prompt = Document("untitled:1", None, "#4 twice #4", "plaintext")
    found = find(resolver, prompt, "#4", buffer, prompt)
    assert found == [
        (path.as_uri(), "#4"),
        (path.as_uri(), "@claim_4"),
        ("untitled:1", "#4"),
        ("untitled:1", "#4"),
    ]


def test_nothing_to_find_on_plain_text_outside_notes_or_an_unresolved_reference(
    resolver: Resolver,
) -> None:
    finder = ReferenceFinder(resolver)
    prompt = Document("untitled:1", None, "plain words @no_such_id [[Missing Target]]")
    for needle in ("words", "@no_such", "[[Missing"):
        assert finder.target_at(prompt, at(prompt, needle)) is None


def test_a_vault_holding_many_notes_is_read_only_where_tokens_may_match(
    resolver: Resolver, vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Notes whose indexed tokens cannot name the target are never read."""
    for number in range(300):
        (vault.root / f"bulk-{number}.md").write_text(f"@leaf_ctx and #{number + 100}\n")
    vault.scan()
    read: list[Path] = []
    original = Path.read_bytes

    def counting(self: Path) -> bytes:
        read.append(self)
        return original(self)

    monkeypatch.setattr(Path, "read_bytes", counting)
    prompt = Document("untitled:1", None, "#4")
    assert len(find(resolver, prompt, "#4", prompt)) == 4
    assert [p.name for p in read] == ["mentions.md"]


# -- prepare rename ----------------------------------------------------------------------------


def test_prepare_gives_the_id_or_the_link_target_and_a_placeholder(
    resolver: Resolver, vault: Vault
) -> None:
    renamer = Renamer(resolver)
    mentions = note(vault, "mentions.md")
    found = renamer.prepare(mentions, at(mentions, "@leaf_ctx", 3))
    assert found is not None and found.placeholder == "leaf_ctx"
    assert mentions.text[found.place.start : found.place.end] == "leaf_ctx"
    link = renamer.prepare(mentions, at(mentions, "[[Alice|Al]]", 9))
    assert link is not None and link.placeholder == "Alice Notes"
    assert mentions.text[link.place.start : link.place.end] == "Alice"
    plan = note(vault, "project-plan.md")
    title = renamer.prepare(plan, at(plan, "Project Plan", 3))
    assert title is not None and title.placeholder == "Project Plan"
    assert plan.text[title.place.start : title.place.end] == "Project Plan"
    assert renamer.prepare(plan, at(plan, "The plan")) is None
    assert renamer.prepare(Document("untitled:1", None, "plain"), 2) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("#4", "claim numbers are permanent; rename the claim's id @leaf_superseded_a004"),
        ("@claim_4", "claim numbers are permanent"),
        ("@memory:00000000-0000-4000-a000-000000000004", "UUID is permanent"),
        ("@work_domain", "is a domain"),
        ("@my_health_goals", "names the context by its name; rename its id @hgoals instead"),
        ("@no_such_id", "No memory or context found with ID: no_such_id"),
        ("[[Missing Target]]", "Note not found: Missing Target"),
    ],
)
def test_what_cannot_be_renamed_says_why(resolver: Resolver, text: str, message: str) -> None:
    with pytest.raises(CannotRename, match=message.replace("(", r"\(")):
        Renamer(resolver).prepare(Document("untitled:1", None, text), 2)


# -- rename a friendly id ----------------------------------------------------------------------


def test_renaming_a_context_rewrites_its_ids_and_renames_it_in_the_store(
    kb: Store, resolver: Resolver, vault: Vault, tmp_path: Path
) -> None:
    mentions = note(vault, "mentions.md")
    prompt = Document("untitled:1", None, "ask @leaf_ctx and #1")
    head = kb.last_change()
    plan = Renamer(resolver).rename(
        mentions, at(mentions, "@leaf_ctx"), "@leaf_branch", [prompt], move_files=True
    )
    assert plan is not None and plan.store_changed and plan.move is None
    assert [
        (e.place.document.text[e.place.start : e.place.end], e.new_text) for e in plan.edits
    ] == [
        ("leaf_ctx", "leaf_branch"),
        ("leaf_ctx", "leaf_branch"),
    ]  # the name form @leaf_context still resolves: left alone
    with open_store(tmp_path / "store") as fresh:
        assert fresh.context_by_friendly_id(USER, "leaf_ctx") is None
        renamed = fresh.context_by_friendly_id(USER, "leaf_branch")
        assert renamed is not None and renamed.name == "Leaf Context"
        assert fresh.context_by_friendly_id("mallory", "leaf_ctx") is not None
        changes = fresh.changes_since(head)
    assert {c.kind for c in changes} == {"context", "claim"}  # claims show context ids
    assert not resolver.resolve(parse_argument("@leaf_ctx")).resolved
    assert resolver.resolve(parse_argument("@leaf_branch")).claims


def test_renaming_a_claim_leaves_its_number_forms_alone(
    kb: Store, resolver: Resolver, vault: Vault
) -> None:
    mentions = note(vault, "mentions.md")
    plan = Renamer(resolver).rename(
        mentions, at(mentions, "@leaf_superseded"), "leaf_pg14_old", [], move_files=True
    )
    assert plan is not None and plan.store_changed
    texts = edited(plan)
    assert "😀 café @leaf_pg14_old, then #4 and @claim_4." in texts["mentions.md"]
    claim = kb.claim_by_number(USER, 4)
    assert claim is not None and claim.friendly_id == "leaf_pg14_old"


def test_renaming_an_entity_carries_the_fields_that_name_it(
    kb: Store, resolver: Resolver, vault: Vault
) -> None:
    mentions = note(vault, "mentions.md")
    plan = Renamer(resolver).rename(
        mentions, at(mentions, "@alice_ent"), "alice_person", [], move_files=False
    )
    assert plan is not None and len(plan.edits) == 1
    team = kb.entity_by_friendly_id(USER, "eng_team")
    bob = kb.entity_by_friendly_id(USER, "bob_ent")
    assert team is not None and bob is not None
    assert team.fields["lead"] == "alice_person"
    assert team.fields["members"] == "alice_person, bob_ent, carol_ent"
    assert kb.entity_by_friendly_id("mallory", "alice_ent") is not None
    assert resolver.resolve(parse_argument("@alice_person")).entity is not None


@pytest.mark.parametrize(
    ("new", "message"),
    [
        ("9lives", "is not a valid id"),
        ("ab", "is not a valid id"),
        ("with space", "is not a valid id"),
        ("x" * 61, "is not a valid id"),
        ("trailing-", "cannot end in '-'"),
        ("memory", "would not be read as one reference"),
        ("claim_5", "names claim 5 by its number"),
        ("work2_domain", "ids ending in _domain"),
        ("leaf_active_a001", "@leaf_active_a001 is already the id of a claim"),
        ("mid_ctx", "is already the id of a context"),
        ("sleep_tag", "is already the id of a tag"),
        ("my_health_goals", "already names the context @hgoals by its name"),
    ],
)
def test_a_bad_new_id_is_refused_and_nothing_changes(
    kb: Store, resolver: Resolver, tmp_path: Path, new: str, message: str
) -> None:
    before = snapshot(tmp_path / "store")
    prompt = Document("untitled:1", None, "@leaf_ctx")
    with pytest.raises(BadName, match=message):
        Renamer(resolver).rename(prompt, 2, new, [prompt], move_files=True)
    assert snapshot(tmp_path / "store") == before


def test_the_same_id_again_changes_nothing(kb: Store, resolver: Resolver, tmp_path: Path) -> None:
    before = snapshot(tmp_path / "store")
    prompt = Document("untitled:1", None, "@leaf_ctx")
    assert Renamer(resolver).rename(prompt, 2, " @leaf_ctx ", [prompt], move_files=True) == Plan()
    assert snapshot(tmp_path / "store") == before


def test_a_locked_store_refuses_the_rename_whole(tmp_path: Path, vault: Vault) -> None:
    from lsp_memory.services.memory.interchange import import_records

    folder = tmp_path / "locked"
    with open_store(folder) as setup:
        import_records(setup, (DATA / "kb.jsonl").read_bytes(), user=USER, source="kb")
    before = snapshot(folder)
    with open_store(folder, busy_timeout_ms=50) as store:
        holder = sqlite3.connect(folder / STORE_FILE, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            prompt = Document("untitled:1", None, "@leaf_ctx")
            with pytest.raises(StoreError, match="locked"):
                Renamer(Resolver(store, USER, [vault])).rename(
                    prompt, 2, "leaf_branch", [prompt], move_files=True
                )
        finally:
            holder.execute("ROLLBACK")
            holder.close()
    assert snapshot(folder) == before


# -- rename a note -----------------------------------------------------------------------------


def edited(plan: Plan) -> dict[str, str]:
    """The texts the plan's edits give, by file name (or URI)."""
    by_document: dict[int, tuple[Document, list[tuple[int, int, str]]]] = {}
    for edit in plan.edits:
        document = edit.place.document
        by_document.setdefault(id(document), (document, []))[1].append(
            (edit.place.start, edit.place.end, edit.new_text)
        )
    result: dict[str, str] = {}
    for document, edits in by_document.values():
        text = document.text
        for start, end, new_text in sorted(edits, reverse=True):
            text = text[:start] + new_text + text[end:]
        name = document.uri or (document.path.name if document.path else "")
        result[name] = text
    return result


def test_a_note_titled_by_its_heading_and_its_file_renamed_together(
    resolver: Resolver, vault: Vault
) -> None:
    mentions = note(vault, "mentions.md")
    plan = Renamer(resolver).rename(
        mentions, at(mentions, "[[project-plan]]", 3), "Project Roadmap", [], move_files=True
    )
    assert plan is not None and not plan.store_changed
    assert plan.move is not None
    assert plan.move.source == vault.root / "project-plan.md"
    assert plan.move.destination == vault.root / "project-roadmap.md"
    texts = edited(plan)
    assert texts["project-plan.md"].startswith("# Project Roadmap\n")
    assert "[[project-roadmap]], [[Project Roadmap#Risks]]" in texts["mentions.md"]
    assert "See [[Project Roadmap#Milestones]]" in texts["alice.md"]
    assert "Agenda from [[project-roadmap]]" in texts["meeting.md"]
    assert "Superseded by [[Project Roadmap]]" in texts["old-plan.md"]
    # Without moving files: links by file name still resolve, so they stay.
    kept = Renamer(resolver).rename(
        mentions, at(mentions, "[[project-plan]]", 3), "Project Roadmap", [], move_files=False
    )
    assert kept is not None and kept.move is None
    texts = edited(kept)
    assert "[[project-plan]], [[Project Roadmap#Risks]]" in texts["mentions.md"]
    assert "meeting.md" not in texts


def test_a_note_titled_in_front_matter_keeps_alias_links_and_its_file_name(
    kb: Store, resolver: Resolver, vault: Vault
) -> None:
    mentions = note(vault, "mentions.md")
    plan = Renamer(resolver).rename(
        mentions, at(mentions, "[[A. Example]]", 3), "Alice Smith", [], move_files=True
    )
    assert plan is not None and plan.move is None  # alice.md does not follow its title
    texts = edited(plan)
    assert texts["alice.md"].startswith("---\ntitle: Alice Smith\naliases:")
    assert (
        "Alice: [[Alice Smith]], [[A. Example]], [[alice.md]], [[./alice]], [[Alice|Al]],\n"
        "[[Alice Smith#Working Style|her style]]."
    ) in texts["mentions.md"]
    assert "Owner: [[Alice Smith]]." in texts["project-plan.md"]
    # The entity's note_ref field follows, in the store.
    assert plan.store_changed
    alice = kb.entity_by_friendly_id(USER, "alice_ent")
    assert alice is not None and alice.fields["profile"] == "Alice Smith"


def test_a_note_titled_by_its_file_name_gets_a_title_or_a_new_file_name(
    resolver: Resolver, vault: Vault
) -> None:
    alice = note(vault, "alice.md")
    link = at(alice, "[[meeting|", 3)
    moved = Renamer(resolver).rename(alice, link, "Weekly Sync", [], move_files=True)
    assert moved is not None and moved.move is not None
    assert moved.move.destination.name == "Weekly Sync.md"
    assert "meeting.md" not in edited(moved)  # the file name is the title
    assert "[[Weekly Sync|the last meeting]]" in edited(moved)["alice.md"]
    kept = Renamer(resolver).rename(alice, link, "Weekly Sync", [], move_files=False)
    assert kept is not None and kept.move is None
    assert edited(kept)["meeting.md"].startswith("---\ntitle: Weekly Sync\n---\nNotes from")


def test_a_note_title_that_names_another_note_or_cannot_be_linked_is_refused(
    resolver: Resolver, vault: Vault
) -> None:
    mentions = note(vault, "mentions.md")
    link = at(mentions, "[[project-plan]]", 3)
    for title, message in [
        ("Old Plan", "already names the note old-plan.md"),
        ("Nested Note", "already names the note sub/deep-note.md"),
        ("a/b", "cannot hold '/'"),
        ("x|y", "cannot hold '|'"),
        ("  ", "cannot be empty"),
        ("..", "cannot be only dots"),
        (".", "cannot be only dots"),
    ]:
        with pytest.raises(BadName, match=message):
            Renamer(resolver).rename(mentions, link, title, [], move_files=True)
    (vault.root / "project-roadmap.md").write_text("taken by a file that is no note yet")
    with pytest.raises(BadName, match=re.escape("project-roadmap.md already exists")):
        Renamer(resolver).rename(mentions, link, "Project Roadmap", [], move_files=True)


def test_read_only_files_get_no_edits(resolver: Resolver, vault: Vault, tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("@leaf_ctx\n")
    page.chmod(0o444)
    opened = Document(page.as_uri(), page, "@leaf_ctx\n", "markdown")
    prompt = Document("untitled:1", None, "@leaf_ctx")
    plan = Renamer(resolver).rename(prompt, 2, "leaf_branch", [opened, prompt], move_files=True)
    assert plan is not None
    assert {e.place.document.uri or "disk" for e in plan.edits} == {"untitled:1", "disk"}


# -- the store -----------------------------------------------------------------------------------


def test_store_rename_logs_what_the_index_shows_and_refuses_a_taken_id(kb: Store) -> None:
    head = kb.last_change()
    kb.rename(USER, "tag", "health_tag", "wellbeing_tag")
    assert kb.tag_by_friendly_id(USER, "wellbeing_tag") is not None
    assert kb.tag_by_friendly_id("mallory", "health_tag") is not None
    claims = [c for c in kb.changes_since(head) if c.kind == "claim"]
    assert [(c.row, c.last_row) for c in claims] != []
    logged = {row for c in claims for row in range(c.row, c.last_row + 1)}
    tagged = {c.claim_id for c in kb.claims_by_rows(sorted(logged))}
    assert tagged == {
        "00000000-0000-4000-a000-000000000011",
        "00000000-0000-4000-a000-000000000014",
    }  # the claims carrying the tag directly
    claim = kb.claim_by_number(USER, 4)
    assert claim is not None
    kb.rename(USER, "claim", claim.friendly_id, "leaf_old_pg")
    renamed = kb.claim_by_number(USER, 4)
    assert renamed is not None and renamed.friendly_id == "leaf_old_pg"
    assert renamed.updated_at == claim.updated_at  # an id is a handle, not content
    with pytest.raises(StoreError, match="@mid_ctx is already the id of a context"):
        kb.rename(USER, "claim", "leaf_old_pg", "mid_ctx")
    with pytest.raises(StoreError, match="no entity @nobody"):
        kb.rename(USER, "entity", "nobody", "somebody")


def test_store_set_entity_fields_keeps_the_other_fields(kb: Store) -> None:
    kb.set_entity_fields(USER, {"bob_ent": {"role": "Staff engineer"}})
    bob = kb.entity_by_friendly_id(USER, "bob_ent")
    assert bob is not None and bob.fields == {
        "email": "bob@example.com",
        "role": "Staff engineer",
        "team": "eng_team",
    }
    with pytest.raises(StoreError, match="no entity @nobody"):
        kb.set_entity_fields(USER, {"bob_ent": {"role": "x"}, "nobody": {"role": "y"}})
    bob = kb.entity_by_friendly_id(USER, "bob_ent")
    assert bob is not None and bob.fields["role"] == "Staff engineer"


def test_mentions_are_kept_on_the_note(vault: Vault) -> None:
    """The distinct texts of a note's @ and # tokens, outside code, in order."""
    assert vault.notes["mentions.md"].mentions == (
        "@leaf_superseded_a004",
        "#4",
        "@claim_4",
        "@leaf_ctx",
        "@leaf_context",
        "@alice_ent",
        "@health_tag",
    )
    assert vault.notes["alice.md"].mentions == ()
