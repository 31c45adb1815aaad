"""The sizes of contexts, tags and domains kept at write time (schema version 7): how many
live claims are beneath one and their statements' tokens, read as one row, with only the
claims a hover or a page lists loaded; and the claims' token counts, filled in by a process
that has the tokenizer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lsp_memory.model import Claim
from lsp_memory.store.sqlite.connection import _translated
from lsp_memory.store.sqlite.rows import _CLAIM_COLUMNS, _LIVE, ClaimLoader

GROUP_KINDS = ("context", "tag", "domain")
_TREES = {"context": "contexts", "tag": "tags"}


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
    first: tuple[Claim, ...]
    """The newest claims (as the listings order them), as many as were asked for."""
    last: Claim | None
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
    ) -> list[Claim]:
        """The group's ``limit`` newest (or oldest) live claims. A group holding a large
        share of the user's claims is found by walking the user's claims by time and keeping
        those in it (a few dozen rows for a root context); a small one by sorting its own."""
        if limit <= 0:
            return []
        order = "DESC" if newest else "ASC"
        (highest,) = self._db.execute(
            "SELECT coalesce(max(number), 0) FROM claims WHERE user = ?", (user,)
        ).fetchone()
        # Walking reads ~limit × highest / size rows; sorting reads the group's own size.
        if size * size >= limit * highest:
            sql = (
                f"SELECT {_CLAIM_COLUMNS} FROM claims c INDEXED BY claims_user_updated "
                f"WHERE c.user = ? AND c.status IN {_LIVE} AND EXISTS (SELECT 1 FROM "
                "group_claims m WHERE m.kind = ? AND m.grp = ? AND m.claim = c.id) "
                f"ORDER BY c.updated_at {order}, c.number {order} LIMIT ?"
            )
            params: tuple[object, ...] = (user, kind, group, limit)
        else:
            sql = (
                f"SELECT {_CLAIM_COLUMNS} FROM group_claims m CROSS JOIN claims c "
                "ON c.id = m.claim WHERE m.kind = ? AND m.grp = ? AND c.user = ? "
                f"AND c.status IN {_LIVE} ORDER BY c.updated_at {order}, c.number {order} "
                "LIMIT ?"
            )
            params = (kind, group, user, limit)
        return self._load(sql, params, links=False)

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
