"""A claim's successor: where a superseded or merged claim's ``superseded_by``/``merged_into``
chain leads. One rule for every place that names it — the hover, the diagnostic and its quick
fix, the context block's warning and ``claim show`` — so they never name different claims.
"""

from __future__ import annotations

from collections.abc import Callable

from lsp_memory.model import LIVE_STATUSES, Claim
from lsp_memory.store.sqlite import Store

SUCCESSOR_DEPTH = 10
"""How many superseded/merged steps a successor chain is followed (safe against cycles)."""


def successor(
    store: Store,
    user: str,
    claim: Claim,
    *,
    then: Callable[[Claim], Claim | None] | None = None,
    live: Callable[[Claim], bool] | None = None,
) -> Claim | None:
    """The first live claim down ``claim``'s ``superseded_by``/``merged_into`` chain, or None
    (no chain, a missing link, a cycle, or only claims that are no longer live).

    Only a live claim is named: replacing one stale reference by another would just move
    the warning. As of a date (``kernel.asof.successor_then``), ``then`` gives each claim of
    the chain as it was (None: it did not exist yet) and ``live`` says whether it was live.
    """
    seen = {claim.claim_id}
    current = claim
    for _ in range(SUCCESSOR_DEPTH):
        after = current.superseded_by or current.merged_into
        if not after or after in seen:
            return None
        seen.add(after)
        found = store.claim_by_uuid(user, after)
        if found is not None and then is not None:
            found = then(found)
        if found is None:
            return None
        if live(found) if live is not None else found.status in LIVE_STATUSES:
            return found
        current = found
    return None
