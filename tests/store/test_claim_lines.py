"""``claim list`` prints its lines from the store's light listing rows, not whole claims:
each line is the one the whole claim gives (number, name, primary type or "fact", status,
statement), for every status filter and limit."""

from __future__ import annotations

from lsp_memory.cli.output import claim_line
from lsp_memory.model import ClaimStatus
from lsp_memory.services.memory.interchange import add_record
from lsp_memory.services.memory.records import Records
from lsp_memory.store.sqlite import Store
from tests.conftest import USER
from tests.store.test_asof import _write_a_history


def test_the_lines_from_listing_rows_are_those_of_whole_claims(kb: Store) -> None:
    _write_a_history(kb, seed=4)  # every status, several types
    for types in ([], ["decision", "preference"]):  # no type: "fact"; the first is primary
        record = {"kind": "claim", "statement": "A line\nover two", "claim_types": types}
        add_record(kb, record, user=USER)
    records = Records(kb, USER)
    shown = 0
    for statuses in (None, [ClaimStatus.ACTIVE], [ClaimStatus.RETRACTED, ClaimStatus.MERGED]):
        for limit in (None, 1, 17):
            lines = [claim_line(row) for row in records.lines(statuses, limit)]
            assert lines == [claim_line(c) for c in records.claims(statuses, limit)]
            shown += len(lines)
    every = [claim_line(row) for row in records.lines(None, None)]
    assert any(" [fact] A line over two" in line for line in every), every[-2:]
    assert any(" [decision] A line over two" in line for line in every), every[-2:]
    assert len({line.split(" [")[1].split("]")[0] for line in every}) >= 4  # types
    assert shown > 100
