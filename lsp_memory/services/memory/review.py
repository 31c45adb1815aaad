"""Review: the decisions consolidation leaves to the user (``lsp-memory review``,
``lspMemory.review``), or to a ``review_command`` (a local LLM, say) asked once per run.

An item is a contradiction (two claims that negate each other, both ``contested``) or a
merge that would lose words. Its proposal is one of:

- ``CONTRADICTION``: the first claim (the newer) wins: the others become ``superseded`` by it;
- ``MERGE``: the others are merged into the first (lineage and evidence joined);
- ``KEEP_BOTH``: every claim stays live and independent.

``accept`` applies the proposal, ``keep-both`` applies KEEP_BOTH, ``reject`` closes the item
and changes nothing. A claim that stays live leaves ``contested`` and gets back the
confidence the contradiction halved. A decision is a run like a consolidation: its changes are
recorded and ``consolidate --undo`` puts them back (the run that raised the item can be
undone only after the decision on it). An item whose claims changed since it was raised is
refused (the next consolidation withdraws it and looks again).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lsp_memory.errors import UserError
from lsp_memory.ids import now as wall_clock
from lsp_memory.services.kernel.command import CommandFailed, ask
from lsp_memory.services.memory.consolidate import indexed_rows, merge_into
from lsp_memory.store.sqlite import ClaimState, FieldChange, ReviewItem, StaleError, Store
from lsp_memory.text import one_line

DECISIONS = ("MERGE", "KEEP_BOTH", "CONTRADICTION")
VERBS = ("accept", "reject", "keep-both")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a decision did: its run (None when nothing changed) and one line saying so."""

    item: int
    run_id: int | None
    message: str


class Review:
    """One user's review items and the decisions on them."""

    def __init__(
        self,
        store: Store,
        user: str,
        *,
        command: str | None = None,
        timeout_s: float = 30.0,
        clock: Callable[[], str] = wall_clock,
    ) -> None:
        self.store = store
        self.user = user
        self.command = command
        self.timeout_s = timeout_s
        self.clock = clock

    def items(self) -> list[dict[str, Any]]:
        """The open items as JSON (``review --json``, ``lspMemory.review``): each with its
        claims as they are now, and ``stale`` when they changed since it was raised."""
        found = self.store.review_items(self.user)
        ids = [claim_id for item in found for claim_id in item.claims]
        states = {s.claim_id: s for s in self.store.claim_states(self.user, ids)}
        return [self._json(item, states) for item in found]

    def _json(self, item: ReviewItem, states: dict[str, ClaimState]) -> dict[str, Any]:
        claims = [states[c] for c in item.claims if c in states]
        return {
            "id": item.number,
            "run_id": item.run,
            "kind": item.kind,
            "proposal": item.proposal,
            "reason": item.reason,
            "stale": any(item.state.get(s.claim_id) != s.status for s in claims),
            "claims": [
                {
                    "claim": f"#{s.number}",
                    "statement": s.statement,
                    "category": s.category,
                    "status": s.status,
                    "confidence": s.confidence,
                    "created_at": s.created_at,
                }
                for s in claims
            ],
        }

    def decide(self, number: int, verb: str, *, reason: str = "by the user") -> Outcome:
        """Apply ``verb`` (accept, reject, keep-both) to open item ``number``; ``UserError``
        with the reason when it cannot be."""
        if verb not in VERBS:
            raise UserError(f"unknown review decision {verb!r} (expected {', '.join(VERBS)})")
        # A number past SQLite's integers is no item's (it overflowed the query: an
        # internal error at both doors, found by the MCP fuzzer).
        item = self.store.review_item(self.user, number) if 0 < number < 2**63 else None
        if item is None:
            raise UserError(f"no review item {number}: `lsp-memory review` lists the open ones")
        if item.status != "open":
            raise UserError(f"review item {number} is already closed ({item.status})")
        if verb == "reject":
            return self._apply(item, None, "rejected", reason)
        decision = item.proposal if verb == "accept" else "KEEP_BOTH"
        return self._apply(
            item, decision, "kept-both" if decision == "KEEP_BOTH" else "accepted", reason
        )

    def ask_command(self) -> tuple[list[Outcome], str | None]:
        """Ask ``review_command`` about every open item in one batch and apply its answers;
        the outcomes, and a warning when the command failed (then the items wait)."""
        if not self.command:
            return [], None
        items = self.items()
        if not items:
            return [], None
        try:
            answers = _answers(ask(self.command, items, self.timeout_s), items)
        except CommandFailed as failure:
            return [], f"review_command failed ({failure}); the items wait for `lsp-memory review`"
        outcomes = []
        for number, decision in answers:
            item = self.store.review_item(self.user, number)
            if item is None or item.status != "open":
                continue
            status = "kept-both" if decision == "KEEP_BOTH" else "accepted"
            try:
                outcomes.append(self._apply(item, decision, status, "by review_command"))
            except UserError as error:
                outcomes.append(Outcome(number, None, str(error)))
        return outcomes, None

    def _apply(self, item: ReviewItem, decision: str | None, status: str, reason: str) -> Outcome:
        states = {s.claim_id: s for s in self.store.claim_states(self.user, item.claims)}
        for claim_id, expected in item.state.items():
            found = states.get(claim_id)
            if found is None or found.status != expected:
                raise _stale(item, found, expected)
        claims = [states[c] for c in item.claims]
        changes = _changes(item, decision, claims, f"review {item.number} {reason}", self.clock())
        try:
            run_id = self.store.record_run(
                self.user,
                kind="review",
                now=self.clock(),
                created_at=self.clock(),
                changes=changes,
                decides=(item.number, status),
                expected=item.state,
                summary={"item": item.number, "decision": decision or "REJECT"},
                indexed=indexed_rows(changes),
            )
        except StaleError as error:
            raise _stale(item, None, error.expected) from None
        refs = ", ".join(f"#{s.number}" for s in claims)
        said = {
            None: f"rejected: {refs} left as they are",
            "KEEP_BOTH": f"kept {refs}, each live",
            "MERGE": (
                f"merged {', '.join(f'#{s.number}' for s in claims[1:])} into #{claims[0].number}"
            ),
            "CONTRADICTION": (
                f"#{claims[0].number} stands; "
                f"{', '.join(f'#{s.number}' for s in claims[1:])} superseded by it"
            ),
        }[decision]
        return Outcome(item.number, run_id, f"review {item.number}: {said} (run {run_id})")


def _changes(
    item: ReviewItem, decision: str | None, claims: Sequence[ClaimState], reason: str, when: str
) -> list[FieldChange]:
    changes: list[FieldChange] = []

    def put(state: ClaimState, name: str, after: Any) -> None:
        before = getattr(state, name)
        if before != after:
            changes.append(FieldChange(state.row, name, before, after, reason))
            setattr(state, name, after)

    if decision is None:
        return changes
    winner, others = claims[0], claims[1:]
    keep = list(claims) if decision == "KEEP_BOTH" else [winner]
    for state in keep:
        if state.status == "contested":
            put(state, "status", "active")
            if item.kind == "contradiction":  # the halving ends with the dispute
                put(state, "confidence", min(1.0, round(state.confidence * 2, 4)))
    if decision == "CONTRADICTION":
        for state in others:
            put(state, "status", "superseded")
            put(state, "superseded_by", winner.claim_id)
            put(state, "valid_to", when)
    elif decision == "MERGE":
        merge_into(winner, others, when, put)
    return changes


def _stale(item: ReviewItem, found: ClaimState | None, expected: str) -> UserError:
    what = (
        f"#{found.number} “{one_line(found.statement, 60)}” is now {found.status}"
        if found is not None
        else "one of its claims changed"
    )
    return UserError(
        f"review item {item.number} is out of date: {what} (it was {expected} when the item "
        "was raised); `lsp-memory consolidate` withdraws it and looks again"
    )


def _answers(answers: Any, items: Sequence[dict[str, Any]]) -> list[tuple[int, str]]:
    """The command's decisions, checked: ``[{"id": N, "decision": "MERGE"|…}]``, one per
    item asked about."""
    asked = {item["id"] for item in items}
    if not isinstance(answers, list) or not all(isinstance(a, dict) for a in answers):
        raise CommandFailed('output is not a JSON list of {"id": …, "decision": …} objects')
    found = []
    for answer in answers:
        number, decision = answer.get("id"), answer.get("decision")
        if number not in asked:
            raise CommandFailed(f"an answer for item {number!r}, which was not asked about")
        if decision not in DECISIONS:
            raise CommandFailed(f"unknown decision {decision!r} (expected {', '.join(DECISIONS)})")
        found.append((int(number), str(decision)))
    return found
