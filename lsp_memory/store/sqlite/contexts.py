"""Contexts (by friendly id, by name, all of them, as a tree with claim counts) and tags."""

from __future__ import annotations

from lsp_memory.model import Context, ContextNode, Tag
from lsp_memory.store.sqlite.connection import StoreBase, _translated
from lsp_memory.store.sqlite.rows import _CONTEXT_SELECT, _LIVE, _TAG_SELECT, _context


class Contexts(StoreBase):
    """Reading contexts and tags."""

    @_translated
    def context_by_friendly_id(self, user: str, friendly_id: str) -> Context | None:
        row = self._db.execute(
            _CONTEXT_SELECT + "WHERE x.user = ? AND x.friendly_id = ?", (user, friendly_id)
        ).fetchone()
        return _context(row) if row else None

    @_translated
    def context_by_name_key(self, user: str, key: str) -> Context | None:
        """The context whose name matches ``key`` (docs/reference.md, Resolution step 4); the
        oldest when several
        share a name."""
        row = self._db.execute(
            _CONTEXT_SELECT
            + "WHERE x.user = ? AND x.name_key = ? ORDER BY x.created_at, x.id LIMIT 1",
            (user, key),
        ).fetchone()
        return _context(row) if row else None

    @_translated
    def contexts(self, user: str) -> list[Context]:
        rows = self._db.execute(_CONTEXT_SELECT + "WHERE x.user = ? ORDER BY x.id", (user,))
        return [_context(row) for row in rows]

    @_translated
    def child_contexts(self, user: str, friendly_id: str) -> list[Context]:
        """The contexts directly beneath the user's context ``friendly_id``, by row (loading
        all 2 000 contexts to pick them took a context hover 6 ms)."""
        sql = _CONTEXT_SELECT + (
            "WHERE x.user = ? AND p.user = ? AND p.friendly_id = ? ORDER BY x.id"
        )
        return [_context(row) for row in self._db.execute(sql, (user, user, friendly_id))]

    @_translated
    def context_names(self, user: str) -> list[tuple[int, str, str]]:
        """(row, friendly id, name) of the user's contexts: what ``@`` completion matches
        the typed text against (building all 2 000 contexts per keystroke took 11 ms)."""
        return self._db.execute(
            "SELECT id, friendly_id, name FROM contexts WHERE user = ? ORDER BY id", (user,)
        ).fetchall()

    @_translated
    def context_tree(self, user: str) -> tuple[list[ContextNode], list[Context]]:
        """The user's contexts as a forest, each with its count of live claims linked
        directly; and any contexts caught in a parent cycle (which no root reaches)."""
        rows = self._db.execute(
            f"""
            SELECT x.context_id, x.user, x.friendly_id, x.name, x.description, p.friendly_id,
                x.created_at, x.updated_at, x.id, x.parent,
                (SELECT count(*) FROM context_claims l JOIN claims c ON c.id = l.claim
                 WHERE l.context = x.id AND c.status IN {_LIVE})
            FROM contexts x LEFT JOIN contexts p ON p.id = x.parent
            WHERE x.user = ? ORDER BY x.name_key, x.friendly_id
            """,
            (user,),
        ).fetchall()
        by_id = {row[8]: row for row in rows}
        children: dict[int | None, list[int]] = {}
        for row in rows:
            parent = row[9] if row[9] in by_id else None
            children.setdefault(parent, []).append(row[8])
        seen: set[int] = set()

        def build(row_id: int) -> ContextNode:
            seen.add(row_id)
            row = by_id[row_id]
            kids = tuple(build(kid) for kid in children.get(row_id, []) if kid not in seen)
            return ContextNode(context=_context(row), claim_count=row[10], children=kids)

        roots = [build(row_id) for row_id in children.get(None, [])]
        stranded = [_context(by_id[row_id]) for row_id in by_id if row_id not in seen]
        return roots, stranded

    @_translated
    def tag_by_friendly_id(self, user: str, friendly_id: str) -> Tag | None:
        row = self._db.execute(
            _TAG_SELECT + "WHERE t.user = ? AND t.friendly_id = ?", (user, friendly_id)
        ).fetchone()
        return Tag(*row) if row else None

    @_translated
    def tags(self, user: str) -> list[Tag]:
        return [Tag(*row) for row in self._db.execute(_TAG_SELECT + "WHERE t.user = ?", (user,))]
