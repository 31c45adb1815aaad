"""Hover text and record pages (services/editor/describe.py) over the fixture knowledge base and the
fixture vault: what each kind of record shows, that pages only name references that resolve,
and that a page file is written atomically, read-only, and only when its content changed."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from lsp_memory import refs
from lsp_memory.notes import Vault
from lsp_memory.services.editor.describe import Describer, Page, _claim_line, write_page
from lsp_memory.services.kernel.resolver import parse_argument
from lsp_memory.services.kernel.tokens import o200k
from lsp_memory.services.memory.interchange import add_record
from lsp_memory.store.sqlite import Store, open_store
from tests.conftest import DATA, USER


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    """The fixture notes, with mtimes set so that "newest first" has one answer."""
    root = tmp_path / "notes"
    shutil.copytree(DATA / "notes", root)
    for age, name in enumerate(["meeting.md", "alice.md", "old-plan.md"]):
        when = 1_700_000_000 - 1000 * age
        os.utime(root / name, (when, when))
    opened = Vault(root)
    opened.scan()
    return opened


@pytest.fixture
def describer(kb: Store, vault: Vault) -> Describer:
    return Describer(kb, USER, [vault])


def hover(describer: Describer, ref: str) -> str:
    return describer.hover(describer.resolver.resolve(parse_argument(ref)))


def page(describer: Describer, ref: str) -> Page:
    found = describer.page(describer.resolver.resolve(parse_argument(ref)))
    assert found is not None
    return found


# -- hover --------------------------------------------------------------------------------------


def test_claim_hover_has_every_fact_and_no_warning_when_active(describer: Describer) -> None:
    text = hover(describer, "#42")
    assert text.splitlines()[0] == (
        "**Claim #42** · @prefer_morning_a3f2 · preference · active · confidence 0.9"
    )
    assert "⚠️" not in text
    assert "I prefer to do deep work in the morning" in text
    assert "domains work" in text
    assert "created 2024-01-18 · updated 2024-01-30 · pinned" in text
    assert (
        "answers: What time do I prefer for deep work?; When should meetings be scheduled?"
    ) in text
    window = hover(describer, "@valid_window_c016")
    assert "constraint, decision" in window
    assert "entities @bob_ent · domains work, health" in window
    assert "valid 2024-01-01 → 2024-12-31" in window


@pytest.mark.parametrize(
    ("ref", "warning"),
    [
        ("#4", "⚠️ **Superseded** by #1 @leaf_active_a001: The Leaf service uses PostgreSQL 16"),
        ("#5", "⚠️ **Merged** into #7 @shared_claim_a007: Leaf deploys happen every Tuesday"),
        ("#3", "⚠️ **Retracted**: no longer held"),
        ("#6", "⚠️ **Deprecated**: out of date"),
        ("#2", "⚠️ **Contested**: disputed"),
    ],
)
def test_a_claim_that_is_not_active_carries_a_warning(
    describer: Describer, ref: str, warning: str
) -> None:
    assert warning in hover(describer, ref)


def test_context_hover_gives_path_children_count_cost_and_first_claims(
    describer: Describer,
) -> None:
    root = hover(describer, "@root_ctx")
    assert root.startswith("**Context @root_ctx** · Root Context\n\nTop of the test tree.")
    assert "path: Root Context · sub-contexts: @mid_ctx, @other_ctx" in root
    lines = root.splitlines()
    count = next(line for line in lines if line.startswith("6 claims"))
    # The context block's count (o200k), not an estimate: one number for the same text.
    claims = describer.resolver.resolve(parse_argument("@root_ctx")).claims
    cost = o200k().count("\n".join(claim.statement for claim in claims))
    assert count == f"6 claims (with sub-contexts) · {cost} tokens"
    listed = [line for line in lines if line.startswith("- #")]
    assert [line.split()[1] for line in listed] == ["#10", "#2", "#8", "#7", "#1"]
    assert "- #2 (decision, contested) The Leaf service launches in March" in listed
    assert lines[-1] == "- … 1 more"
    leaf = hover(describer, "@leaf_context")  # by name
    assert "path: Root Context › Mid Context › Leaf Context" in leaf
    assert hover(describer, "@empty_ctx").endswith("path: Empty Context\n\n0 claims")


def test_entity_hover_shows_fields_in_type_order_with_references_resolved(
    describer: Describer,
) -> None:
    text = hover(describer, "@alice_ent")
    fields = [line for line in text.splitlines() if line.startswith("- ") and ":" in line]
    assert fields == [
        "- email: alice@example.com",
        "- role: Engineering Manager",
        "- start_date: 2020-02-03",
        "- level: manager",
        "- skills: Python, Hiring",
        "- team: @eng_team (Engineering)",
        "- reports: @bob_ent (Bob)",
        "- profile: [[Alice Notes]] (alice.md)",
        "- display_name: Alice (Engineering Manager)",
    ]
    assert "2 claims" in text
    team = hover(describer, "@eng_team")
    assert "- members: @alice_ent (Alice), @bob_ent (Bob), @carol_ent (Carol, deleted)" in team
    carol = hover(describer, "@carol_ent")
    assert "⚠️ **Deleted**" in carol and carol.endswith("0 claims")


def test_tag_and_domain_hovers(describer: Describer) -> None:
    health = hover(describer, "@health_tag")
    assert "**Tag @health_tag** · Health" in health
    assert "sub-tags: @sleep_tag" in health
    assert "3 claims (with sub-tags)" in health and "#13" not in health
    assert "parent @health_tag" in hover(describer, "@sleep_tag")
    work = hover(describer, "@work_domain")
    assert work.startswith("**Domain @work_domain** · claims whose domains include work")
    assert "7 claims · " in work and "- … 2 more" in work


def test_note_hover_has_title_path_opening_lines_and_backlinks_newest_first(
    describer: Describer,
) -> None:
    text = hover(describer, "[[project-plan]]")
    assert text.splitlines()[0] == "**[[Project Plan]]** · project-plan.md"
    assert "> The plan for the Leaf service. Owner: Alice Notes.\n> Milestones" in text
    assert text.splitlines()[-1] == (
        "backlinks (3): [[meeting]] (meeting.md), [[Alice Notes]] (alice.md), "
        "[[Old Plan]] (old-plan.md)"
    )
    assert "§ Milestones (line 5)" in hover(describer, "[[Project Plan#milestones]]")
    missing_heading = hover(describer, "[[Alice Notes#Nope]]")
    assert "⚠️ Heading not found in alice.md: Nope" in missing_heading
    assert "aliases: Alice, A. Example" in missing_heading
    archived = hover(describer, "[[Old Plan]]")
    assert "⚠️ archived" in archived and archived.endswith("no backlinks")
    assert hover(describer, "[[Missing Target]]") == "⚠️ Note not found: Missing Target"


def test_unresolved_and_other_users_records_give_the_resolver_message(
    describer: Describer,
) -> None:
    assert hover(describer, "@no_such_thing") == (
        "⚠️ No memory or context found with ID: no_such_thing"
    )
    assert hover(describer, "#99") == "⚠️ No memory or context found with ID: claim_99"
    assert "MALLORY" not in hover(describer, "@leaf_ctx")


def test_statements_are_shown_as_text_not_markup(kb: Store, describer: Describer) -> None:
    batch = add_record(
        kb, {"kind": "claim", "statement": "2. *Not* a list, <b>no</b> [[link]]"}, user=USER
    )
    text = hover(describer, f"#{batch.claims[0].number}")
    assert "2\\. \\*Not\\* a list, \\<b\\>no\\</b\\> \\[\\[link\\]\\]" in text


# -- pages --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "relative"),
    [
        ("#4", "claim/leaf_superseded_a004.md"),
        ("@claim_16", "claim/valid_window_c016.md"),
        ("@leaf_ctx", "context/leaf_ctx.md"),
        ("@my_health_goals", "context/hgoals.md"),
        ("@alice_ent", "entity/alice_ent.md"),
        ("@eng_team", "entity/eng_team.md"),
        ("@health_tag", "tag/health_tag.md"),
        ("@work_domain", "domain/work_domain.md"),
    ],
)
def test_every_reference_on_a_page_resolves(describer: Describer, ref: str, relative: str) -> None:
    found = page(describer, ref)
    assert found.relative == relative
    references = refs.parse_document(found.text, "markdown").references
    assert len(references) >= 2
    for reference in references:
        resolution = describer.resolver.resolve(reference)
        assert resolution.resolved, (reference.text, resolution.error)


def test_claim_page_has_the_full_record(describer: Describer) -> None:
    text = page(describer, "#4").text
    assert text.startswith("# Claim #4 · @leaf_superseded_a004\n\n> ⚠️ **Superseded** by #1")
    for line in [
        "- UUID: @memory:00000000-0000-4000-a000-000000000004",
        "- Status: superseded",
        "- Domains: @work_domain",
        "- Contexts: @leaf_ctx (Leaf Context)",
        "- Superseded by: #1 @leaf_active_a001",
    ]:
        assert line in text.splitlines()
    assert "## Possible questions\n\n- Which database does Leaf use?" in page(describer, "#1").text


def test_context_and_entity_pages_list_related_records(describer: Describer) -> None:
    leaf = page(describer, "@leaf_ctx").text
    assert (
        "- Path: Root Context (@root_ctx) › Mid Context (@mid_ctx) › Leaf Context (@leaf_ctx)"
        in leaf
    )
    assert "- Parent: @mid_ctx (Mid Context)" in leaf
    claims = leaf.split("## Claims\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split()[2] for line in claims] == [
        "@leaf_contested_a002",
        "@shared_claim_a007",
        "@leaf_active_a001",
    ]
    assert "None." in page(describer, "@empty_ctx").text
    alice = page(describer, "@alice_ent").text
    assert "## Referenced by\n\n- @eng_team (Engineering) · lead, members" in alice


def test_notes_and_unresolved_references_have_no_page(describer: Describer) -> None:
    for ref in ("[[Project Plan]]", "@no_such_thing"):
        assert describer.page(describer.resolver.resolve(parse_argument(ref))) is None


def test_definition_leads_to_the_note_heading_or_the_written_page(
    describer: Describer, vault: Vault, tmp_path: Path
) -> None:
    pages = tmp_path / "cache" / "pages"
    text = "[[Project Plan#Milestones]] and @leaf_ctx and [[alice]] and @nope_nope"
    note = describer.definition_at(text, 3, pages, "markdown")
    assert note is not None and note.path == vault.root / "project-plan.md" and note.line == 4
    whole = describer.definition_at(text, text.index("[[alice"), pages, "markdown")
    assert whole is not None and whole.path == vault.root / "alice.md" and whole.line == 0
    context = describer.definition_at(text, text.index("@leaf"), pages, "markdown")
    assert context is not None and context.path == pages / "context" / "leaf_ctx.md"
    assert context.line == 0 and context.path.read_text(encoding="utf-8").startswith("# Context")
    assert describer.definition_at(text, text.index("@nope"), pages, "markdown") is None
    assert describer.definition_at(text, text.index("and"), pages, "markdown") is None


def test_write_page_is_read_only_and_writes_only_changes(tmp_path: Path) -> None:
    folder = tmp_path / "pages"
    first = write_page(folder, Page("context", "leaf_ctx", "one\n"))
    assert first == folder / "context" / "leaf_ctx.md"
    assert stat.S_IMODE(first.stat().st_mode) == 0o444
    before = first.stat()
    assert write_page(folder, Page("context", "leaf_ctx", "one\n")) == first
    after = first.stat()
    assert (after.st_mtime_ns, after.st_ino) == (before.st_mtime_ns, before.st_ino)
    write_page(folder, Page("context", "leaf_ctx", "two ☕\n"))
    assert first.read_text(encoding="utf-8") == "two ☕\n"
    assert stat.S_IMODE(first.stat().st_mode) == 0o444
    assert [p.name for p in first.parent.iterdir()] == ["leaf_ctx.md"]  # no temp files left
    assert Page("domain", "a/../b", "").relative == "domain/a____b.md"


def test_sub_contexts_and_referrers_are_the_users_own(kb: Store, describer: Describer) -> None:
    """Mallory's contexts beneath her own `leaf_ctx`, and her entity naming `alice_ent`, are
    not ours: the hover's sub-contexts and the page's referrers come from this user only."""
    for record in (
        {"kind": "context", "friendly_id": "mal_child", "name": "Mal", "parent": "leaf_ctx"},
        {"kind": "entity_type", "name": "Team", "fields": [{"name": "lead", "type": "entity_ref"}]},
        {"kind": "entity", "friendly_id": "mal_team", "name": "Mal Team", "type": "Team",
         "fields": {"lead": "alice_ent"}},
    ):  # fmt: skip
        add_record(kb, record, user="mallory")
    assert "mal_child" not in hover(describer, "@leaf_ctx")
    page = describer.page(describer.resolver.resolve(parse_argument("@alice_ent")))
    assert page is not None
    assert "mal_team" not in page.text and "@eng_team (Engineering)" in page.text


def _listed_lines(text: str) -> list[str]:
    """The claim lines of a page's "Claims" section."""
    return text.split("## Claims\n\n", 1)[1].split("\n\n", 1)[0].splitlines()


def test_group_pages_list_each_claim_as_its_whole_record_shows_it(kb: Store) -> None:
    """A context's, tag's or domain's page reads its claims lean (number, id, primary type,
    status, statement: the store's ``Listed``); every line is the one the whole claim gives,
    its first type included (#11 and #16 have two), for every group of the fixture."""
    describer = Describer(kb, USER)
    domains = [row[0] for row in kb._db.execute("SELECT DISTINCT domain FROM claim_domains")]
    groups = [
        *(
            (f"@{c.friendly_id}", kb.claims_in_context(USER, c.context_id))
            for c in kb.contexts(USER)
        ),
        *((f"@{t.friendly_id}", kb.claims_with_tag(USER, t.friendly_id)) for t in kb.tags(USER)),
        *((f"@{d}_domain", kb.claims_in_domain(USER, d)) for d in domains),
    ]
    types: set[tuple[str, ...]] = set()
    for ref, claims in groups:
        expected = [_claim_line(c, ids=True) for c in claims] or ["None."]
        assert _listed_lines(page(describer, ref).text) == expected, ref
        types |= {c.claim_types for c in claims}
    assert ("goal", "constraint") in types and ("constraint", "decision") in types


def test_a_group_page_is_built_once_per_store_change(kb: Store, tmp_path: Path) -> None:
    """Going to a context's definition again reads none of its claims while the store is
    unchanged (a root context's page of 200 claims took ~20 ms per request at 100k claims);
    a write through another connection (the command line's) shows on the next one."""
    describer = Describer(kb, USER)
    pages = tmp_path / "pages"
    first = describer.definition_at("@root_ctx", 1, pages)
    assert first is not None
    statements: list[str] = []
    kb._db.set_trace_callback(statements.append)
    try:
        again = describer.definition_at("@root_ctx", 1, pages)
    finally:
        kb._db.set_trace_callback(None)
    assert again == first
    assert not [s for s in statements if "group_claims" in s or "claim_types" in s], statements
    with open_store(kb.path.parent) as other:
        record = {"kind": "claim", "statement": "Root news", "contexts": ["root_ctx"]}
        add_record(other, record, user=USER)
    written = describer.definition_at("@root_ctx", 1, pages)
    assert written is not None
    assert "Root news" in written.path.read_text(encoding="utf-8")
