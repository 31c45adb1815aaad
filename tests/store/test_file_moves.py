"""The link rewrites of file renames (services/editor/moves.py) over a vault on ``tmp_path``:
the cases the client tests leave out — a move that makes another note's links need its
path, a move into an excluded folder or out of the vault, two vaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_memory.notes import Vault
from lsp_memory.services.editor.moves import MovePlanner
from lsp_memory.services.editor.rename import Move, Plan
from lsp_memory.services.kernel.resolver import Resolver
from lsp_memory.store.sqlite import Store
from tests.conftest import USER


def vault_with(root: Path, notes: dict[str, str], excludes: tuple[str, ...] = ()) -> Vault:
    for name, text in notes.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    vault = Vault(root, excludes=excludes)
    vault.scan()
    return vault


def texts(plan: Plan | None) -> dict[str, str]:
    """Each edited file's text once the plan's edits are applied, by vault-relative name."""
    assert plan is not None
    found: dict[Path, list[tuple[int, int, str]]] = {}
    for edit in plan.edits:
        assert edit.place.document.path is not None
        found.setdefault(edit.place.document.path, []).append(
            (edit.place.start, edit.place.end, edit.new_text)
        )
    result = {}
    for path, edits in found.items():
        text = path.read_text(encoding="utf-8")
        for start, end, new in sorted(edits, reverse=True):
            text = text[:start] + new + text[end:]
        result[path.name] = text
    return result


@pytest.fixture
def planner(store: Store, tmp_path: Path) -> MovePlanner:
    vault = vault_with(
        tmp_path / "v",
        {
            "a/b/c/Plan.md": "The deep plan.\n",
            "x/Plan.md": "The other plan.\n",
            "links.md": "[[Plan]] and [[a/b/c/Plan]] and [[x/Plan#Goals]]\n",
        },
        excludes=("private/**",),
    )
    return MovePlanner(Resolver(store, USER, [vault]))


def test_a_note_moved_above_another_of_its_name_leaves_that_ones_links_naming_it(
    planner: MovePlanner, tmp_path: Path
) -> None:
    # [[Plan]] names x/Plan.md (the shorter path); a/b/c/Plan.md moving to the top would
    # win the name, so [[Plan]] gets the path of the note it meant. The moved one's link by
    # path gets its new path, ./Plan: the bare name is two notes' (an ambiguous link).
    root = tmp_path / "v"
    plan = planner.plan([Move(root / "a/b/c/Plan.md", root / "Plan.md")], [])
    assert texts(plan) == {"links.md": "[[x/Plan]] and [[./Plan]] and [[x/Plan#Goals]]\n"}


def test_a_note_moved_out_of_the_vault_or_into_an_excluded_folder_keeps_its_links(
    planner: MovePlanner, tmp_path: Path
) -> None:
    root = tmp_path / "v"
    for destination in (tmp_path / "elsewhere" / "Plan.md", root / "private" / "Plan.md"):
        plan = planner.plan([Move(root / "a/b/c/Plan.md", destination)], [])
        assert plan is not None and plan.edits == ()


def test_links_across_vaults_follow_a_move_in_the_other(store: Store, tmp_path: Path) -> None:
    first = vault_with(tmp_path / "one", {"Home.md": "See [[Away]] and [[far/Away]].\n"})
    second = vault_with(tmp_path / "two", {"far/Away.md": "Away.\n"})
    planner = MovePlanner(Resolver(store, USER, [first, second]))
    plan = planner.plan([Move(tmp_path / "two/far", tmp_path / "two/near")], [])
    assert texts(plan) == {"Home.md": "See [[Away]] and [[near/Away]].\n"}
