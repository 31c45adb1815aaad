"""Rules of the code's shape that import-linter cannot see.

- The language server's features reach the store, the vaults and the cache folders only
  through a request's snapshot and the services it builds — never through ``session.app`` or
  by calling the store themselves.
- The other doors, the command line (``cli/``) and the MCP server (``mcp/``), hold the ``App``
  (they are the composition root's callers: ``app.snapshot()``, ``app.records()``,
  ``app.keeper``, ``app.warnings``, ``app.config`` are theirs) but never reach past it: no
  ``app.store``, ``app.vaults``, ``app.text_index``, ``app.index_folder`` (nor a snapshot's
  ``.store``), not even to hand one to a service — a read or write they need is a method of
  the ``App`` or of a service a ``Snapshot`` builds.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[2] / "lsp_memory"
FEATURES = sorted((PACKAGE / "lsp" / "features").glob("*.py"))
DOORS = sorted([*(PACKAGE / "cli").rglob("*.py"), *(PACKAGE / "mcp").rglob("*.py")])
REACHES = ("store", "vaults", "text_index", "index_folder")
"""What the App holds below the services: the store, the vaults, the indexes' folders."""


def _is_config(node: ast.expr) -> bool:
    """``config`` or ``….config``: the settings, whose ``store`` and ``vaults`` are paths."""
    if isinstance(node, ast.Name):
        return node.id == "config"
    return isinstance(node, ast.Attribute) and node.attr == "config"


def _offences(source: str, *, door: bool = False) -> list[str]:
    """What ``source`` reaches that it may not: ``.app``, a call or attribute on the store,
    the vaults or an index folder (``.store.claims``) and, in a door (``door``), the store,
    the vaults or an index folder themselves (``app.store`` handed to a function)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        if node.attr == "app":
            found.append(f"line {node.lineno}: .app")
        if isinstance(node.value, ast.Attribute) and node.value.attr in REACHES:
            found.append(f"line {node.lineno}: .{node.value.attr}.{node.attr}")
        if door and node.attr in REACHES and not _is_config(node.value):
            found.append(f"line {node.lineno}: .{node.attr}")
    return found


@pytest.mark.parametrize("module", FEATURES, ids=lambda path: path.name)
def test_features_use_snapshots_not_the_app_or_the_store(module: Path) -> None:
    assert _offences(module.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    "module", DOORS, ids=lambda path: str(path.relative_to(PACKAGE)).replace("\\", "/")
)
def test_cli_and_mcp_reach_the_store_only_through_app_and_snapshot(module: Path) -> None:
    assert _offences(module.read_text(encoding="utf-8"), door=True) == []


def test_the_doors_are_all_checked() -> None:
    """Every module of both doors is read (a move that empties a glob fails here)."""
    names = {str(path.relative_to(PACKAGE)).replace("\\", "/") for path in DOORS}
    assert {"cli/__init__.py", "cli/claims.py", "cli/search.py", "mcp/server.py"} <= names
    assert not (PACKAGE / "cli.py").exists()


def test_the_rule_sees_what_it_forbids() -> None:
    found = _offences("session.app.store.claims(user)\nreads.store.last_change()\n")
    assert sorted(found) == ["line 1: .app", "line 1: .store.claims", "line 2: .store.last_change"]


DOOR_SOURCE = """\
found = app.store.claim_by_uuid(app.config.user, claim_id)
summary = import_records(app.store, data, user=app.config.user, source=source)
rows = [hit_record(hit, reads.store, reads.user) for hit in hits]
roots = app.snapshot().store.context_tree(user)
notes = app.vaults[0].view()
folder = app.index_folder
path = app.config.store, config.vaults
app.snapshot().resolver().resolve(reference)
app.keeper.index(full=True)
app.warnings.clear()
"""


def test_the_door_rule_sees_what_it_forbids() -> None:
    """In a door, the store itself is out of reach, not only calls on it; the App's own
    methods, its keeper, warnings and settings are not."""
    assert sorted(_offences(DOOR_SOURCE, door=True)) == [
        "line 1: .store",
        "line 1: .store.claim_by_uuid",
        "line 2: .store",
        "line 3: .store",
        "line 4: .store",
        "line 4: .store.context_tree",
        "line 5: .vaults",
        "line 6: .index_folder",
    ]
    # The features' rule sees only the calls.
    assert sorted(_offences(DOOR_SOURCE)) == [
        "line 1: .store.claim_by_uuid",
        "line 4: .store.context_tree",
    ]
