"""Writing one record at a time: ``claim add``, ``context add``, ``claim retract|restore``,
``claim pin|unpin`` and ``claim context add|remove`` on the command line, ``lspMemory.addClaim``,
"Remember selection" and "Pin" in the editor, the MCP tools that write a claim. Each is one
call here. A new record is checked by the same rules as ``import`` (the record is handed to
the importer in its interchange form), so a claim added by hand and an imported one cannot
differ. A claim added without a type is classified (``services.memory.classify``); an
imported one never is. A new claim supersedes the older claims its type's rule names
(``services.memory.supersede``), in the same transaction; an imported one never does.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lsp_memory.errors import UserError
from lsp_memory.ids import now
from lsp_memory.model import (
    CATEGORIES,
    KNOWN_TYPES,
    LIVE_STATUSES,
    Claim,
    ClaimStatus,
    Context,
    ContextNode,
)
from lsp_memory.services.kernel import asof
from lsp_memory.services.kernel.resolver import Resolution
from lsp_memory.services.memory.classify import Classifier
from lsp_memory.services.memory.interchange import add_record, statement_problem
from lsp_memory.services.memory.supersede import superseded
from lsp_memory.services.retrieval.embedding import VectorSide
from lsp_memory.store.sqlite import Listed, Store

LIST_PAGE = 1000
"""Claims put back as they were at a date per page of ``claim list --as-of``."""


class Records:
    """One user's single-record writes."""

    def __init__(
        self,
        store: Store,
        user: str,
        classifier: Classifier | None = None,
        *,
        vectors: Callable[[], VectorSide | None] | None = None,
        supersede: Mapping[str, str] | None = None,
    ) -> None:
        """``vectors``: the vector side, asked for only when a rule compares statements
        (None, or a side not loaded yet: the rules on the text alone apply). ``supersede``:
        the setting's rule per claim type."""
        self.store = store
        self.user = user
        self.classifier = classifier or Classifier()
        self.vectors = vectors
        self.supersede = supersede
        self.last_superseded: list[Claim] = []
        """The claims the last ``add_claim`` superseded, by number."""
        self._vector: Any = None
        self._replaces: Claim | None = None

    def embed(self, statements: Sequence[str]) -> list[Any] | None:
        """The statements' embeddings in one batch (kept in the vector cache, so indexing
        them later costs nothing), or None without a vector side: many writes at once
        (ingestion) pass them to ``add_claim`` instead of embedding one by one."""
        side = self.vectors() if self.vectors is not None else None
        if side is None or not statements:
            return None
        from lsp_memory.store.vectors import embed_cached

        return list(embed_cached(side.embedder, side.cache, list(statements)))

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
        entities: Sequence[str] = (),
        supersede: bool = True,
        derived_from: Sequence[str] = (),
        valid_from: str | None = None,
        vector: Any = None,
        replaces: Claim | None = None,
    ) -> Claim:
        """Store a new claim, of ``claim_type`` or else of the category the classifier
        chooses; ``UserError`` with the reason when it is not acceptable. Unless
        ``supersede`` is False, the claims it supersedes are marked so, and listed in
        ``last_superseded``. ``derived_from``: the episodes it comes from; ``valid_from``:
        since when it holds (a message's time); ``vector``: the statement's embedding when
        the caller has it (``embed``), for the supersede check; ``replaces``: a live claim
        the new one supersedes whatever its type's rule says (``update``)."""
        self.last_superseded = []
        self._vector = vector
        self._replaces = replaces
        problem = statement_problem(statement)
        if problem:
            raise UserError(problem)
        if claim_type and claim_type not in KNOWN_TYPES:
            self._check_type(claim_type)
        record: dict[str, Any] = {
            "kind": "claim",
            "statement": statement,
            "claim_type": claim_type or self.classifier.classify(statement).category,
        }
        given = {
            "context_domain": domain or None,
            "contexts": list(contexts) or None,
            "tags": list(tags) or None,
            "confidence": confidence,
            "pinned": pinned or None,
            "entities": list(entities) or None,
            "derived_from": list(derived_from) or None,
            "valid_from": valid_from or None,
        }
        record.update((key, value) for key, value in given.items() if value is not None)
        return add_record(
            self.store,
            record,
            user=self.user,
            supersedes=self._supersedes if supersede else None,
        ).claims[0]

    def _check_type(self, claim_type: str) -> None:
        """``UserError`` for a type that is no category, not fact or decision, and on none of
        the user's claims: most likely a typo, which would make a claim no rule knows."""
        if self.store.has_claim_type(self.user, claim_type):
            return
        close = difflib.get_close_matches(claim_type, KNOWN_TYPES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UserError(
            f"unknown claim type {claim_type!r}{hint}: use a category ({', '.join(CATEGORIES)}), "
            "fact, decision, or a type your claims already have"
        )

    def _supersedes(self, claim: Claim) -> list[str]:
        """The ids of the claims the new ``claim`` supersedes (kept in ``last_superseded``)."""
        found = superseded(
            self.store, self.user, claim, self.vectors, self.supersede, query_vector=self._vector
        )
        replaced = self._replaces
        if replaced is not None and all(c.claim_id != replaced.claim_id for c in found):
            found = sorted([*found, replaced], key=lambda c: c.number)
        self.last_superseded = found
        return [c.claim_id for c in self.last_superseded]

    def update(self, claim: Claim, statement: str) -> Claim:
        """A new claim saying ``statement`` in place of the live ``claim``: of its type, in
        its contexts, with its tags, entities and pin, superseding it (and whatever else its
        type's rule names). Nothing is overwritten: the old claim stays, superseded, and
        ``restore`` brings it back. ``UserError`` when ``claim`` is not live."""
        if claim.status not in LIVE_STATUSES:
            raise UserError(
                f"#{claim.number} @{claim.friendly_id} is {claim.status.value}, not live: "
                "update its live successor, or restore it first"
            )
        return self.add_claim(
            statement,
            claim_type=claim.claim_type,
            domain=claim.domains[0] if claim.domains else None,
            contexts=claim.contexts or (),
            tags=claim.tags or (),
            entities=claim.entities or (),
            pinned=claim.pinned,
            replaces=claim,
        )

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

    def restore(self, claim: Claim) -> bool:
        """Make a superseded, merged, deprecated or retracted ``claim`` active again, its
        ``superseded_by``/``merged_into`` cleared; False when it already was active,
        ``UserError`` when it is contested (still live: a dispute is not undone this way)."""
        if claim.status is ClaimStatus.ACTIVE:
            return False
        if claim.status is ClaimStatus.CONTESTED:
            raise UserError(
                f"#{claim.number} @{claim.friendly_id} is contested, not superseded, merged, "
                "deprecated or retracted: nothing to restore"
            )
        self.store.restore(self.user, claim.claim_id, now())
        return True

    def pin(self, claim: Claim, pinned: bool = True) -> str:
        """Pin ``claim`` globally (or unpin it), recorded like a retract: outside any run,
        so ``consolidate --undo`` never puts a pin back or takes one away, and decay, which
        spares pinned claims, sees the pin from the next run on. One line saying what
        happened."""
        name = f"#{claim.number} @{claim.friendly_id}"
        if claim.pinned == pinned:
            return f"{'already pinned' if pinned else 'not pinned'}: {name}"
        self.store.set_pinned(self.user, claim.claim_id, pinned, now())
        if pinned and claim.status not in LIVE_STATUSES:
            return f"pinned: {name} ({claim.status.value}: shown once it is live again)"
        return f"{'pinned' if pinned else 'unpinned'}: {name}"

    def link_context(self, claim: Claim, context: str, linked: bool = True) -> str:
        """Add ``claim`` to the context whose friendly id is ``context`` (or remove it from
        it); one line saying what happened, ``UserError`` for a context the user has not."""
        found = self.store.context_by_friendly_id(self.user, context.removeprefix("@"))
        if found is None:
            raise UserError(f"no context @{context.removeprefix('@')}: `context tree` lists yours")
        name, where = f"#{claim.number} @{claim.friendly_id}", f"@{found.friendly_id}"
        changed = self.store.link_context(
            self.user, claim.claim_id, found.context_id, linked, now()
        )
        if linked:
            return f"added to {where}: {name}" if changed else f"already in {where}: {name}"
        return f"removed from {where}: {name}" if changed else f"not in {where}: {name}"

    def claims(self, statuses: Sequence[ClaimStatus] | None, limit: int | None) -> list[Claim]:
        """The user's claims by number (``claim list --json``)."""
        return self.store.claims(self.user, statuses=statuses, limit=limit)

    def lines(self, statuses: Sequence[ClaimStatus] | None, limit: int | None) -> list[Listed]:
        """The user's claims by number as their lines show them (``claim list``)."""
        return self.store.listed_by_number(self.user, statuses, limit)

    def matching(
        self,
        *,
        claim_type: str | None = None,
        statuses: Sequence[ClaimStatus] | None = None,
        context: str | None = None,
        since: str | None = None,
        limit: int = 50,
    ) -> list[Claim]:
        """The user's claims by those filters, most recently changed first (the MCP server's
        ``list_memories`` and ``recent_activity``); ``UserError`` for a context the user
        has not."""
        if context is not None:
            context = context.removeprefix("@")
            if self.store.context_by_friendly_id(self.user, context) is None:
                raise UserError(f"no context @{context}: `context tree` lists yours")
        return self.store.claims_matching(
            self.user,
            claim_type=claim_type,
            statuses=statuses,
            context=context,
            since=since,
            limit=limit,
        )

    def then(self, claims: Sequence[Claim], moment: str) -> list[Claim]:
        """``claims`` as they were at ``moment`` (``claim list|show --as-of``), without those
        created after it (``kernel.asof``)."""
        return [c for c in asof.claims_then(self.store, self.user, claims, moment) if c]

    def listed_then(
        self,
        statuses: Sequence[ClaimStatus] | None,
        limit: int | None,
        moment: str,
        *,
        links: bool = True,
    ) -> list[Claim]:
        """The claims that existed at ``moment`` as they were then, by number: those whose
        status then is one of ``statuses``, at most ``limit`` (``claim list --as-of``). Put
        back a page at a time, so a short listing undoes only the changes of the claims it
        reaches (putting back all 50 000 claims a store held then took seconds); without
        ``links`` their contexts, tags and entities are not read."""
        found: list[Claim] = []
        after = 0
        while limit is None or len(found) < limit:
            page = self.store.claims_made_by(self.user, moment, after, LIST_PAGE, links=links)
            if not page:
                break
            after = page[-1].number
            then = self.then(page, moment)
            found += (c for c in then if statuses is None or c.status in statuses)
        return found[:limit]

    def resolved_then(self, found: Sequence[Resolution], moment: str) -> list[Resolution]:
        """What references resolved to at ``moment`` (``resolve --as-of``)."""
        return [asof.resolved_then(self.store, self.user, each, moment) for each in found]

    def history(self, claim: Claim) -> list[asof.Change]:
        """Every recorded change of ``claim``, oldest first (``claim history``)."""
        return asof.history(self.store, self.user, claim)

    def context_tree(self) -> tuple[list[ContextNode], list[Context]]:
        """The user's contexts as a forest with claim counts, and those caught in a parent
        cycle (``context tree``)."""
        return self.store.context_tree(self.user)
