"""Rules of the code's shape that import-linter cannot see: the language server's features
reach the store, the vaults and the cache folders only through a request's snapshot and the
services it builds — never through ``session.app`` or by calling the store themselves."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

FEATURES = Path(__file__).parents[2] / "lsp_memory" / "lsp" / "features"


def _offences(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "app":
            found.append(f"line {node.lineno}: .app")
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr in ("store", "vaults", "text_index", "index_folder")
        ):
            found.append(f"line {node.lineno}: .{node.value.attr}.{node.attr}")
    return found


@pytest.mark.parametrize("module", sorted(FEATURES.glob("*.py")), ids=lambda path: path.name)
def test_features_use_snapshots_not_the_app_or_the_store(module: Path) -> None:
    assert _offences(module.read_text(encoding="utf-8")) == []


def test_the_rule_sees_what_it_forbids() -> None:
    found = _offences("session.app.store.claims(user)\nreads.store.last_change()\n")
    assert sorted(found) == ["line 1: .app", "line 1: .store.claims", "line 2: .store.last_change"]
