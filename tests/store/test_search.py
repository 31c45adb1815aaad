"""Hybrid search and the embedding queue, end to end through ``App`` with the real local
model: filters, modes, fusion signals, near-duplicates, the queue surviving a restart, and
vectors cached by content hash."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from lsp_memory.app import App
from lsp_memory.config import Config
from lsp_memory.ids import now
from lsp_memory.model import ClaimStatus
from lsp_memory.services.memory.interchange import add_record, import_records
from lsp_memory.services.retrieval.documents import epoch
from lsp_memory.services.retrieval.search import HybridSearch
from lsp_memory.store.vectors import Embedder
from tests.conftest import KB, USER

LIVE = ("active", "contested")


def make_app(tmp_path: Path, **changes: object) -> App:
    config = replace(
        Config(),
        store=tmp_path / "store",
        cache=tmp_path / "cache",
        user=USER,
        vaults=(Path(__file__).parents[1] / "data" / "notes",),
        **changes,  # type: ignore[arg-type]
    )
    return App(config)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    opened = make_app(tmp_path)
    import_records(opened.store, KB.read_bytes(), user=USER, source="kb")
    opened.keeper.index()
    yield opened
    opened.close()


def titles(hits: Sequence[object]) -> list[str]:
    return [h.title for h in hits]  # type: ignore[attr-defined]


def test_index_covers_claims_contexts_entities_and_notes(app: App) -> None:
    assert app.vectors is not None
    assert len(app.vectors.index) == len(app.text_index)
    kinds = {h.kind for h in app.hybrid_search().search("Alice", user=USER, k=50)}
    assert kinds >= {"claim", "entity", "note"}


def test_hybrid_finds_by_meaning_and_by_words(app: App) -> None:
    by_meaning = app.hybrid_search().search(
        "which database does the service use", user=USER, kinds={"claim"}, statuses=LIVE, k=3
    )
    assert by_meaning[0].title == "The Leaf service uses PostgreSQL 16"
    assert by_meaning[0].similarity > 0.3 and by_meaning[0].bm25 > 0
    dense = app.hybrid_search().search(
        "relational datastore", user=USER, kinds={"claim"}, k=3, mode="dense"
    )
    assert any("PostgreSQL" in t for t in titles(dense))
    assert (
        app.hybrid_search().search("relational datastore", user=USER, kinds={"claim"}, mode="bm25")
        == []
    )


def test_notes_are_found_by_meaning_for_every_user(app: App, tmp_path: Path) -> None:
    """Notes belong to the vaults (user ""), seen by every user, by words and by meaning:
    the dense half used to keep only the asking user's rows, so a note was found only when
    its words matched. Both from the vectors just embedded and from the vector file a new
    process reads."""
    question = "when is the beta release scheduled"  # the note says "Beta in March"
    for opened in (app, make_app(tmp_path)):
        for user in (USER, "mallory", "nobody"):
            dense = opened.hybrid_search().search(
                question, user=user, kinds={"note"}, k=3, mode="dense"
            )
            assert "Project Plan" in titles(dense), (user, titles(dense))
        if opened is not app:
            opened.close()


def test_filters_never_leak_and_keep_statuses(app: App) -> None:
    for mode in ("hybrid", "bm25", "dense"):
        hits = app.hybrid_search().search(
            "Leaf service", user=USER, kinds={"claim"}, k=50, mode=mode
        )
        assert hits and all(h.id.startswith("claim:") for h in hits)
        mallory = app.store.claims("mallory")
        assert not {f"claim:{c.claim_id}" for c in mallory} & {h.id for h in hits}
        live = app.hybrid_search().search(
            "Leaf service", user=USER, kinds={"claim"}, k=50, statuses=LIVE, mode=mode
        )
        assert {h.status for h in live} <= set(LIVE)
    assert app.hybrid_search().search("Leaf service", user="nobody", kinds={"claim"}) == []


def test_hits_carry_signals(app: App) -> None:
    claim = app.store.claim_by_number(USER, 9)
    assert claim is not None
    month_later = epoch(claim.updated_at) + 30 * 86_400
    [hit] = app.hybrid_search().search(
        "paper notebook", user=USER, kinds={"claim"}, k=1, now=month_later
    )
    assert hit.key == "root_claim_a009" and hit.confidence == claim.confidence == 0.8
    assert hit.recency == pytest.approx(0.5)  # one half-life later
    assert hit.score == pytest.approx(1.0)  # the best of min-max fused scores
    assert hit.bm25 > 0 and 0 < hit.similarity <= 1
    floor = app.hybrid_search().search(
        "Running hurts", user=USER, kinds={"claim"}, min_confidence=0.99
    )
    assert all(h.confidence >= 0.99 for h in floor)


def test_near_duplicates_kept_once_on_request(app: App) -> None:
    add_record(
        app.store, {"kind": "claim", "statement": "The Leaf service uses PostgreSQL 16!"}, user=USER
    )
    app.keeper.index()
    both = app.hybrid_search().search("PostgreSQL 16", user=USER, kinds={"claim"}, statuses=LIVE)
    once = app.hybrid_search().search(
        "PostgreSQL 16", user=USER, kinds={"claim"}, statuses=LIVE, diverse=True
    )
    near = [t for t in titles(both) if t.startswith("The Leaf service uses PostgreSQL 16")]
    assert len(near) == 2
    assert (
        len([t for t in titles(once) if t.startswith("The Leaf service uses PostgreSQL 16")]) == 1
    )


def test_without_vectors_hybrid_is_bm25(app: App) -> None:
    text_only = HybridSearch(app.text_index)
    assert not text_only.semantic
    hits = text_only.search("PostgreSQL", user=USER, kinds={"claim"})
    assert hits and all(h.similarity == 0.0 for h in hits)
    assert text_only.search("PostgreSQL", user=USER, mode="dense") == []


def test_a_new_claim_is_searchable_by_text_at_once_and_semantically_after_the_queue(
    app: App,
) -> None:
    add_record(app.store, {"kind": "claim", "statement": "Kombucha brewing is my hobby"}, user=USER)
    report = app.keeper.index(embed=False)
    assert report.pending == 1
    assert titles(app.hybrid_search().search("kombucha", user=USER, mode="bm25")) == [
        "Kombucha brewing is my hobby"
    ]
    assert "Kombucha brewing is my hobby" not in titles(
        app.hybrid_search().search("fermented tea drinks", user=USER, mode="dense", k=5)
    )
    assert app.vectors is not None and app.vectors.drain() == 1
    assert "Kombucha brewing is my hobby" in titles(
        app.hybrid_search().search("fermented tea drinks", user=USER, mode="dense", k=5)
    )


def test_the_queue_survives_a_restart(tmp_path: Path) -> None:
    first = make_app(tmp_path)
    import_records(first.store, KB.read_bytes(), user=USER, source="kb")
    report = first.keeper.index(embed=False)
    assert report.pending == report.text.upserted > 0
    first.close()
    second = make_app(tmp_path)
    assert second.vectors is not None
    assert second.vectors.catalog.counts() == (0, report.pending)
    assert second.vectors.drain() == report.pending
    second.close()
    third = make_app(tmp_path)
    assert third.vectors is not None and len(third.vectors.index) == report.pending
    third.close()


@pytest.mark.parametrize("scan_from", [0, 10**9])
def test_vectors_load_from_the_cache_and_a_lost_one_leaves_the_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scan_from: int
) -> None:
    """Rebuilt (no vector file) by one pass over the cache (large memories) or by lookups
    (small ones): the same index; a document whose vector left the cache leaves the
    catalog."""
    from lsp_memory.services.retrieval import embedding

    monkeypatch.setattr(embedding, "_SCAN_FROM", scan_from)
    first = make_app(tmp_path)
    import_records(first.store, KB.read_bytes(), user=USER, source="kb")
    first.keeper.index()
    side = first.vectors
    assert side is not None
    expected = side.index.search(side.embedder.embed(["sleep"])[0], k=5, user=USER)
    lost = side.catalog.embedded()[0]
    first.close()
    (first.index_folder / embedding.VECTOR_FILE).unlink()  # else its copy of the vector serves
    with sqlite3.connect(tmp_path / "cache" / "vectors.sqlite3") as db:
        db.execute("DELETE FROM vectors WHERE hash = ?", (lost[4],))
    second = make_app(tmp_path)
    again = second.vectors
    assert again is not None
    assert lost[0] not in again.index
    assert lost[0] not in {entry[0] for entry in again.catalog.embedded()}
    kept = [hit for hit in expected if hit[0] != lost[0]]
    found = again.index.search(again.embedder.embed(["sleep"])[0], k=5, user=USER)
    assert [doc for doc, _ in found][: len(kept)] == [doc for doc, _ in kept]
    assert [score for _, score in found][: len(kept)] == pytest.approx([s for _, s in kept])
    second.close()


class CountingEmbedder:
    """The real model, counting the texts it is asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.texts: list[str] = []
        self.model_id = inner.model_id
        self.dim = inner.dim

    def embed(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        self.texts += list(texts)
        return self.inner.embed(texts, batch_size=batch_size)


def test_unchanged_text_is_never_embedded_twice(app: App) -> None:
    side = app.vectors
    assert side is not None
    counting = CountingEmbedder(side.embedder)  # type: ignore[arg-type]
    side.embedder = counting
    claim = app.store.claim_by_number(USER, 1)
    assert claim is not None
    app.store.set_status(USER, claim.claim_id, ClaimStatus.RETRACTED, now())
    app.keeper.index()
    assert counting.texts == []  # only its status changed
    hits = app.hybrid_search().search("PostgreSQL 16", user=USER, statuses=LIVE, mode="dense", k=20)
    assert f"claim:{claim.claim_id}" not in {h.id for h in hits}
    counting.texts.clear()  # the query itself was embedded
    full = app.keeper.index(full=True)  # a rebuild re-reads everything, the cache still holds it
    assert full.text.full and counting.texts == []
    add_record(app.store, {"kind": "claim", "statement": "A brand new sentence"}, user=USER)
    app.keeper.index()
    assert counting.texts == ["A brand new sentence"]


def test_a_bad_model_setting_warns_and_text_search_keeps_working(tmp_path: Path) -> None:
    broken = make_app(tmp_path, model=tmp_path / "no-such-model")
    import_records(broken.store, KB.read_bytes(), user=USER, source="kb")
    report = broken.keeper.index()
    assert broken.vectors is None
    assert any("model" in w for w in report.warnings)
    assert titles(
        broken.hybrid_search().search("PostgreSQL 16", user=USER, kinds={"claim"}, k=1)
    ) == ["The Leaf service uses PostgreSQL 16"]
    broken.close()


def test_a_damaged_index_folder_is_rebuilt_and_the_store_untouched(app: App) -> None:
    from tests.conftest import snapshot

    folder = app.text_index.folder
    app.close()
    before = snapshot(app.config.store)
    for file in folder.iterdir():
        if file.is_file():
            file.write_bytes(b"\x00garbage")
    again = make_app(app.config.store.parent)
    assert again.text_index.rebuilt
    assert again.vectors is not None
    counting = CountingEmbedder(again.vectors.embedder)  # type: ignore[arg-type]
    again.vectors.embedder = counting
    report = again.keeper.index()
    assert report.text.full and counting.texts == []  # vectors come back from the cache
    hits = again.hybrid_search().search("PostgreSQL 16", user=USER, kinds={"claim"}, k=1)
    assert titles(hits) == ["The Leaf service uses PostgreSQL 16"]
    again.close()
    assert snapshot(app.config.store) == before


def test_a_new_process_rewrites_only_the_notes_that_changed(tmp_path: Path) -> None:
    """A vault's first scan in a process compares each note's content with what the index
    holds: unchanged notes are not written again, changed ones are, deleted ones leave."""
    vault = tmp_path / "vault"
    vault.mkdir()
    for name in ("a", "b", "c"):
        (vault / f"{name}.md").write_text(f"# {name.upper()}\n\nabout {name}\n", encoding="utf-8")
    config = replace(
        Config(), store=tmp_path / "store", cache=tmp_path / "cache", user=USER, vaults=(vault,)
    )
    first = App(config)
    assert first.keeper.index(embed=False).text.upserted == 3
    first.close()
    (vault / "b.md").write_text("# B\n\nabout zebras now\n", encoding="utf-8")
    (vault / "c.md").unlink()
    second = App(config)
    report = second.keeper.index(embed=False).text
    assert (report.upserted, len(report.removed)) == (1, 1)
    found = second.hybrid_search().search("zebras", user=USER, mode="bm25")
    assert [hit.title for hit in found] == ["B"]
    assert second.text_index.ids("note") == {
        f"note:{note.key}" for note in second.keeper.vaults[0].notes.values()
    }
    second.close()


def test_a_query_asked_again_is_not_embedded_again(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The App's searches keep the last queries' vectors (``search.QueryVectors``): the same
    words asked again — another scope, a retry — skip the model and find what a search
    embedding them anew finds."""
    assert app.vectors is not None
    embedder = app.vectors.embedder
    asked: list[list[str]] = []
    embed = embedder.embed

    def counted(texts: Sequence[str], **options: int) -> np.ndarray:
        asked.append(list(texts))
        return embed(texts, **options)

    monkeypatch.setattr(embedder, "embed", counted)
    question, moment = "which database does the service use", 1.8e9
    first = app.hybrid_search().search(question, user=USER, k=3, now=moment)
    claims = app.hybrid_search().search(
        question, user=USER, kinds={"claim"}, statuses=LIVE, k=3, now=moment
    )
    app.hybrid_search().search("paper notebook", user=USER, k=3, now=moment)
    assert asked == [[question], ["paper notebook"]]
    anew = HybridSearch(app.text_index, app.vectors.index, embedder)
    assert first == anew.search(question, user=USER, k=3, now=moment)
    assert claims == anew.search(
        question, user=USER, kinds={"claim"}, statuses=LIVE, k=3, now=moment
    )
    assert claims[0].title == "The Leaf service uses PostgreSQL 16"


def test_a_failed_query_embedding_is_raised_and_not_kept(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lsp_memory.store.vectors import ModelError

    assert app.vectors is not None
    embedder = app.vectors.embedder
    embed = embedder.embed

    def failing(texts: Sequence[str], **options: int) -> np.ndarray:
        raise ModelError("embeddings: the embedding helper exited")

    monkeypatch.setattr(embedder, "embed", failing)
    with pytest.raises(ModelError, match="helper exited"):
        app.hybrid_search().search("paper notebook", user=USER, k=3)
    monkeypatch.setattr(embedder, "embed", embed)
    assert app.hybrid_search().search("paper notebook", user=USER, k=3)


def test_a_kept_query_vector_holds_a_digest_of_its_text_not_the_text() -> None:
    """A context block's query is its whole document: each edit of a long one is kept by a
    16-byte digest, so 256 kept edits of a 200 KB document do not hold 51 MB of text; the
    same text (a lone surrogate too) gets its kept vector without a second embedding."""
    from lsp_memory.services.retrieval.search import QueryVectors

    asked: list[str] = []

    class Counted:
        model_id, dim = "m", 4

        def embed(self, texts: Sequence[str], **options: int) -> np.ndarray:
            asked.extend(texts)
            return np.ones((len(texts), 4), dtype=np.float32)

    kept = QueryVectors()
    long = "word " * 40_000 + "\ud800"
    first = kept.start(Counted(), long)()
    again = kept.start(Counted(), long)()
    assert asked == [long] and again is first
    keys = list(kept._kept)
    assert len(keys) == 1 and all(len(part) <= 16 for part in keys[0])
