"""``@`` completion's claims found in the full-text index are read in one query, with only
what a candidate shows (number, type, status, statement, possible questions), not as whole
records with their types and domains read by two more; the candidates are the same."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from lsp_memory.app import App
from lsp_memory.config import Config
from lsp_memory.services.editor.completion import typed_at
from lsp_memory.services.kernel import tokens
from lsp_memory.services.memory.interchange import import_records
from tests.conftest import KB, USER


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    config = replace(Config(), store=tmp_path / "store", cache=tmp_path / "cache", user=USER)
    opened = App(config)
    import_records(opened.store, KB.read_bytes(), user=USER, source="kb")
    opened.keeper.index(embed=False)
    yield opened
    opened.close()


def test_claim_hits_are_read_lean_and_shown_whole(app: App) -> None:
    completer = app.snapshot().completer()
    traced: list[str] = []
    app.store._db.set_trace_callback(traced.append)
    found, _ = completer.complete(typed_at("@leaf_a", 7))  # type: ignore[arg-type]
    app.store._db.set_trace_callback(None)
    claims = {c.label: c for c in found if c.kind == "claim"}
    leaf = app.store.claim_by_friendly_id(USER, "leaf_active_a001")
    assert leaf is not None and "@leaf_active_a001" in claims
    shown = claims["@leaf_active_a001"]
    assert shown.detail == f"#1 · fact · {tokens.count(leaf.statement)} tokens"
    assert shown.documentation == (
        "The Leaf service uses PostgreSQL 16\n\n`@leaf_active_a001` · `#1`"
        "\n\nAnswers:\n- Which database does Leaf use?"
    )
    assert shown.filter == "@leaf_active_a001 The Leaf service uses PostgreSQL 16"
    assert not shown.inactive
    # One query for the hits' claims: neither their domains nor their types read apart.
    assert not [sql for sql in traced if "SELECT claim, domain FROM claim_domains" in sql]
    assert not [sql for sql in traced if "SELECT claim, type FROM claim_types" in sql]
