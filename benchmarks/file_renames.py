"""How long the server takes to plan a file rename's link rewrites (``workspace/willRenameFiles``)
on a large vault: one note renamed, and a whole folder renamed.

    .venv/bin/python -m benchmarks.file_renames [--claims 100000] [--notes 10000]
        [--samples 50] [--cache DIR] [--json] [--seed 7] [--vault DIR]

The vault is the server benchmark's corpus (``benchmarks/server_corpus.py``, built once or
kept in ``--cache``), copied to a scratch folder: nothing is written to the corpus, and no
file is moved (the plan is computed, not applied). Timed in process: the service the request
calls (``MovePlanner.plan``, over a snapshot of the scanned vault, no open document), which
is all of the request's work but the JSON-RPC round trip and the conversion of the edits to
LSP ranges. Percentiles are ``benchmarks.common.percentile``'s.

With ``--vault DIR`` (a vault of someone else's, e.g. Obsidian's help vault) it checks instead
that the rewrites keep every link: in a copy of the vault, the three most linked notes are
each renamed in place and moved to another folder, and the two largest folders renamed; the
edits are applied, the files moved, the copy scanned again, and every link's note compared
with what it named before (moved along). It reports the edits and the links that name
another note (or none) afterwards: 0 is the expected figure.
"""

from __future__ import annotations

import collections
import random
import shutil
import tempfile
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
    parser.add_argument("--vault", type=Path, default=None, help="check the links kept here")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    if args.vault is not None:
        report = start_report("file_renames_kept", vault=str(args.vault))
        report["renames"] = kept_links(args.vault.resolve())
        emit(report, as_json=args.json, table=_kept_table, began=began)
        return 0
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


def kept_links(source: Path) -> list[dict[str, Any]]:
    """Each rename of the ``--vault`` check: what moved, the edits, the links afterwards."""
    vault = Vault(source)
    vault.scan()
    counts = collections.Counter(
        target for _, target in _linked(vault) if target is not None
    ).most_common(3)
    cases: list[list[tuple[str, str]]] = []
    for path, _ in counts:
        folder, _, name = path.rpartition("/")
        cases.append([(path, f"{folder}/Renamed {name}" if folder else f"Renamed {name}")])
        cases.append([(path, f"Elsewhere/{name}")])
    folders = collections.Counter(p.split("/")[0] for p in vault.notes if "/" in p)
    cases += [[(folder, f"{folder} renamed")] for folder, _ in folders.most_common(2)]
    return [_kept(source, moves) for moves in cases]


def _linked(vault: Vault) -> list[tuple[str, str | None]]:
    """Each link of the vault as (its note, the note it names), in order."""
    return [
        (path, found.path if (found := vault.resolve(link.target).note) else None)
        for path in sorted(vault.notes)
        for link in vault.notes[path].links
    ]


def _kept(source: Path, moves: list[tuple[str, str]]) -> dict[str, Any]:
    def moved(path: str | None) -> str | None:
        for old, new in moves:
            if path == old:
                return new
            if path is not None and path.startswith(old + "/"):
                return new + path[len(old) :]
        return path

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "vault"
        shutil.copytree(source, root)
        vault = Vault(root)
        vault.scan()
        before = _linked(vault)
        with open_store(Path(scratch) / "store") as store:
            planner = MovePlanner(Resolver(store, "bench", [vault.view()]))
            plan = planner.plan([Move(root / old, root / new) for old, new in moves], [])
        edits = plan.edits if plan is not None else ()
        by_file: dict[Path, list[Any]] = collections.defaultdict(list)
        for edit in edits:
            assert edit.place.document.path is not None
            by_file[edit.place.document.path].append(edit)
        for path, found in by_file.items():
            text = found[0].place.document.text
            for edit in sorted(found, key=lambda e: -e.place.start):
                text = text[: edit.place.start] + edit.new_text + text[edit.place.end :]
            path.write_text(text, encoding="utf-8")
        for old, new in moves:
            (root / new).parent.mkdir(parents=True, exist_ok=True)
            (root / old).rename(root / new)
        again = Vault(root)
        again.scan()
        expected = collections.Counter((moved(path), moved(target)) for path, target in before)
        changed = sum((expected - collections.Counter(_linked(again))).values())
    return {
        "moves": moves,
        "edits": len(edits),
        "links": len(before),
        "resolved": sum(1 for _, target in before if target is not None),
        "links_naming_another_note_after": changed,
    }


def _kept_table(report: dict[str, Any]) -> None:
    for case in report["renames"]:
        print(
            f"{case['moves']}: {case['edits']} edits; {case['resolved']}/{case['links']} links "
            f"to notes, {case['links_naming_another_note_after']} naming another note after"
        )


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
