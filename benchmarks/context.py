"""Issue 5's build-context benchmark: the context block of a prompt with 5 references and
automatic retrieval, on 100k claims + 10k notes (the server benchmark's corpus).

- Warm: ``workspace/executeCommand lspMemory.buildContext`` through a real JSON-RPC client
  over stdio (``benchmarks.lspclient.Client``), after the first index sync and once the
  server is idle (vectors loaded); prompts drawn at random (one claim by friendly id, one by
  number, a context, an entity and a note link, with prose around them), each request timed
  from send to answer, each after a ``didChange`` that edits the prompt (so the block is
  built, not given again); then the same documents asked again unchanged (the block the
  server kept). p50/p90/p99 by ``benchmarks.common.percentile``. Targets p50 <= 30 ms, p99
  <= 100 ms.
- Cold: ``lsp-memory build-context PROMPT`` and ``lsp-memory search QUERY`` as whole
  processes (start, sync check, model load, build or search, print), the indexes already
  built. Targets: median <= 1.5 s and <= 1 s.
- Fill: tokens per block at budgets 500, 1500 and 4000, and the share of the budget used.

Run: ``.venv/bin/python -m benchmarks.context --cache build/bench-server`` (the corpus is
shared with ``benchmarks.server``; built on first use).

With ``--processes`` (issue 24's whole-process rows), only the processes, each timed from
spawn to exit with its CPU seconds (user + system, from ``wait4``: on a shared machine the
wall time follows the load, the CPU time much less): ``search`` and ``build-context`` as
above, ``claim add`` of a statement that supersedes (this writes ``CLI_RUNS`` claims into the
corpus's store: run it on a copy), and ``lsp-memory mcp`` spawned by the SDK's client until
its first ``search_memory`` answer. Medians; targets 1 s, and 1.5 s for MCP.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import (
    arguments,
    emit,
    lsp_memory_command,
    percentile,
    proc_status,
    start_report,
)
from benchmarks.ingest import first_answer
from benchmarks.server_corpus import Prepared, prepare_in
from benchmarks.server_suites import idle_server

TARGET_P50_MS = 30.0
TARGET_P99_MS = 100.0
PROMPTS = 40
WARMUP = 10
BUDGETS = (500, 1500, 4000)
CLI_RUNS = 7
SEARCHES = (
    "morning routine",
    "project deadline",
    "who is my manager",
    "kitchen",
    "weekend plans",
    "database migration",
    "sleep",
)
"""``lsp-memory search`` queries, one process each."""
PROSE = (
    "I need a plan for next week that keeps the launch on track and leaves my evenings free. "
    "Summarise what matters, what is blocked, and who I should talk to first."
)


def prompt(rng: random.Random, prepared: Prepared) -> str:
    """Prose around five references: claim by id, claim by number, context, entity, note."""
    claims = prepared.claims
    fid = rng.choice(claims["claim_fids"])
    number = rng.randrange(1, len(claims["claim_fids"]) + 1)
    # A leaf context (the deepest level): 2000 contexts over ~100k claims put thousands of
    # claims under an upper one, and a referenced context is given whole, verbatim.
    deepest = max(claims["context_levels"])
    leaves = [
        fid
        for fid, level in zip(claims["context_fids"], claims["context_levels"], strict=True)
        if level == deepest
    ]
    context = rng.choice(leaves)
    entity = rng.choice(claims["entity_fids"])
    title = rng.choice(prepared.titles)
    return (
        f"# Weekly plan\n\n{PROSE}\n\nKeep @{fid} and #{number} in mind. Everything about "
        f"the project is under @{context}; I meet @{entity} on Thursday.\n"
        f"The notes in [[{title}]] still apply.\n"
    )


def warm(prepared: Prepared, prompts: list[str], samples: int, work: Path) -> dict[str, Any]:
    """The LSP command's latency and the fill at each budget, in one warm server."""
    with idle_server(prepared, work / "server.err") as server:
        client = server.client
        uris = []
        for index, text in enumerate(prompts):
            uri = (work / f"prompt-{index}.md").as_uri()
            client.notify(
                "textDocument/didOpen",
                {
                    "textDocument": {
                        "uri": uri,
                        "languageId": "markdown",
                        "version": 1,
                        "text": text,
                    }
                },
            )
            uris.append(uri)

        def build(uri: str, options: dict[str, Any] | None = None) -> tuple[float, Any]:
            arguments: list[Any] = [uri] if options is None else [uri, options]
            reply = client.request(
                "workspace/executeCommand",
                {"command": "lspMemory.buildContext", "arguments": arguments},
            )
            if not isinstance(reply.result, dict):
                raise RuntimeError(f"buildContext failed: {reply.result!r}")
            return reply.seconds * 1000, reply.result

        versions = dict.fromkeys(uris, 1)

        def edited(index: int) -> str:
            """The prompt's document with one line changed, as a user edits before asking:
            the server builds its block anew (it keeps a block only for an unchanged text)."""
            uri = uris[index % len(uris)]
            versions[uri] += 1
            text = prompts[index % len(prompts)] + f"\nDraft {index}.\n"
            client.notify(
                "textDocument/didChange",
                {
                    "textDocument": {"uri": uri, "version": versions[uri]},
                    "contentChanges": [{"text": text}],
                },
            )
            return uri

        for index in range(WARMUP):
            build(edited(index))
        times, again = [], []
        for index in range(WARMUP, WARMUP + samples):
            uri = edited(index)
            times.append(build(uri)[0])
            # The same document asked again, nothing changed (as the code lens and the command
            # do): the block the server kept.
            again.append(build(uri)[0])
        fill: dict[str, Any] = {}
        for budget in BUDGETS:
            tokens, over, dropped = [], 0, []
            for uri in uris:
                _, block = build(uri, {"budget": budget})
                tokens.append(block["tokens"])
                over += bool(block["over_budget"])
                dropped.append(len(block["dropped"]))
            fill[str(budget)] = {
                "tokens_median": statistics.median(tokens),
                "tokens_min": min(tokens),
                "tokens_max": max(tokens),
                "fill_median": statistics.median(tokens) / budget,
                "over_budget": over,
                "dropped_median": statistics.median(dropped),
            }
        memory = proc_status(client.pid)
    return {
        "ready_s": server.ready_s,
        "idle": server.idle,
        "samples": len(times),
        **{f"p{p}_ms": percentile(times, p) for p in (50, 90, 99)},
        "max_ms": max(times),
        "unchanged": {
            **{f"p{p}_ms": percentile(again, p) for p in (50, 99)},
            "max_ms": max(again),
        },
        "fill": fill,
        "server_memory": memory,
    }


def cold(prepared: Prepared, prompts: list[str], work: Path) -> dict[str, Any]:
    """``lsp-memory build-context`` and ``lsp-memory search`` as whole processes, indexes
    built (and the vault's scan saved by an earlier process, as after any first run)."""
    env = prepared.env()
    command = lsp_memory_command("--vault", str(prepared.vault))

    def timed(arguments: list[str]) -> float:
        started = time.perf_counter()
        subprocess.run(
            [*command, *arguments], env=env, check=True, capture_output=True, timeout=600
        )
        return time.perf_counter() - started

    times = []
    for index in range(CLI_RUNS):
        path = work / f"cli-{index}.md"
        path.write_text(prompts[index % len(prompts)], encoding="utf-8")
        times.append(timed(["build-context", str(path)]))
    searches = [timed(["search", query]) for query in SEARCHES]
    return {
        "runs": len(times),
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
        "first_s": times[0],
        "search": {
            "runs": len(searches),
            "median_s": statistics.median(searches),
            "min_s": min(searches),
            "max_s": max(searches),
        },
    }


MCP_SPAWNS = 5
SUPERSEDING = ("I live in {city}", "My favourite tea is {tea}")
CITIES = ("Lyon", "Berlin", "Oslo", "Porto", "Lima", "Kyoto", "Quito")


def run_timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Run ``command`` to its end: wall seconds and CPU seconds (user + system)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None
    errors = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command[2:])} failed: {errors.strip()[-400:]}")
    return wall, usage.ru_utime + usage.ru_stime


def summary(runs: list[tuple[float, float]]) -> dict[str, Any]:
    walls = [wall for wall, _ in runs]
    return {
        "runs": len(runs),
        "median_s": round(statistics.median(walls), 3),
        "min_s": round(min(walls), 3),
        "max_s": round(max(walls), 3),
        "cpu_median_s": round(statistics.median(cpu for _, cpu in runs), 3),
    }


def processes(prepared: Prepared, prompts: list[str], work: Path) -> dict[str, Any]:
    """Issue 24's whole processes: search, build-context, claim add (superseding), and MCP
    spawn to first answer, each timed from spawn to exit."""
    env = prepared.env()
    command = lsp_memory_command("--vault", str(prepared.vault))
    found: dict[str, Any] = {}
    found["search"] = summary([run_timed([*command, "search", q], env) for q in SEARCHES])
    built = []
    for index in range(CLI_RUNS):
        path = work / f"cli-{index}.md"
        path.write_text(prompts[index % len(prompts)], encoding="utf-8")
        built.append(run_timed([*command, "build-context", str(path)], env))
    found["build_context"] = summary(built)
    added = []
    for index in range(CLI_RUNS):
        statement = SUPERSEDING[index % 2].format(
            city=CITIES[index % len(CITIES)], tea=("sencha", "oolong", "rooibos")[index % 3]
        )
        added.append(run_timed([*command, "claim", "add", statement], env))
    found["claim_add"] = summary(added)
    before = os.times()
    spawns = [asyncio.run(first_answer(env)) for _ in range(MCP_SPAWNS)]
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    found["mcp_first_answer"] = {
        "runs": len(spawns),
        "median_s": round(statistics.median(spawns), 3),
        "min_s": round(min(spawns), 3),
        "max_s": round(max(spawns), 3),
        "cpu_mean_s": round(cpu / len(spawns), 3),
    }
    return found


def print_processes(report: dict[str, Any]) -> None:
    for name, row in report["processes"].items():
        print(f"{name}: {json.dumps(row)}")
    print(f"load average at the end: {report['load_average_at_end']}")


def main() -> int:
    parser = arguments(__doc__, seed=True, claims=100_000, notes=10_000, samples=300)
    parser.add_argument("--cache", type=Path, help="the corpus folder (shared with server.py)")
    parser.add_argument(
        "--processes", action="store_true", help="only issue 24's whole processes (see above)"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    report = start_report("context", parameters=vars(args))
    base = args.cache or Path(tempfile.mkdtemp(prefix="lsp-memory-context-"))
    prepared = prepare_in(base, args.claims, args.notes, args.seed)
    rng = random.Random(args.seed)
    prompts = [prompt(rng, prepared) for _ in range(PROMPTS)]
    with tempfile.TemporaryDirectory(prefix="lsp-memory-context-run-") as folder:
        work = Path(folder)
        report["corpus_reused"] = prepared.reused
        if args.processes:
            report["processes"] = processes(prepared, prompts, work)
            emit(report, as_json=args.json, table=print_processes, began=started)
            return 0
        report["warm"] = warm(prepared, prompts, args.samples, work)
        report["cli"] = cold(prepared, prompts, work)
    emit(report, as_json=args.json, table=print_context, began=started)
    return 0


def print_context(report: dict[str, Any]) -> None:
    args = report["parameters"]
    w, c = report["warm"], report["cli"]
    met50 = "met" if w["p50_ms"] <= TARGET_P50_MS else "MISSED"
    met99 = "met" if w["p99_ms"] <= TARGET_P99_MS else "MISSED"
    print(
        f"corpus: {args['claims']} claims, {args['notes']} notes "
        f"(reused: {report['corpus_reused']})"
    )
    print(
        f"lspMemory.buildContext, warm, n={w['samples']}: p50 {w['p50_ms']:.1f} ms ({met50}, "
        f"<= {TARGET_P50_MS:.0f}), p90 {w['p90_ms']:.1f}, p99 {w['p99_ms']:.1f} ms ({met99}, "
        f"<= {TARGET_P99_MS:.0f}), max {w['max_ms']:.1f}; asked again unchanged: p50 "
        f"{w['unchanged']['p50_ms']:.1f}, p99 {w['unchanged']['p99_ms']:.1f} ms"
    )
    print(
        f"build-context CLI, whole process, n={c['runs']}: median {c['median_s']:.2f} s "
        f"(min {c['min_s']:.2f}, max {c['max_s']:.2f}, first {c['first_s']:.2f}); search "
        f"CLI, n={c['search']['runs']}: median {c['search']['median_s']:.2f} s"
    )
    for budget, fill in w["fill"].items():
        print(
            f"budget {budget}: tokens median {fill['tokens_median']:.0f} "
            f"({100 * fill['fill_median']:.0f}% of the budget), range {fill['tokens_min']}-"
            f"{fill['tokens_max']}, over budget {fill['over_budget']}/{PROMPTS}, items dropped "
            f"median {fill['dropped_median']:.0f}"
        )
    print(f"server memory: {json.dumps(w['server_memory'])}; pid {os.getpid()}")


if __name__ == "__main__":
    raise SystemExit(main())
