"""``#`` completion's lookup, ``claims_by_number_prefix``, against the rule it implements
(numbers that start with the typed digits, shortest first, then by number) on 1 000 claims of
two users."""

from __future__ import annotations

import json

import pytest

from lsp_memory.services.memory.interchange import import_records
from lsp_memory.store.sqlite import Store
from tests.conftest import USER


@pytest.fixture
def numbered(store: Store) -> Store:
    lines = [{"kind": "claim", "statement": f"statement {n}"} for n in range(1, 1001)]
    for user, count in ((USER, 1000), ("mallory", 500)):
        data = "\n".join(json.dumps(line) for line in lines[:count]).encode()
        import_records(store, data, user=user, source="numbers")
    return store


def expected(digits: str, limit: int) -> list[int]:
    matching = [n for n in range(1, 1001) if str(n).startswith(digits)]
    return sorted(matching, key=lambda n: (len(str(n)), n))[:limit]


@pytest.mark.parametrize(
    ("digits", "limit"),
    [("", 50), ("1", 50), ("1", 5), ("2", 50), ("25", 50), ("100", 50), ("1000", 3), ("7", 1)],
)
def test_numbers_that_start_with_the_digits(numbered: Store, digits: str, limit: int) -> None:
    found = numbered.claims_by_number_prefix(USER, digits, limit)
    assert [c.number for c in found] == expected(digits, limit)
    assert {c.user for c in found} <= {USER}


@pytest.mark.parametrize("digits", ["0", "01", "1001", "12a", "²", " 1"])
def test_what_no_number_starts_with(numbered: Store, digits: str) -> None:
    assert numbered.claims_by_number_prefix(USER, digits) == []


def test_no_claims_no_limit(store: Store, numbered: Store) -> None:
    assert numbered.claims_by_number_prefix("nobody", "1") == []
    assert numbered.claims_by_number_prefix(USER, "1", 0) == []
