"""Issue 24's build-context figures on two code trees side by side (before and after a
change), on the server benchmark's corpus: ``build-context`` whole processes (CPU from
``wait4``), and with ``--warm`` the block built after an edit in one process through the
service behind ``lspMemory.buildContext`` (wall and the thread's CPU per build). On a shared
machine the CPU seconds move far less with the load than the wall times.

Run: ``.venv/bin/python -m benchmarks.context_trees --cache /tmp/bench-bcproc --before
/tmp/base-src --after . [--warm]`` where ``/tmp/base-src`` holds ``git archive <commit>
lsp_memory benchmarks``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import lsp_memory_command, percentile
from benchmarks.context import PROMPTS, prompt, run_timed
from benchmarks.server_corpus import Prepared, prepare_in

WARM_BUILDS = 100


def processes(prepared: Prepared, trees: dict[str, str], rounds: int, work: Path) -> None:
    """Each round: each tree's 7 prompts as processes, after one unmeasured run (the first
    process after the other tree may read every note again: the saved scan's format)."""
    rng = random.Random(7)
    files = []
    for index in range(7):
        path = work / f"prompt-{index}.md"
        path.write_text(prompt(rng, prepared), encoding="utf-8")
        files.append(path)
    command = lsp_memory_command("--vault", str(prepared.vault))
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    outputs: dict[str, list[str]] = {}
    for _ in range(rounds):
        for name, tree in trees.items():
            env = {**prepared.env(), "PYTHONPATH": tree}
            run_timed([*command, "build-context", str(files[0])], env)
            runs[name] += [run_timed([*command, "build-context", str(f)], env) for f in files]
            outputs[name] = [
                subprocess.run(
                    [*command, "build-context", str(f), "--format", "json"],
                    env=env, capture_output=True, text=True, check=True,
                ).stdout
                for f in files
            ]  # fmt: skip
    for name, found in runs.items():
        walls, cpus = [w for w, _ in found], [c for _, c in found]
        row = {
            "runs": len(found),
            "median_s": round(statistics.median(walls), 3),
            "min_s": round(min(walls), 3),
            "max_s": round(max(walls), 3),
            "cpu_median_s": round(statistics.median(cpus), 3),
        }
        print(f"build-context {name}: {json.dumps(row)}")
    print("the same JSON blocks:", len(set(map(tuple, outputs.values()))) == 1)


def warm(prepared: Prepared, tree: str) -> None:
    """One tree's warm builds, in a child process that imports that tree's code."""
    child = Path(__file__).resolve()
    env = {**prepared.env(), "PYTHONPATH": f"{tree}{os.pathsep}{child.parents[1]}"}
    done = subprocess.run(
        [sys.executable, str(child), "--warm-child", *sys.argv[1:]],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    print(f"warm {tree}: {done.stdout.strip().splitlines()[-1]}")


def warm_child(prepared: Prepared) -> None:
    from lsp_memory.app import App
    from lsp_memory.config import load_config

    rng = random.Random(7)
    prompts = [prompt(rng, prepared) for _ in range(PROMPTS)]
    config, _ = load_config({"vaults": [prepared.vault]})
    app = App(config)
    app.refresh_indexes()
    assert app.vectors is not None

    def build(index: int) -> None:
        text = prompts[index % len(prompts)] + f"\nDraft {index}.\n"
        app.snapshot().assembler().build(text)

    for index in range(10):
        build(index)
    walls, cpus = [], []
    for index in range(10, 10 + WARM_BUILDS):
        wall, cpu = time.perf_counter(), time.thread_time()
        build(index)
        cpus.append((time.thread_time() - cpu) * 1000)
        walls.append((time.perf_counter() - wall) * 1000)
    found = {f"wall_p{p}_ms": round(percentile(walls, p), 1) for p in (50, 99)}
    found |= {f"cpu_p{p}_ms": round(percentile(cpus, p), 1) for p in (50, 99)}
    print(json.dumps({**found, "load": os.getloadavg()}))
    app.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--before", required=True, help="a code tree (lsp_memory inside)")
    parser.add_argument("--after", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm", action="store_true", help="also the warm builds")
    parser.add_argument("--warm-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    prepared = prepare_in(args.cache, 100_000, 10_000, 7)
    if args.warm_child:
        warm_child(prepared)
        return 0
    trees = {"before": str(Path(args.before).resolve()), "after": str(Path(args.after).resolve())}
    print(f"load at start: {os.getloadavg()}")
    work = (args.cache / "trees-work").resolve()
    work.mkdir(exist_ok=True)
    os.chdir(work)  # ``python -m lsp_memory`` puts its folder first: none there
    if args.rounds > 0:
        processes(prepared, trees, args.rounds, work)
    if args.warm:
        for _ in range(2):
            for tree in trees.values():
                warm(prepared, tree)
    print(f"load at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
