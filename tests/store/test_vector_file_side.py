"""The vector file of a store through ``App`` with the real model: written by the process that
drains the queue, searched in place by the next process (changes since it was written as an
overlay), rebuilt from the vector cache with one warning when stale, foreign or truncated,
and written anew after a drain once enough changed."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from lsp_memory.app import App
from lsp_memory.config import Config
from lsp_memory.ids import now
from lsp_memory.model import ClaimStatus
from lsp_memory.services.memory.interchange import add_record, import_records
from lsp_memory.services.retrieval import embedding
from lsp_memory.services.retrieval.embedding import VECTOR_FILE
from lsp_memory.store.vectorfile import VectorFile
from tests.conftest import KB, USER

ROOT = Path(__file__).parents[2]
NOTES = ROOT / "tests" / "data" / "notes"
QUERY = "fermented tea drinks and sleeping well"


def make_app(tmp_path: Path) -> App:
    vault = tmp_path / "notes"
    if not vault.exists():
        shutil.copytree(NOTES, vault)
    config = replace(
        Config(), store=tmp_path / "store", cache=tmp_path / "cache", user=USER, vaults=(vault,)
    )
    return App(config)


def dense(app: App, k: int = 8) -> list[tuple[str, float]]:
    side = app.vectors
    assert side is not None
    return side.index.search(side.embedder.embed([QUERY])[0], k=k, user=USER)


def indexed(tmp_path: Path) -> App:
    app = make_app(tmp_path)
    import_records(app.store, KB.read_bytes(), user=USER, source="kb")
    app.keeper.index()
    return app


def test_the_draining_process_writes_the_file_and_a_second_process_searches_it(
    tmp_path: Path,
) -> None:
    first = indexed(tmp_path)
    side = first.vectors
    assert side is not None and side.index.base is not None and side.index.changes == 0
    path = first.index_folder / VECTOR_FILE
    assert side.index.base.count == len(side.index) > 0
    add_record(first.store, {"kind": "claim", "statement": "I brew kombucha at home"}, user=USER)
    first.keeper.index()
    assert side.index.changes == 1  # in the overlay: one claim is no reason to rewrite
    written = path.stat()
    expected = dense(first)
    assert any(hit[0].startswith("claim:") for hit in expected)
    script = (
        "import json, sys\n"
        "from dataclasses import replace\n"
        "from pathlib import Path\n"
        "from lsp_memory.app import App\n"
        "from lsp_memory.config import Config\n"
        "from tests.store.test_vector_file_side import dense\n"
        "base = Path(sys.argv[1])\n"
        "app = App(replace(Config(), store=base / 'store', cache=base / 'cache',"
        " user=sys.argv[2], vaults=(base / 'notes',)))\n"
        "hits = dense(app)\n"
        "side = app.vectors\n"
        "print(json.dumps({'hits': hits, 'mapped': side.index.base is not None,"
        " 'overlay': side.index.changes, 'warnings': app.warnings}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path), USER],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    seen = json.loads(done.stdout)
    assert seen["mapped"] and seen["overlay"] == 1 and seen["warnings"] == []
    assert [doc for doc, _ in seen["hits"]] == [doc for doc, _ in expected]
    assert [score for _, score in seen["hits"]] == pytest.approx([s for _, s in expected])
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == (written.st_ino, written.st_mtime_ns)
    first.close()


def test_changes_since_the_file_reach_a_new_process_as_an_overlay(tmp_path: Path) -> None:
    first = indexed(tmp_path)
    side = first.vectors
    assert side is not None
    claim = next(row for row in side.catalog.embedded() if row[0].startswith("claim:"))
    first.store.set_status(USER, claim[0].split(":", 1)[1], ClaimStatus.RETRACTED, now())
    notes = {row[0] for row in side.catalog.embedded() if row[0].startswith("note:")}
    gone = next(p for p in (tmp_path / "notes").rglob("*.md"))
    add_record(first.store, {"kind": "claim", "statement": "I brew kombucha at home"}, user=USER)
    gone.unlink()
    first.keeper.index()
    left = {row[0] for row in side.catalog.embedded() if row[0].startswith("note:")}
    assert len(left) == len(notes) - 1  # the note's file was deleted
    (removed,) = notes - left
    # The new claim in the overlay, the note's row hidden; the status changed in place.
    assert removed not in side.index and side.index.changes == 2
    vector = side.embedder.embed([QUERY])[0]
    expected = {
        statuses: side.index.search(vector, k=50, user=USER, statuses=statuses)
        for statuses in (None, ("active",), ("retracted",))
    }
    first.close()
    second = make_app(tmp_path)
    again = second.vectors
    assert again is not None and again.index.base is not None and second.warnings == []
    # The retracted claim read from the queue too: its file row hidden, a row in the overlay.
    assert again.index.changes == 4
    for statuses, hits in expected.items():
        got = again.index.search(vector, k=50, user=USER, statuses=statuses)
        assert [doc for doc, _ in got] == [doc for doc, _ in hits]
        assert [score for _, score in got] == pytest.approx([s for _, s in hits])
    assert claim[0] in {doc for doc, _ in expected[("retracted",)]}
    assert len(again.index) == len(again.catalog.embedded()) and removed not in again.index
    second.close()


def _stale(path: Path, tmp_path: Path) -> None:
    queue = path.parent / "queue.sqlite3"
    with sqlite3.connect(queue) as db:
        db.execute("UPDATE meta SET value = 'another' WHERE key = 'token'")


SPOILS: dict[str, Callable[[Path, Path], object]] = {
    "truncated": lambda path, _: os.truncate(path, path.stat().st_size // 2),
    "foreign": lambda path, _: path.write_bytes(b"not a vector file at all" * 100),
    "stale": _stale,
}


@pytest.mark.parametrize("spoil", SPOILS)
def test_an_unusable_file_is_rebuilt_with_one_warning(tmp_path: Path, spoil: str) -> None:
    first = indexed(tmp_path)
    expected = dense(first)
    path = first.index_folder / VECTOR_FILE
    first.close()
    SPOILS[spoil](path, tmp_path)
    second = make_app(tmp_path)
    assert dense(second) == expected
    said = [w for w in second.warnings if "vector file" in w]
    assert len(said) == 1 and "\n" not in said[0] and said[0].endswith("rebuilt"), said
    assert second.vectors is not None and second.vectors.index.base is not None
    second.close()
    VectorFile(path, second.vectors.embedder.model_id, second.vectors.embedder.dim).close()
    third = make_app(tmp_path)
    assert dense(third) == expected and third.warnings == []
    third.close()


def test_a_drain_writes_the_file_anew_once_enough_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = indexed(tmp_path)
    side = first.vectors
    assert side is not None and side.index.base is not None
    before = side.index.base.stamp.generation
    monkeypatch.setattr(embedding, "REWRITE_AT_LEAST", 0)
    add_record(first.store, {"kind": "claim", "statement": "I brew kombucha at home"}, user=USER)
    first.keeper.index()
    assert side.index.changes == 0 and side.index.base.stamp.generation > before
    expected = dense(first)
    first.close()
    second = make_app(tmp_path)
    assert second.vectors is not None and second.vectors.index.changes == 0
    assert dense(second) == expected
    second.close()


def test_a_full_rebuild_of_unchanged_texts_writes_the_file_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``index --full`` finds every vector in the cache (nothing to embed) but stamps every
    document anew: the file is written again, so the next process has no overlay to read."""
    first = indexed(tmp_path)
    side = first.vectors
    assert side is not None and side.index.base is not None
    before = side.index.base.stamp.generation
    monkeypatch.setattr(embedding, "REWRITE_AT_LEAST", 0)
    report = first.keeper.index(full=True)
    assert report.embedded == 0
    assert side.index.base is not None and side.index.base.stamp.generation > before
    first.close()
    second = make_app(tmp_path)
    assert second.vectors is not None and second.vectors.index.changes == 0
    second.close()


def test_a_file_written_after_another_process_embedded_keeps_what_it_embedded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes drain the same store's queue (a server and an `index`): the one that
    writes the vector file last never saw what the other embedded after it loaded, so its
    file must not claim to hold it — the next process reads it from the queue."""
    from lsp_memory.store.fulltext import TextDoc

    monkeypatch.setattr(embedding, "REWRITE_AT_LEAST", 0)
    monkeypatch.setattr(embedding, "REWRITE_SHARE", 0.0)  # every drain writes the file
    first = indexed(tmp_path)
    second = make_app(tmp_path)
    one, other = first.vectors, second.vectors
    assert one is not None and other is not None
    kombucha = TextDoc("claim:kombucha", "claim", USER, "active", "I brew kombucha at home", "")
    swim = TextDoc("claim:swim", "claim", USER, "active", "I swim in the lake each morning", "")
    other.enqueue([kombucha])
    assert other.drain() == 1  # the second process embeds it and writes the file
    one.enqueue([swim])
    assert one.drain() == 1  # the first writes the file last, from an index without it
    assert "claim:kombucha" not in one.index
    first.close()
    second.close()
    third = make_app(tmp_path)
    assert third.vectors is not None and third.warnings == []
    assert {"claim:kombucha", "claim:swim"} <= {row[0] for row in third.vectors.catalog.embedded()}
    assert "claim:kombucha" in third.vectors.index and "claim:swim" in third.vectors.index
    third.close()
