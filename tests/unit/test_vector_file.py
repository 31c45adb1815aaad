"""The vector file (``store.vectorfile``) and the index searching it in place: written whole
and read back equal, refused when truncated, foreign or not trusted, kept by a reader while a
new one is renamed in, and searched through the int8 scan with float32 rescoring exactly as
the in-memory index searches (a brute-force float32 rule; no model needed)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_memory.store import vectorfile
from lsp_memory.store.vectorfile import Stamp, Unusable, VectorFile
from lsp_memory.store.vectors import VectorIndex, normalise
from tests.unit.test_vectors_index import (
    KINDS,
    Operation,
    Reference,
    apply_operations,
    operation_lists,
)

DIM = 8
STAMP = Stamp("model-a", DIM, "token-1", 7)


def write_random(path: Path, count: int, seed: int, dim: int = DIM) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = normalise(rng.standard_normal((count, dim)).astype(np.float32))
    codes = np.stack(
        [rng.integers(0, 2, count), rng.integers(0, 4, count), rng.integers(0, 3, count)], axis=1
    ).astype(np.int32)
    vectorfile.write(
        path,
        Stamp("model-a", dim, "token-1", 7),
        ids=[f"doc:{n:05d}/é" for n in range(count)],
        names=(["ann", "bob"], KINDS, ["active", "superseded", "retracted"]),
        codes=codes,
        blocks=(rows[start : start + 1000] for start in range(0, count, 1000)),
    )
    return rows


def test_a_written_file_reads_back_equal(tmp_path: Path) -> None:
    path = tmp_path / "vectors.lmvf"
    rows = write_random(path, 2500, seed=1)
    assert [p.name for p in tmp_path.iterdir()] == ["vectors.lmvf"]  # no temporary file left
    read = VectorFile(path, "model-a", DIM)
    assert read.stamp == STAMP and read.count == 2500
    assert read.ids[:2] == ["doc:00000/é", "doc:00001/é"] and len(read.ids) == 2500
    assert read.ids_of([7, 2]) == ["doc:00007/é", "doc:00002/é"]
    assert [read.row_of(f"doc:{n:05d}/é") for n in (0, 1234, 2499)] == [0, 1234, 2499]
    assert read.row_of("doc:99999/é") is None and read.row_of("") is None
    assert read.names == (["ann", "bob"], KINDS, ["active", "superseded", "retracted"])
    every = np.arange(2500, dtype=np.intp)
    assert np.array_equal(read.exact(every), rows)  # bit for bit, read in blocks
    few = np.array([2499, 3, 1000], dtype=np.intp)
    assert np.array_equal(read.exact(few), rows[few])  # row by row, in the order asked
    error = np.abs(read.quant * read.scales[:, None] - rows)
    assert (error <= read.scales[:, None] / 2 + 1e-7).all()


def test_a_rows_id_asked_again_is_answered_without_reading_the_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm server's context block asks the rows of the same search candidates after each
    edit of a prompt: each was ~17 id reads of bisection every time."""
    path = tmp_path / "vectors.lmvf"
    write_random(path, 2500, seed=2)
    read = VectorFile(path, "model-a", DIM)
    reads: list[int] = []
    id_bytes = read._id_bytes

    def counted(row: int) -> bytes:
        reads.append(row)
        return id_bytes(row)

    monkeypatch.setattr(read, "_id_bytes", counted)
    wanted = [f"doc:{n:05d}/é" for n in (5, 700, 2400)] + ["doc:nope"]
    assert [read.row_of(doc_id) for doc_id in wanted] == [5, 700, 2400, None]
    first = len(reads)
    assert first > 0
    assert [read.row_of(doc_id) for doc_id in wanted] == [5, 700, 2400, None]
    assert len(reads) == first  # all four kept, the missing one too
    monkeypatch.setattr(vectorfile, "ROWS_KEPT", 2)  # a full set is emptied, never wrong
    assert [read.row_of(f"doc:{n:05d}/é") for n in range(0, 2500, 97)] == list(range(0, 2500, 97))


def test_an_empty_index_saves_and_searches(tmp_path: Path) -> None:
    index = VectorIndex(DIM)
    assert index.save(tmp_path / "v", STAMP)
    assert len(index) == 0 and index.search(np.ones(DIM), k=3, user="ann") == []
    index.upsert("a", "ann", "claim", "active", np.ones(DIM))
    assert [d for d, _ in index.search(np.ones(DIM), k=3, user="ann")] == ["a"]


@pytest.mark.parametrize(
    ("spoil", "said"),
    [
        (lambda p: os.truncate(p, p.stat().st_size - 1), "truncated"),
        (lambda p: p.write_bytes(p.read_bytes()[:100]), "truncated"),
        (lambda p: p.write_bytes(b"SQLite format 3\0" + bytes(500)), "not a vector file"),
        (lambda p: p.write_bytes(b"LMVF0001" + (5).to_bytes(8, "little") + b"{oops"), "header"),
        (lambda p: p.chmod(0o666), "may be written by other users"),
    ],
)
def test_a_damaged_or_distrusted_file_is_refused_in_one_line(
    tmp_path: Path, spoil: object, said: str
) -> None:
    path = tmp_path / "vectors.lmvf"
    write_random(path, 50, seed=2)
    spoil(path)  # type: ignore[operator]
    with pytest.raises(Unusable, match=said) as refused:
        VectorFile(path, "model-a", DIM)
    assert "\n" not in str(refused.value)


def test_a_file_of_another_model_a_link_or_none_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "vectors.lmvf"
    write_random(path, 50, seed=3)
    with pytest.raises(Unusable, match="another model"):
        VectorFile(path, "model-b", DIM)
    with pytest.raises(Unusable, match="another model"):
        VectorFile(path, "model-a", DIM + 1)
    (tmp_path / "link").symlink_to(path)
    with pytest.raises(Unusable, match="symbolic link"):
        VectorFile(tmp_path / "link", "model-a", DIM)
    with pytest.raises(FileNotFoundError):
        VectorFile(tmp_path / "none", "model-a", DIM)


def test_a_reader_keeps_its_file_while_a_new_one_is_renamed_in(tmp_path: Path) -> None:
    path = tmp_path / "vectors.lmvf"
    old_rows = write_random(path, 300, seed=4)
    old = VectorFile(path, "model-a", DIM)
    new_rows = write_random(path, 500, seed=5)
    assert np.array_equal(old.exact(np.arange(300, dtype=np.intp)), old_rows)
    assert old.count == 300 and len(old.ids) == 300
    new = VectorFile(path, "model-a", DIM)
    assert new.count == 500 and np.array_equal(new.exact(np.arange(500, dtype=np.intp)), new_rows)


def unit_rows(rng: np.random.Generator, count: int, dim: int) -> np.ndarray:
    # Clustered, as sentence vectors are: near-ties are common, the int8 scan is tested.
    centres = rng.standard_normal((max(1, count // 50), dim))
    noise = rng.standard_normal((count, dim)) * 0.35
    return normalise((centres[rng.integers(0, len(centres), count)] + noise).astype(np.float32))


def test_the_int8_scan_with_rescoring_gives_the_exact_float32_top_k(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    dim, count = 384, 20_000
    rows = unit_rows(rng, count, dim)
    exact = VectorIndex(dim)
    mapped = VectorIndex(dim)
    for n, row in enumerate(rows):
        for index in (exact, mapped):
            index.upsert(f"d{n:05d}", "ann" if n % 10 else "bob", KINDS[n % 4], "active", row)
    assert mapped.save(tmp_path / "v", Stamp("m", dim, "t", 1)) and mapped.changes == 0
    assert mapped.base is not None and mapped.base.count == count
    for _ in range(40):
        query = rows[rng.integers(0, count)] + rng.standard_normal(dim).astype(np.float32) * 0.2
        for options in ({"user": "ann"}, {"user": "bob"}, {"user": "ann", "kinds": ["note"]}):
            for k in (1, 10, 30):
                assert mapped.search(query, k=k, **options) == exact.search(query, k=k, **options)


operations = operation_lists(700, 80)


@settings(max_examples=40, deadline=None)
@given(operations, st.integers(0, 2**32 - 1), st.integers(1, 12), st.booleans())
def test_a_mapped_index_with_an_overlay_matches_brute_force(
    tmp_path_factory: pytest.TempPathFactory,
    ops: list[Operation],
    seed: int,
    k: int,
    filtered: bool,
) -> None:
    """A vector file of 600 documents (the scan and rescoring at work: over 64 rows match),
    then upserts, removals and status changes in the overlay; search, similarity and
    vectors agree with a brute-force float32 rule."""
    rng = np.random.default_rng(seed)
    reference: Reference = {}
    index = VectorIndex(DIM, capacity=1)
    for n, row in enumerate(unit_rows(rng, 600, DIM)):
        reference[f"doc{n}"] = (f"u{n % 2}", KINDS[n % 4], f"s{n % 2}", row)
        index.upsert(f"doc{n}", *reference[f"doc{n}"][:3], row)
    assert index.save(tmp_path_factory.mktemp("v") / "v.lmvf", Stamp("m", DIM, "t", 1))
    apply_operations(index, reference, ops, rng)
    assert len(index) == len(reference)
    query = normalise(rng.standard_normal(DIM).astype(np.float32))
    kinds, statuses = ({"claim", "note"}, {"s0", "s1"}) if filtered else (None, None)
    expected = sorted(
        (-float(np.float32(vector @ query)), doc_id)
        for doc_id, (user, kind, status, vector) in reference.items()
        if user == "u0" and (kinds is None or (kind in kinds and status != "s2"))
    )[:k]
    got = index.search(query, k=k, user="u0", kinds=kinds, statuses=statuses)
    assert [doc_id for doc_id, _ in got] == [doc_id for _, doc_id in expected]
    for (doc_id, score), (negative, _) in zip(got, expected, strict=True):
        assert score == pytest.approx(-negative, abs=1e-5), doc_id
    some = [f"doc{n}" for n in rng.integers(0, 700, 30)]
    scores = index.similarity(iter(some), query)  # read once: a generator will do
    assert scores.keys() == {d for d in some if d in reference}
    stored = index.vectors(doc_id for doc_id in some)
    for doc_id, score in scores.items():
        assert score == pytest.approx(float(reference[doc_id][3] @ query), abs=1e-5)
        assert stored[doc_id] == pytest.approx(reference[doc_id][3], abs=1e-6)


def test_a_search_decodes_only_its_hits_ids(tmp_path: Path) -> None:
    """A process that searches once (the command line) decodes the ids of the rows it
    rescored, not the whole file's (~60–100 ms at 117k rows)."""
    rows = write_random(tmp_path / "v", 2500, seed=3)
    index = VectorIndex.over(VectorFile(tmp_path / "v", "model-a", DIM))
    hits = index.search(rows[7], k=5, user="ann")
    assert hits and hits[0][0] in {f"doc:{n:05d}/é" for n in range(2500)}
    assert index.base is not None and "ids" not in index.base.__dict__


def test_ids_looked_up_by_hash_find_the_rows_bisection_finds(tmp_path: Path) -> None:
    write_random(tmp_path / "v", 2500, seed=4)
    read = VectorFile(tmp_path / "v", "model-a", DIM)
    asked = [f"doc:{n:05d}/é" for n in range(2500)] + ["doc:99999/é", "", "doc:00001/e"]
    bisected = [read.row_of(doc_id) for doc_id in asked]
    read.hash_ids()
    assert [read.row_of(doc_id) for doc_id in asked] == bisected
    assert bisected[:2500] == list(range(2500)) and bisected[2500:] == [None, None, None]


def test_a_long_lived_index_hashes_its_files_ids_after_many_lookups(tmp_path: Path) -> None:
    """A server looks up ~125 ids in the vector file per search (the text hits' cosines):
    by bisection that was ~12 µs each at 207k rows; after ``HASH_IDS_AFTER`` lookups they
    go by hash (~3 µs). A process that searches once does not hash."""
    from lsp_memory.store.vectors import HASH_IDS_AFTER

    write_random(tmp_path / "v", 2500, seed=5)
    index = VectorIndex.over(VectorFile(tmp_path / "v", "model-a", DIM))
    base = index.base
    assert base is not None
    for n in range(HASH_IDS_AFTER - 1):
        assert f"doc:{n % 2500:05d}/é" in index
    assert base._hashes is None
    assert "doc:00042/é" in index and "doc:99999/é" not in index
    assert base._hashes is not None
    assert all(f"doc:{n:05d}/é" in index for n in range(2500))
    found = index.similarity(["doc:00003/é", "doc:99999/é"], np.ones(DIM, dtype=np.float32))
    assert list(found) == ["doc:00003/é"]


def test_a_search_decodes_only_the_ids_it_can_return(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The int8 scan keeps ``max(64, 4k)`` rows to rescore; only the ``k`` best of those (and
    any tied with the k-th) can be returned, so only their ids are decoded (a server's
    search decoded 400 ids for its 100 candidates)."""
    rows = write_random(tmp_path / "v", 2500, seed=6)
    index = VectorIndex.over(VectorFile(tmp_path / "v", "model-a", DIM))
    assert index.base is not None
    decoded: list[list[int]] = []
    ids_of = index.base.ids_of

    def counted(asked: list[int]) -> list[str]:
        decoded.append(list(asked))
        return ids_of(asked)

    monkeypatch.setattr(index.base, "ids_of", counted)
    hits = index.search(rows[7], k=5, user="ann")
    assert len(hits) == 5 and hits[0][0] == "doc:00007/é"
    assert [len(rows) for rows in decoded] == [5]


def test_a_filters_row_mask_is_kept_until_the_index_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which rows of the file a search may return (user, kinds, statuses: ~1 ms at 207k
    rows) is computed once for the same filters, and again once a row changes."""
    rows = write_random(tmp_path / "v", 2500, seed=7)
    index = VectorIndex.over(VectorFile(tmp_path / "v", "model-a", DIM))
    computed: list[bool] = []
    mask = index._mask

    def counted(codes: object, *rest: object) -> object:
        computed.append(codes is index._base_codes)
        return mask(codes, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(index, "_mask", counted)
    first = index.search(rows[3], k=5, user="ann", statuses=["active"])
    assert index.search(rows[3], k=5, user="ann", statuses=["active"]) == first
    assert computed.count(True) == 1
    index.set_status(first[0][0], "retracted")
    after = index.search(rows[3], k=5, user="ann", statuses=["active"])
    assert after[:4] == first[1:] and first[0][0] not in dict(after)
    assert computed.count(True) == 2
    retracted = index.search(rows[3], k=50, user="ann", statuses=["retracted"])
    assert first[0] in retracted


def test_ids_looked_up_together_find_the_rows_one_at_a_time_finds(tmp_path: Path) -> None:
    write_random(tmp_path / "v", 2500, seed=8)
    read = VectorFile(tmp_path / "v", "model-a", DIM)
    asked = [f"doc:{n:05d}/é" for n in range(0, 2500, 7)] + ["doc:99999/é", "", "doc:00007/é"]
    one_at_a_time = [read.row_of(doc_id) for doc_id in asked]
    assert read.rows_of(asked) == one_at_a_time  # before hashing: one at a time
    read.hash_ids()
    assert read.hashed and read.rows_of(asked) == one_at_a_time
    assert one_at_a_time[-4:] == [2499, None, None, 7]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([-np.inf, -1.0, 0.0, 0.25, 0.5, 1.0, 3.0]), min_size=2, max_size=3000),
    st.integers(1, 40),
)
def test_the_rows_kept_for_rescoring_are_every_row_up_to_the_wanted_th_best(
    values: list[float], wanted: int
) -> None:
    """``_at_least`` (a threshold guessed from every 16th score first) keeps exactly the rows
    a partition of every score keeps, ties and rows filtered out (−inf) included."""
    from lsp_memory.store.vectors import _at_least

    scores = np.array(values, dtype=np.float32)
    wanted = min(wanted, len(scores) - 1)
    cut = np.sort(scores)[len(scores) - wanted]
    assert _at_least(scores, wanted).tolist() == np.flatnonzero(scores >= cut).tolist()


def test_a_threshold_guessed_too_high_falls_back_to_every_score() -> None:
    from lsp_memory.store.vectors import _at_least

    scores = np.zeros(4000, dtype=np.float32)
    scores[::16] = 1 + np.arange(250, dtype=np.float32)  # the sample holds only the best
    assert _at_least(scores, 30).tolist() == list(range(16 * 220, 4000, 16))


def test_a_search_of_one_kind_scans_only_the_span_of_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kind's rows are often together in the file (it is written in the order the
    documents were embedded): a search of that kind scans from its first row to its last,
    not the whole file, and finds what a search of every row in memory finds."""
    from lsp_memory.store import vectors

    rng = np.random.default_rng(9)
    rows = unit_rows(rng, 3000, DIM)
    kinds = ["claim"] * 200 + ["episode"] * 1000 + ["claim"] * 800 + ["note"] * 1000
    codes = np.zeros((3000, 3), dtype=np.int32)
    names = ["claim", "episode", "note"]
    codes[:, 1] = [names.index(kind) for kind in kinds]
    vectorfile.write(
        tmp_path / "v",
        STAMP,
        ids=[f"d{n:04d}" for n in range(3000)],
        names=(["ann"], names, ["active"]),
        codes=codes,
        blocks=iter([rows]),
    )
    mapped = VectorIndex.over(VectorFile(tmp_path / "v", "model-a", DIM))
    memory = VectorIndex(DIM)
    for n, (row, kind) in enumerate(zip(rows, kinds, strict=True)):
        memory.upsert(f"d{n:04d}", "ann", kind, "active", row)
    scanned: list[int] = []
    dot_int8 = vectors._dot_int8

    def counted(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
        scanned.append(len(matrix))
        return dot_int8(matrix, vector)

    monkeypatch.setattr(vectors, "_dot_int8", counted)
    for query in rows[::300]:
        for chosen in (["claim"], ["episode"], ["note", "episode"], None):
            found = mapped.search(query, k=5, user="ann", kinds=chosen)
            expected = memory.search(query, k=5, user="ann", kinds=chosen)
            assert [doc_id for doc_id, _ in found] == [doc_id for doc_id, _ in expected]
            assert [score for _, score in found] == pytest.approx([s for _, s in expected])
    assert scanned[:4] == [2000, 1000, 2800, 3000]


def test_a_prepared_index_searches_a_copy_of_its_rows_by_hashed_ids(tmp_path: Path) -> None:
    """``prepare`` does at once what a server's searches did on their own (the second
    copied the int8 rows, the ~16th hashed the ids: ~0.17 and ~0.11 s at 207k rows, the two
    slowest of 200 MCP searches): the rows searched are then a copy, the ids hashed, and
    every search, similarity and lookup answers as before. Without ``copy`` only the ids
    are hashed; a file replaced since is prepared again."""
    rows = write_random(tmp_path / "v", 2500, seed=6)
    plain = VectorIndex.over(VectorFile(tmp_path / "v", "model-a", DIM))
    ready = VectorIndex.over(VectorFile(tmp_path / "v", "model-a", DIM))
    hashed_only = VectorIndex.over(VectorFile(tmp_path / "v", "model-a", DIM))
    ready.prepare()
    hashed_only.prepare(copy=False)
    for index, copy in ((ready, True), (hashed_only, False)):
        assert index.base is not None and index.base.hashed
        assert copied(index) is copy
    asked = [f"doc:{n:05d}/é" for n in range(0, 2500, 7)] + ["doc:99999/é"]
    for query in rows[:30]:
        for options in ({"user": "ann"}, {"user": "bob", "kinds": ["note", "claim"]}):
            expected = plain.search(query, k=10, **options)
            assert ready.search(query, k=10, **options) == expected
            assert hashed_only.search(query, k=10, **options) == expected
        assert ready.similarity(asked, query) == plain.similarity(asked, query)
    assert copied(ready)  # searches kept the copy
    ready.prepare()  # done already: nothing changes
    assert copied(ready)
    # A new file (a server wrote the queue's vectors anew): mapped until prepared again.
    ready.upsert("doc:new", "ann", "note", "active", rows[0])
    assert ready.save(tmp_path / "w", Stamp("model-a", DIM, "token-1", 8))
    assert ready.base is not None and not ready.base.hashed and ready._quant is None
    ready.prepare()
    assert ready.base.hashed and copied(ready)
    assert ready.search(rows[0], k=3, user="ann")[0][0] in {"doc:00000/é", "doc:new"}


def copied(index: VectorIndex) -> bool:
    """Whether ``index`` searches a copy of its file's int8 rows (not the mapped pages)."""
    assert index.base is not None
    return index._copied(index.base)
