"""Writing one record at a time: ``claim add``, ``context add`` and ``claim retract`` on the
command line, ``lspMemory.addClaim`` and "Remember selection" in the editor. Each is one call
here, checked by the same rules as ``import`` (the record is handed to the importer in its
interchange form), so a claim added by hand and an imported one cannot differ. A claim added
without a type is classified (``services.classify``); an imported one never is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsp_memory.errors import UserError
from lsp_memory.ids import now
from lsp_memory.model import Claim, ClaimStatus, Context
from lsp_memory.services.classify import Classifier
from lsp_memory.services.interchange import add_record
from lsp_memory.store.sqlite import Store


class Records:
    """One user's single-record writes."""

    def __init__(self, store: Store, user: str, classifier: Classifier | None = None) -> None:
        self.store = store
        self.user = user
        self.classifier = classifier or Classifier()

    def add_claim(
        self,
        statement: str,
        *,
        claim_type: str | None = None,
        domain: str | None = None,
        contexts: Sequence[str] = (),
        tags: Sequence[str] = (),
        confidence: float | None = None,
        pinned: bool = False,
    ) -> Claim:
        """Store a new claim, of ``claim_type`` or else of the category the classifier
        chooses; ``UserError`` with the reason when it is not acceptable."""
        if not statement.strip():
            raise UserError("a claim needs a statement; the text is empty")
        record: dict[str, Any] = {
            "kind": "claim",
            "statement": statement,
            "claim_type": claim_type or self.classifier.classify(statement).category,
        }
        if domain:
            record["context_domain"] = domain
        if contexts:
            record["contexts"] = list(contexts)
        if tags:
            record["tags"] = list(tags)
        if confidence is not None:
            record["confidence"] = confidence
        if pinned:
            record["pinned"] = True
        return add_record(self.store, record, user=self.user).claims[0]

    def add_context(
        self,
        name: str,
        *,
        parent: str | None = None,
        description: str | None = None,
        friendly_id: str | None = None,
    ) -> Context:
        """Store a new context; ``UserError`` with the reason when it is not acceptable."""
        if not name.strip():
            raise UserError("a context needs a name; the name is empty")
        record: dict[str, Any] = {"kind": "context", "name": name}
        if parent:
            record["parent"] = parent
        if description:
            record["description"] = description
        if friendly_id:
            record["friendly_id"] = friendly_id
        return add_record(self.store, record, user=self.user).contexts[0]

    def retract(self, claim: Claim) -> bool:
        """Mark ``claim`` retracted; False when it already was."""
        if claim.status is ClaimStatus.RETRACTED:
            return False
        self.store.set_status(self.user, claim.claim_id, ClaimStatus.RETRACTED, now())
        return True

    def claims(self, statuses: Sequence[ClaimStatus] | None, limit: int | None) -> list[Claim]:
        """The user's claims by number (``claim list``)."""
        return self.store.claims(self.user, statuses=statuses, limit=limit)
