"""The context assembler over the fixture knowledge base (``tests/data/kb.jsonl`` plus
``tests/data/context/extra.jsonl``) and the fixture vaults (``tests/data/notes`` and
``tests/data/context/vault``), on ``tmp_path``: golden blocks for each section (reviewed by
hand: ``tests/data/golden/README.md`` says why every line is right), label priority and
dedup, context trees, entity cycles, note limits, the budget, and a property test over
random budgets.

These run without the embedding model (``search`` is None: no semantic tier, near-duplicates
by identical text only), so every number in the goldens can be worked out by hand; the
semantic tier is tested with the real model at the end.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsp_memory.app import App
from lsp_memory.config import Config, Tier, TierSettings
from lsp_memory.errors import UnresolvedReference
from lsp_memory.services.block import (
    ENTITY_NOTES,
    MEMORY,
    PINNED_NOTES,
    Assembler,
    ContextBlock,
    referenced_lines,
)
from lsp_memory.services.kernel.tokens import o200k
from lsp_memory.services.memory.interchange import add_record, import_records
from lsp_memory.services.memory.records import Records
from lsp_memory.store.sqlite import open_store
from tests.conftest import DATA, KB, USER

CONTEXT = DATA / "context"
GOLDEN = DATA / "golden"
OFF = TierSettings(Tier(max=0), Tier(max=0), Tier(max=0), Tier(max=0))
"""No automatic memories: the goldens of other sections show only what they test (and the
global pin #42)."""


def make_app(folder: Path) -> App:
    config = replace(
        Config(),
        store=folder / "store",
        cache=folder / "cache",
        user=USER,
        vaults=(DATA / "notes", CONTEXT / "vault"),
    )
    app = App(config)
    import_records(app.store, KB.read_bytes(), user=USER, source="kb")
    extra = CONTEXT / "extra.jsonl"
    import_records(app.store, extra.read_bytes(), user=USER, source=str(extra))
    return app


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    opened = make_app(tmp_path_factory.mktemp("assemble"))
    yield opened
    opened.close()


def assembler(app: App, tiers: TierSettings | None = None, budget: int = 4000) -> Assembler:
    return Assembler(
        app.store, app.snapshot().resolver(), None, user=USER, tiers=tiers, budget=budget
    )


def build(
    app: App, text: str, *, tiers: TierSettings | None = None, **options: Any
) -> ContextBlock:
    return assembler(app, tiers).build(text, path="prompt.md", **options)


def lines(block: ContextBlock) -> list[str]:
    return block.markdown.splitlines()


def claim_lines(block: ContextBlock) -> list[str]:
    return [line for line in lines(block) if line.startswith("- [")]


def section(block: ContextBlock, name: str) -> list[Mapping[str, Any]]:
    for found in block.sections:
        if found.name == name:
            return list(found.items)
    return []


# -- goldens ----------------------------------------------------------------------------------

MEMORY_DOC = (
    "Compare #4 with @leaf_ctx and @other_ctx; who is @claim_15? Mornings: "
    "@prefer_morning_a3f2. On-call: @mem:00000000-0000-4000-a000-000000000016. And @nope."
)
NOTES_DOC = (
    "Read [[Project Plan]], then [[Alice Notes#Working Style]] and [[Release Checklist#Before]]; "
    "the [[project-plan|same plan]] again; [[Old Plan]] is archived; [[Missing Note]] is gone; "
    "[[meeting]], [[Nested Note]] and [[Long Note]] come last."
)
BROKEN_DOC = (
    "Only broken: @nope, #999, @claim_0 and @mallory_only_f099, [[Missing Note]], "
    "@memory:00000000-0000-4000-b000-000000000001."
)
BUDGET_DOC = "Leaf: @leaf_ctx and [[Project Plan]]; team @eng_team; see [[Missing Note]] and @nope."

GOLDENS: dict[str, dict[str, Any]] = {
    "memory.md": {
        "text": MEMORY_DOC,
        "attach": ["@root_claim_a009", "#1"],
        "pin": ["#17", "@root_claim_a009"],
        "query": "",
    },
    "notes.md": {"text": NOTES_DOC, "tiers": OFF},
    "entities-bob.md": {"text": "Ask @bob_ent.", "tiers": OFF},
    "entities-alice.md": {"text": "Ask @alice_ent and check @leaf_project.", "tiers": OFF},
    "empty.md": {"text": ""},
    "broken.md": {"text": BROKEN_DOC, "tiers": OFF},
    "tiny.md": {"text": "@root_ctx, [[Project Plan]] and @alice_ent", "budget": 40},
    "budget-260.json": {"text": BUDGET_DOC, "budget": 260},
}


@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_golden(app: App, name: str) -> None:
    options = dict(GOLDENS[name])
    block = build(app, options.pop("text"), **options)
    expected = (GOLDEN / name).read_text(encoding="utf-8")
    if name.endswith(".json"):
        assert block.to_json() == json.loads(expected)
        counter = o200k()
        for found in block.sections:
            gap = "\n" if found.name in (PINNED_NOTES, "Entity context", ENTITY_NOTES) else ""
            for item in found.items:
                assert item["tokens"] == counter.count(gap + item["markdown"])
    else:
        assert block.markdown == expected


def test_golden_warnings_and_budget_flags(app: App) -> None:
    memory = build(app, **GOLDENS["memory.md"])
    assert memory.warnings == (
        "@nope: No memory or context found with ID: nope",
        "#4: claim #4 is superseded by #1 @leaf_active_a001",
    )
    broken = build(app, **GOLDENS["broken.md"])
    assert [w.split(":")[0] for w in broken.warnings] == [
        "@nope",
        "#999",
        "@claim_0",
        "@mallory_only_f099",
        "[[Missing Note]]",
        "@memory",
    ]
    tiny = build(app, **GOLDENS["tiny.md"])
    assert tiny.over_budget and tiny.tokens > 40
    assert tiny.warnings[-1].startswith("the referenced claims alone take")
    assert {d["kind"] for d in tiny.dropped} == {"note", "entity", "claim", "document"}
    empty = build(app, **GOLDENS["empty.md"])
    assert empty.warnings == () and empty.dropped == () and not empty.over_budget


# -- labels, order, dedup -----------------------------------------------------------------------


def test_each_claim_once_under_its_highest_label(app: App) -> None:
    block = build(
        app,
        "@prefer_morning_a3f2 then #1 and @leaf_ctx",
        attach=["#1", "#9"],
        pin=["#9", "#10", "#42"],
        query="",
    )
    labels = {item["number"]: item["label"] for item in section(block, "User memory")}
    assert labels[42] == "REFERENCED @prefer_morning_a3f2"  # also globally pinned and --pin
    assert labels[1] == "REFERENCED #1"  # first reference wins over the context; also attached
    assert labels[9] == "ATTACHED"  # also --pin
    assert labels[10] == "CONV PINNED"
    numbers = [item["number"] for item in section(block, "User memory")]
    assert len(numbers) == len(set(numbers))
    order = [item["label"].split(" ")[0] for item in section(block, "User memory")]
    rank = ["REFERENCED", "ATTACHED", "GLOBAL", "CONV", "AUTO"]
    assert order == sorted(order, key=rank.index)


def test_a_claim_in_two_branches_of_a_context_tree_appears_once(app: App) -> None:
    # #7 is linked to leaf_ctx (under mid_ctx) and to other_ctx; root_ctx holds both.
    block = build(app, "@root_ctx", tiers=OFF)
    numbers = [item["number"] for item in section(block, "User memory") if item["ref"]]
    assert numbers == [10, 2, 8, 7, 1, 9]  # tests/data/README.md: newest first, 7 once
    # Reached by two references, a claim keeps the label of the first.
    block = build(app, "@other_ctx then @leaf_ctx", tiers=OFF)
    labels = [(i["number"], i["label"]) for i in section(block, "User memory") if i["ref"]]
    assert labels == [
        (10, "REFERENCED @other_ctx"),
        (7, "REFERENCED @other_ctx"),
        (2, "REFERENCED @leaf_ctx"),
        (1, "REFERENCED @leaf_ctx"),
    ]


def test_automatic_memories_skip_low_confidence_dead_and_shown_claims(app: App) -> None:
    block = build(app, "", query="")
    auto = [i for i in section(block, "User memory") if i["label"] == "AUTO"]
    assert auto and all(i["confidence"] >= 0.5 for i in auto)
    assert all(i["status"] in ("active", "contested") for i in auto)
    assert 2 not in {i["number"] for i in auto}  # contested, confidence 0.4
    assert 50 not in {i["number"] for i in auto}  # confidence 0.4
    scores = [(-i["score"], i["number"]) for i in auto]
    assert scores == sorted(scores)


def test_tiers_follow_the_configuration(app: App) -> None:
    only_core = TierSettings(Tier(("relationship",), 1), Tier(max=0), Tier(max=0), Tier(max=0))
    block = build(app, "", tiers=only_core)
    auto = [i for i in section(block, "User memory") if i["label"] == "AUTO"]
    # Newest relationship claim: #8 (03-04) before #15 (01-20).
    assert [(i["number"], i["tier"]) for i in auto] == [(8, "core")]
    # The active tier's window ends at the newest claim update (#13, 2024-03-11), not now:
    # goal/constraint claims #11 (02-15) and #16 (01-25) are older than 14 days; 30 keeps #11.
    active = TierSettings(Tier(max=0), TierSettings().active, Tier(max=0), Tier(max=0))
    assert [i["number"] for i in section(build(app, "", tiers=active), "User memory")] == [42]
    wider = TierSettings(
        Tier(max=0), replace(TierSettings().active, days=30.0), Tier(max=0), Tier(max=0)
    )
    numbers = [i["number"] for i in section(build(app, "", tiers=wider), "User memory")]
    assert numbers == [42, 11]


def test_a_non_live_claim_referenced_directly_says_its_status(app: App) -> None:
    block = build(app, "#3 and #5", tiers=OFF)
    assert claim_lines(block)[:2] == [
        "- [REFERENCED #3] [fact] [retracted] The Leaf service is written in Go",
        "- [REFERENCED #5] [fact] [merged] Leaf deploys happen twice a week",
    ]
    assert block.warnings == (
        "#3: claim #3 is retracted",
        "#5: claim #5 is merged into #7 @shared_claim_a007",
    )


def test_attach_and_pin_must_name_claims(app: App) -> None:
    with pytest.raises(UnresolvedReference, match="--attach @nope"):
        build(app, "", attach=["@nope"])
    with pytest.raises(UnresolvedReference, match="a note"):
        build(app, "", pin=["[[Project Plan]]"])
    with pytest.raises(UnresolvedReference, match="not a reference"):
        build(app, "", attach=["two words"])


def test_another_users_records_never_show(app: App) -> None:
    block = build(app, "@mallory_only_f099 #99", query="")
    assert "MALLORY" not in block.markdown


# -- notes and entities ------------------------------------------------------------------------


def test_a_note_over_4000_characters_is_cut_with_an_ellipsis(app: App) -> None:
    block = build(app, "[[Long Note]]", tiers=OFF)
    (item,) = section(block, PINNED_NOTES)
    assert item["truncated"] and item["chars"] <= 4000
    body = item["markdown"].split("\n", 1)[1].removesuffix("\n---\n")
    assert len(body) == item["chars"] and body.endswith("…")
    assert body.startswith("# Long Note\n\nThis note is long on purpose.")
    assert "title: Long Note" not in body  # front matter left out
    assert len((CONTEXT / "vault" / "long-note.md").read_text()) > 4000


def test_a_pinned_note_linked_from_an_entity_is_shown_once(app: App) -> None:
    # alice_ent.profile is [[Alice Notes]]: linked alone, it is an entity-linked note ...
    alone = build(app, "@alice_ent", tiers=OFF)
    assert [i["path"] for i in section(alone, ENTITY_NOTES)] == ["alice.md"]
    # ... pinned by the document, it is only a pinned note; the field still names it.
    both = build(app, "@alice_ent and [[Alice Notes]]", tiers=OFF)
    assert [i["path"] for i in section(both, PINNED_NOTES)] == ["alice.md"]
    assert section(both, ENTITY_NOTES) == []
    assert "  profile: [[Alice Notes]] [id:alice.md]" in lines(both)
    assert both.markdown.count("### [[Alice Notes]]") == 1


def test_an_entity_cycle_ends_and_each_entity_shows_once(app: App) -> None:
    # alice_ent.team → eng_team, eng_team.lead → alice_ent.
    block = build(app, "@alice_ent @eng_team @alice_ent", tiers=OFF)
    entities = section(block, "Entity context")
    assert [(e["friendly_id"], e["depth"], e["via"]) for e in entities] == [
        ("alice_ent", 0, None),
        ("eng_team", 0, None),
        ("bob_ent", 1, "@Alice.reports"),
        ("carol_ent", 1, "@Engineering.members"),
    ]


def test_at_most_5_pinned_notes_in_order_of_first_appearance(app: App) -> None:
    block = build(app, **GOLDENS["notes.md"])
    pinned = [i["path"] for i in section(block, PINNED_NOTES)]
    assert pinned == ["project-plan.md", "alice.md", "checklist.md", "old-plan.md", "meeting.md"]
    assert [(d["id"], d["reason"]) for d in block.dropped] == [
        ("sub/deep-note.md", "limit"),
        ("long-note.md", "limit"),
    ]
    # Every link, pinned or not, has its line in Referenced documents.
    documents = [i["ref"] for i in section(block, "Referenced documents")]
    assert len(documents) == 8 and "[[project-plan|same plan]]" not in documents


def test_entity_linked_notes_at_most_3_and_2000_characters(app: App, tmp_path: Path) -> None:
    block = build(app, "@alice_ent @leaf_project", tiers=OFF)
    notes = section(block, ENTITY_NOTES)
    assert [n["path"] for n in notes] == ["alice.md", "long-note.md", "old-plan.md"]
    assert all(n["chars"] <= 2000 for n in notes)
    assert notes[1]["truncated"] and notes[1]["entity"] == "leaf_project"
    assert notes[2]["archived"] and "(archived)" in notes[2]["markdown"].splitlines()[0]


# -- the budget ---------------------------------------------------------------------------------


def test_a_budget_so_small_that_only_referenced_claims_survive(app: App) -> None:
    block = build(app, "@root_ctx [[Project Plan]] @alice_ent", budget=1)
    assert block.over_budget
    assert all(line.startswith("- [REFERENCED") for line in claim_lines(block))
    assert [s.name for s in block.sections] == ["User memory"]
    assert len(claim_lines(block)) == 7  # root_ctx: 6 claims, alice_ent adds #15
    assert block.tokens == o200k().count(block.markdown)


def test_note_bodies_are_cut_before_being_dropped(app: App) -> None:
    full = build(app, "[[Project Plan]]", tiers=OFF)
    (note,) = section(full, PINNED_NOTES)
    cut = build(app, "[[Project Plan]]", tiers=OFF, budget=118)
    (item,) = section(cut, PINNED_NOTES)
    assert item["truncated"] and item["chars"] < note["chars"]
    assert item["markdown"].endswith("…\n---\n")
    assert 100 < cut.tokens <= 118
    # The global pin (#42) comes before the pinned note, the document line after it.
    assert "- [GLOBAL PINNED] [preference] I prefer to do deep work" in cut.markdown
    assert [(d["kind"], d["id"]) for d in cut.dropped] == [("document", "project-plan.md")]


def test_token_count_is_the_whole_block(app: App) -> None:
    block = build(app, NOTES_DOC + " " + MEMORY_DOC, budget=700)
    assert block.tokens == o200k().count(block.markdown) <= 700
    assert block.to_json()["markdown"] == block.markdown


DOCUMENTS = [
    "",
    MEMORY_DOC,
    NOTES_DOC,
    BUDGET_DOC,
    "@alice_ent @leaf_project [[Long Note]] @root_ctx @work_domain",
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(budget=st.integers(min_value=1, max_value=2500), which=st.integers(0, len(DOCUMENTS) - 1))
def test_never_over_budget_unless_referenced_claims_alone_are(
    app: App, budget: int, which: int
) -> None:
    block = build(app, DOCUMENTS[which], budget=budget)
    assert block.tokens == o200k().count(block.markdown)
    if block.over_budget:
        assert block.tokens > budget
        items = [i for s in block.sections for i in s.items]
        assert all(i.get("label", "").startswith("REFERENCED") for i in items)
        assert block.markdown == "".join(
            ["## User memory\n**User's explicitly referenced memories (ground truth):**\n"]
            + [i["markdown"] for i in items]
        )
    else:
        assert block.tokens <= budget


def test_same_document_and_store_give_the_same_bytes(app: App) -> None:
    first = build(app, NOTES_DOC + MEMORY_DOC, budget=900).to_json()
    again = build(app, NOTES_DOC + MEMORY_DOC, budget=900).to_json()
    assert json.dumps(first) == json.dumps(again)


# -- re-injection -------------------------------------------------------------------------------


def test_referenced_lines_give_back_multi_line_statements_whole(app: App) -> None:
    block = build(app, "#50 then #1 and [[Project Plan]]", tiers=OFF)
    assert referenced_lines(block.markdown) == [
        "- [REFERENCED #50] [procedure] Release steps for Leaf:\n  1. tag the build\n\n"
        "  2. announce it",
        "- [REFERENCED #1] [fact] The Leaf service uses PostgreSQL 16 "
        "(answers: Which database does Leaf use?)",
    ]
    assert referenced_lines(build(app, "", tiers=OFF).markdown) == []


# -- the semantic tier, with the real model -------------------------------------------------------


def test_semantic_tier_finds_by_meaning_and_keeps_near_duplicates_once(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    try:
        add_record(
            app.store,
            {
                "kind": "claim",
                "statement": "The Leaf service stores its data in PostgreSQL 16",
                "claim_type": "fact",
                "confidence": 0.6,
                "created_at": "2024-01-05T09:00:00Z",
                "updated_at": "2024-01-05T10:00:00Z",
            },
            user=USER,
        )
        app.keeper.index()
        block = (
            app.snapshot()
            .assembler()
            .build("Which database does the Leaf service use?", budget=4000)
        )
        auto = [i for i in section(block, "User memory") if i["label"] == "AUTO"]
        top = auto[0]
        assert top["number"] == 1 and top["tier"] == "semantic" and top["similarity"] > 0.5
        # The added claim says the same as #1 (cosine > 0.8): kept once, the better one.
        assert "stores its data" not in block.markdown
        # With a query about something else, #1 no longer leads.
        other = app.snapshot().assembler().build("", query="morning routine and sleep", budget=4000)
        first = next(i for i in section(other, "User memory") if i["label"] == "AUTO")
        assert first["number"] != 1
    finally:
        app.close()


def test_a_blocks_query_is_embedded_once_while_its_words_are_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The automatic memories' query is embedded once, on another thread, while the
    full-text index is searched (the embedding took ~20 ms of a ~70 ms warm block after an
    edit, before its search began); the ranking below the search uses the same vector."""
    from lsp_memory.store.fulltext import FullTextIndex

    app = make_app(tmp_path)
    try:
        app.keeper.index()
        side = app.vectors
        assert side is not None
        real = side.embedder
        events: list[tuple[str, float]] = []
        embedded: list[str] = []

        class Slow:
            model_id, dim = real.model_id, real.dim

            def embed(self, texts: Any, **options: Any) -> Any:
                events.append(("embed starts", time.perf_counter()))
                embedded.extend(texts)
                time.sleep(0.3)
                found = real.embed(texts, **options)
                events.append(("embed ends", time.perf_counter()))
                return found

        side.embedder = Slow()
        searched = FullTextIndex.search

        def search(index: FullTextIndex, *args: Any, **options: Any) -> Any:
            events.append(("text search", time.perf_counter()))
            return searched(index, *args, **options)

        monkeypatch.setattr(FullTextIndex, "search", search)
        query = "Which database does the Leaf service use?"
        block = app.snapshot().assembler().build("", query=query, budget=4000)
        auto = [i for i in section(block, "User memory") if i["label"] == "AUTO"]
        assert auto[0]["number"] == 1 and auto[0]["similarity"] > 0.5
        assert embedded == [query]
        at = dict(events)
        assert at["embed starts"] <= at["text search"] < at["embed ends"], events
    finally:
        app.close()


# -- what a block reads once per store change --------------------------------------------------


@pytest.mark.parametrize("through", ["this connection", "another connection"])
def test_a_block_built_again_shows_what_was_written_in_between(
    tmp_path: Path, through: str
) -> None:
    """Pinned claims and the typed and recent tiers are read once per store change: a claim
    written between two builds (here, or by another process) is in the second block."""
    fresh = make_app(tmp_path)
    text = "Plans for the week."
    before = build(fresh, text)
    statement = "I always keep Sunday evenings free for family"
    assert statement not in before.markdown
    with open_store(tmp_path / "store") as other:
        store = fresh.store if through == "this connection" else other
        Records(store, USER).add_claim(statement, claim_type="preference", pinned=True)
        Records(store, USER).add_claim("I started learning the cello", claim_type="goal")
    after = build(fresh, text)
    labels = {item["statement"]: item["label"] for item in section(after, MEMORY)}
    assert labels.get(statement) == "GLOBAL PINNED", after.markdown
    assert labels.get("I started learning the cello") == "AUTO"  # the newest claim
    fresh.close()
