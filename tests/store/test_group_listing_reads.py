"""How a context's, tag's or domain's newest claims are read for a page or a hover: the
claims are ordered by row alone — walking the date index without reading a claim's row for
a group holding much of the memory, sorting the group's own rows otherwise — and only the
lines kept are read, in that order (the lines themselves: tests/store/test_group_sizes.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lsp_memory.model import ClaimStatus
from lsp_memory.services.memory.interchange import add_record
from lsp_memory.store.sqlite import Store
from tests.conftest import USER


@pytest.fixture
def grouped(store: Store) -> Iterator[Store]:
    """60 claims in ``big`` (with a sub-context) and 3 of them also in ``small``; 40 more in
    neither (the walk's rule needs a large share: size² ≥ listed × the highest number)."""
    add_record(store, {"kind": "context", "friendly_id": "big", "name": "Big"}, user=USER)
    add_record(
        store, {"kind": "context", "friendly_id": "sub", "name": "Sub", "parent": "big"}, user=USER
    )
    add_record(store, {"kind": "context", "friendly_id": "small", "name": "Small"}, user=USER)
    for n in range(100):
        contexts = ["sub" if n % 2 else "big"] if n < 60 else []
        if n in (5, 17, 42):
            contexts.append("small")
        record = {"kind": "claim", "statement": f"Statement number {n} about [things]."}
        add_record(store, {**record, "contexts": contexts}, user=USER)
    retracted = store.claim_by_number(USER, 18)  # in both: counted in neither
    assert retracted is not None
    store.set_status(USER, retracted.claim_id, ClaimStatus.RETRACTED, "2030-01-01T00:00:00Z")
    yield store


def plans(store: Store, kind: str, key: str, first: int) -> list[list[str]]:
    """The query plan of each statement ``group_size`` ran that orders claims."""
    traced: list[str] = []
    store._db.set_trace_callback(traced.append)
    store.group_size(USER, kind, key, first)
    store._db.set_trace_callback(None)
    return [
        [row[3] for row in store._db.execute("EXPLAIN QUERY PLAN " + sql)]
        for sql in traced
        if "ORDER BY c.updated_at" in sql
    ]


def test_a_large_group_is_walked_on_the_date_index_alone(grouped: Store) -> None:
    size = grouped.group_size(USER, "context", "big", 10)
    assert size.claims == 59
    assert [c.number for c in size.first] == [60, 59, 58, 57, 56, 55, 54, 53, 52, 51]
    assert size.last is not None and size.last.number == 1
    found = plans(grouped, "context", "big", 10)
    assert len(found) == 2  # the newest, the oldest
    for plan in found:
        assert any("COVERING INDEX claims_user_updated" in step for step in plan), plan


def test_a_small_group_sorts_its_rows_and_reads_only_the_lines_kept(grouped: Store) -> None:
    size = grouped.group_size(USER, "context", "small", 2)
    assert [c.number for c in size.first] == [43, 6]
    assert size.first[0].statement == "Statement number 42 about [things]."
    assert size.first[0].claim_type == "fact"
    assert size.last is not None and size.last.number == 6
    found = plans(grouped, "context", "small", 2)
    assert len(found) == 2
    for plan in found:
        # The first type is read for the lines kept, not for every claim sorted.
        assert not any("SUBQUERY" in step for step in plan), plan
