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
from lsp_memory.store.sqlite.rows import _CLAIM_COLUMNS, _IDS, _LIVE, _SEP, ClaimLoader


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


LiveRow = tuple[str, int, str, float, int, str | None]
"""A claim live at a moment, as it was then (``History.standing_by``): its ``updated_at``,
number, id, confidence, pin (0 or 1) and types (joined by ``TYPES_SEP``)."""
TYPES_SEP = _SEP


@dataclass(frozen=True, slots=True)
class Standing:
    """The claims live at a moment, chosen from light rows put back in SQL."""

    live: list[LiveRow]
    """Those live then, most recently updated (then) first, ties by the higher number."""
    superseded: list[str]
    """The ids of claims superseded now and valid until after the moment, left out of
    ``live``: each may have been superseded by a version that did not record single writes
    (``kernel.asof._with_legacy``), so is to be put back whole."""


_THEN = ("status", "confidence", "pinned", "valid_to", "updated_at")
"""The fields ``standing_by`` puts back."""

_STANDING = f"""
WITH ev(claim, field, at, k1, k2, k3, before) AS (
    SELECT x.claim, x.field, x.at, 0, x.id, 0, x.before FROM claim_writes x
    JOIN claims c ON c.id = x.claim
    WHERE x.at > :moment AND c.created_at <= :moment AND x.field IN {_THEN}
    UNION ALL
    SELECT x.claim, x.field, r.now, 1, r.number, x.pos, x.before
    FROM runs r JOIN run_changes x ON x.run = r.id JOIN claims c ON c.id = x.claim
    WHERE r.user = :user AND r.now > :moment AND c.created_at <= :moment AND x.field IN {_THEN}
    UNION ALL
    SELECT x.claim, x.field, r.undone_at, 2, r.number, -x.pos, x.after
    FROM runs r JOIN run_changes x ON x.run = r.id JOIN claims c ON c.id = x.claim
    WHERE r.user = :user AND r.undone_at > :moment AND c.created_at <= :moment
    AND x.field IN {_THEN}
),
first(claim, field, was) AS (
    SELECT claim, field, json_extract(before, '$') FROM (
        SELECT claim, field, before, row_number() OVER (
            PARTITION BY claim, field ORDER BY at, k1, k2, k3) AS n
        FROM ev)
    WHERE n = 1
),
was AS (
    SELECT claim, {
    ", ".join(
        f"max(field = '{name}') AS has_{name}, "
        f"max(CASE WHEN field = '{name}' THEN was END) AS {name}"
        for name in _THEN
    )
}
    FROM first GROUP BY claim
),
past AS (
    SELECT c.id, c.claim_id, c.number, c.created_at,
        c.status = 'superseded' AND c.valid_to > :moment AS superseded,
        {
    ", ".join(f"CASE WHEN w.has_{name} THEN w.{name} ELSE c.{name} END AS {name}" for name in _THEN)
}
    FROM claims c LEFT JOIN was w ON w.claim = c.id
    WHERE +c.user = :user AND c.created_at <= :moment
    AND (c.valid_from IS NULL OR c.valid_from <= :moment)
)
SELECT CASE WHEN updated_at IS NULL OR updated_at > :moment THEN created_at ELSE updated_at
    END AS updated, number, claim_id, confidence, pinned,
    (SELECT group_concat(t.type, :sep) FROM claim_types t WHERE t.claim = past.id), superseded
FROM past
WHERE superseded OR (status IN {_LIVE} AND (valid_to IS NULL OR valid_to > :moment))
ORDER BY updated DESC, number DESC
"""
"""``standing_by``'s query. Every change after the moment as ``claim_events`` reads them (a
single write at its time, a run's change at the run's ``now``, its undoing, before and after
swapped, when undone); of each field of each claim the first, whose ``before`` is the
field's value then; a claim's ``updated_at`` then is its creation when the value found is
later than the moment or none (as ``kernel.asof._undone`` leaves it). ``+c.user``: a scan
of the table; through the (user, updated_at) index SQLite read half the claims in three
times as long."""


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
    def standing_by(self, user: str, moment: str) -> Standing:
        """The user's claims live at ``moment`` as they were then, as light rows: of the
        claims created then or before and not valid only from later (``valid_from``, which no
        change touches), each with its status, confidence, pin, ``valid_to`` and
        ``updated_at`` the value the first change after ``moment`` replaced (their value now
        when none did) — what undoing every later change, newest first, leaves
        (``kernel.asof.LiveThen``). Done in SQL: loading 50 000 claims and their 100 000
        changes to undo them took seconds."""
        live: list[LiveRow] = []
        superseded: list[str] = []
        for row in self._db.execute(_STANDING, {"user": user, "moment": moment, "sep": _SEP}):
            if row[6]:
                superseded.append(row[2])
            else:
                live.append(row[:6])
        return Standing(live, superseded)

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
