"""A bounded soak of the language server: one editor client typing against
``python -m lsp_memory serve`` while command-line writers and an indexer work on the same store.

    .venv/bin/python -m benchmarks.soak [--seconds 60] [--claims 5000] [--notes 500]
        [--writers 2] [--pause 0.02] [--seed 7] [--json] [--keep DIR]

For ``--seconds``, at the same time:

- **the client** (VS Code's capabilities, ``benchmarks.lspclient``) rewrites a line of an open
  100-line prompt (``didChange``) and asks for completion at it (``@``, ``#``, ``[[`` and 1–4
  typed characters), then rewrites another line and asks for a hover on a reference in it
  (claims, ``#N``, contexts, notes); every 25th round it waits for the debounced
  ``publishDiagnostics`` after its edit. ``--pause`` seconds between rounds;
- **writers** (``--writers``, default 2): each a loop of ``lsp-memory claim add "<statement>"``
  processes, recording each claim the command said it added (its number and friendly id);
- **an indexer**: a loop of ``lsp-memory index`` processes (incremental, same vault).

Then: no lost write (every claim a writer was told was added is in ``lsp-memory claim list
--json`` with its number and statement, and no number was given twice); a hover on each
writer's last claim through the server; p50/p95/p99 per request kind
(``benchmarks.common.percentile``); request count and
errors; the server's VmRSS and VmHWM after its first index sync and at the end
(``/proc/<pid>/status``), and the highest VmRSS sampled each second in between.

The corpus is ``benchmarks.server_corpus``'s (the search benchmark's generators), built afresh
in a temporary folder (or a new one inside ``--keep``) at a moderate size (the defaults build
in well under a minute), since the soak writes to its store. Output: a table, or one JSON
object with ``--json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import (
    arguments,
    emit,
    latency_ms,
    lsp_memory_command,
    print_head,
    proc_status,
    start_report,
    workspace,
)
from benchmarks.foundation import WORDS
from benchmarks.lspclient import Client, ServerGone
from benchmarks.server_corpus import CONTEXTS, ENTITIES, TAGS, Prepared, prepare
from benchmarks.server_inputs import (
    KINDS,
    PROMPT_LINES,
    TRIGGERS,
    Document,
    prompt_lines,
    reference,
    typed,
)
from benchmarks.server_suites import idle_server

DIAGNOSTICS_EVERY = 25  # rounds between waits for the debounced check
REQUEST_TIMEOUT_S = 30.0
CLI_TIMEOUT_S = 120.0
ADDED = re.compile(r"^added #(\d+) @(\S+) ")
PATH = re.compile(r"(?:/[^\s/;:]+)+")  # a folder in a message: the run's temporary one
CLI = Path(sys.executable).with_name("lsp-memory")


def cli_command(*args: str) -> list[str]:
    """``lsp-memory ARGS``: the installed script beside this Python, else ``-m``."""
    if CLI.exists():
        return [str(CLI), *args]
    return lsp_memory_command(*args)


def spread(samples_s: Sequence[float]) -> dict[str, Any]:
    """Count, p50, p95, p99, max and mean of timings in seconds, in milliseconds."""
    if not samples_s:
        return {"count": 0}
    return {"count": len(samples_s), **latency_ms(samples_s, (50, 95, 99))}


# -- the command-line workers -------------------------------------------------------------------


@dataclass(slots=True)
class Run:
    """One command-line process: how long it took, its exit code, what it printed."""

    seconds: float
    code: int
    out: str
    err: str


@dataclass(slots=True)
class Worker:
    """A loop of ``lsp-memory`` processes in a thread, until ``stop`` is set."""

    name: str
    env: dict[str, str]
    stop: threading.Event
    runs: list[Run] = field(default_factory=list)
    written: list[dict[str, Any]] = field(default_factory=list)  # claims it was told added

    def run(self, args: Sequence[str]) -> Run:
        started = time.perf_counter()
        try:
            done = subprocess.run(
                cli_command(*args),
                env=self.env,
                capture_output=True,
                text=True,
                timeout=CLI_TIMEOUT_S,
                check=False,
            )
            run = Run(time.perf_counter() - started, done.returncode, done.stdout, done.stderr)
        except subprocess.TimeoutExpired:
            run = Run(time.perf_counter() - started, -1, "", f"timed out after {CLI_TIMEOUT_S} s")
        self.runs.append(run)
        return run

    def figures(self) -> dict[str, Any]:
        failed = [r for r in self.runs if r.code != 0]
        reasons: dict[str, int] = {}
        for run in failed:
            lines = run.err.strip().splitlines() or [f"exit code {run.code}"]
            reason = PATH.sub("<path>", lines[-1])[:160]
            reasons[reason] = reasons.get(reason, 0) + 1
        return {
            "runs": len(self.runs),
            "failed": len(failed),
            "failures": reasons,
            "seconds": spread([r.seconds for r in self.runs]),
        }


def writer(worker: Worker, rng: random.Random, number: int) -> None:
    """``lsp-memory claim add`` in a loop, each statement unique; records what it was told."""
    for index in itertools.count(1):
        if worker.stop.is_set():
            return
        words = " ".join(rng.choices(WORDS, k=rng.randint(4, 9)))
        statement = f"{words[0].upper()}{words[1:]} (soak writer {number}, entry {index})"
        run = worker.run(["claim", "add", statement])
        found = ADDED.match(run.out)
        if run.code == 0 and found:
            worker.written.append(
                {"number": int(found[1]), "friendly_id": found[2], "statement": statement}
            )


def indexer(worker: Worker, vault: Path) -> None:
    """``lsp-memory index`` (incremental) in a loop."""
    while not worker.stop.is_set():
        worker.run(["index", "--vault", str(vault)])


def sampler(pid: int, stop: threading.Event, samples: list[tuple[float, float]]) -> None:
    """The server's VmRSS (MiB) once a second."""
    began = time.perf_counter()
    while not stop.wait(1.0):
        rss = proc_status(pid).get("vmrss_mib")
        if rss is not None:
            samples.append((time.perf_counter() - began, rss))


# -- the client ---------------------------------------------------------------------------------


@dataclass(slots=True)
class Tally:
    """Round trips per request kind, and what went wrong."""

    times: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    did_change: int = 0
    empty: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, seconds: float, empty: bool) -> None:
        self.times.setdefault(kind, []).append(seconds)
        if empty:
            self.empty[kind] = self.empty.get(kind, 0) + 1

    def error(self, kind: str, what: str) -> None:
        key = f"{kind}: {what[:160]}"
        self.errors[key] = self.errors.get(key, 0) + 1


def type_along(
    client: Client, prepared: Prepared, rng: random.Random, deadline: float, pause: float
) -> Tally:
    """Rounds of edit + completion, edit + hover (and now and then the debounced check)
    until ``deadline``."""
    tally = Tally()
    lines = prompt_lines(rng, prepared, PROMPT_LINES)
    typed_line, hover_line = PROMPT_LINES // 2, PROMPT_LINES // 2 + 2
    uri = (prepared.root / f"soak-{client.pid}.md").as_uri()
    doc = Document(client, uri, lines)
    since = client.mark()
    doc.open()
    client.diagnostics(uri, since)
    for round_number in itertools.count(1):
        if time.perf_counter() >= deadline:
            break
        trigger = rng.choice(TRIGGERS)
        probe = typed(rng, prepared, trigger, rng.randint(1, 4))
        edited = client.mark()
        doc.set_line(typed_line, probe.text)
        tally.did_change += 1
        ask(client, tally, f"completion {trigger}", doc.position(typed_line, probe.column))
        if round_number % DIAGNOSTICS_EVERY == 0:
            sent = time.perf_counter()
            try:
                received, _ = client.diagnostics(uri, edited, timeout=REQUEST_TIMEOUT_S)
                tally.add("diagnostics after didChange (0.3 s debounce)", received - sent, False)
            except TimeoutError as error:
                tally.error("diagnostics", str(error))
        kind = rng.choice(KINDS)
        probe = reference(rng, prepared, kind)
        doc.set_line(hover_line, probe.text)
        tally.did_change += 1
        ask(client, tally, f"hover {kind}", doc.position(hover_line, probe.column))
        if pause:
            time.sleep(pause)
    doc.close()
    return tally


def ask(client: Client, tally: Tally, kind: str, params: dict[str, Any]) -> Any:
    """One request, timed into ``tally``; its result, or None after an error or timeout
    (counted)."""
    method = "textDocument/completion" if kind.startswith("completion") else "textDocument/hover"
    try:
        reply = client.request(method, params, timeout=REQUEST_TIMEOUT_S)
    except (RuntimeError, TimeoutError) as error:
        if isinstance(error, ServerGone):
            raise
        tally.error(kind, str(error))
        return None
    result = reply.result
    empty = not result or (isinstance(result, dict) and result.get("items") == [])
    tally.add(kind, reply.seconds, empty)
    return result


# -- the soak -----------------------------------------------------------------------------------


def soak(prepared: Prepared, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    rng = random.Random(args.seed + 11)
    stop = threading.Event()
    workers: list[Worker] = []
    threads: list[threading.Thread] = []
    memory_samples: list[tuple[float, float]] = []
    try:
        with idle_server(prepared, work / "server.stderr") as server:
            client = server.client
            memory_start = proc_status(client.pid)
            for number in range(1, args.writers + 1):
                worker = Worker(f"writer {number}", prepared.env(), stop)
                source = random.Random(args.seed * 100 + number)
                threads.append(
                    threading.Thread(target=writer, args=(worker, source, number), daemon=True)
                )
                workers.append(worker)
            index_worker = Worker("indexer", prepared.env(), stop)
            workers.append(index_worker)
            threads.append(
                threading.Thread(target=indexer, args=(index_worker, prepared.vault), daemon=True)
            )
            threads.append(
                threading.Thread(
                    target=sampler, args=(client.pid, stop, memory_samples), daemon=True
                )
            )
            began = time.perf_counter()
            for thread in threads:
                thread.start()
            tally = type_along(client, prepared, rng, began + args.seconds, args.pause)
            typed_s = time.perf_counter() - began
            stop.set()
            for thread in threads:
                thread.join(CLI_TIMEOUT_S)
            memory_end = proc_status(client.pid)
            fresh = fresh_hovers(client, prepared, workers)
            log_errors = [
                str(m["params"].get("message"))[:200]
                for _, m in client.notices
                if m.get("method") in ("window/logMessage", "window/showMessage")
                and m["params"].get("type") == 1
            ]
            alive = client.process.poll() is None
    finally:
        stop.set()
    writers = [w for w in workers if w.name.startswith("writer")]
    return {
        "server": {
            "ready_s": server.ready_s,
            "idle": server.idle,
            "alive_at_end": alive,
            "exit_code": client.process.returncode,
            "memory_start": memory_start,
            "memory_end": memory_end,
            "vmrss_max_sampled_mib": max((s[1] for s in memory_samples), default=None),
            "vmrss_timeline_mib": [
                (round(t), round(r, 1)) for t, r in memory_samples[:: max(1, args.seconds // 12)]
            ],
            "error_messages": log_errors[:20],
            "error_message_count": len(log_errors),
        },
        "client": {
            "seconds": typed_s,
            "did_change": tally.did_change,
            "requests": sum(len(v) for v in tally.times.values() if v) + sum(tally.errors.values()),
            "errors": tally.errors,
            "empty_answers": tally.empty,
            "kinds": {kind: spread(times) for kind, times in sorted(tally.times.items())},
            "all_completion": spread(
                [t for k, v in tally.times.items() if k.startswith("completion") for t in v]
            ),
            "all_hover": spread(
                [t for k, v in tally.times.items() if k.startswith("hover") for t in v]
            ),
        },
        "writers": {w.name: w.figures() | {"claims_written": len(w.written)} for w in writers},
        "indexer": workers[-1].figures(),
        "writes": check_writes(prepared, writers),
        "fresh_hovers": fresh,
    }


def fresh_hovers(client: Client, prepared: Prepared, workers: Sequence[Worker]) -> dict[str, Any]:
    """A hover through the server on each writer's last claim: does it show the statement?"""
    found: dict[str, Any] = {}
    for worker in workers:
        if not worker.written:
            continue
        last = worker.written[-1]
        text = f"Check @{last['friendly_id']} now."
        uri = (prepared.root / f"fresh-{worker.name.replace(' ', '-')}.md").as_uri()
        doc = Document(client, uri, [text])
        doc.open()
        try:
            reply = client.request("textDocument/hover", doc.position(0, 8), REQUEST_TIMEOUT_S)
            shown = str((reply.result or {}).get("contents", {}).get("value", ""))
            found[worker.name] = {
                "friendly_id": last["friendly_id"],
                "shows_statement": last["statement"] in shown,
                "ms": reply.seconds * 1000,
            }
        except (RuntimeError, TimeoutError) as error:
            found[worker.name] = {"friendly_id": last["friendly_id"], "error": str(error)}
        doc.close()
    return found


def check_writes(prepared: Prepared, writers: Sequence[Worker]) -> dict[str, Any]:
    """Every claim a writer was told was added is in the store, with its number and
    statement; no number went to two claims."""
    done = subprocess.run(
        cli_command("claim", "list", "--json"),
        env=prepared.env(),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=True,
    )
    stored = {c["friendly_id"]: c for c in json.loads(done.stdout)}
    numbers = [c["claim_number"] for c in stored.values()]
    told = [claim for w in writers for claim in w.written]
    lost = [c for c in told if c["friendly_id"] not in stored]
    changed = [
        c
        for c in told
        if c["friendly_id"] in stored
        and (
            stored[c["friendly_id"]]["claim_number"] != c["number"]
            or stored[c["friendly_id"]]["statement"] != c["statement"]
        )
    ]
    statuses: dict[str, int] = {}
    for claim in told:
        status = stored.get(claim["friendly_id"], {}).get("status", "missing")
        statuses[status] = statuses.get(status, 0) + 1
    return {
        "told_written": len(told),
        "lost": len(lost),
        "lost_examples": lost[:5],
        "number_or_statement_changed": len(changed),
        "duplicate_numbers": len(numbers) - len(set(numbers)),
        "duplicate_numbers_told": len(told) - len({c["number"] for c in told}),
        "statuses_now": statuses,
        "claims_in_store": len(stored),
    }


# -- output -------------------------------------------------------------------------------------


def _cells(row: dict[str, Any], points: Sequence[str], scale: float, width: int) -> str:
    """A ``spread`` row's figures (``p50`` for ``p50_ms``), times ``scale``, in columns."""
    return " ".join(f"{row[point + '_ms'] * scale:{width}.2f}" for point in points)


def print_table(report: dict[str, Any]) -> None:
    params = report["parameters"]
    server, client = report["server"], report["client"]
    print_head(
        "lsp-memory soak: one client typing while CLI writers and an indexer share the store",
        report,
        f"{params['claims']} claims, {CONTEXTS} contexts, {ENTITIES} entities, {TAGS} tags;"
        f" {params['notes']} notes (built in {report['prepare_s']:.0f} s); {params['seconds']} s,"
        f" {params['writers']} writers, pause {params['pause']} s",
    )
    print(
        f"\nClient: {client['requests']} requests and {client['did_change']} didChange in "
        f"{client['seconds']:.1f} s; {sum(client['errors'].values())} errors"
    )
    print("  kind                                            count     p50     p95     p99     max")
    rows = [*client["kinds"].items(), ("all completion", client["all_completion"])]
    rows.append(("all hover", client["all_hover"]))
    print(
        "\n".join(
            f"  {kind:46} {row['count']:6} {_cells(row, ('p50', 'p95', 'p99', 'max'), 1, 7)}"
            for kind, row in rows
            if row["count"]
        )
    )
    for error, count in client["errors"].items():
        print(f"  error ×{count}: {error}")
    print("\nCommand-line processes         runs  failed  p50 s  p95 s  max s")
    for name, row in [*report["writers"].items(), ("indexer", report["indexer"])]:
        if row["seconds"]["count"]:
            cells = _cells(row["seconds"], ("p50", "p95", "max"), 0.001, 6)
            print(f"  {name:28} {row['runs']:5} {row['failed']:7} {cells}")
        for reason, count in row["failures"].items():
            print(f"    failed ×{count}: {reason}")
            if "another lsp-memory process" in reason:
                print("    (as designed: the server keeps the index, one writer per index)")
    writes = report["writes"]
    print(
        f"\nWrites: {writes['told_written']} claims reported added, {writes['lost']} lost, "
        f"{writes['number_or_statement_changed']} changed, {writes['duplicate_numbers']} "
        f"duplicate numbers in the store; now {writes['statuses_now']}"
    )
    for name, row in report["fresh_hovers"].items():
        print(f"  hover on {name}'s last claim @{row['friendly_id']}: {row}")
    start, end = server["memory_start"], server["memory_end"]
    print(
        f"\nServer memory (MiB): after index sync VmRSS {start.get('vmrss_mib', 0):.0f}, VmHWM "
        f"{start.get('vmhwm_mib', 0):.0f}; at end VmRSS {end.get('vmrss_mib', 0):.0f}, VmHWM "
        f"{end.get('vmhwm_mib', 0):.0f}; highest sampled VmRSS "
        f"{server['vmrss_max_sampled_mib'] or 0:.0f}"
    )
    print(f"  VmRSS over time (s, MiB): {server['vmrss_timeline_mib']}")
    print(
        f"Server alive at end: {server['alive_at_end']}; exit code {server['exit_code']}; "
        f"{server['error_message_count']} error messages to the client"
    )
    for message in server["error_messages"][:5]:
        print(f"  {message}")
    print(f"\ntotal {report['total_s']:.0f} s")


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__, seed=True, claims=5000, notes=500)
    parser.add_argument("--seconds", type=int, default=60, help="how long the soak runs")
    parser.add_argument("--writers", type=int, default=2, help="claim add loops")
    parser.add_argument("--pause", type=float, default=0.02, help="seconds between rounds")
    parser.add_argument("--keep", type=Path, help="build and keep the corpus and logs here")
    args = parser.parse_args(argv)
    if args.seconds < 1 or args.claims < 1000 or args.notes < 100 or args.writers < 0:
        parser.error("need --seconds ≥ 1, --claims ≥ 1000, --notes ≥ 100, --writers ≥ 0")
    began = time.perf_counter()
    names = ("seconds", "claims", "notes", "writers", "pause", "seed")
    parameters = {name: getattr(args, name) for name in names}
    report = start_report("soak", parameters=parameters | {"diagnostics_every": DIAGNOSTICS_EVERY})
    with workspace("soak", args.keep) as work:
        started = time.perf_counter()
        prepared = prepare(work / "corpus", args.claims, args.notes, args.seed)
        report["prepare_s"] = time.perf_counter() - started
        report.update(soak(prepared, args, work))
    emit(report, as_json=args.json, table=print_table, began=began)
    writes, server = report["writes"], report["server"]
    return 0 if writes["lost"] == 0 and server["alive_at_end"] else 1


if __name__ == "__main__":
    sys.exit(main())
