"""The budget's filling order (docs/reference.md, The budget), one test per adjacent pair of
steps: the budget is lowered a token at a time from one that holds everything, and at the
first budget that cannot hold both, the earlier step's item is the one still there.

Before, a long pinned note was kept and the user's attached and globally pinned claims were
dropped; a reference that named nothing was said nowhere in the block, and a link to a
missing note was the first line to go."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from lsp_memory.app import App
from lsp_memory.services.block import ContextBlock
from tests.store.test_assemble import OFF, app, build  # noqa: F401

Item = Mapping[str, Any]
Test = Callable[[str, Item], bool]


def unresolved(section: str, item: Item) -> bool:
    return bool(item["kind"] == "unresolved")


def label(name: str) -> Test:
    return lambda section, item: item["kind"] == "claim" and item["label"] == name


def note(section_name: str, path: str) -> Test:
    return lambda section, item: (
        section == section_name and item["kind"] == "note" and item["path"] == path
    )


def entity(name: str) -> Test:
    return lambda section, item: item["kind"] == "entity" and item["name"] == name


def document(path: str) -> Test:
    return lambda section, item: item["kind"] == "document" and item["path"] == path


PAIRS: dict[str, tuple[dict[str, Any], Test, Test]] = {
    "not-found line before attached claim": (
        {"text": "See @nope.", "attach": ["#9"], "tiers": OFF},
        unresolved,
        label("ATTACHED"),
    ),
    "attached claim before pinned note": (
        {"text": "Read [[Project Plan]].", "attach": ["#9"], "tiers": OFF},
        label("ATTACHED"),
        note("Notes pinned by user", "project-plan.md"),
    ),
    "global pin before pinned note": (
        {"text": "Read [[Project Plan]].", "tiers": OFF},
        label("GLOBAL PINNED"),
        note("Notes pinned by user", "project-plan.md"),
    ),
    "pinned note before mentioned entity": (
        {"text": "Read [[Project Plan]] with @bob_ent.", "tiers": OFF},
        note("Notes pinned by user", "project-plan.md"),
        entity("Bob"),
    ),
    "mentioned entity before deeper entity": (
        {"text": "Ask @eng_team.", "tiers": OFF},
        entity("Engineering"),
        entity("Alice"),
    ),
    "deeper entity before entity-linked note": (
        {"text": "Ask @eng_team.", "tiers": OFF},
        entity("Alice"),
        note("Notes linked via entity fields", "alice.md"),
    ),
    "entity-linked note before automatic memory": (
        {"text": "Ask @alice_ent."},
        note("Notes linked via entity fields", "alice.md"),
        label("AUTO"),
    ),
    "automatic memory before document line": (
        {"text": "Read [[meeting]]."},
        label("AUTO"),
        document("meeting.md"),
    ),
}


def holds(block: ContextBlock, test: Test) -> bool:
    return any(test(section.name, item) for section in block.sections for item in section.items)


@pytest.mark.parametrize("pair", list(PAIRS))
def test_the_earlier_step_is_kept(app: App, pair: str) -> None:  # noqa: F811
    options, earlier, later = PAIRS[pair]
    options = dict(options)
    text = options.pop("text")
    full = build(app, text, budget=4000, **options)
    assert holds(full, earlier) and holds(full, later), full.markdown
    for budget in range(full.tokens, 0, -1):
        block = build(app, text, budget=budget, **options)
        if not (holds(block, earlier) and holds(block, later)):
            break
    assert holds(block, earlier) and not holds(block, later), (budget, block.markdown)


def test_a_link_to_nothing_outlasts_the_automatic_memories(app: App) -> None:  # noqa: F811
    """The not-found line of a link is taken with the referenced claims: an LLM told
    nothing of it would guess what the note said."""
    text = "See [[Missing Note]] and @nope."
    full = build(app, text, budget=4000)
    assert holds(full, label("AUTO"))
    small = build(app, text, budget=60)
    assert not holds(small, label("AUTO"))
    assert "- [[Missing Note]]: Warning - Document not found" in small.markdown
    assert "- [NOT FOUND @nope] No memory or context found with ID: nope" in small.markdown
