"""The sizes of contexts, tags and domains kept at write time (schema version 7): how many
live claims are beneath one and their statements' tokens, read as one row, with only the
claims a hover or a page lists loaded; and the claims' token counts, filled in by a process
that has the tokenizer."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from lsp_memory.model import ClaimStatus
from lsp_memory.store.sqlite.connection import _translated
from lsp_memory.store.sqlite.rows import _LIVE, _STATUS, ClaimLoader

GROUP_KINDS = ("context", "tag", "domain")
_TREES = {"context": "contexts", "tag": "tags"}
_BATCH = 500
"""Row ids bound in one ``IN (…)`` (SQLite allows 32 766 variables; a page lists 200)."""


@dataclass(frozen=True, slots=True)
class Listed:
    """A claim as a group's listing shows it: what a hover's or a page's line needs, read in
    one query (a page of 200 claims loaded as whole ``Claim`` records, with their types and
    domains, took ~10 ms of a root context's 20 ms definition)."""

    claim_id: str
    number: int
    friendly_id: str
    status: ClaimStatus
    statement: str
    claim_type: str
    """The claim's primary type (its first), "fact" when it has none."""
    possible_questions: tuple[str, ...] = ()
    """Only read by ``listed_claims`` (completion shows them; a group's listing does not)."""


# A claim's line, its primary type read by the primary key (claim, pos).
_LISTED_COLUMNS = (
    "c.claim_id, c.number, c.friendly_id, c.status, c.statement, "
    "(SELECT t.type FROM claim_types t WHERE t.claim = c.id ORDER BY t.pos LIMIT 1)"
)


@dataclass(frozen=True, slots=True)
class GroupSize:
    """A context's (with its sub-contexts), tag's (with its sub-tags) or domain's live
    claims: the same claims as ``claims_in_context``, ``claims_with_tag`` and
    ``claims_in_domain`` list, counted instead of loaded."""

    claims: int
    line_tokens: int
    """The ``line_tokens`` of those claims that have one, summed."""
    uncounted: tuple[str, ...]
    """The statements of those claims without a ``line_tokens`` yet."""
    first: tuple[Listed, ...]
    """The newest claims (as the listings order them), as many as were asked for."""
    last: Listed | None
    """The oldest claim: the last of the listing, or None when there is none."""


class Groups(ClaimLoader):
    """Reading the kept sizes; counting claims' tokens into them."""

    @_translated
    def group_size(self, user: str, kind: str, key: str, first: int) -> GroupSize:
        """The size of the user's context or tag (by friendly id) or domain, and its
        ``first`` newest claims and its oldest. An unknown group is empty."""
        if kind not in GROUP_KINDS:
            raise ValueError(f"not a group kind: {kind!r}")
        if self._db.in_transaction:
            return self._size(user, kind, key, first)
        # One read transaction: the count and the claims listed from the same moment.
        self._db.execute("BEGIN")
        try:
            return self._size(user, kind, key, first)
        finally:
            self._db.execute("COMMIT")

    def _size(self, user: str, kind: str, key: str, first: int) -> GroupSize:
        group: object = key
        if kind in _TREES:
            row = self._db.execute(
                f"SELECT id FROM {_TREES[kind]} WHERE user = ? AND friendly_id = ?", (user, key)
            ).fetchone()
            if row is None:
                return GroupSize(0, 0, (), (), None)
            group = row[0]
        row = self._db.execute(
            "SELECT claims, tokens, uncounted FROM group_sizes "
            "WHERE kind = ? AND grp = ? AND user = ?",
            (kind, group, user),
        ).fetchone()
        claims, tokens, uncounted = row if row is not None else (0, 0, 0)
        if claims <= 0:
            return GroupSize(0, 0, (), (), None)
        statements: tuple[str, ...] = ()
        if uncounted:
            found = self._db.execute(
                "SELECT c.statement FROM claims c INDEXED BY claims_uncounted "
                "WHERE c.line_tokens IS NULL AND c.user = ? "
                f"AND c.status IN {_LIVE} AND EXISTS (SELECT 1 FROM group_claims m "
                "WHERE m.kind = ? AND m.grp = ? AND m.claim = c.id)",
                (user, kind, group),
            )
            statements = tuple(row[0] for row in found)
        newest = self._ends(user, kind, group, claims, first, newest=True)
        oldest = self._ends(user, kind, group, claims, 1, newest=False)
        return GroupSize(claims, tokens, statements, tuple(newest), oldest[0] if oldest else None)

    def _ends(
        self, user: str, kind: str, group: object, size: int, limit: int, *, newest: bool
    ) -> list[Listed]:
        """The group's ``limit`` newest (or oldest) live claims. A group holding a large
        share of the user's claims is found by walking the user's claims by time and keeping
        those in it (a few dozen rows for a root context); a small one by sorting its own."""
        if limit <= 0:
            return []
        order = "DESC" if newest else "ASC"
        (highest,) = self._db.execute(
            "SELECT coalesce(max(number), 0) FROM claims WHERE user = ?", (user,)
        ).fetchone()
        # Walking reads ~limit × highest / size rows of the date index (which holds the
        # status: no claim row is read); sorting reads the group's own size.
        # Either way only the claims' rows are ordered; their lines are read after, for
        # the `limit` kept (carrying every member's statement and first type through the
        # sort took a 1 500-claim context's 200 newest 4 ms, its row ids 2.3 ms).
        if size * size >= limit * highest:
            sql = (
                "SELECT c.id FROM claims c INDEXED BY claims_user_updated "
                f"WHERE c.user = ? AND c.status IN {_LIVE} AND EXISTS (SELECT 1 FROM "
                "group_claims m WHERE m.kind = ? AND m.grp = ? AND m.claim = c.id) "
                f"ORDER BY c.updated_at {order}, c.number {order} LIMIT ?"
            )
            params: tuple[object, ...] = (user, kind, group, limit)
        else:
            sql = (
                "SELECT c.id FROM group_claims m CROSS JOIN claims c "
                "ON c.id = m.claim WHERE m.kind = ? AND m.grp = ? AND c.user = ? "
                f"AND c.status IN {_LIVE} ORDER BY c.updated_at {order}, c.number {order} "
                "LIMIT ?"
            )
            params = (kind, group, user, limit)
        ids = [row[0] for row in self._db.execute(sql, params)]
        lines: dict[int, Listed] = {}
        for at in range(0, len(ids), _BATCH):
            batch = ids[at : at + _BATCH]
            marks = ",".join("?" * len(batch))
            for row in self._db.execute(
                f"SELECT c.id, {_LISTED_COLUMNS} FROM claims c WHERE c.id IN ({marks})", batch
            ):
                lines[row[0]] = Listed(
                    row[1], row[2], row[3], _STATUS[row[4]], row[5], row[6] or "fact"
                )
        return [lines[i] for i in ids]

    @_translated
    def listed_claims(self, user: str, claim_ids: Sequence[str]) -> list[Listed]:
        """The user's claims with those ids as a line shows them, with their possible
        questions, by number: ``@`` completion's claim hits in one query (as whole records,
        their types and domains read by two more, ~0.7 of 0.2 ms for 35)."""
        rows = self._db.execute(
            f"SELECT {_LISTED_COLUMNS}, c.possible_questions FROM claims c "
            "WHERE c.claim_id IN (SELECT value FROM json_each(?)) AND +c.user = ? "
            "ORDER BY c.number",
            (json.dumps(list(claim_ids)), user),
        )
        return [
            Listed(
                row[0], row[1], row[2], _STATUS[row[3]], row[4], row[5] or "fact",
                tuple(json.loads(row[6])) if row[6] != "[]" else (),
            )
            for row in rows
        ]  # fmt: skip

    @_translated
    def listed_by_number(
        self, user: str, statuses: Sequence[ClaimStatus] | None, limit: int | None
    ) -> list[Listed]:
        """The user's claims as a line shows them, by number, optionally only those with one
        of ``statuses``, at most ``limit`` (``claim list``: 100 000 loaded as whole records,
        their types and domains read by two more queries, took ~1.9 s of a 2.4 s process)."""
        sql = f"SELECT {_LISTED_COLUMNS} FROM claims c WHERE c.user = ?"
        params: list[object] = [user]
        if statuses is not None:
            sql += f" AND c.status IN ({', '.join('?' * len(statuses))})"
            params += [str(status) for status in statuses]
        sql += " ORDER BY c.number"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [
            Listed(row[0], row[1], row[2], _STATUS[row[3]], row[4], row[5] or "fact")
            for row in self._db.execute(sql, params)
        ]

    @_translated
    def uncounted_claims(self, limit: int) -> list[tuple[int, str]]:
        """(row, statement) of up to ``limit`` claims of any user without ``line_tokens``."""
        rows = self._db.execute(
            "SELECT id, statement FROM claims INDEXED BY claims_uncounted "
            "WHERE line_tokens IS NULL ORDER BY id LIMIT ?",
            (limit,),
        )
        return [(int(row[0]), str(row[1])) for row in rows]

    @_translated
    def set_line_tokens(self, counts: Sequence[tuple[int, str, int]]) -> None:
        """Store ``(row, statement, line_tokens)`` counts in one transaction; a claim whose
        statement changed since it was read keeps no count (its new text is counted next)."""
        with self._write() as db:
            db.executemany(
                "UPDATE claims SET line_tokens = ? WHERE id = ? AND statement = ?",
                [(tokens, row, statement) for row, statement, tokens in counts],
            )
