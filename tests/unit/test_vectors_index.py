"""The in-memory exact vector index: filters, ranking, ties, updates and growth, checked
against a brute-force reference (no model needed)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_memory.store.vectors import FloatVector, VectorIndex, mean_pool, normalise

DIM = 8


def unit(*values: float) -> FloatVector:
    vector = np.zeros(DIM, dtype=np.float32)
    vector[: len(values)] = values
    return normalise(vector)


def axis(i: int) -> FloatVector:
    vector = np.zeros(DIM, dtype=np.float32)
    vector[i] = 1.0
    return vector


@pytest.fixture
def index() -> VectorIndex:
    built = VectorIndex(DIM, capacity=2)
    built.upsert("a1", "ann", "claim", "active", unit(1, 0))
    built.upsert("a2", "ann", "claim", "superseded", unit(0.9, 0.1))
    built.upsert("a3", "ann", "note", "active", unit(0.8, 0.2))
    built.upsert("a4", "ann", "entity", "active", unit(0, 1))
    built.upsert("m1", "mallory", "claim", "active", unit(1, 0))
    return built


def ids(results: list[tuple[str, float]]) -> list[str]:
    return [doc_id for doc_id, _ in results]


def test_results_are_best_first_with_cosine_scores(index: VectorIndex) -> None:
    results = index.search(unit(1, 0), k=3, user="ann")
    assert ids(results) == ["a1", "a2", "a3"]
    assert results[0][1] == pytest.approx(1.0)
    assert results[1][1] == pytest.approx(float(unit(0.9, 0.1) @ unit(1, 0)))
    assert all(isinstance(score, float) for _, score in results)


def test_another_users_rows_never_appear(index: VectorIndex) -> None:
    assert "m1" not in ids(index.search(unit(1, 0), k=10, user="ann"))
    assert ids(index.search(unit(1, 0), k=10, user="mallory")) == ["m1"]
    assert index.search(unit(1, 0), k=10, user="nobody") == []


def test_kind_and_status_filters_apply_before_ranking(index: VectorIndex) -> None:
    query = unit(1, 0)
    assert ids(index.search(query, k=1, user="ann", kinds={"note", "entity"})) == ["a3"]
    assert ids(index.search(query, k=10, user="ann", statuses=["active"])) == ["a1", "a3", "a4"]
    assert ids(index.search(query, k=10, user="ann", kinds=["claim"], statuses=["active"])) == [
        "a1"
    ]
    assert index.search(query, k=10, user="ann", kinds=["context"]) == []
    assert index.search(query, k=10, user="ann", statuses=[]) == []
    assert index.search(query, k=0, user="ann") == []


def test_remove_upsert_and_set_status(index: VectorIndex) -> None:
    assert index.remove("a1") is True
    assert index.remove("a1") is False
    assert len(index) == 4 and "a1" not in index
    assert ids(index.search(unit(1, 0), k=1, user="ann")) == ["a2"]
    index.upsert("a4", "ann", "entity", "active", unit(1, 0))  # replaced, not added
    assert len(index) == 4
    assert ids(index.search(unit(1, 0), k=1, user="ann")) == ["a4"]
    assert index.set_status("a4", "retracted") is True
    assert index.set_status("zz", "retracted") is False
    assert ids(index.search(unit(1, 0), k=1, user="ann", statuses=["active"])) == ["a3"]
    assert ids(index.search(unit(1, 0), k=1, user="mallory")) == ["m1"]  # moved by the swap


def test_growth_keeps_every_row(index: VectorIndex) -> None:
    rng = np.random.default_rng(3)
    extra = {f"g{i:04d}": rng.standard_normal(DIM).astype(np.float32) for i in range(1000)}
    for doc_id, vector in extra.items():
        index.upsert(doc_id, "gus", "claim", "active", vector)
    assert len(index) == 1005
    assert index.capacity >= 1005 and index.capacity & (index.capacity - 1) == 0
    for doc_id, vector in list(extra.items())[::97]:
        assert ids(index.search(vector, k=1, user="gus")) == [doc_id]
    assert index.vectors(["g0000"])["g0000"] == pytest.approx(normalise(extra["g0000"]))


def test_ties_are_broken_by_doc_id_whatever_the_insertion_order() -> None:
    names = [f"d{i:02d}" for i in range(40)]
    for seed in range(5):
        index = VectorIndex(DIM, capacity=4)
        for name in np.random.default_rng(seed).permutation(names):
            index.upsert(str(name), "ann", "claim", "active", axis(0))
        index.upsert("best", "ann", "claim", "active", unit(1, 0.0001))
        for gone in ("d03", "d17"):
            index.remove(gone)
        results = index.search(unit(1, 0.0001), k=5, user="ann")
        assert ids(results) == ["best", "d00", "d01", "d02", "d04"]


def test_similarity_and_vectors_cover_the_given_ids_only(index: VectorIndex) -> None:
    scores = index.similarity(["a4", "a1", "missing", "a1"], unit(1, 0))
    assert scores.keys() == {"a1", "a4"}
    assert scores["a1"] == pytest.approx(1.0)
    assert scores["a4"] == pytest.approx(0.0, abs=1e-6)
    assert index.similarity([], unit(1, 0)) == {}
    stored = index.vectors(["a2", "missing"])
    assert stored.keys() == {"a2"}
    assert stored["a2"] == pytest.approx(unit(0.9, 0.1))
    stored["a2"][:] = 0  # a copy: the index is untouched
    assert index.vectors(["a2"])["a2"] == pytest.approx(unit(0.9, 0.1))


def test_vectors_of_the_wrong_length_are_refused(index: VectorIndex) -> None:
    with pytest.raises(ValueError, match="8 numbers"):
        index.upsert("bad", "ann", "claim", "active", np.ones(3))
    with pytest.raises(ValueError, match="8 numbers"):
        index.search(np.ones(9), k=1, user="ann")


def test_mean_pool_ignores_padding_and_normalises() -> None:
    hidden = np.array([[[3, 0], [0, 4], [100, 100]]], dtype=np.float32)
    mask = np.array([[1, 1, 0]], dtype=np.int64)
    np.testing.assert_allclose(mean_pool(hidden, mask), [[0.6, 0.8]], atol=1e-6)


Operation = tuple[str, int, int, int, int]  # (op, doc, user, kind, status)
Reference = dict[str, tuple[str, str, str, FloatVector]]  # doc id → (user, kind, status, vector)
KINDS = ["claim", "context", "entity", "note"]


def operation_lists(docs: int, max_size: int) -> st.SearchStrategy[list[Operation]]:
    """Upserts (half of the operations), removals and status changes of ``docs`` ids."""
    return st.lists(
        st.tuples(
            st.sampled_from(["upsert", "upsert", "remove", "status"]),
            st.integers(0, docs),
            st.integers(0, 2),
            st.integers(0, 3),
            st.integers(0, 2),
        ),
        max_size=max_size,
    )


def apply_operations(
    index: VectorIndex, reference: Reference, ops: list[Operation], rng: np.random.Generator
) -> None:
    """Apply ``ops`` to ``index`` and to the brute-force ``reference`` alike."""
    for op, doc, user, kind, status in ops:
        doc_id = f"doc{doc}"
        if op == "upsert":
            # Few distinct vectors, so that ties are common.
            vector = normalise(rng.integers(-1, 2, DIM).astype(np.float32) + 1e-3)
            index.upsert(doc_id, f"u{user}", KINDS[kind], f"s{status}", vector)
            reference[doc_id] = (f"u{user}", KINDS[kind], f"s{status}", vector)
        elif op == "remove":
            assert index.remove(doc_id) is (reference.pop(doc_id, None) is not None)
        else:
            known = doc_id in reference
            assert index.set_status(doc_id, f"s{status}") is known
            if known:
                row = reference[doc_id]
                reference[doc_id] = (row[0], row[1], f"s{status}", row[3])


operations = operation_lists(30, 120)


@settings(max_examples=60, deadline=None)
@given(operations, st.integers(0, 2**32 - 1), st.integers(1, 12))
def test_search_matches_brute_force(ops: list[Operation], seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    index = VectorIndex(DIM, capacity=1)
    reference: Reference = {}
    apply_operations(index, reference, ops, rng)
    assert len(index) == len(reference)
    query = normalise(rng.standard_normal(DIM).astype(np.float32))
    wanted_kinds = {"claim", "note"}
    expected = sorted(
        (
            (-float(np.float32(vector @ query)), doc_id)
            for doc_id, (user, kind, status, vector) in reference.items()
            if user == "u0" and kind in wanted_kinds and status != "s2"
        ),
    )[:k]
    got = index.search(query, k=k, user="u0", kinds=wanted_kinds, statuses={"s0", "s1"})
    assert ids(got) == [doc_id for _, doc_id in expected]
    for (doc_id, score), (negative, _) in zip(got, expected, strict=True):
        assert score == pytest.approx(-negative, abs=1e-5), doc_id


def test_fill_gives_the_same_answers_as_upserts_and_keeps_room_for_more() -> None:
    rows = [
        ("a1", "ann", "claim", "active"),
        ("a2", "ann", "claim", "superseded"),
        ("a3", "ann", "note", "active"),
        ("m1", "mallory", "claim", "active"),
    ]
    vectors = [unit(1, 0), unit(0.9, 0.1), unit(0.8, 0.2), unit(1, 0)]
    upserted = VectorIndex(DIM)
    for row, vector in zip(rows, vectors, strict=True):
        upserted.upsert(*row, vector)
    matrix = np.zeros((len(rows) + 1, DIM), dtype=np.float32)
    matrix[: len(rows)] = np.stack(vectors) * 3.0  # not unit: fill normalises
    filled = VectorIndex(DIM)
    filled.fill(rows, matrix)
    query = unit(1, 0.05)
    for options in ({}, {"kinds": {"claim"}}, {"statuses": {"active"}}):
        got = filled.search(query, k=5, user="ann", **options)
        want = upserted.search(query, k=5, user="ann", **options)
        assert ids(got) == ids(want)
        assert [score for _, score in got] == pytest.approx([score for _, score in want])
    assert ids(filled.search(query, k=5, user="mallory")) == ["m1"]
    filled.upsert("a5", "ann", "claim", "active", unit(1, 0.05))  # the spare row
    filled.upsert("a6", "ann", "claim", "active", unit(0, 1))  # grows past it
    assert ids(filled.search(query, k=1, user="ann")) == ["a5"]
    assert len(filled) == 6
    with pytest.raises(ValueError, match="empty index"):
        filled.fill(rows, matrix)
