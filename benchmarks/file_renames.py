"""How long the server takes to plan a file rename's link rewrites (``workspace/willRenameFiles``)
on a large vault: one note renamed, and a whole folder renamed.

    .venv/bin/python -m benchmarks.file_renames [--claims 100000] [--notes 10000]
        [--samples 50] [--cache DIR] [--json] [--seed 7]

The vault is the server benchmark's corpus (``benchmarks/server_corpus.py``, built once or
kept in ``--cache``), copied to a scratch folder: nothing is written to the corpus, and no
file is moved (the plan is computed, not applied). Timed in process: the service the request
calls (``MovePlanner.plan``, over a snapshot of the scanned vault, no open document), which
is all of the request's work but the JSON-RPC round trip and the conversion of the edits to
LSP ranges. Percentiles are ``benchmarks.common.percentile``'s.
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, emit, latency_ms, start_report, workspace
from benchmarks.server_corpus import prepare_in
from lsp_memory.notes import Vault
from lsp_memory.services.editor.moves import MovePlanner
from lsp_memory.services.editor.rename import Move
from lsp_memory.services.kernel.resolver import Resolver
from lsp_memory.store.sqlite import open_store


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__, seed=True, claims=100_000, notes=10_000, samples=50)
    parser.add_argument("--cache", type=Path, default=None, help="keep the corpus here")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    report = start_report("file_renames", claims=args.claims, notes=args.notes)
    with workspace("corpus", args.cache, fresh=False) as cache:
        prepared = prepare_in(cache, args.claims, args.notes, args.seed)
    with workspace("file-renames") as scratch:
        vault_root = scratch / "vault"
        shutil.copytree(prepared.vault, vault_root)
        report.update(measure(vault_root, scratch / "store", args.samples, args.seed))
    emit(report, as_json=args.json, table=_table, began=began)
    return 0


def measure(root: Path, store_folder: Path, samples: int, seed: int) -> dict[str, Any]:
    vault = Vault(root)
    vault.scan()
    notes = sorted(vault.notes)
    folders = sorted({path.rpartition("/")[0] for path in notes if "/" in path})
    rng = random.Random(seed)
    with open_store(store_folder) as store:
        planner = MovePlanner(Resolver(store, "bench", [vault.view()]))
        planner.plan([Move(root / notes[0], root / "warm-up.md")], [])  # the link index
        single: list[float] = []
        edits: list[int] = []
        for number, path in enumerate(rng.sample(notes, min(samples, len(notes)))):
            started = time.perf_counter()
            plan = planner.plan([Move(root / path, root / f"renamed-{number}.md")], [])
            single.append(time.perf_counter() - started)
            edits.append(len(plan.edits) if plan else 0)
        whole: list[float] = []
        folder_edits: list[int] = []
        for folder in folders:
            started = time.perf_counter()
            plan = planner.plan([Move(root / folder, root / f"{folder}-renamed")], [])
            whole.append(time.perf_counter() - started)
            folder_edits.append(len(plan.edits) if plan else 0)
    return {
        "notes": len(notes),
        "links": sum(len(note.links) for note in vault.notes.values()),
        "single_note": {**latency_ms(single), "samples": len(single), "edits_max": max(edits)},
        "folder": {
            **latency_ms(whole),
            "samples": len(whole),
            "notes_moved_max": max(
                sum(1 for p in notes if p.startswith(folder + "/")) for folder in folders
            ),
            "edits_max": max(folder_edits),
        },
    }


def _table(report: dict[str, Any]) -> None:
    print(f"{report['notes']} notes, {report['links']} links")
    for case in ("single_note", "folder"):
        row = report[case]
        print(
            f"{case:12} n={row['samples']:3} p50 {row['p50_ms']:7.1f} ms  p90 "
            f"{row['p90_ms']:7.1f} ms  p99 {row['p99_ms']:7.1f} ms  max {row['max_ms']:7.1f} ms"
            f"  edits ≤ {row['edits_max']}"
        )
    print(f"load average at the end: {report['load_average_at_end']}")


if __name__ == "__main__":
    raise SystemExit(main())
