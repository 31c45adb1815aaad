"""What the memory held at a moment (``--as-of``, MCP ``as_of``) and how a claim got to be as
it is (``claim history``): one reading of the store's records of change for every door.

A claim is put back as it was at a moment by undoing, newest first, every change recorded
after it: the single writes (retract, restore, pin, supersede, a context added or removed:
``claim_writes``) and the changes of every consolidation and review run (``run_changes``, at
the run's ``now``; a run undone since counts until it was undone). A claim created after the
moment did not exist then. A claim superseded before single writes were recorded is taken to
have been active until its ``valid_to``, the moment it was superseded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time
from itertools import islice
from typing import Any

from lsp_memory.errors import UserError
from lsp_memory.ids import moment_of, stored, timestamp
from lsp_memory.model import LIVE_STATUSES, Claim, ClaimStatus, Context
from lsp_memory.services.kernel import lineage
from lsp_memory.services.kernel.resolver import Resolution
from lsp_memory.store.sqlite import TYPES_SEP, ClaimEvent, LiveRow, Store

_FIELDS = (
    "status",
    "confidence",
    "pinned",
    "superseded_by",
    "merged_into",
    "valid_to",
    "derived_from",
    "evidence_count",
    "updated_at",
)
"""The fields of ``model.Claim`` a recorded change can be undone on."""


def as_of_moment(value: str) -> str:
    """``value`` (an ISO 8601 date or date-time) as a stored moment: a date alone is the
    end of that day in UTC, so what was written that day counts. ``UserError`` with one line
    for anything else."""
    text = value.strip()
    try:
        day = date.fromisoformat(text)
    except ValueError:
        pass
    else:
        if len(text) == 10:  # 2026-03-01, not a week date or an ordinal
            return stored(datetime.combine(day, time.max, tzinfo=UTC))
    try:
        moment_of(text)
        return timestamp(text)
    except ValueError:
        raise UserError(
            f"not a date: {value!r} (give an ISO 8601 date or date-time, "
            "e.g. 2026-03-01 or 2026-03-01T09:30:00Z)"
        ) from None


def live_then(claim: Claim, moment: str) -> bool:
    """Whether ``claim`` (as it was at ``moment``: ``claims_then``) was live then: a live
    status, and valid then (``valid_from`` not after it, ``valid_to`` not before it)."""
    return (
        claim.status in LIVE_STATUSES
        and (claim.valid_from is None or claim.valid_from <= moment)
        and (claim.valid_to is None or claim.valid_to > moment)
    )


def claims_then(
    store: Store, user: str, claims: Sequence[Claim], moment: str
) -> list[Claim | None]:
    """Each of ``claims`` as it was at ``moment``: None for one created after it."""
    existing = [claim for claim in claims if claim.created_at <= moment]
    events: dict[str, list[ClaimEvent]] = {}
    for event in store.claim_events(user, [c.claim_id for c in existing], after=moment):
        events.setdefault(event.claim_id, []).append(event)
    then = {
        claim.claim_id: _undone(claim, _with_legacy(claim, events.get(claim.claim_id, [])), moment)
        if claim.claim_id in events
        or claim.updated_at > moment
        or claim.status is ClaimStatus.SUPERSEDED
        else claim  # nothing to undo
        for claim in existing
    }
    return [then.get(claim.claim_id) for claim in claims]


def live_claims_then(store: Store, user: str, moment: str) -> LiveThen:
    """The claims of the user live at ``moment``, as they were then: what a context block as
    of a date picks its pinned claims and automatic memories from. Kept until the store
    changes (an agent asks several questions of one date), the last moment's only."""
    kept: dict[str, LiveThen] = store.remembered(("live then", user), dict)
    if moment not in kept:
        kept.clear()
        kept[moment] = LiveThen(store, user, moment)
    return kept[moment]


class LiveThen:
    """The claims live at a moment, most recently updated (then) first, chosen without
    loading them: each claim made by then is a light row (``Store.standing_by``) whose
    status, confidence, pin, validity and ``updated_at`` are put back as they were (the value
    the first change after the moment replaced: what undoing every later change, newest
    first, leaves). Only the claims a block shows are loaded and put back whole
    (``claims_then``). At 100 000 claims with a change each, putting every claim back whole
    took seconds; reading the light rows takes a fraction of one."""

    def __init__(self, store: Store, user: str, moment: str) -> None:
        self.store, self.user, self.moment = store, user, moment
        standing = store.standing_by(user, moment)
        found = standing.live
        self._loaded: dict[str, Claim] = {}
        # Superseded since, perhaps by a version that did not record it: put back whole.
        now = store.claims_by_ids(user, standing.superseded, links=False)
        then = [c for c in claims_then(store, user, now, moment) if c and live_then(c, moment)]
        for claim in then:
            self._loaded[claim.claim_id] = claim
            types = TYPES_SEP.join(claim.claim_types) or None
            found.append(
                (
                    claim.updated_at,
                    claim.number,
                    claim.claim_id,
                    claim.confidence,
                    claim.pinned,
                    types,
                )
            )
        if then:
            found.sort(key=lambda row: (row[0], row[1]), reverse=True)
        self._live: list[LiveRow] = found
        self._by_id = {row[2]: row for row in found}

    def pinned(self) -> list[Claim]:
        """The claims pinned then, whatever their confidence."""
        return self._load([claim_id for _, _, claim_id, _, pinned, _ in self._live if pinned])

    def newest(
        self,
        limit: int,
        *,
        types: Sequence[str] | None = None,
        since: str | None = None,
        min_confidence: float = 0.0,
    ) -> list[Claim]:
        """Up to ``limit`` claims of confidence ``min_confidence`` or more then, newest
        first; with ``types``, those of any of them; with ``since``, updated then or later:
        the core, active and recent tiers, as the store reads them today."""
        wanted = set(types) if types is not None else None
        found = (
            claim_id
            for updated, _, claim_id, confidence, _, kinds in self._live
            if confidence >= min_confidence
            and updated >= (since or "")
            and (wanted is None or not wanted.isdisjoint((kinds or "").split(TYPES_SEP)))
        )
        return self._load(list(islice(found, limit)))

    def of(self, claim_ids: Sequence[str], min_confidence: float = 0.0) -> dict[str, Claim]:
        """Those of ``claim_ids`` live then at ``min_confidence`` or more, as they were."""
        live = [self._by_id.get(claim_id) for claim_id in claim_ids]
        taken = [row[2] for row in live if row and row[3] >= min_confidence]
        return {claim.claim_id: claim for claim in self._load(taken)}

    def _load(self, claim_ids: list[str]) -> list[Claim]:
        """The claims ``claim_ids`` as they were, in that order; loaded once each."""
        missing = [claim_id for claim_id in claim_ids if claim_id not in self._loaded]
        if missing:
            now = self.store.claims_by_ids(self.user, missing, links=False)
            for claim in claims_then(self.store, self.user, now, self.moment):
                if claim is not None:
                    self._loaded[claim.claim_id] = claim
        return [self._loaded[claim_id] for claim_id in claim_ids if claim_id in self._loaded]


def claim_then(store: Store, user: str, claim: Claim, moment: str) -> Claim | None:
    """``claim`` as it was at ``moment``, None when it was created after it."""
    return claims_then(store, user, [claim], moment)[0]


def successor_then(store: Store, user: str, claim: Claim, moment: str) -> Claim | None:
    """``lineage.successor`` as of ``moment`` for ``claim`` as it was then: the chain as it
    was then (its claims' pointers then), its first claim live then, as it was; None when
    the chain then ended before one (a successor made later did not exist)."""
    return lineage.successor(
        store,
        user,
        claim,
        then=lambda found: claim_then(store, user, found, moment),
        live=lambda found: live_then(found, moment),
    )


def resolved_then(store: Store, user: str, found: Resolution, moment: str) -> Resolution:
    """What ``found`` resolved to, as it was at ``moment`` (``resolve --as-of``): a claim as
    it was then, or an error if it did not exist yet; a context, tag, domain or entity with
    the claims in it now that were live then, each as it was (a context or entity created
    after the moment did not exist); a note as it is."""
    if not found.resolved or found.kind in (None, "note"):
        return found
    if found.kind == "claim":
        claim = found.claims[0]
        then = claim_then(store, user, claim, moment)
        if then is None:
            return replace(found, claims=(), error=_not_yet(f"#{claim.number}", moment))
        return replace(found, claims=(then,))
    group = found.context or found.entity
    if group is not None and group.created_at > moment:
        return replace(found, claims=(), error=_not_yet(f"@{found.id}", moment))
    key = {
        "context": found.context.context_id if found.context else "",
        "entity": found.entity.entity_id if found.entity else "",
        "tag": found.id or "",
        "domain": found.id or "",
    }[found.kind]
    everyone: list[Claim | None]
    if found.context is not None:
        everyone = list(_in_context_then(store, user, found.context, moment))
    else:
        everyone = claims_then(store, user, store.members(user, found.kind, key), moment)
    return replace(
        found, claims=tuple(c for c in everyone if c is not None and live_then(c, moment))
    )


def _in_context_then(store: Store, user: str, context: Context, moment: str) -> list[Claim]:
    """The claims in ``context`` or beneath it at ``moment``, as they were, newest first: its
    members now and the claims linked to or unlinked from it since, with those links undone
    (``claim_writes``). The tree is today's: a context moved since is beneath its new
    parent."""
    names = _beneath(store.contexts(user), context.friendly_id)
    ids = {claim.claim_id for claim in store.members(user, "context", context.context_id)}
    ids.update(store.linked_after(user, sorted(names), moment))
    claims = store.claims_by_ids(user, sorted(ids))
    claims.sort(key=lambda claim: (claim.updated_at, claim.number), reverse=True)
    return [
        then
        for then in claims_then(store, user, claims, moment)
        if then is not None and names.intersection(then.contexts or ())
    ]


def _beneath(contexts: Sequence[Context], top: str) -> set[str]:
    """The friendly ids of ``top`` and the contexts beneath it, ten levels down at most
    (the depth a context's members reach)."""
    found, level = {top}, {top}
    for _ in range(10):
        level = {c.friendly_id for c in contexts if c.parent in level} - found
        if not level:
            break
        found |= level
    return found


def _not_yet(name: str, moment: str) -> str:
    return f"{name} did not exist yet on {moment}"


def _with_legacy(claim: Claim, events: list[ClaimEvent]) -> list[ClaimEvent]:
    """``events`` and, for a claim superseded before single writes were recorded (no event
    sets its ``superseded_by``), its superseding at ``valid_to``."""
    if (
        claim.status is not ClaimStatus.SUPERSEDED
        or not claim.valid_to
        or any(e.field == "superseded_by" and e.after == claim.superseded_by for e in events)
    ):
        return events
    at = claim.valid_to
    made = [
        ClaimEvent(claim.claim_id, at, "superseded", "status", "active", "superseded"),
        ClaimEvent(claim.claim_id, at, "superseded", "superseded_by", None, claim.superseded_by),
        ClaimEvent(claim.claim_id, at, "superseded", "valid_to", None, at),
    ]
    return sorted([*events, *made], key=lambda event: event.key)


def _undone(claim: Claim, events: Sequence[ClaimEvent], moment: str | None = None) -> Claim:
    """``claim`` with ``events`` (oldest first) undone, newest first; only those after
    ``moment`` when given."""
    state: dict[str, Any] = {name: getattr(claim, name) for name in _FIELDS}
    contexts = list(claim.contexts or ())
    for event in reversed(events):
        if moment is not None and event.at <= moment:
            break
        if event.field == "context":
            if event.after is not None and event.after in contexts:
                contexts.remove(event.after)
            elif event.before is not None and event.before not in contexts:
                contexts.append(event.before)
        elif event.field in state:
            state[event.field] = event.before
    if state["updated_at"] is None or (moment and state["updated_at"] > moment):
        state["updated_at"] = claim.created_at
    return replace(
        claim,
        status=ClaimStatus(state["status"]),
        confidence=float(state["confidence"]),
        pinned=bool(state["pinned"]),
        superseded_by=state["superseded_by"],
        merged_into=state["merged_into"],
        valid_to=state["valid_to"],
        derived_from=tuple(state["derived_from"]),
        evidence_count=int(state["evidence_count"]),
        updated_at=state["updated_at"],
        contexts=tuple(contexts) if claim.contexts is not None else None,
    )


def status_since(store: Store, user: str, claim: Claim) -> str | None:
    """When ``claim`` took its status (the last recorded change that set it); None when no
    record says (a claim created so, or changed before changes were recorded)."""
    events = _with_legacy(claim, store.claim_events(user, [claim.claim_id]))
    for event in reversed(events):
        if event.field == "status" and event.after == claim.status.value:
            return event.at
    return None


@dataclass(frozen=True, slots=True)
class Change:
    """One line of a claim's history: what one write or run did to it at one moment."""

    at: str
    what: str
    fields: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """Each field changed: (before, after)."""
    run: int | None = None
    run_kind: str | None = None
    undone: bool = False
    other: Claim | None = None
    """The claim it names: the one that superseded or absorbed it, or that it replaced."""
    relation: str = ""
    """How ``other`` relates: ``by`` (superseded by), ``into`` (merged into), ``replaces``."""


def history(store: Store, user: str, claim: Claim) -> list[Change]:
    """Every recorded change of ``claim``, oldest first: its creation (as it was created),
    each write or run that changed it, and each claim it superseded or absorbed."""
    events = _with_legacy(claim, store.claim_events(user, [claim.claim_id]))
    first = _undone(claim, events)
    created = {
        "status": (None, first.status.value),
        "confidence": (None, first.confidence),
    }
    found: list[Change] = [Change(claim.created_at, "created", created)]
    groups: dict[tuple[Any, ...], Change] = {}
    for event in events:
        key = (event.at, event.what, event.run, event.undone)
        change = groups.get(key)
        if change is None:
            change = groups[key] = Change(event.at, event.what, {}, event.run, event.run_kind)
            change = replace(change, undone=event.undone)
            groups[key] = change
            found.append(change)
        before = change.fields.get(event.field, (event.before, None))[0]
        change.fields[event.field] = (before, event.after)
    pointers = {
        value
        for change in found
        for name, (_, value) in change.fields.items()
        if name in ("superseded_by", "merged_into") and value
    }
    named = {c.claim_id: c for c in store.claims_by_ids(user, sorted(pointers))}
    found = [_named(change, named) for change in found]
    found += _replaced(store, user, claim)
    found.sort(key=lambda change: change.at)
    return found


def _replaced(store: Store, user: str, claim: Claim) -> list[Change]:
    """The history lines of the claims ``claim`` superseded or absorbed in a merge."""
    events = store.events_naming(user, claim.claim_id)
    seen = {event.claim_id for event in events}
    older = store.claims_by_ids(
        user, sorted(seen | set(store.claims_pointing_to(user, claim.claim_id)))
    )
    by_id = {other.claim_id: other for other in older}
    for old in older:  # superseded before single writes were recorded
        if old.claim_id not in seen:
            events += [e for e in _with_legacy(old, []) if e.field == "superseded_by"]
    found = []
    for event in events:
        other = by_id.get(event.claim_id)
        if other is None:
            continue
        what = event.what if event.run is not None else "supersedes"
        found.append(
            Change(event.at, what, {}, event.run, event.run_kind, event.undone, other, "replaces")
        )
    return found


def _named(change: Change, claims: dict[str, Claim]) -> Change:
    """``change`` with the claim its new ``superseded_by`` or ``merged_into`` names."""
    for name, relation in (("superseded_by", "by"), ("merged_into", "into")):
        value = change.fields.get(name, (None, None))[1]
        if value and value in claims:
            return replace(change, other=claims[value], relation=relation)
    return change


def change_record(change: Change) -> dict[str, Any]:
    """A history line as JSON (``claim history --json``)."""
    return {
        "at": change.at,
        "what": change.what,
        "changes": {
            name: {"before": before, "after": after}
            for name, (before, after) in change.fields.items()
        },
        "run": change.run,
        "run_kind": change.run_kind,
        "undone": change.undone,
        "claim": (
            {
                "number": change.other.number,
                "friendly_id": change.other.friendly_id,
                "relation": change.relation,
            }
            if change.other is not None
            else None
        ),
    }
