"""Decay at 100 000 claims: the store's version-9 migration (when each claim's decay was last
applied) and consolidation runs that decay every claim, in process, on copies of a store.

    .venv/bin/python -m benchmarks.decay --store DIR [--samples 3] [--json]

``--store`` is a store folder (the server benchmark's corpus, ``benchmarks.server_corpus``;
it is copied, never written). A base copy is brought to version 8 with every claim inferred
from conversations (so each decays, 0.01 a day) and one consolidation recorded at
2026-01-01 by hand. Each sample, on a fresh copy of that base: opening it with this
lsp-memory (the migrations it lacks: version 9 with this code, none before it), a run one
day later (every claim's confidence changes), a run 5 minutes after that (most changes
round away) — each timed, with the changes it made. Without the embedding model, so only
decay, the slot rule and deprecation run. Medians by ``benchmarks.common.percentile``.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, emit, percentile, start_report
from benchmarks.server_corpus import USER
from lsp_memory.services.memory.consolidate import Consolidation
from lsp_memory.store.schema import MIGRATIONS
from lsp_memory.store.sqlite import open_store

SETTLED = "2026-01-01T00:00:00.000000Z"
RUNS = ("2026-01-02T00:00:00.000000Z", "2026-01-02T00:05:00.000000Z")


def base(source: Path, folder: Path) -> Path:
    """A version-8 copy of ``source``: every claim inferred, one run recorded at ``SETTLED``."""
    shutil.copytree(source, folder)
    with open_store(folder, migrations=MIGRATIONS[:8]) as store:
        db = store._db
        db.execute("UPDATE claims SET origin = 'inferred'")
        db.execute(
            "INSERT INTO runs (user, number, kind, now, created_at, episode_mark, claim_mark) "
            "VALUES (?, 1, 'consolidate', ?, '9999-01-01T00:00:00.000000Z', "
            "(SELECT coalesce(max(id), 0) FROM episodes), (SELECT max(id) FROM claims))",
            (USER, SETTLED),
        )
    return folder


def sample(settled: Path, folder: Path) -> dict[str, Any]:
    shutil.copytree(settled, folder)
    started = time.perf_counter()
    store = open_store(folder)
    found: dict[str, Any] = {"open_s": time.perf_counter() - started}
    try:
        for name, now in zip(("day_s", "five_minutes_s"), RUNS, strict=True):
            started = time.perf_counter()
            report = Consolidation(store, USER, None).run(now)
            found[name] = time.perf_counter() - started
            found[name.replace("_s", "_changes")] = len(report.changes)
    finally:
        store.close()
    return found


def main() -> None:
    began = time.perf_counter()
    parser = arguments(__doc__)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--samples", type=int, default=3)
    args = parser.parse_args()
    report = start_report("decay")
    with tempfile.TemporaryDirectory(prefix="bench-decay-") as scratch:
        settled = base(args.store, Path(scratch) / "base")
        samples = [sample(settled, Path(scratch) / f"s{n}") for n in range(args.samples)]
    for key in samples[0]:
        values = [s[key] for s in samples]
        report[key] = {"median": percentile(values, 50), "samples": values}
    emit(report, as_json=args.json, began=began)


if __name__ == "__main__":
    main()
