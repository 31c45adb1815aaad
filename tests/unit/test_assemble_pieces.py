"""The context assembler's pure parts (docs/reference.md, The context block): claim lines,
the block layout, note bodies and summaries, token counting and cutting, budget filling, the
re-injection helper and the tier settings."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_memory.config import Config, Tier, TierSettings, apply_settings
from lsp_memory.model import Claim, ClaimStatus, Heading, Note
from lsp_memory.services.block import (
    DOCUMENTS,
    ENTITIES,
    MEMORY,
    PINNED_NOTES,
    Piece,
    claim_line,
    fill,
    note_markdown,
    referenced_lines,
    referenced_only,
    render,
    summary,
)
from lsp_memory.services.block.pieces import (
    P_AUTO,
    P_DOCUMENT,
    P_ENTITY,
    P_ENTITY_NOTE,
    P_LABELLED,
    P_PINNED_NOTE,
    P_REFERENCED,
)
from lsp_memory.services.kernel.tokens import o200k
from lsp_memory.text import cut


def claim(statement: str = "Uses Python 3.11", **changes: object) -> Claim:
    base = Claim(
        claim_id="00000000-0000-4000-a000-000000000001",
        user="ann",
        number=1,
        friendly_id="uses_python_a001",
        statement=statement,
        claim_types=("decision",),
        domains=(),
        status=ClaimStatus.ACTIVE,
        confidence=1.0,
        possible_questions=(),
        pinned=False,
        created_at="2024-01-01T00:00:00.000000Z",
        updated_at="2024-01-01T00:00:00.000000Z",
    )
    return replace(base, **changes)  # type: ignore[arg-type]


# -- claim lines ----------------------------------------------------------------------------


def test_claim_line_is_label_type_statement_and_answers() -> None:
    assert claim_line("ATTACHED", claim()) == "- [ATTACHED] [decision] Uses Python 3.11\n"
    asked = claim("Working on project Alpha", claim_types=("fact",))
    asked = replace(asked, possible_questions=("What project am I on?", " Who leads it?\n"))
    assert claim_line("REFERENCED @ssdva", asked) == (
        "- [REFERENCED @ssdva] [fact] Working on project Alpha "
        "(answers: What project am I on?; Who leads it?)\n"
    )
    assert claim_line("AUTO", claim(claim_types=())) == "- [AUTO] [fact] Uses Python 3.11\n"


def test_claim_line_keeps_every_line_of_a_statement_and_says_a_status_not_active() -> None:
    text = "Release steps:\r\n1. tag\n\n2. announce  \n"
    assert claim_line("REFERENCED #5", claim(text)) == (
        "- [REFERENCED #5] [decision] Release steps:\n  1. tag\n\n  2. announce\n"
    )
    superseded = claim(status=ClaimStatus.SUPERSEDED)
    assert claim_line("REFERENCED #1", superseded).startswith(
        "- [REFERENCED #1] [decision] [superseded] Uses"
    )
    contested = claim(status=ClaimStatus.CONTESTED)  # live, but disputed: the model should know
    assert claim_line("AUTO", contested) == "- [AUTO] [decision] [contested] Uses Python 3.11\n"


# -- the layout -------------------------------------------------------------------------------


def piece(section: str, priority: int, key: str, text: str, **changes: object) -> Piece:
    return replace(Piece(section, priority, "claim", key, text), **changes)  # type: ignore[arg-type]


def test_render_orders_sections_and_groups_and_leaves_out_empty_ones() -> None:
    pieces = [
        piece(DOCUMENTS, P_DOCUMENT, "d", "- [[Missing]]: Warning - Document not found\n"),
        piece(MEMORY, P_AUTO, "a", "- [AUTO] [fact] a\n", order=3),
        piece(ENTITIES, P_ENTITY, "e", "### @Bob (Person) [id:bob]  ← directly mentioned\n"),
        piece(MEMORY, P_REFERENCED, "r", "- [REFERENCED #1] [fact] r\n", referenced=True),
        piece(MEMORY, P_LABELLED, "p", "- [GLOBAL PINNED] [fact] p\n", order=2),
    ]
    assert render(pieces) == (
        "## User memory\n"
        "**User's explicitly referenced memories (ground truth):**\n"
        "- [REFERENCED #1] [fact] r\n"
        "\n"
        "**Other relevant memories:**\n"
        "- [GLOBAL PINNED] [fact] p\n"
        "- [AUTO] [fact] a\n"
        "\n"
        "## Entity context\n"
        "Entities mentioned or referenced in this conversation.\n"
        "Use [id:...] when assigning tasks or referencing entities.\n"
        "\n"
        "### @Bob (Person) [id:bob]  ← directly mentioned\n"
        "\n"
        "## Referenced documents\n"
        "- [[Missing]]: Warning - Document not found\n"
    )
    assert render([]) == ""
    only_other = render([pieces[1]])
    assert only_other == "## User memory\n**Other relevant memories:**\n- [AUTO] [fact] a\n"


# -- notes ------------------------------------------------------------------------------------

NOTE_TEXT = """---
title: Alpha
tags: [x]
---

# Alpha

Intro.

## Goals

- ship

### Detail

```
## not a heading
```

## Risks

- none
"""


def test_note_markdown_drops_front_matter_or_keeps_one_section() -> None:
    assert note_markdown(NOTE_TEXT).startswith("# Alpha\n\nIntro.")
    assert note_markdown(NOTE_TEXT).endswith("- none")
    goals = note_markdown(NOTE_TEXT, Heading("Goals", 2, 9))
    assert goals == "## Goals\n\n- ship\n\n### Detail\n\n```\n## not a heading\n```"
    assert note_markdown("no front matter\n\n") == "no front matter"


def note(body: str, content_hash: str, headings: tuple[Heading, ...] = ()) -> Note:
    return Note(
        vault="/v",
        path="n.md",
        title="Alpha",
        aliases=(),
        tags=(),
        archived=False,
        headings=headings,
        links=(),
        body=body,
        size=len(body),
        mtime_ns=0,
        content_hash=content_hash,
    )


def test_summary_is_the_first_short_paragraph_else_the_first_sentence() -> None:
    short = note(
        "Alpha\n\nGoals\n\nShip it by June.\nWith three pilots.", "h1", (Heading("Goals", 2, 3),)
    )
    assert summary(short) == "Ship it by June. With three pilots."
    long = note("First sentence here. " + "Then a great deal more. " * 20, "h2")
    assert summary(long) == "First sentence here."
    endless = note("word " * 100, "h3")
    assert len(summary(endless)) <= 200 and summary(endless).endswith("…")
    # Cached by content hash: the same hash gives the same summary.
    assert summary(note("Something else entirely.", "h1")) == "Ship it by June. With three pilots."


# -- tokens -----------------------------------------------------------------------------------


def test_o200k_counts_and_heads() -> None:
    counter = o200k()
    assert counter.name == "o200k_base"
    assert counter.count("hello world") == 2
    assert counter.count("") == 0
    assert counter.count("<|endoftext|>") > 1  # special tokens are plain text here
    text = "Ünïcode ☕ and emoji 🎉 " * 50
    for limit in (1, 5, 17, 100):
        head = counter.head(text, limit)
        assert text.startswith(head) and counter.count(head) <= limit
    assert counter.head("short", 10) == "short"


def test_cut_keeps_at_most_the_limit_and_ends_with_an_ellipsis() -> None:
    assert cut("short", 10) == "short"
    text = "word " * 2000
    assert len(cut(text, 4000)) <= 4000 and cut(text, 4000).endswith("word…")
    assert cut("x" * 50, 10) == "x" * 9 + "…"


# -- filling the budget -----------------------------------------------------------------------


def note_piece(key: str, body: str, priority: int = P_PINNED_NOTE, **changes: object) -> Piece:
    head = f"### [[{key}]] [id:{key}.md]\n"
    made = Piece(
        PINNED_NOTES,
        priority,
        "note",
        key,
        head + body + "\n---\n",
        {"path": f"{key}.md"},
        head=head,
        body=body,
        tail="---\n",
    )
    return replace(made, **changes)  # type: ignore[arg-type]


def test_fill_takes_by_priority_cuts_notes_and_never_drops_referenced() -> None:
    counter = o200k()
    referenced = piece(MEMORY, P_REFERENCED, "r", "- [REFERENCED #1] [fact] r\n", referenced=True)
    long_note = note_piece("Plan", "A sentence about the plan. " * 60)
    auto = piece(MEMORY, P_AUTO, "a", "- [AUTO] [fact] an automatic memory\n", order=5)
    filled = fill([auto, long_note, referenced], 120, counter)
    assert filled.tokens == counter.count(filled.markdown) <= 120
    kept = {p.key: p for p in filled.pieces}
    assert set(kept) == {"r", "Plan"}  # the note, cut, takes the room before AUTO
    assert kept["Plan"].text.endswith("…\n---\n") and kept["Plan"].data["truncated"]
    assert [(p.key, reason) for p, reason, _ in filled.dropped] == [("a", "budget")]
    tiny = fill([auto, long_note, referenced], 1, counter)
    assert tiny.over_budget and [p.key for p in tiny.pieces] == ["r"]


def test_fill_drops_a_piece_whose_requirement_was_dropped() -> None:
    counter = o200k()
    entity = piece(ENTITIES, P_ENTITY, "entity:a", "### @A (P) [id:a]\n" + "  f: v\n" * 80)
    linked = note_piece("A notes", "short", P_ENTITY_NOTE, requires="entity:a")
    filled = fill([entity, linked], 100, counter)
    assert filled.pieces == ()
    assert [p.key for p, _, _ in filled.dropped] == ["entity:a", "A notes"]


texts = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=300
)


@settings(max_examples=150, deadline=None)
@given(
    budget=st.integers(1, 600),
    referenced=st.lists(texts, max_size=3),
    others=st.lists(st.tuples(st.sampled_from([P_LABELLED, P_AUTO, P_DOCUMENT]), texts)),
    notes=st.lists(texts, max_size=3),
)
def test_fill_never_exceeds_the_budget_unless_referenced_claims_alone_do(
    budget: int,
    referenced: list[str],
    others: list[tuple[int, str]],
    notes: list[str],
) -> None:
    counter = o200k()
    pieces = [
        piece(MEMORY, P_REFERENCED, f"r{i}", f"- [REFERENCED #1] [fact] {t}\n", referenced=True)
        for i, t in enumerate(referenced)
    ]
    sections = {P_LABELLED: MEMORY, P_AUTO: MEMORY, P_DOCUMENT: DOCUMENTS}
    pieces += [
        piece(sections[p], p, f"o{i}", f"- [AUTO] {t}\n", order=i)
        for i, (p, t) in enumerate(others)
    ]
    pieces += [note_piece(f"n{i}", t, order=i) for i, t in enumerate(notes)]
    filled = fill(pieces, budget, counter)
    assert filled.tokens == counter.count(filled.markdown)
    if filled.tokens > budget:
        assert all(p.referenced for p in filled.pieces)
        assert len(filled.pieces) == len(referenced)
    kept = {p.key for p in filled.pieces} | {p.key for p, _, _ in filled.dropped}
    assert kept == {p.key for p in pieces}  # every piece is kept or listed as dropped
    assert {f"r{i}" for i in range(len(referenced))} <= {p.key for p in filled.pieces}


# -- re-injection -----------------------------------------------------------------------------


def test_referenced_lines_read_only_the_referenced_group() -> None:
    block = render(
        [
            piece(
                MEMORY,
                P_REFERENCED,
                "r1",
                claim_line("REFERENCED #5", claim("Steps:\n1. tag\n\n2. announce")),
                referenced=True,
            ),
            piece(MEMORY, P_REFERENCED, "r2", "- [REFERENCED @x] [fact] x\n", referenced=True),
            piece(MEMORY, P_AUTO, "a", "- [AUTO] [fact] a\n"),
            note_piece("N", "- [REFERENCED @fake] [fact] inside a note"),
        ]
    )
    found = referenced_lines(block)
    assert found == [
        "- [REFERENCED #5] [decision] Steps:\n  1. tag\n\n  2. announce",
        "- [REFERENCED @x] [fact] x",
    ]
    assert referenced_only(block) == found[0] + "\n" + found[1] + "\n"
    assert referenced_lines("## User memory\n**Other relevant memories:**\n- [AUTO] a\n") == []
    # A caller may have put text before the block.
    assert referenced_lines("Distilled: …\n\n" + block) == found


# -- settings ---------------------------------------------------------------------------------


def test_tier_settings_override_only_what_they_name() -> None:
    config, warnings = apply_settings(
        Config(),
        {"tiers": {"core": {"max": 3}, "active": {"types": ["goal"], "days": 7}}},
        base=Path(),
        origin="test",
    )
    assert warnings == []
    assert config.tiers.core == Tier(("identity", "preference", "relationship"), 3)
    assert config.tiers.active == Tier(("goal",), 15, 7.0)
    assert config.tiers.semantic == TierSettings().semantic


def test_bad_tier_settings_warn_and_keep_the_defaults() -> None:
    bad: object
    for bad in (
        {"core": {"max": -1}},
        {"active": {"days": 0}},
        {"semantic": {"types": ["x"]}},
        {"someday": {"max": 1}},
        {"core": {"types": []}},
        {"recent": 5},
        [1, 2],
    ):
        config, warnings = apply_settings(Config(), {"tiers": bad}, base=Path(), origin="test")
        assert config.tiers == TierSettings()
        assert len(warnings) == 1 and "tiers" in warnings[0] and "default" in warnings[0]
