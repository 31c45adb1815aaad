"""A claim's past: every field a single write (``claim_writes``) or a consolidation or review
run (``run_changes``) changed on it, with when and by what, read for ``claim history`` and to
put claims back as they were at a moment (``--as-of``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lsp_memory.model import Claim
from lsp_memory.store.sqlite.connection import _translated
from lsp_memory.store.sqlite.rows import _CLAIM_COLUMNS, _IDS, ClaimLoader


@dataclass(frozen=True, slots=True)
class ClaimEvent:
    """One field of one claim changed at one moment.

    ``at`` is when it took effect: a single write's time, a run's ``now`` (``consolidate
    --now``), or, for ``undone``, the time the run was undone (``before`` and ``after`` are
    then the run's after and before). ``what`` says why (``retracted``, ``pinned``, a run's
    reason: ``decay: 12.0 days without evidence``…); ``run`` is the run's number, None for a
    single write."""

    claim_id: str
    at: str
    what: str
    field: str
    before: Any
    after: Any
    run: int | None = None
    run_kind: str | None = None
    undone: bool = False
    order: tuple[int, int, int] = (0, 0, 0)
    """Ties at one moment, in the order they were made (writes, runs' changes, undos)."""

    @property
    def key(self) -> tuple[str, tuple[int, int, int]]:
        """The event's place in time: sort by it, oldest first."""
        return (self.at, self.order)


class History(ClaimLoader):
    """Reading the changes made to claims."""

    @_translated
    def claim_events(
        self, user: str, claim_ids: Sequence[str], after: str | None = None
    ) -> list[ClaimEvent]:
        """The changes made to the user's claims ``claim_ids`` (only those later than
        ``after`` when given), oldest first. An undone run gives two events per change: the
        change at the run's time, and its undoing."""
        if not claim_ids:
            return []
        wanted = (
            "WITH wanted(id, claim_id) AS (SELECT id, claim_id FROM claims "
            f"WHERE +user = ? AND claim_id IN {_IDS}) "
        )
        params: tuple[Any, ...] = (user, json.dumps(list(claim_ids)))
        events: list[ClaimEvent] = []
        since = after or ""
        writes = self._db.execute(
            wanted + "SELECT w.claim_id, x.at, x.what, x.field, x.before, x.after, x.id "
            "FROM wanted w JOIN claim_writes x ON x.claim = w.id WHERE x.at > ?",
            (*params, since),
        )
        for claim_id, at, what, name, before, changed, row in writes:
            events.append(
                ClaimEvent(
                    claim_id, at, what, name, json.loads(before), json.loads(changed), None,
                    None, False, (0, row, 0),
                )
            )  # fmt: skip
        runs = self._db.execute(
            wanted + "SELECT w.claim_id, r.now, r.undone_at, r.number, r.kind, x.pos, x.field, "
            "x.before, x.after, x.reason FROM wanted w JOIN run_changes x ON x.claim = w.id "
            "JOIN runs r ON r.id = x.run WHERE r.now > ? OR r.undone_at > ?",
            (*params, since, since),
        )
        for claim_id, at, undone_at, number, kind, pos, name, before, changed, reason in runs:
            was, became = json.loads(before), json.loads(changed)
            if at > since:
                events.append(
                    ClaimEvent(
                        claim_id, at, reason, name, was, became, number, kind, False,
                        (1, number, pos),
                    )
                )  # fmt: skip
            if undone_at is not None and undone_at > since:
                events.append(
                    ClaimEvent(
                        claim_id, undone_at, f"run {number} undone", name, became, was,
                        number, kind, True, (2, number, -pos),
                    )
                )  # fmt: skip
        events.sort(key=lambda event: event.key)
        return events

    @_translated
    def members(self, user: str, kind: str, key: str) -> list[Claim]:
        """Every claim of the user's context (by uuid), tag (by friendly id), domain or entity
        (by uuid), whatever its status, newest first: a group's claims as they may have been
        live at another time."""
        hits = {
            "context": "SELECT g.claim FROM group_claims g JOIN contexts x ON x.id = g.grp "
            "WHERE g.kind = 'context' AND x.context_id = ?",
            "tag": "SELECT g.claim FROM group_claims g JOIN tags x ON x.id = g.grp "
            "WHERE g.kind = 'tag' AND x.friendly_id = ? AND x.user = g.user",
            "domain": "SELECT g.claim FROM group_claims g WHERE g.kind = 'domain' AND g.grp = ?",
            "entity": "SELECT l.claim FROM claim_entities l JOIN entities e ON e.id = l.entity "
            "WHERE e.entity_id = ?",
        }[kind]
        return self._load(
            f"WITH hits(id) AS ({hits}) SELECT {_CLAIM_COLUMNS} FROM hits "
            "CROSS JOIN claims c ON c.id = hits.id WHERE c.user = ? "
            "ORDER BY c.updated_at DESC, c.number DESC",
            (key, user),
            links=False,
        )

    @_translated
    def claims_made_by(self, user: str, moment: str) -> list[Claim]:
        """The user's claims created at ``moment`` or before and not valid only from later
        (``valid_from``, which no change touches), with their types but not their links:
        every claim that may have been live then."""
        return self._load(
            f"SELECT {_CLAIM_COLUMNS} FROM claims c WHERE c.user = ? AND c.created_at <= ? "
            "AND (c.valid_from IS NULL OR c.valid_from <= ?)",
            (user, moment, moment),
            links=False,
        )

    @_translated
    def linked_after(self, user: str, contexts: Sequence[str], after: str) -> list[str]:
        """The ids of the user's claims added to or removed from any of the contexts
        ``contexts`` (friendly ids, as ``claim_writes`` names them) after ``after``: the
        claims a context may have held then that it does not hold now."""
        if not contexts:
            return []
        rows = self._db.execute(
            "SELECT DISTINCT c.claim_id FROM claim_writes x JOIN claims c ON c.id = x.claim "
            "WHERE x.field = 'context' AND x.at > ? AND c.user = ? AND coalesce(json_extract("
            "x.after, '$'), json_extract(x.before, '$')) IN (SELECT value FROM json_each(?))",
            (after, user, json.dumps(list(contexts))),
        )
        return [row[0] for row in rows]

    @_translated
    def events_naming(self, user: str, claim_id: str) -> list[ClaimEvent]:
        """The changes that made another of the user's claims point at ``claim_id`` (its
        ``superseded_by`` or ``merged_into``), oldest first: what it replaced, and when."""
        value = json.dumps(claim_id)
        rows = self._db.execute(
            "SELECT c.claim_id, x.at, x.what, x.field, x.id FROM claim_writes x "
            "JOIN claims c ON c.id = x.claim WHERE x.field IN ('superseded_by', 'merged_into') "
            "AND x.after = ? AND c.user = ?",
            (value, user),
        ).fetchall()
        found = [
            ClaimEvent(other, at, what, name, None, claim_id, order=(0, row, 0))
            for other, at, what, name, row in rows
        ]
        rows = self._db.execute(
            "SELECT c.claim_id, r.now, x.reason, x.field, r.number, r.kind, r.undone_at, x.pos "
            "FROM run_changes x JOIN runs r ON r.id = x.run JOIN claims c ON c.id = x.claim "
            "WHERE x.field IN ('superseded_by', 'merged_into') AND x.after = ? AND r.user = ?",
            (value, user),
        ).fetchall()
        found += [
            ClaimEvent(other, at, reason, name, None, claim_id, number, kind, undone is not None,
                       (1, number, pos))
            for other, at, reason, name, number, kind, undone, pos in rows
        ]  # fmt: skip
        return sorted(found, key=lambda event: event.key)

    @_translated
    def claims_pointing_to(self, user: str, claim_id: str) -> list[str]:
        """The ids of the user's claims whose ``superseded_by`` or ``merged_into`` is
        ``claim_id`` now."""
        rows = self._db.execute(
            "SELECT claim_id FROM claims WHERE user = ? AND (superseded_by = ? OR merged_into = ?)",
            (user, claim_id, claim_id),
        )
        return [row[0] for row in rows]
