"""The SQL shared by the store's readers, and rows turned into model records: the columns of
a claim, contexts, entities and tags, and a claim result loaded with its linked fields."""

from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import groupby
from operator import itemgetter
from typing import Any

from lsp_memory.model import LIVE_STATUSES, Claim, ClaimStatus, Context, Entity
from lsp_memory.store.sqlite.connection import StoreBase

_SEP = "\x1f"  # joins list values in one column; never part of an id, type or domain
_LIVE = "('" + "', '".join(LIVE_STATUSES) + "')"

_CLAIM_COLUMNS = """
    c.id, c.claim_id, c.user, c.number, c.friendly_id, c.statement, c.status, c.confidence,
    c.possible_questions, c.pinned, c.created_at, c.updated_at, c.valid_from, c.valid_to,
    c.superseded_by, c.merged_into, c.meta, c.derived_from, c.evidence_count, c.origin
"""
_CLAIM_SELECT = f"SELECT {_CLAIM_COLUMNS} FROM claims c "

# A claim's list-valued fields, fetched for a whole result at once (one query per table, not
# one subquery per row: a 500-claim context would otherwise run 2 500 of them). `?` is the
# JSON array of the claims' row ids.
_IDS = "(SELECT value FROM json_each(?))"
_LINK_QUERIES = (
    f"SELECT claim, type FROM claim_types WHERE claim IN {_IDS} ORDER BY claim, pos",
    f"SELECT claim, domain FROM claim_domains WHERE claim IN {_IDS} ORDER BY claim, pos",
    "SELECT l.claim, x.friendly_id FROM context_claims l JOIN contexts x ON x.id = l.context "
    f"WHERE l.claim IN {_IDS} ORDER BY l.claim, x.friendly_id",
    "SELECT l.claim, t.friendly_id FROM claim_tags l JOIN tags t ON t.id = l.tag "
    f"WHERE l.claim IN {_IDS} ORDER BY l.claim, t.friendly_id",
    "SELECT l.claim, e.friendly_id FROM claim_entities l JOIN entities e ON e.id = l.entity "
    f"WHERE l.claim IN {_IDS} ORDER BY l.claim, e.friendly_id",
)


def _grouped_claims(hits: str) -> str:
    """Live claims whose row ids the CTE ``hits(id)`` lists, newest first. The CROSS JOIN
    makes SQLite start from the hits; left to itself it walks the user's whole
    ``(user, updated_at)`` index to skip the sort, which costs as much for 3 hits as for
    100 000."""
    return (
        f"{hits} SELECT {_CLAIM_COLUMNS} FROM hits CROSS JOIN claims c ON c.id = hits.id "
        f"WHERE c.user = ? AND c.status IN {_LIVE} ORDER BY c.updated_at DESC, c.number DESC"
    )


_first = itemgetter(0)
_STATUS = {status.value: status for status in ClaimStatus}


def _claim(row: Sequence[Any], found: Sequence[dict[int, tuple[str, ...]]]) -> Claim:
    key = row[0]
    types, domains, *links = (values.get(key, ()) for values in found)
    contexts, tags, entities = links if links else (None, None, None)
    return Claim(
        claim_id=row[1],
        user=row[2],
        number=row[3],
        friendly_id=row[4],
        statement=row[5],
        status=_STATUS[row[6]],
        confidence=row[7],
        possible_questions=tuple(json.loads(row[8])) if row[8] != "[]" else (),
        pinned=bool(row[9]),
        created_at=row[10],
        updated_at=row[11],
        valid_from=row[12],
        valid_to=row[13],
        superseded_by=row[14],
        merged_into=row[15],
        meta=json.loads(row[16]) if row[16] != "{}" else {},
        derived_from=tuple(json.loads(row[17])) if row[17] != "[]" else (),
        evidence_count=row[18],
        origin=row[19],
        claim_types=types,
        domains=domains,
        contexts=contexts,
        tags=tags,
        entities=entities,
    )


_CONTEXT_SELECT = """
SELECT x.context_id, x.user, x.friendly_id, x.name, x.description, p.friendly_id,
    x.created_at, x.updated_at, x.id
FROM contexts x LEFT JOIN contexts p ON p.id = x.parent
"""


def _context(row: Sequence[Any]) -> Context:
    return Context(*row[:8])


_ENTITY_SELECT = """
SELECT e.entity_id, e.user, e.friendly_id, e.name, t.name, e.fields, e.trashed,
    e.created_at, e.updated_at
FROM entities e JOIN entity_types t ON t.id = e.type
"""


def _entity(row: Sequence[Any]) -> Entity:
    return Entity(
        entity_id=row[0],
        user=row[1],
        friendly_id=row[2],
        name=row[3],
        type=row[4],
        fields=json.loads(row[5]),
        trashed=bool(row[6]),
        created_at=row[7],
        updated_at=row[8],
    )


_TAG_SELECT = """
SELECT t.user, t.friendly_id, t.name, p.friendly_id FROM tags t LEFT JOIN tags p ON p.id = t.parent
"""


class ClaimLoader(StoreBase):
    """Claim queries run through one loader, which attaches each claim's list-valued fields."""

    def _load(self, sql: str, params: Sequence[Any], *, links: bool = True) -> list[Claim]:
        """Run a query of claim rows and attach each claim's types and domains, and with
        ``links`` its contexts, tags and entities."""
        rows = self._db.execute(sql, params).fetchall()
        if not rows:
            return []
        ids = json.dumps([row[0] for row in rows])
        queries = _LINK_QUERIES if links else _LINK_QUERIES[:2]
        found = [
            {claim: tuple(value for _, value in group) for claim, group in groupby(cursor, _first)}
            for cursor in (self._db.execute(query, (ids,)) for query in queries)
        ]
        return [_claim(row, found) for row in rows]

    def _one(self, sql: str, params: Sequence[Any]) -> Claim | None:
        found = self._load(sql, params)
        return found[0] if found else None
