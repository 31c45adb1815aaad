"""A context's, tag's and domain's hover and page in process, and the cost of a write, on a
copy of a large store: what keeping their sizes at write time (schema version 7) gains and
costs.

    .venv/bin/python -m benchmarks.group_sizes --store DIR [--samples 50] [--writes 100]
        [--json]  (always prints JSON)

``--store`` is a store folder, such as the server benchmark's corpus
(``<cache>/corpus-cf08ae5b/store``); it is copied to a temporary folder first and never
written. Opening the copy migrates it when it is older (``open_s``); then the claims' token
counts are filled when this code keeps them (``count_s``). The groups timed are the root
context, the root tag and the domain with the most live claims beneath them. Each is hovered
and its definition asked ``--samples`` times (``Describer.hover_at`` and ``definition_at``,
what the requests call; the page is written once, then only compared). Then ``--writes``
claims are added one at a time (``Store.write`` of the batch ``claim add`` writes: its
transaction, triggers included; planning it, which reads all the user's keys, is not
timed), each in a random context and tag and a domain, and each retracted and restored
(``retract_restore``: two status changes).
Percentiles are ``benchmarks.common.percentile``'s.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, emit, latency_ms, start_report
from lsp_memory.ids import now
from lsp_memory.model import ClaimStatus
from lsp_memory.services.editor.describe import Describer
from lsp_memory.services.kernel import tokens
from lsp_memory.services.memory.interchange import _Importer, _Line
from lsp_memory.store.sqlite import Store, open_store


def main() -> int:
    parser = arguments(__doc__, samples=50, writes=100)
    parser.add_argument("--store", type=Path, required=True, help="a store folder (copied)")
    args = parser.parse_args()
    began = time.perf_counter()
    report = start_report("group_sizes", parameters={"samples": args.samples})
    with tempfile.TemporaryDirectory(prefix="group-sizes-") as folder:
        copy = Path(folder) / "store"
        shutil.copytree(args.store, copy)
        started = time.perf_counter()
        store = open_store(copy)
        report["open_s"] = round(time.perf_counter() - started, 3)
        report["schema_version"] = store.schema_version
        user = store._db.execute("SELECT user FROM claims LIMIT 1").fetchone()[0]
        counting: Callable[[Store], int] | None = getattr(tokens, "count_claims", None)
        if counting is not None:
            started = time.perf_counter()
            report["counted"] = counting(store)
            report["count_s"] = round(time.perf_counter() - started, 3)
        tokens.o200k()
        describer = Describer(store, user)
        groups = biggest(store, user)
        report["groups"] = {}
        pages = Path(folder) / "pages"
        for kind, key, size in groups:
            document = f"@{key}"
            hovers, definitions = [], []
            text = ""
            for _ in range(args.samples):
                started = time.perf_counter()
                found = describer.hover_at(document, 1)
                hovers.append(time.perf_counter() - started)
                started = time.perf_counter()
                describer.definition_at(document, 1, pages)
                definitions.append(time.perf_counter() - started)
                text = found.markdown if found else ""
            report["groups"][kind] = {
                "key": key,
                "claims": size,
                "figure": next((ln for ln in text.splitlines() if "tokens" in ln), ""),
                "hover": rounded(latency_ms(hovers)),
                "definition": rounded(latency_ms(definitions)),
            }
        report["writes"] = writes(store, user, args.writes)
        store.close()
    emit(report, as_json=True, began=began)
    return 0


def biggest(store: Store, user: str) -> list[tuple[str, str, int]]:
    """(kind, key, live claims) of the root context, root tag and domain with the most."""
    found: list[tuple[str, str, int]] = []
    roots = store._db.execute(
        "SELECT context_id, friendly_id FROM contexts WHERE user = ? AND parent IS NULL", (user,)
    ).fetchall()
    sizes = [(len(store.claims_in_context(user, cid)), fid) for cid, fid in roots]
    found.append(("context", max(sizes)[1], max(sizes)[0]))
    tags = store._db.execute(
        "SELECT friendly_id FROM tags WHERE user = ? AND parent IS NULL", (user,)
    ).fetchall()
    if tags:
        sized = max((len(store.claims_with_tag(user, t)), t) for (t,) in tags)
        found.append(("tag", sized[1], sized[0]))
    domains = [d for (d,) in store._db.execute("SELECT DISTINCT domain FROM claim_domains")]
    if domains:
        sized = max((len(store.claims_in_domain(user, d)), d) for d in domains)
        found.append(("domain", f"{sized[1]}_domain", sized[0]))
    return found


def writes(store: Store, user: str, count: int) -> dict[str, Any]:
    """Timings of ``count`` claim adds and as many retract/restore pairs."""
    rng = random.Random(7)
    contexts = [r[0] for r in store._db.execute("SELECT friendly_id FROM contexts")]
    tags = [r[0] for r in store._db.execute("SELECT friendly_id FROM tags")]
    added, changed = [], []
    for n in range(count):
        record = {
            "kind": "claim",
            "statement": f"Benchmark statement number {n} about {rng.choice(contexts)}",
            "contexts": [rng.choice(contexts)],
            "tags": [rng.choice(tags)] if tags else [],
            "context_domains": ["work"],
        }
        importer = _Importer(store, user, now())
        batch = importer.run([_Line(1, record)])  # reads every key of the user: not timed
        started = time.perf_counter()
        store.write(batch)
        added.append(time.perf_counter() - started)
        claim_id = batch.claims[0].claim_id
        started = time.perf_counter()
        store.set_status(user, claim_id, ClaimStatus.RETRACTED, now())
        store.restore(user, claim_id, now())
        changed.append(time.perf_counter() - started)
    return {"add": rounded(latency_ms(added)), "retract_restore": rounded(latency_ms(changed))}


def rounded(figures: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 2) for k, v in figures.items()}


if __name__ == "__main__":
    raise SystemExit(main())
