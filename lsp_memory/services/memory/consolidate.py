"""Consolidation: the job that keeps a memory true over time (``lsp-memory consolidate``, or
the language server every ``consolidate_every``). One run, over one user's live claims:

1. **Evidence** — an episode (a conversation turn) with cosine ≥ 0.75 to a claim, newer
   than the claim's last evidence and not already behind it, raises its confidence by
   0.05·(1 − confidence), joins its ``derived_from`` and counts in ``evidence_count``.
2. **Decay** — confidence × exp(−rate · days since the later of the claim's creation, its
   last evidence and ``decayed_at``, where its decay was last applied), the rate per day
   by where the claim came from and its category (``config.DecayRates``: 0.01 for claims
   inferred from conversations, none for what the user stated); rounded to 4 places, and
   only a change the rounding keeps moves ``decayed_at``, so runs minutes apart decay as
   one run would. Pinned claims do not decay.
3. **Contradictions** — two live claims of one category with cosine ≥ 0.70 where one
   negates the other, or two claims giving different values of one slot of one person
   ("I work as a backend developer" / "I work in frontend now", whatever their cosine;
   ``services.memory.compare``): both halved, both ``contested``, a review item. The seed's
   0.85 was set for another model; with ours it misses most negations
   (``benchmarks.contradictions``).
4. **Merge** — claims with cosine > 0.85 to the most confident of them (one category, no
   contradiction, that one above 0.6) are merged into it when nothing is lost (every number,
   name and content word — by its family: "allergic"/"allergy" — of each is in it); the
   others become ``merged`` with ``merged_into`` and ``archived_at``, its ``derived_from``
   gains them and their lineage, its ``evidence_count`` theirs, its ``updated_at`` the run's
   time. A cluster that would lose words, or whose best claim is not above 0.6, is a review
   item instead.
5. **Deprecate** — confidence below 0.3 → ``deprecated`` (pinned claims excepted).

Pairs are only looked for among claims new or changed since the last run, compared with
all live claims (all pairs on the first run). A run with nothing to do (no new message, no
days to decay, no claim new or changed since, none to deprecate: ``Store.settled``) reads
no claim's state and no vector. Every change is recorded with its value before and after
and the reason, in one transaction (a killed run leaves nothing half done), and ``undo``
puts a run's changes back, last in first out: a run that a later one built on (changed the
same fields, decided its item) is undone only after it, or with it (``cascade``). Running
twice at the same ``now`` changes nothing the second time.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from lsp_memory import ids
from lsp_memory.config import DecayRates
from lsp_memory.errors import UserError
from lsp_memory.ids import now as wall_clock
from lsp_memory.model import LIVE_STATUSES, MIN_CONFIDENCE, doc_id
from lsp_memory.services.memory.compare import conflict, lost, negated, opposite, slot
from lsp_memory.store.sqlite import (
    ChangedSince,
    ClaimState,
    ConcurrentRun,
    Episode,
    FieldChange,
    LaterRuns,
    NewItem,
    Run,
    Store,
    Undone,
)
from lsp_memory.text import one_line

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from lsp_memory.services.retrieval.embedding import VectorSide

EVIDENCE_COSINE = 0.75
EVIDENCE_STEP = 0.05
CONTRADICTION_COSINE = 0.70
MERGE_COSINE = 0.85
MERGE_MIN_CONFIDENCE = 0.6
DEPRECATE_BELOW = 0.3
NEIGHBOURS = 32
"""At most this many most similar claims are paired with each claim (a memory of
near-identical statements would otherwise pair every claim with every other)."""
_BLOCK = 1024
_LIVE = frozenset(str(status) for status in LIVE_STATUSES)


@dataclass(slots=True)
class Report:
    """What a run did (or, dry, would do): ``lsp-memory consolidate --json``."""

    run_id: int | None
    now: str
    dry_run: bool
    changes: list[dict[str, Any]] = field(default_factory=list)
    merged: int = 0
    contradictions: int = 0
    deprecated: int = 0
    review: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "now": self.now,
            "dry_run": self.dry_run,
            "changes": self.changes,
            "merged": self.merged,
            "contradictions": self.contradictions,
            "deprecated": self.deprecated,
            "review": self.review,
        }


STEPS = 8
"""A run's steps, as its progress counts them: the claims read, evidence, decay, similar
pairs, contradictions and conflicts, merges, deprecation, the run written."""


class Consolidation:
    """Runs and undoes consolidation for one user."""

    def __init__(
        self,
        store: Store,
        user: str,
        vectors: VectorSide | None,
        *,
        clock: Callable[[], str] = wall_clock,
        decay: DecayRates | None = None,
    ) -> None:
        """``vectors``: the embedding model and vector index (None: no model, so only decay
        and deprecation run, with a warning). ``decay``: the rates (the setting's)."""
        self.store = store
        self.user = user
        self.vectors = vectors
        self.clock = clock
        self.decay = decay or DecayRates()

    def run(
        self,
        now: str,
        *,
        dry_run: bool = False,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> Report:
        """Consolidate as of ``now`` (a stored timestamp); with ``dry_run`` nothing is
        written and the report says what would change. ``progress(stage, done, total)``
        hears of each of its steps (``STEPS``) as ``consolidate``."""
        done = iter(range(1, STEPS + 1))

        def step() -> None:
            if progress is not None:
                progress("consolidate", next(done), STEPS)

        store, user = self.store, self.user
        episode_mark, claim_mark = store.last_rows()  # before reading: nothing slips by
        last = store.last_run(user)
        episodes = []
        if self.vectors is not None:
            found = store.episodes_after(user, last.episode_mark if last else 0)
            # Only the user speaks for themselves: the assistant's replies are no evidence.
            episodes = [e for e in found if e.role == "user"]
        # Nothing to do (no evidence, no decay, no claim new or changed since the last run,
        # none to deprecate): the claims are not read at all, 2 s at 100k claims.
        quiet = (
            last is not None
            and not episodes
            and not _decays(last, now)
            and store.settled(user, last.claim_mark, last.created_at, DEPRECATE_BELOW)
        )
        states = [] if quiet else store.claim_states(user)
        step()  # the claims read
        plan = _Plan(states, now, lambda: self._vectors_of(states), self.vectors)
        if self.vectors is None:
            plan.warnings.append(
                "no embedding model: evidence, negations and merges need one; only decay, "
                "values in conflict and deprecation ran"
            )
        plan.evidence(episodes)
        step()
        plan.decay(last, self.decay)
        step()
        seen = store.review_pairs(user)
        fresh = plan.fresh(last)
        pairs = plan.pairs(fresh)
        step()  # the similar pairs found
        plan.contradictions(pairs, seen)
        plan.conflicts(fresh, seen)
        step()
        plan.merges(pairs, seen)
        step()
        plan.deprecate()
        plan.settle()
        step()
        withdraw = store.stale_items(user)
        report = Report(None, now, dry_run, warnings=plan.warnings)
        number_of = {s.row: s.number for s in states}
        report.changes = [
            {
                "claim": f"#{number_of[c.claim_row]}",
                "field": c.field,
                "before": list(c.before) if isinstance(c.before, tuple) else c.before,
                "after": list(c.after) if isinstance(c.after, tuple) else c.after,
                "reason": c.reason,
            }
            for c in plan.changes
        ]
        report.merged = plan.merged
        report.contradictions = plan.contradicted
        report.deprecated = plan.deprecated
        numbers = {s.claim_id: s.number for s in states}
        report.review = [
            {
                "id": None,
                "kind": item.kind,
                "claims": [f"#{numbers[c]}" for c in item.claims],
                "proposal": item.proposal,
                "reason": item.reason,
            }
            for item in plan.items
        ]
        if dry_run:
            step()
            return report
        try:
            report.run_id = store.record_run(
                user,
                kind="consolidate",
                now=now,
                created_at=self.clock(),
                changes=plan.changes,
                items=plan.items,
                episode_mark=episode_mark,
                claim_mark=claim_mark,
                summary={
                    "changes": len(plan.changes),
                    "merged": plan.merged,
                    "contradictions": plan.contradicted,
                    "deprecated": plan.deprecated,
                    "review": len(plan.items),
                },
                withdraw=withdraw,
                follows=last.number if last else 0,
                indexed=indexed_rows(plan.changes),
            )
        except ConcurrentRun:
            raise UserError(
                "another consolidation of this memory ran meanwhile (another process or the "
                "language server); nothing was written: run it again"
            ) from None
        if plan.items:
            raised = store.review_items(user, status=None, run=report.run_id)
            for entry, item in zip(report.review, raised, strict=True):
                entry["id"] = item.number
        step()  # written
        return report

    def due(self, every: float) -> bool:
        """Whether ``every`` seconds have passed since the user's last consolidation."""
        last = self.store.last_run(self.user)
        if last is None:
            return True
        return (
            ids.moment_of(self.clock()) - ids.moment_of(last.created_at)
        ).total_seconds() >= every

    def undo(self, run_id: int, *, cascade: bool = False) -> list[Undone]:
        """Put back what run ``run_id`` changed; the runs undone, in order. ``UserError``, one
        line, nothing undone: for an unknown run or one already undone; when later runs
        changed what it changed (naming them; ``cascade`` undoes them first, newest first,
        in the same transaction); when a claim it changed was changed since outside any run."""
        found = self.store.run(self.user, run_id)
        if found is None:
            raise UserError(
                f"no run {run_id}: each `lsp-memory consolidate` and review decision prints "
                "its run id"
            )
        if found.undone_at is not None:
            raise UserError(f"run {run_id} was already undone ({found.undone_at})")
        try:
            undone = self.store.undo_run(self.user, run_id, self.clock(), cascade=cascade)
        except LaterRuns as later:
            raise UserError(_after_later_runs(later)) from None
        except ChangedSince as changed:
            raise UserError(_changed_since(run_id, changed)) from None
        if not undone:
            raise UserError(f"run {run_id} was already undone (by another process, just now)")
        return undone

    def _vectors_of(self, states: Sequence[ClaimState]) -> npt.NDArray[np.float32] | None:
        """Unit vectors of the claims' statements, row by row: from the vector index, the
        few it lacks embedded now (through the vector cache)."""
        side = self.vectors
        if side is None or not states:
            return None
        import numpy as np

        from lsp_memory.store.vectors import embed_cached, normalise

        matrix = np.zeros((len(states), side.embedder.dim), dtype=np.float32)
        known = side.index.vectors(doc_id("claim", s.claim_id) for s in states)
        missing = []
        for row, state in enumerate(states):
            vector = known.get(doc_id("claim", state.claim_id))
            if vector is None:
                missing.append(row)
            else:
                matrix[row] = vector
        if missing:
            texts = [states[row].statement for row in missing]
            matrix[missing] = normalise(embed_cached(side.embedder, side.cache, texts))
        return matrix


class _Plan:
    """One run's decisions, made on the claims' states in memory; ``changes`` and ``items``
    are what the run writes."""

    def __init__(
        self,
        states: list[ClaimState],
        now: str,
        matrix: Callable[[], npt.NDArray[np.float32] | None],
        vectors: VectorSide | None,
    ) -> None:
        """``matrix``: the claims' unit vectors row by row (None without a model), asked for
        only when a step has something to compare: a run with no new episode and no claim
        changed since the last one never gathers 100k vectors."""
        self.states = states
        self.now = now
        self.moment = ids.moment_of(now)
        self._matrix = matrix
        self.vectors = vectors
        self.changes: list[FieldChange] = []
        self.items: list[NewItem] = []
        self.warnings: list[str] = []
        self.merged = self.contradicted = self.deprecated = 0
        self.touched: set[int] = set()  # indexes of claims that gained evidence
        self._valence: dict[int, bool] = {}  # index → whether its statement is negated
        self._halved: set[int] = set()  # indexes of claims a contradiction halved this run

    @cached_property
    def matrix(self) -> npt.NDArray[np.float32] | None:
        return self._matrix()

    def _set(self, state: ClaimState, name: str, after: Any, reason: str) -> None:
        before = getattr(state, name)
        if before == after:
            return
        self.changes.append(FieldChange(state.row, name, before, after, reason))
        setattr(state, name, after)

    # 1. evidence
    def evidence(self, episodes: Sequence[Episode]) -> None:
        if not episodes or self.vectors is None or self.matrix is None:
            return
        import numpy as np

        from lsp_memory.store.vectors import embed_cached, normalise

        side = self.vectors
        found = normalise(embed_cached(side.embedder, side.cache, [e.text for e in episodes]))
        for start in range(0, len(episodes), _BLOCK):
            scores = found[start : start + _BLOCK] @ self.matrix.T
            for offset, episode in enumerate(episodes[start : start + _BLOCK]):
                for index in np.flatnonzero(scores[offset] >= EVIDENCE_COSINE).tolist():
                    self._support(index, episode, float(scores[offset, index]))

    def _support(self, index: int, episode: Episode, cosine: float) -> None:
        state = self.states[index]
        if episode.episode_id in state.derived_from:
            return
        if state.evidence_at is not None and episode.occurred_at <= state.evidence_at:
            return
        reason = f"evidence: episode {episode.episode_id} (cosine {cosine:.2f})"
        raised = round(state.confidence + EVIDENCE_STEP * (1 - state.confidence), 4)
        self._set(state, "confidence", raised, reason)
        self._set(state, "derived_from", (*state.derived_from, episode.episode_id), reason)
        self._set(state, "evidence_count", state.evidence_count + 1, reason)
        self._set(state, "evidence_at", episode.occurred_at, reason)
        self.touched.add(index)

    # 2. decay
    def decay(self, last: Run | None, rates: DecayRates) -> None:
        """Each decaying claim's confidence × exp(−rate · days since the later of its
        creation, its last evidence and ``decayed_at``), rounded to 4 places. Only a
        confidence the rounding changes is written, and with it ``decayed_at`` becomes the
        moment the exact curve passes the rounded value: what is stored is always a point of
        the one curve, so how often runs come makes no difference. (Counted from the last
        run instead, runs minutes apart each found a change below the rounding and the claim
        never decayed.)"""
        if not _decays(last, self.now):
            return
        for state in self.states:
            rate = rates.rate(state.origin, state.category)
            if state.pinned or rate <= 0:
                continue
            start = ids.moment_of(
                max(t for t in (state.created_at, state.evidence_at, state.decayed_at) if t)
            )
            days = (self.moment - start).total_seconds() / 86_400
            if days <= 0:
                continue
            before = state.confidence
            after = round(before * math.exp(-rate * days), 4)
            if after == before:
                continue  # below the rounding: the days keep counting from ``start``
            reason = f"decay: {days:.1f} days without evidence"
            self._set(state, "confidence", after, reason)
            self._set(state, "decayed_at", _passes(start, before, after, rate, self.now), reason)

    # pairs of similar claims
    def fresh(self, last: Run | None) -> set[int]:
        """Indexes of the claims new or changed since ``last`` (all of them on a first run),
        or that gained evidence in this one: only pairs with one of them are looked at."""
        if last is None:
            return set(range(len(self.states)))
        since, mark = last.created_at, last.claim_mark
        return {
            index
            for index, state in enumerate(self.states)
            if index in self.touched or state.row > mark or state.updated_at > since
        }

    def pairs(self, fresh: set[int]) -> dict[tuple[int, int], float]:
        """Similar pairs (cosine ≥ the contradiction threshold) of one category, as sorted
        index pairs; only those with a claim in ``fresh``."""
        if not fresh or self.matrix is None:
            return {}
        import numpy as np

        groups: dict[str, list[int]] = defaultdict(list)
        for index, state in enumerate(self.states):
            groups[state.category].append(index)
        found: dict[tuple[int, int], float] = {}
        for members in groups.values():
            if len(members) < 2 or fresh.isdisjoint(members):
                continue
            rows = np.asarray(members)
            vectors = self.matrix[rows]
            fresh_rows = [position for position, index in enumerate(members) if index in fresh]
            for start in range(0, len(fresh_rows), _BLOCK):
                block = fresh_rows[start : start + _BLOCK]
                scores = vectors[block] @ vectors.T
                scores[np.arange(len(block)), block] = -1.0  # not with itself
                for offset, position in enumerate(block):
                    row = scores[offset]
                    hits = np.flatnonzero(row >= CONTRADICTION_COSINE)
                    if hits.size > NEIGHBOURS:
                        hits = hits[np.argpartition(row[hits], -NEIGHBOURS)[-NEIGHBOURS:]]
                    a = members[position]
                    for hit in hits.tolist():
                        b = members[hit]
                        found[(min(a, b), max(a, b))] = float(row[hit])
        return found

    def _opposite(self, a: int, b: int) -> bool:
        """Whether claims ``a`` and ``b`` negate each other; most similar pairs have the same
        valence, so each claim's is worked out once and the words compared only when they
        differ."""
        valence = self._valence
        for index in (a, b):
            if index not in valence:
                valence[index] = negated(self.states[index].statement)
        if valence[a] == valence[b]:
            return False
        return opposite(self.states[a].statement, self.states[b].statement)

    # 3. contradictions
    def contradictions(self, pairs: dict[tuple[int, int], float], seen: set[str]) -> None:
        for (a, b), cosine in sorted(pairs.items(), key=lambda p: (-p[1], p[0])):
            first, second = self.states[a], self.states[b]
            if first.status not in _LIVE or second.status not in _LIVE:
                continue
            if not self._opposite(a, b):
                continue
            self._contest(a, b, seen, f"say opposite things (cosine {cosine:.2f})", "contradicts")

    def conflicts(self, fresh: set[int], seen: set[str]) -> None:
        """The newest live claim of a slot of one person and each older one giving another
        value ("I work in frontend now" / "I work as a backend developer"), whatever their
        cosine and category: contested like a contradiction (the newer proposed to replace
        the older). Only slots a ``fresh`` claim fills."""
        live = [i for i in fresh if self.states[i].status in _LIVE]
        if all(slot(self.states[i].statement) is None for i in live):
            return  # every pair below has a fresh claim with a slot: the others' are not read
        slots: dict[tuple[str, str], list[int]] = defaultdict(list)
        for index, state in enumerate(self.states):
            found = slot(state.statement) if state.status in _LIVE else None
            if found is not None:
                slots[found[:2]].append(index)
        for members in slots.values():
            if len(members) < 2 or fresh.isdisjoint(members):
                continue
            members.sort(key=lambda i: (self.states[i].created_at, self.states[i].number))
            newest = members[-1]
            for older in members[:-1]:
                if newest not in fresh and older not in fresh:
                    continue
                differ = conflict(self.states[newest].statement, self.states[older].statement)
                if differ is not None:
                    name, one, other = differ
                    said = f"give two values of {name} (“{one}”, “{other}”)"
                    self._contest(newest, older, seen, said, "gives another value than")

    def _contest(self, a: int, b: int, seen: set[str], why: str, verb: str) -> None:
        """Claims ``a`` and ``b`` disagree (``why``): both halved (once a run), both
        ``contested``, and a review item proposing that the newer replaces the older;
        nothing for a pair raised before."""
        first, second = self.states[a], self.states[b]
        key = " ".join(sorted((first.claim_id, second.claim_id)))
        if key in seen:
            return
        seen.add(key)
        newer, older = sorted((first, second), key=lambda s: (s.created_at, s.number))[::-1]
        reason = f"contradiction: #{newer.number} and #{older.number} {why}"
        for index, state in ((a, first), (b, second)):
            if index not in self._halved:
                self._halved.add(index)
                self._set(state, "confidence", round(state.confidence / 2, 4), reason)
            self._set(state, "status", "contested", reason)
        self.items.append(
            NewItem(
                kind="contradiction",
                claims=(newer.claim_id, older.claim_id),
                proposal="CONTRADICTION",
                reason=(
                    f"#{newer.number} “{one_line(newer.statement, 80)}” {verb} "
                    f"#{older.number} “{one_line(older.statement, 80)}”; proposed: the newer, "
                    f"#{newer.number}, replaces #{older.number}"
                ),
                state={newer.claim_id: "contested", older.claim_id: "contested"},
            )
        )
        self.contradicted += 1

    # 4. merge
    def merges(self, pairs: dict[tuple[int, int], float], seen: set[str]) -> None:
        neighbours: dict[int, list[int]] = defaultdict(list)
        for (a, b), cosine in pairs.items():
            first, second = self.states[a], self.states[b]
            if cosine <= MERGE_COSINE or first.status != "active" or second.status != "active":
                continue  # contested claims wait for their review
            if self._opposite(a, b):
                continue
            neighbours[a].append(b)
            neighbours[b].append(a)
        order = sorted(
            neighbours,
            key=lambda i: (
                -self.states[i].confidence,
                -self.states[i].evidence_count,
                self.states[i].number,
            ),
        )
        taken: set[int] = set()
        for seed in order:
            if seed in taken:
                continue
            winner = self.states[seed]
            members = sorted(n for n in neighbours[seed] if n not in taken)
            if not members:
                continue
            taken.update([seed, *members])
            losers = [self.states[m] for m in members]
            losses = {s.number: lost(s.statement, winner.statement) for s in losers}
            if any(losses.values()) or winner.confidence <= MERGE_MIN_CONFIDENCE:
                self._review_merge(winner, losers, losses, seen)
                continue
            self._merge(winner, losers)

    def _review_merge(
        self,
        winner: ClaimState,
        losers: list[ClaimState],
        losses: dict[int, frozenset[str]],
        seen: set[str],
    ) -> None:
        """A group not merged on its own: a review item. When merging would lose words,
        proposed: keep both; when nothing would be lost but no claim is confident enough
        (none above 0.6: a guess may be merged into a guess), proposed: merge."""
        ids = (winner.claim_id, *(s.claim_id for s in losers))
        key = " ".join(sorted(ids))
        if key in seen:
            return
        seen.add(key)
        missing = "; ".join(
            f"#{number} says {', '.join(sorted(words))}"
            for number, words in losses.items()
            if words
        )
        others = ", ".join(f"#{s.number}" for s in losers)
        said = f"{others} and #{winner.number} “{one_line(winner.statement, 80)}” are similar"
        if missing:
            proposal, why = (
                "KEEP_BOTH",
                f"but merging would lose words ({missing}); proposed: keep both",
            )
        else:
            proposal = "MERGE"
            why = (
                f"and say the same, but none has confidence above {MERGE_MIN_CONFIDENCE}; "
                f"proposed: merge them into #{winner.number}"
            )
        self.items.append(
            NewItem(
                kind="merge",
                claims=ids,
                proposal=proposal,
                reason=f"{said}, {why}",
                state=dict.fromkeys(ids, "active"),
            )
        )

    def _merge(self, winner: ClaimState, losers: list[ClaimState]) -> None:
        reasons = {
            s.claim_id: f"merge: #{s.number} into #{winner.number} (nothing lost)" for s in losers
        }
        reasons[winner.claim_id] = (
            f"merge: {', '.join(f'#{s.number}' for s in losers)} into #{winner.number}"
        )
        merge_into(
            winner,
            losers,
            self.now,
            lambda state, name, after: self._set(state, name, after, reasons[state.claim_id]),
        )
        self.merged += len(losers)

    # 5. deprecate
    def deprecate(self) -> None:
        for state in self.states:
            if state.status in _LIVE and not state.pinned and state.confidence < DEPRECATE_BELOW:
                reason = f"confidence {state.confidence:g} below {DEPRECATE_BELOW}"
                self._set(state, "status", "deprecated", reason)
                self.deprecated += 1

    def settle(self) -> None:
        """Record in each new review item its claims' statuses as the run leaves them (a
        decision is refused once they change)."""
        status = {s.claim_id: s.status for s in self.states}
        self.items = [
            replace(item, state={c: status[c] for c in item.claims}) for item in self.items
        ]


def _decays(last: Run | None, now: str) -> bool:
    """Whether a run at ``now`` can decay anything: not when the last run was at ``now`` or
    later. That run left each claim's decay applied or below the rounding as of its now;
    no more days have passed since the same starts by an earlier or the same ``now``, and a
    claim changed since (a new start) is one ``Store.settled`` finds."""
    return last is None or ids.moment_of(last.now) < ids.moment_of(now)


def _passes(start: datetime, before: float, after: float, rate: float, now: str) -> str:
    """The moment the curve ``before`` × exp(−``rate`` · days since ``start``) reaches
    ``after`` (``now`` at zero): a claim's ``decayed_at`` once its confidence is rounded to
    ``after``. Within a rounding step of ``now``, before or after it."""
    if after <= 0:
        return now
    days = math.log(before / after) / rate
    return ids.stored(start + timedelta(days=days))


def merge_into(
    winner: ClaimState,
    losers: Sequence[ClaimState],
    when: str,
    put: Callable[[ClaimState, str, Any], None],
) -> None:
    """Merge ``losers`` into ``winner`` as of ``when``, each field changed through ``put``:
    the losers become ``merged`` into it and archived (``archived_at``); the winner gains
    their ids and lineage in ``derived_from`` and their ``evidence_count``, and is updated
    (``updated_at``). Consolidation's merges and a ``MERGE`` review decision alike."""
    lineage = list(winner.derived_from)
    evidence = winner.evidence_count
    for loser in losers:
        put(loser, "status", "merged")
        put(loser, "merged_into", winner.claim_id)
        put(loser, "archived_at", when)
        lineage += [c for c in (loser.claim_id, *loser.derived_from) if c not in lineage]
        evidence += loser.evidence_count
    put(winner, "derived_from", tuple(lineage))
    put(winner, "evidence_count", evidence)
    put(winner, "updated_at", when)


def _after_later_runs(later: LaterRuns) -> str:
    """One line: run ``later.number`` cannot be undone before ``later.runs``."""
    names = [f"{run.number} ({_what(run)})" for run in later.runs]
    runs = f"run {names[0]}" if len(names) == 1 else f"runs {', '.join(names[:-1])} and {names[-1]}"
    first = "it first, or both" if len(names) == 1 else "them first, newest first, or all"
    return (
        f"run {later.number} cannot be undone on its own: {runs} changed the same claims or "
        f"review items after it; undo {first} at once with "
        f"`lsp-memory consolidate --undo {later.number} --cascade`"
    )


def _what(run: Run) -> str:
    if run.kind == "review":
        return f"the decision on review item {run.summary.get('item')}"
    return "a consolidation"


def _changed_since(run_id: int, changed: ChangedSince) -> str:
    """One line: a claim run ``changed.run`` changed was changed since outside any run."""
    first = "" if changed.run == run_id else " (undone first with --cascade)"
    return (
        f"run {run_id} cannot be undone: #{changed.claim} “{one_line(changed.statement, 60)}” "
        f"was changed after run {changed.run}{first} by something other than a run (claim "
        f"retract or restore, a newer claim): its {changed.field} is "
        f"{_shown(changed.now)} where the run left {_shown(changed.left)}; nothing was undone"
    )


def _shown(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, list):
        return f"{len(value)} entr{'ies' if len(value) != 1 else 'y'}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


THRESHOLDS = (DEPRECATE_BELOW, MIN_CONFIDENCE)
"""Confidences where retrieval changes its mind: below 0.3 a claim is deprecated, below 0.5
it leaves the automatic memories (``model.MIN_CONFIDENCE``)."""


def indexed_rows(changes: Sequence[FieldChange]) -> set[int]:
    """The claims whose changes the search indexes must see: a new status, or a confidence
    that crossed a retrieval threshold. Decay moves every claim's confidence a little each
    run; re-indexing them all took 11 s after a run over 100k claims, and what search shows
    of a claim's confidence is read from the store."""
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    rows = set()
    for change in changes:
        if change.field == "status":
            rows.add(change.claim_row)
        elif change.field == "confidence":
            first.setdefault(change.claim_row, change.before)
            last[change.claim_row] = change.after
    for row, before in first.items():
        after = last[row]
        if any((before < limit) != (after < limit) for limit in THRESHOLDS):
            rows.add(row)
    return rows
