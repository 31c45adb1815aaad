"""The claims of User memory: a claim's line and JSON, and the steps that add the claims a
document references and the claims given a label (``--attach``, global pins, ``--pin``),
each claim once under the first label that reached it, with a warning for one that is not
live."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from lsp_memory.model import LIVE_STATUSES, Claim, ClaimStatus, RefKind, doc_id
from lsp_memory.services.block.pieces import (
    MEMORY,
    P_LABELLED,
    P_REFERENCED,
    Build,
    Piece,
    fold,
)
from lsp_memory.services.kernel import lineage
from lsp_memory.services.kernel.asof import successor_then
from lsp_memory.services.kernel.resolver import Resolution
from lsp_memory.store.sqlite import Store


def claim_line(label: str, claim: Claim) -> str:
    """``- [LABEL] [claim_type] statement (answers: Q1; Q2)`` and a newline; a statement's
    further lines follow indented by two spaces; a claim that is not active says its status
    (``[contested]`` too: an LLM should know a claim is disputed)."""
    lines = [line.rstrip() for line in claim.statement.strip().splitlines()]
    status = "" if claim.status is ClaimStatus.ACTIVE else f" [{claim.status.value}]"
    statement = "\n".join("  " + line if line else "" for line in lines)[2:]
    questions = [fold(q) for q in claim.possible_questions if q.strip()]
    answers = f" (answers: {'; '.join(questions)})" if questions else ""
    return f"- [{label}] [{claim.claim_type}]{status} {statement}{answers}\n"


def claim_data(label: str, ref: str | None, claim: Claim) -> dict[str, Any]:
    """A claim item's JSON (without ``tokens`` and ``markdown``)."""
    return {
        "kind": "claim",
        "label": label,
        "ref": ref,
        "number": claim.number,
        "friendly_id": claim.friendly_id,
        "claim_id": claim.claim_id,
        "claim_type": claim.claim_type,
        "status": claim.status.value,
        "confidence": claim.confidence,
        "statement": claim.statement,
        "possible_questions": list(claim.possible_questions),
    }


def add_referenced(
    build: Build, resolutions: Sequence[Resolution], *, store: Store, user: str
) -> None:
    """The claims the document's references reach, in document order, as REFERENCED."""
    for resolution in resolutions:
        if resolution.error is not None or resolution.kind == "note":
            continue
        reference = resolution.reference
        written = reference.text if reference is not None else resolution.ref
        uuid = reference is not None and reference.kind is RefKind.UUID
        label = "REFERENCED" if uuid else f"REFERENCED {written}"
        add_labelled(
            build, label, resolution.claims, written, store=store, user=user, referenced=True
        )


def add_not_found(build: Build, resolutions: Sequence[Resolution]) -> None:
    """A ``[NOT FOUND …]`` line for each distinct reference (not a note link) that names
    nothing, after the referenced claims: the LLM reads that it was not given what the user
    pointed at, and the line outlasts every automatic memory in the budget."""
    seen: set[str] = set()
    for resolution in resolutions:
        if resolution.error is None or resolution.kind == "note":
            continue
        reference = resolution.reference
        if reference is not None and reference.kind is RefKind.NOTE:
            continue  # said among the referenced documents
        written = reference.text if reference is not None else resolution.ref
        if written in seen:
            continue
        seen.add(written)
        build.add(
            Piece(
                MEMORY,
                P_REFERENCED,
                "unresolved",
                f"unresolved:{written}",
                f"- [NOT FOUND {written}] {fold(resolution.error)}\n",
                {"kind": "unresolved", "ref": written, "error": resolution.error},
            )
        )


def add_labelled(
    build: Build,
    label: str,
    claims: Iterable[Claim],
    ref: str | None = None,
    *,
    store: Store,
    user: str,
    referenced: bool = False,
) -> None:
    """Each claim not shown yet, as a line under ``label`` (a referenced one is never
    dropped for the budget)."""
    for claim in claims:
        if ref is not None:
            _status(build, ref, claim, store, user)
        if claim.claim_id in build.shown:
            continue
        build.shown[claim.claim_id] = claim
        build.add(
            Piece(
                MEMORY,
                P_REFERENCED if referenced else P_LABELLED,
                "claim",
                doc_id("claim", claim.claim_id),
                claim_line(label, claim),
                claim_data(label, ref, claim),
                referenced=referenced,
            )
        )


def _status(build: Build, ref: str, claim: Claim, store: Store, user: str) -> None:
    """Warn about a claim that is not live, naming its successor when it has one (as of
    the block's date, its successor then)."""
    if claim.status in LIVE_STATUSES:
        return
    successor = ""
    if build.as_of is not None:
        found = successor_then(store, user, claim, build.as_of)
    else:
        found = lineage.successor(store, user, claim)
    if found is not None:
        word = "by" if claim.superseded_by else "into"
        successor = f" {word} #{found.number} @{found.friendly_id}"
    build.warn(f"{ref}: claim #{claim.number} is {claim.status.value}{successor}")
