"""The embedding model loaded ahead in a thread (``App.load_model_ahead``), as the command
line does for search, build-context and claim add: the vector side takes that model, and a
load that fails warns as a load on demand does."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

from lsp_memory.app import App
from lsp_memory.config import Config
from lsp_memory.services.memory.interchange import import_records
from lsp_memory.services.retrieval.search import SCOPES, SHOWN_STATUSES
from tests.conftest import KB, USER


def loading() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "lsp-memory model"]


def search(app: App, query: str, **options: object) -> list[dict[str, object]]:
    return app.search_records(query, kinds=SCOPES["all"], statuses=SHOWN_STATUSES, k=1, **options)


def make_app(tmp_path: Path, **settings: object) -> App:
    config = replace(
        Config(), store=tmp_path / "store", cache=tmp_path / "cache", user=USER, vaults=()
    )
    return App(replace(config, **settings))  # type: ignore[arg-type]


def test_search_by_meaning_uses_the_model_loaded_ahead(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    import_records(app.store, KB.read_bytes(), user=USER, source="kb")
    app.load_model_ahead()
    assert loading(), "the model loads in its own thread"
    app.refresh_indexes()
    hits = search(app, "Which database does Leaf use?", mode="dense")
    assert hits[0]["title"] == "The Leaf service uses PostgreSQL 16"
    assert not loading() and app.warnings == []
    app.load_model_ahead()  # the side is open: nothing more to load
    assert not loading()
    app.close()


def test_a_model_that_fails_to_load_ahead_warns_and_text_search_works(tmp_path: Path) -> None:
    app = make_app(tmp_path, model=tmp_path / "no-such-model")
    import_records(app.store, KB.read_bytes(), user=USER, source="kb")
    app.load_model_ahead()
    app.refresh_indexes()
    assert app.vectors is None
    assert any("is not a folder" in w and "searching by text only" in w for w in app.warnings)
    hits = search(app, "PostgreSQL")
    assert hits[0]["title"] == "The Leaf service uses PostgreSQL 16"
    app.close()
