"""A claim in the interchange form: the JSON object every door prints for a claim (export,
``claim show --json``, ``resolve --json``, the editor's and the agents' answers)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsp_memory.model import Claim


def drop_none(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` without its unset members (left out of the output, not written as null)."""
    return {key: value for key, value in record.items() if value is not None}


def claim_record(claim: Claim) -> dict[str, Any]:
    """A claim in interchange form (also the claim objects of ``resolve --json``)."""
    return drop_none(
        {
            "kind": "claim",
            "user": claim.user,
            "claim_id": claim.claim_id,
            "claim_number": claim.number,
            "friendly_id": claim.friendly_id,
            "statement": claim.statement,
            "claim_type": claim.claim_type,
            "claim_types": list(claim.claim_types),
            "context_domain": claim.domains[0] if claim.domains else None,
            "context_domains": list(claim.domains),
            "status": claim.status.value,
            "confidence": claim.confidence,
            "possible_questions": list(claim.possible_questions),
            "contexts": listed(claim.contexts),
            "tags": listed(claim.tags),
            "entities": listed(claim.entities),
            "pinned": claim.pinned,
            "created_at": claim.created_at,
            "updated_at": claim.updated_at,
            "valid_from": claim.valid_from,
            "valid_to": claim.valid_to,
            "superseded_by": claim.superseded_by,
            "merged_into": claim.merged_into,
            # Left out when unset, so records without lineage export as they always have.
            "derived_from": list(claim.derived_from) or None,
            "evidence_count": claim.evidence_count or None,
            # Left out when the lineage implies it (``default_origin``).
            "origin": None if claim.origin == default_origin(claim.derived_from) else claim.origin,
            "meta": claim.meta,
        }
    )


def default_origin(derived_from: Sequence[str]) -> str:
    """A claim's origin when none is given: ``inferred`` when it names what it was derived
    from (an extracted claim names its message), else ``stated``."""
    return "inferred" if derived_from else "stated"


def listed(values: tuple[str, ...] | None) -> list[str] | None:
    """A link list for output; None (left out) when it was not loaded."""
    return None if values is None else list(values)
