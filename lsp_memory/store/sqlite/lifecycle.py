"""Memory that maintains itself: what consolidation reads (the live claims' state, episodes,
the last run), and runs — a consolidation or a review decision — written as one transaction
with every field they change, before and after, so a run can be undone exactly; and the
review items runs raise."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from json.encoder import encode_basestring
from typing import Any

from lsp_memory.store.sqlite.changes import _log_rows
from lsp_memory.store.sqlite.connection import StoreBase, _translated
from lsp_memory.store.sqlite.rows import _LIVE

FIELDS = frozenset(
    {
        "status",
        "confidence",
        "merged_into",
        "superseded_by",
        "valid_to",
        "derived_from",
        "evidence_count",
        "evidence_at",
        "updated_at",
        "archived_at",
        "decayed_at",
    }
)
"""The claim fields a run may change (``updated_at`` and ``archived_at``: a merge's;
``decayed_at``: decay's, with the confidence)."""


@dataclass(slots=True)
class ClaimState:
    """What consolidation needs of one live claim (no links: 100k of these are read)."""

    row: int
    claim_id: str
    number: int
    statement: str
    category: str
    status: str
    confidence: float
    pinned: bool
    created_at: str
    updated_at: str
    evidence_at: str | None
    derived_from: tuple[str, ...]
    evidence_count: int
    merged_into: str | None = None
    superseded_by: str | None = None
    valid_to: str | None = None
    origin: str = "stated"
    archived_at: str | None = None
    decayed_at: str | None = None  # the moment the stored confidence is the decayed one


@dataclass(frozen=True, slots=True)
class Episode:
    """One conversation message, as stored."""

    episode_id: str
    user: str
    conversation_id: str
    role: str  # user, assistant
    text: str
    occurred_at: str
    created_at: str
    source: str | None = None
    channel: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    row: int = 0  # set once stored
    stamped: bool = True  # whether the message came with its time (else it is the import's)

    @property
    def key(self) -> str:
        """What makes a message the same message: conversation, time (when the message had one),
        role and text."""
        when = self.occurred_at if self.stamped else ""
        parts = "\x1f".join((self.conversation_id, when, self.role, self.text))
        return hashlib.sha256(parts.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class EpisodeRef:
    """A reference an episode made (``direct``) or was given (``search``: by a context
    block; ``tool``: by ``search_memory``): what it names
    (``kind``: claim, context, entity, tag, domain, note, episode or unresolved; ``target``:
    its id, a note's key, '' when unresolved) and how it was written (``label``)."""

    episode_row: int
    via: str
    kind: str
    target: str
    label: str


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation of a user: its id, how many messages, the first and last time."""

    conversation_id: str
    messages: int
    first: str
    last: str


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One field of one claim changed by a run; values are as JSON gives them back."""

    claim_row: int
    field: str
    before: Any
    after: Any
    reason: str


@dataclass(frozen=True, slots=True)
class NewItem:
    """A review item a run raises: ``claims`` by id, the proposed winner first."""

    kind: str  # contradiction, merge
    claims: tuple[str, ...]
    proposal: str  # MERGE, KEEP_BOTH, CONTRADICTION
    reason: str
    state: dict[str, str]  # claim id → its status when raised


@dataclass(frozen=True, slots=True)
class Run:
    number: int
    kind: str
    now: str
    created_at: str
    episode_mark: int
    claim_mark: int
    summary: dict[str, Any]
    undone_at: str | None


@dataclass(frozen=True, slots=True)
class ReviewItem:
    number: int
    run: int  # the raising run's number
    kind: str
    claims: tuple[str, ...]
    proposal: str
    reason: str
    state: dict[str, str]
    status: str
    created_at: str


@dataclass(frozen=True, slots=True)
class Undone:
    """A run put back: its number and how many of its changes."""

    run: int
    changes: int


def pair_key(claim_ids: Iterable[str]) -> str:
    """The key of a set of claims: an item is never raised twice for the same set."""
    return " ".join(sorted(claim_ids))


_RUN_COLUMNS = "number, kind, now, created_at, episode_mark, claim_mark, summary, undone_at"
_ITEM_COLUMNS = (
    "i.number, r.number, i.kind, i.claims, i.proposal, i.reason, i.state, i.status, i.created_at"
)


def _run(row: Sequence[Any]) -> Run:
    return Run(row[0], row[1], row[2], row[3], row[4], row[5], json.loads(row[6]), row[7])


def _item(row: Sequence[Any]) -> ReviewItem:
    return ReviewItem(
        row[0],
        row[1],
        row[2],
        tuple(json.loads(row[3])),
        row[4],
        row[5],
        json.loads(row[6]),
        row[7],
        row[8],
    )


class Lifecycle(StoreBase):
    """Consolidation's reads, runs and their undoing, review items, episodes."""

    @_translated
    def claim_states(self, user: str, claim_ids: Sequence[str] | None = None) -> list[ClaimState]:
        """The user's live claims as consolidation sees them, by number; with ``claim_ids``,
        just those claims, whatever their status."""
        sql = (
            "SELECT c.id, c.claim_id, c.number, c.statement, coalesce(t.type, 'fact'), "
            "c.status, c.confidence, c.pinned, c.created_at, c.updated_at, c.evidence_at, "
            "c.derived_from, c.evidence_count, c.merged_into, c.superseded_by, c.valid_to, "
            "c.origin, c.archived_at, c.decayed_at "
            "FROM claims c "
            "LEFT JOIN claim_types t ON t.claim = c.id AND t.pos = 0 "
        )
        params: tuple[Any, ...] = (user,)
        if claim_ids is None:
            sql += f"WHERE c.user = ? AND c.status IN {_LIVE} "
        else:
            # `+c.user`: by the claim_id index (on (user, …) SQLite walked all the user's claims)
            sql += "WHERE +c.user = ? AND c.claim_id IN (SELECT value FROM json_each(?)) "
            params += (json.dumps(list(claim_ids)),)
        return [
            ClaimState(
                row=r[0],
                claim_id=r[1],
                number=r[2],
                statement=r[3],
                category=r[4],
                status=r[5],
                confidence=r[6],
                pinned=bool(r[7]),
                created_at=r[8],
                updated_at=r[9],
                evidence_at=r[10],
                derived_from=tuple(json.loads(r[11])),
                evidence_count=r[12],
                merged_into=r[13],
                superseded_by=r[14],
                valid_to=r[15],
                origin=r[16],
                archived_at=r[17],
                decayed_at=r[18],
            )
            for r in self._db.execute(sql + "ORDER BY c.number", params)
        ]

    @_translated
    def settled(self, user: str, claim_mark: int, since: str, below: float) -> bool:
        """Whether none of the user's live claims is new (a row after ``claim_mark``) or
        changed (``updated_at`` after ``since``), and none unpinned has a confidence under
        ``below``: what a consolidation asks instead of reading every claim when nothing
        else is to do. The first two by the row and (user, updated_at) indexes; the last
        reads the user's claims (0.3 s at 100k)."""
        live = f"user = ? AND status IN {_LIVE}"
        row = self._db.execute(
            f"SELECT EXISTS (SELECT 1 FROM claims WHERE id > ? AND +{live}) "
            f"OR EXISTS (SELECT 1 FROM claims WHERE updated_at > ? AND {live}) "
            f"OR EXISTS (SELECT 1 FROM claims WHERE {live} AND pinned = 0 AND confidence < ?)",
            (claim_mark, user, since, user, user, below),
        ).fetchone()
        return not row[0]

    @_translated
    def claim_statuses(self, user: str, claim_ids: Iterable[str]) -> dict[str, str]:
        """The current status of each of ``claim_ids`` the user has."""
        wanted = json.dumps(list(claim_ids))
        # `+user`: by the claim_id index; on (user, updated_at) SQLite read all the user's
        # claims, 1.2 s a call at 100k claims (once per open review item in each run).
        rows = self._db.execute(
            "SELECT claim_id, status FROM claims WHERE +user = ? AND claim_id IN "
            "(SELECT value FROM json_each(?))",
            (user, wanted),
        )
        return {row[0]: row[1] for row in rows}

    # -- episodes ---------------------------------------------------------------------------

    @_translated
    def add_episodes(self, episodes: Sequence[Episode]) -> list[Episode]:
        """Store the episodes not stored yet (by ``Episode.key``) in one transaction; the new
        ones, with their rows."""
        stored = []
        with self._write() as db:
            for e in episodes:
                cursor = db.execute(
                    "INSERT OR IGNORE INTO episodes (episode_id, user, key, session_id, role, "
                    "text, occurred_at, created_at, source, channel, meta) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        e.episode_id, e.user, e.key, e.conversation_id, e.role, e.text,
                        e.occurred_at, e.created_at, e.source, e.channel,
                        json.dumps(e.meta, ensure_ascii=False, sort_keys=True),
                    ),
                )  # fmt: skip
                if cursor.rowcount:
                    stored.append(replace(e, row=int(cursor.lastrowid or 0)))
            _log_rows(db, "episode", [e.row for e in stored])
        return stored

    @_translated
    def stored_keys(self, user: str, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` (``Episode.key``) name messages the user has stored already."""
        found = self._db.execute(
            "SELECT key FROM episodes WHERE user = ? AND key IN (SELECT value FROM json_each(?))",
            (user, json.dumps(list(keys))),
        )
        return {row[0] for row in found}

    @_translated
    def episodes_after(self, user: str, row: int) -> list[Episode]:
        """The user's episodes stored after row ``row``, oldest first by time."""
        return self._episodes("WHERE user = ? AND id > ? ORDER BY occurred_at, id", (user, row))

    @_translated
    def episodes_since(self, user: str, start: str, limit: int) -> tuple[int, list[Episode]]:
        """How many of the user's episodes occurred at ``start`` or later, and the newest
        ``limit`` of them, newest first (``recent_activity``)."""
        (count,) = self._db.execute(
            "SELECT count(*) FROM episodes WHERE user = ? AND occurred_at >= ?", (user, start)
        ).fetchone()
        sql = "WHERE user = ? AND occurred_at >= ? ORDER BY occurred_at DESC, id DESC LIMIT ?"
        return int(count), self._episodes(sql, (user, start, limit))

    @_translated
    def episodes_by_rows(self, rows: Sequence[int]) -> list[Episode]:
        """Episodes of any user by row (for indexing)."""
        sql = "WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id"
        return self._episodes(sql, (json.dumps(list(rows)),))

    @_translated
    def episodes_by_ids(self, user: str, episode_ids: Sequence[str]) -> list[Episode]:
        """The user's episodes of these ids, in no particular order."""
        sql = "WHERE user = ? AND episode_id IN (SELECT value FROM json_each(?))"
        return self._episodes(sql, (user, json.dumps(list(episode_ids))))

    def previous_messages(self, rows: Sequence[int]) -> dict[int, str]:
        """The text of the message before each of these episodes in its conversation (the
        conversation's order: time, then arrival), for the rows that have one."""
        return {row: text for row, (_, text) in self._neighbours(rows, after=False).items()}

    def next_messages(self, rows: Sequence[int]) -> dict[int, str]:
        """The text of the message after each of these episodes in its conversation (the
        reply, often what holds the answer), for the rows that have one."""
        return {row: text for row, (_, text) in self._neighbours(rows, after=True).items()}

    def neighbour_rows(self, rows: Sequence[int]) -> set[int]:
        """The rows of the messages just before and just after each of these episodes in its
        conversation: the ones whose index entry names them as a neighbour."""
        return {
            found
            for after in (False, True)
            for found, _ in self._neighbours(rows, after=after).values()
        }

    def _neighbours(self, rows: Sequence[int], *, after: bool) -> dict[int, tuple[int, str]]:
        """Each episode's neighbour in its conversation (before it, or ``after``), as its row
        and text; episodes without one are left out."""
        beyond, order = (">", "ASC") if after else ("<", "DESC")
        found = self._db.execute(
            "SELECT e.id, n.id, n.text FROM episodes e JOIN episodes n ON n.id = ("
            "SELECT p.id FROM episodes p WHERE p.user = e.user "
            f"AND p.session_id = e.session_id AND (p.occurred_at {beyond} e.occurred_at "
            f"OR (p.occurred_at = e.occurred_at AND p.id {beyond} e.id)) "
            f"ORDER BY p.occurred_at {order}, p.id {order} LIMIT 1) "
            "WHERE e.id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(rows)),),
        )
        return {row: (other, text) for row, other, text in found}

    def derived_statements(self, episodes: Sequence[Episode]) -> dict[str, list[str]]:
        """The statements of the claims derived from each of these episodes (by episode id),
        the claims of the episode's own user only, whatever their status (a superseded claim
        still says what the message said), oldest first."""
        # One scan of the claims with a lineage (51 ms for 2,000 episodes among 100k derived
        # claims); joining the episodes by row instead re-read that list per claim (36 s).
        owner = {e.episode_id: e.user for e in episodes}
        found = self._db.execute(
            "SELECT j.value, c.user, c.statement "
            "FROM claims c CROSS JOIN json_each(c.derived_from) j "
            "WHERE c.derived_from <> '[]' AND j.value IN (SELECT value FROM json_each(?)) "
            "ORDER BY c.id",
            (json.dumps(list(owner)),),
        )
        statements: dict[str, list[str]] = {}
        for episode_id, user, statement in found:
            if owner.get(episode_id) == user:
                statements.setdefault(episode_id, []).append(statement)
        return statements

    def source_messages(self, claim_rows: Sequence[int]) -> dict[str, list[tuple[int, str]]]:
        """The episodes each of these claims (by row; keyed by claim id) was derived from, of
        the claim's own user (``derived_from`` is not checked on import): their rows and
        texts, in the order the claim names them."""
        found = self._db.execute(
            "SELECT c.claim_id, e.id, e.text FROM claims c CROSS JOIN json_each(c.derived_from) j "
            "CROSS JOIN episodes e ON e.episode_id = j.value AND e.user = c.user "
            "WHERE c.id IN (SELECT value FROM json_each(?)) ORDER BY c.id, j.key",
            (json.dumps(list(claim_rows)),),
        )
        sources: dict[str, list[tuple[int, str]]] = {}
        for claim, row, text in found:
            sources.setdefault(claim, []).append((row, text))
        return sources

    def _episodes(self, where: str, params: Sequence[Any]) -> list[Episode]:
        rows = self._db.execute(
            "SELECT episode_id, user, session_id, role, text, occurred_at, created_at, source, "
            f"channel, meta, id FROM episodes {where}",
            params,
        )
        return [
            Episode(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], json.loads(r[9]), r[10])
            for r in rows
        ]

    @_translated
    def add_episode_refs(self, found: Sequence[EpisodeRef]) -> None:
        with self._write() as db:
            db.executemany(
                "INSERT OR IGNORE INTO episode_refs (episode, via, kind, target, label) "
                "VALUES (?,?,?,?,?)",
                [(r.episode_row, r.via, r.kind, r.target, r.label) for r in found],
            )

    @_translated
    def episode_refs(self, rows: Sequence[int]) -> list[EpisodeRef]:
        """The references of the episodes at ``rows``, direct ones first."""
        found = self._db.execute(
            "SELECT episode, via, kind, target, label FROM episode_refs WHERE episode IN "
            "(SELECT value FROM json_each(?)) ORDER BY episode, via, kind, label",
            (json.dumps(list(rows)),),
        )
        return [EpisodeRef(*row) for row in found]

    @_translated
    def tool_refs(self, rows: Sequence[int]) -> list[EpisodeRef]:
        """The ``tool`` references of the episodes at ``rows`` (what ``search_memory`` gave
        them): the newest episode's first, each episode's in the order they were given."""
        found = self._db.execute(
            "SELECT episode, via, kind, target, label FROM episode_refs WHERE via = 'tool' "
            "AND episode IN (SELECT value FROM json_each(?)) ORDER BY episode DESC, rowid",
            (json.dumps(list(rows)),),
        )
        return [EpisodeRef(*row) for row in found]

    @_translated
    def conversations(self, user: str) -> list[Conversation]:
        """The user's conversations, most recent first."""
        rows = self._db.execute(
            "SELECT session_id, count(*), min(occurred_at), max(occurred_at) FROM episodes "
            "WHERE user = ? GROUP BY session_id ORDER BY max(occurred_at) DESC, session_id",
            (user,),
        )
        return [Conversation(*row) for row in rows]

    @_translated
    def conversation_episodes(self, user: str, conversation_id: str) -> list[Episode]:
        """A conversation's episodes in order (its user's only)."""
        return self._episodes(
            "WHERE user = ? AND session_id = ? ORDER BY occurred_at, id", (user, conversation_id)
        )

    @_translated
    def pin_to_conversation(
        self, user: str, conversation_id: str, *, kind: str, target: str, label: str, when: str
    ) -> bool:
        """Pin a claim or note to a conversation; False when it already was."""
        with self._write() as db:
            cursor = db.execute(
                "INSERT OR IGNORE INTO session_pins VALUES (?,?,?,?,?,?)",
                (user, conversation_id, kind, target, label, when),
            )
            return bool(cursor.rowcount)

    @_translated
    def unpin_from_conversation(
        self, user: str, conversation_id: str, *, kind: str, target: str
    ) -> bool:
        """Take a claim or note off a conversation's pins; False when it was not pinned."""
        with self._write() as db:
            cursor = db.execute(
                "DELETE FROM session_pins WHERE user = ? AND session_id = ? AND kind = ? "
                "AND target = ?",
                (user, conversation_id, kind, target),
            )
            return bool(cursor.rowcount)

    @_translated
    def conversation_pins(self, user: str, conversation_id: str) -> list[tuple[str, str, str]]:
        """``(kind, target, label)`` of a conversation's pins, in the order pinned."""
        rows = self._db.execute(
            "SELECT kind, target, label FROM session_pins WHERE user = ? AND session_id = ? "
            "ORDER BY created_at, label",
            (user, conversation_id),
        )
        return [(row[0], row[1], row[2]) for row in rows]

    @_translated
    def counts(self, user: str) -> dict[str, Any]:
        """How much the user has: claims by status, contexts, entities, episodes, conversations,
        open review items (``lsp-memory status``)."""
        db = self._db
        by_status = dict(
            db.execute(
                "SELECT status, count(*) FROM claims WHERE user = ? GROUP BY status", (user,)
            ).fetchall()
        )

        def one(sql: str) -> int:
            return int(db.execute(sql, (user,)).fetchone()[0])

        return {
            "claims": {"total": sum(by_status.values()), **dict(sorted(by_status.items()))},
            "contexts": one("SELECT count(*) FROM contexts WHERE user = ?"),
            "entities": one("SELECT count(*) FROM entities WHERE user = ?"),
            "episodes": one("SELECT count(*) FROM episodes WHERE user = ?"),
            "sessions": one("SELECT count(DISTINCT session_id) FROM episodes WHERE user = ?"),
            "review_items": one(
                "SELECT count(*) FROM review_items WHERE user = ? AND status = 'open'"
            ),
        }

    @_translated
    def last_rows(self) -> tuple[int, int]:
        """The last episode and claim rows (any user): a run's marks."""
        row = self._db.execute(
            "SELECT (SELECT coalesce(max(id), 0) FROM episodes), "
            "(SELECT coalesce(max(id), 0) FROM claims)"
        ).fetchone()
        return int(row[0]), int(row[1])

    # -- runs -------------------------------------------------------------------------------

    @_translated
    def last_run(self, user: str, kind: str = "consolidate") -> Run | None:
        """The user's latest run of ``kind`` that was not undone."""
        row = self._db.execute(
            f"SELECT {_RUN_COLUMNS} FROM runs WHERE user = ? AND kind = ? AND undone_at IS NULL "
            "ORDER BY number DESC LIMIT 1",
            (user, kind),
        ).fetchone()
        return _run(row) if row else None

    @_translated
    def run(self, user: str, number: int) -> Run | None:
        row = self._db.execute(
            f"SELECT {_RUN_COLUMNS} FROM runs WHERE user = ? AND number = ?", (user, number)
        ).fetchone()
        return _run(row) if row else None

    @_translated
    def run_changes(self, user: str, number: int) -> list[tuple[int, str, Any, Any, str]]:
        """``(claim number, field, before, after, reason)`` of a run, in the order made."""
        rows = self._db.execute(
            "SELECT c.number, x.field, x.before, x.after, x.reason FROM runs r "
            "JOIN run_changes x ON x.run = r.id JOIN claims c ON c.id = x.claim "
            "WHERE r.user = ? AND r.number = ? ORDER BY x.pos",
            (user, number),
        )
        return [(r[0], r[1], json.loads(r[2]), json.loads(r[3]), r[4]) for r in rows]

    @_translated
    def record_run(
        self,
        user: str,
        *,
        kind: str,
        now: str,
        created_at: str,
        changes: Sequence[FieldChange],
        items: Sequence[NewItem] = (),
        episode_mark: int = 0,
        claim_mark: int = 0,
        summary: dict[str, Any] | None = None,
        decides: tuple[int, str] | None = None,
        expected: dict[str, str] | None = None,
        withdraw: Iterable[int] = (),
        follows: int | None = None,
        indexed: Iterable[int] | None = None,
    ) -> int:
        """Apply ``changes`` and raise ``items`` as one run, all or nothing; its number.

        ``decides``: (review item number, its new status), for a review decision.
        ``expected``: claim id → status each must still have (else ``StaleError``, nothing
        written): a decision on claims changed since is refused. ``withdraw``: numbers of
        open items to close as ``withdrawn`` (their claims changed since). ``follows``: the
        number of the last run of ``kind`` the run was planned after (0: none); if another
        has been recorded or undone since, ``ConcurrentRun`` and nothing is written.
        ``indexed``: the claim rows the search indexes must see again (default: every row
        changed)."""
        with self._write() as db:
            if follows is not None:
                row = db.execute(
                    "SELECT coalesce(max(number), 0) FROM runs WHERE user = ? AND kind = ? "
                    "AND undone_at IS NULL",
                    (user, kind),
                ).fetchone()
                if row[0] != follows:
                    raise ConcurrentRun(kind)
            if expected:
                found = dict(
                    db.execute(
                        "SELECT claim_id, status FROM claims WHERE +user = ? AND claim_id IN "
                        "(SELECT value FROM json_each(?))",
                        (user, json.dumps(list(expected))),
                    ).fetchall()
                )
                for claim_id, status in expected.items():
                    if found.get(claim_id) != status:
                        raise StaleError(claim_id, status, found.get(claim_id))
            number = _next_number(db, "runs", user)
            cursor = db.execute(
                "INSERT INTO runs (user, number, kind, now, created_at, episode_mark, claim_mark, "
                "summary) VALUES (?,?,?,?,?,?,?,?)",
                (
                    user,
                    number,
                    kind,
                    now,
                    created_at,
                    episode_mark,
                    claim_mark,
                    json.dumps(summary or {}),
                ),
            )
            run_row = cursor.lastrowid
            _apply(db, [(c.claim_row, c.field, c.after) for c in changes])
            db.executemany(
                "INSERT INTO run_changes VALUES (?,?,?,?,?,?,?)",
                [
                    (run_row, pos, c.claim_row, c.field, _dump(c.before), _dump(c.after), c.reason)
                    for pos, c in enumerate(changes)
                ],
            )
            first = _next_number(db, "review_items", user)
            db.executemany(
                "INSERT INTO review_items (user, number, run, kind, claims, pair, proposal, "
                "reason, state, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        user,
                        first + i,
                        run_row,
                        item.kind,
                        json.dumps(list(item.claims)),
                        pair_key(item.claims),
                        item.proposal,
                        item.reason,
                        json.dumps(item.state, sort_keys=True),
                        created_at,
                    )
                    for i, item in enumerate(items)
                ],
            )
            if decides is not None:
                db.execute(
                    "UPDATE review_items SET status = ?, decided_by = ? "
                    "WHERE user = ? AND number = ?",
                    (decides[1], run_row, user, decides[0]),
                )
            db.executemany(
                "UPDATE review_items SET status = 'withdrawn' WHERE user = ? AND number = ? "
                "AND status = 'open'",
                [(user, n) for n in withdraw],
            )
            rows = {c.claim_row for c in changes} if indexed is None else set(indexed)
            _log_rows(db, "claim", rows)
            return number

    @_translated
    def undo_run(self, user: str, number: int, when: str, *, cascade: bool = False) -> list[Undone]:
        """Put back what run ``number`` changed, in one transaction: each field to its value
        before the run (newest change first), its open items withdrawn, the item it decided
        reopened. The runs undone, in order; [] when the run is not there or already undone.

        A later run (not undone) that changed a field this run changed, or decided an item it
        raised, was planned on what this run did; undoing this one alone would leave that
        run's changes standing on nothing, and undoing it afterwards would bring this one's
        back. So: ``LaterRuns`` naming them, nothing written; with ``cascade`` they are undone
        first, newest first, each as if on its own. ``ChangedSince`` (nothing written) when a
        field to put back was changed since outside any run (a retract, a restore, a newer
        claim superseding it) to a value neither the run's nor the one before it."""
        with self._write() as db:
            found = db.execute(
                "SELECT id FROM runs WHERE user = ? AND number = ? AND undone_at IS NULL",
                (user, number),
            ).fetchone()
            if found is None:
                return []
            later = _later_runs(db, user, found[0], number)
            if later and not cascade:
                rows = db.execute(
                    f"SELECT {_RUN_COLUMNS} FROM runs WHERE id IN "
                    "(SELECT value FROM json_each(?)) ORDER BY number",
                    (json.dumps([row for row, _ in later]),),
                )
                raise LaterRuns(number, [_run(row) for row in rows])
            return [
                Undone(run_number, _undo(db, run_row, run_number, when))
                for run_row, run_number in [*reversed(later), (found[0], number)]
            ]

    # -- review items -----------------------------------------------------------------------

    @_translated
    def review_items(
        self, user: str, *, status: str | None = "open", run: int | None = None
    ) -> list[ReviewItem]:
        """The user's review items (by default the open ones; with ``run``, the ones that
        run raised), by number."""
        sql = (
            f"SELECT {_ITEM_COLUMNS} FROM review_items i JOIN runs r ON r.id = i.run "
            "WHERE i.user = ?"
        )
        params: list[Any] = [user]
        if status is not None:
            sql += " AND i.status = ?"
            params.append(status)
        if run is not None:
            sql += " AND r.number = ?"
            params.append(run)
        return [_item(row) for row in self._db.execute(sql + " ORDER BY i.number", params)]

    @_translated
    def review_item(self, user: str, number: int) -> ReviewItem | None:
        row = self._db.execute(
            f"SELECT {_ITEM_COLUMNS} FROM review_items i JOIN runs r ON r.id = i.run "
            "WHERE i.user = ? AND i.number = ?",
            (user, number),
        ).fetchone()
        return _item(row) if row else None

    @_translated
    def stale_items(self, user: str) -> list[int]:
        """The numbers of the user's open review items a claim of which is not (or no
        longer the user's) in the status the item recorded: compared in one query, by the
        claim_id index (4 191 items of 87 058 claims: 0.1 s, where reading them as
        ``review_items`` and their claims' statuses took 1.5 s)."""
        rows = self._db.execute(
            "SELECT DISTINCT i.number FROM review_items i CROSS JOIN json_each(i.state) j "
            "LEFT JOIN claims c ON c.claim_id = j.key AND +c.user = i.user "
            "WHERE i.user = ? AND i.status = 'open' AND c.status IS NOT j.value "
            "ORDER BY i.number",
            (user,),
        )
        return [row[0] for row in rows]

    @_translated
    def review_pairs(self, user: str) -> set[str]:
        """The claim sets items were raised for (any status but withdrawn)."""
        rows = self._db.execute(
            "SELECT pair FROM review_items WHERE user = ? AND status <> 'withdrawn'", (user,)
        )
        return {row[0] for row in rows}


class ConcurrentRun(Exception):
    """Another run of the same kind was recorded (or undone) while this one was planned."""


class StaleError(Exception):
    """A review decision on claims that changed since the item was raised."""

    def __init__(self, claim_id: str, expected: str, found: str | None) -> None:
        super().__init__(claim_id)
        self.claim_id = claim_id
        self.expected = expected
        self.found = found


class LaterRuns(Exception):
    """Later runs changed what the run to undo changed (``runs``, oldest first)."""

    def __init__(self, number: int, runs: list[Run]) -> None:
        super().__init__(number)
        self.number = number
        self.runs = runs


class ChangedSince(Exception):
    """A field run ``run`` changed was changed since outside any run: claim ``claim``
    (number) has ``now`` in ``field`` where the run left ``left``."""

    def __init__(
        self, run: int, claim: int, *, statement: str, field: str, now: Any, left: Any
    ) -> None:
        super().__init__(run, claim, field)
        self.run = run
        self.claim = claim
        self.statement = statement
        self.field = field
        self.now = now
        self.left = left


def _dump(value: Any) -> str:
    # What json.dumps writes for a finite float and a string, at a fifth of the time: a run
    # decaying 90 000 claims dumps a float and a timestamp twice each.
    if type(value) is float:
        return repr(value)
    if type(value) is str:
        return encode_basestring(value)
    return json.dumps(list(value) if isinstance(value, tuple) else value, ensure_ascii=False)


def _apply(db: sqlite3.Connection, updates: Sequence[tuple[int, str, Any]]) -> None:
    """Write ``updates`` in order: one ``UPDATE`` per claim, run together (``executemany``)
    for the claims whose changed fields are the same (a decay's confidence and
    ``decayed_at``): one statement per field of 90 000 decayed claims took a second."""
    fields: dict[int, dict[str, Any]] = {}
    for claim_row, name, value in updates:
        if name not in FIELDS:
            raise ValueError(f"a run may not change {name!r}")
        stored = json.dumps(list(value)) if name == "derived_from" else value
        fields.setdefault(claim_row, {})[name] = stored  # a later value of a field wins
    groups: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
    for claim_row, values in fields.items():
        groups.setdefault(tuple(values), []).append((*values.values(), claim_row))
    for names, rows in groups.items():
        assignments = ", ".join(f"{name} = ?" for name in names)
        db.executemany(f"UPDATE claims SET {assignments} WHERE id = ?", rows)


def _next_number(db: sqlite3.Connection, table: str, user: str) -> int:
    row = db.execute(f"SELECT coalesce(max(number), 0) FROM {table} WHERE user = ?", (user,))
    return int(row.fetchone()[0]) + 1


def _later_runs(
    db: sqlite3.Connection, user: str, run_row: int, number: int
) -> list[tuple[int, int]]:
    """``(row, number)`` of the runs after run ``number`` (not undone) that must be undone
    before it, oldest first: each changed a field, or decided an item, of it or of one of
    them."""
    fields = _fields(db, run_row)
    items = _raised(db, run_row)
    found = []
    rows = db.execute(
        "SELECT id, number FROM runs WHERE user = ? AND number > ? AND undone_at IS NULL "
        "ORDER BY number",
        (user, number),
    ).fetchall()
    for later_row, later_number in rows:
        changed = _fields(db, later_row)
        decided = {
            row[0]
            for row in db.execute("SELECT id FROM review_items WHERE decided_by = ?", (later_row,))
        }
        if fields.isdisjoint(changed) and items.isdisjoint(decided):
            continue
        found.append((later_row, later_number))
        fields |= changed
        items |= _raised(db, later_row)
    return found


def _fields(db: sqlite3.Connection, run_row: int) -> set[tuple[int, str]]:
    rows = db.execute("SELECT DISTINCT claim, field FROM run_changes WHERE run = ?", (run_row,))
    return {(row[0], row[1]) for row in rows}


def _raised(db: sqlite3.Connection, run_row: int) -> set[int]:
    return {row[0] for row in db.execute("SELECT id FROM review_items WHERE run = ?", (run_row,))}


_CURRENT = tuple(sorted(FIELDS))


def _undo(db: sqlite3.Connection, run_row: int, number: int, when: str) -> int:
    """Undo one run (no later run depends on it); how many changes it had."""
    changes = db.execute(
        "SELECT x.claim, x.field, x.before, x.after, c.number, c.statement, "
        + ", ".join(f"c.{name}" for name in _CURRENT)
        + " FROM run_changes x JOIN claims c ON c.id = x.claim WHERE x.run = ? ORDER BY x.pos",
        (run_row,),
    ).fetchall()
    before: dict[tuple[int, str], Any] = {}
    after: dict[tuple[int, str], Any] = {}
    for claim, name, was, became, *_ in changes:
        before.setdefault((claim, name), json.loads(was))
        after[claim, name] = json.loads(became)
    for claim, name, _, _, claim_number, statement, *current in changes:
        now = current[_CURRENT.index(name)]
        if name == "derived_from":
            now = json.loads(now)
        if now not in (after[claim, name], before[claim, name]):
            raise ChangedSince(
                number,
                claim_number,
                statement=statement,
                field=name,
                now=now,
                left=after[claim, name],
            )
    _apply(db, [(claim, name, json.loads(was)) for claim, name, was, *_ in reversed(changes)])
    db.execute("UPDATE runs SET undone_at = ? WHERE id = ?", (when, run_row))
    db.execute(
        "UPDATE review_items SET status = 'withdrawn' WHERE run = ? AND status = 'open'",
        (run_row,),
    )
    # An item whose raising run is undone stays closed (stores undone out of order before
    # later runs were checked hold such items).
    db.execute(
        "UPDATE review_items SET decided_by = NULL, status = CASE WHEN (SELECT undone_at "
        "FROM runs WHERE runs.id = review_items.run) IS NULL THEN 'open' ELSE 'withdrawn' END "
        "WHERE decided_by = ?",
        (run_row,),
    )
    _log_rows(db, "claim", {claim for claim, *_ in changes})
    return len(changes)
