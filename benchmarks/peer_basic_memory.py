"""basic-memory beside lsp-memory on the same notes: whole-process search and resident memory.

    .venv/bin/python -m benchmarks.peer_basic_memory --basic-memory /tmp/peer-bm/bin/basic-memory
        [--cache DIR] [--workdir DIR] [--sizes 1000 10000] [--json]

Issue 24's peer row. basic-memory (a separate install: it needs Python ≥ 3.12; give its
``basic-memory`` executable with ``--basic-memory`` or ``$BASIC_MEMORY_BIN``; without it the
benchmark says so in one line and stops) and lsp-memory each get the same generated notes:

- **1 000 notes**: ``benchmarks.search``'s generator with seed 7 (``generate_user`` of the
  100 000-claim user, then ``generate_vault`` of 1 000 notes: the notes ``benchmarks.search
  --notes 1000`` makes). lsp-memory indexes them into a fresh store (no claims) with
  ``lsp-memory index --full`` (text and embeddings, one process, timed).
- **10 000 notes**: the server benchmark's corpus (``--cache``, ``benchmarks.server_corpus``:
  the same 10 000 notes, and 100 000 claims beside them, all embedded). lsp-memory searches
  that store as it is (its notes and its claims: more than basic-memory holds).

basic-memory gets its own copy of each vault (it writes front matter into every note it
indexes) and its own home (``HOME``: its config and database), indexes it once with
``basic-memory project add bench VAULT --default`` (timed; an index finished in an earlier run
under ``--workdir`` is reused, with the figures of that run), with ``HF_HUB_OFFLINE=1``:
here its semantic search is off by itself (this Python's sqlite3 cannot load extensions), so
it searches by keywords.

Then, in one run, for each size:

1. **Search as whole processes**: the same 7 queries (``benchmarks.context``'s), one process
   each, ours and theirs in turns: ``lsp-memory search --mode bm25 QUERY`` (keywords, as
   basic-memory's) and ``basic-memory tool search-notes QUERY --json``; on 10 000 notes also
   ``lsp-memory search QUERY`` (hybrid, the issue's row). Wall time from spawn to exit
   (median, min, max), CPU seconds and peak RSS (``wait4``).
2. **MCP servers idle after indexing**: ``basic-memory mcp`` and ``lsp-memory mcp``, each
   spawned by the MCP SDK's client, asked one search (``search_notes`` / ``search_memory``),
   then left until their CPU falls idle; VmRSS of the server and its children.
3. **Our language server idle after indexing** (``lsp-memory serve``, workspace = the vault):
   after its "index ready" and an idle window; server and embedding helper.

Nothing of basic-memory is kept in the repository; its files go under ``--workdir``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import (
    arguments,
    emit,
    isolated_env,
    lsp_memory_command,
    proc_status,
    start_report,
)
from benchmarks.context import SEARCHES
from benchmarks.lspclient import Client, vs_code_capabilities
from benchmarks.server_corpus import CONTEXTS, ENTITIES, TAGS, USER, prepare_in
from benchmarks.server_memory import family
from benchmarks.server_suites import SERVER, cpu_seconds, wait_idle, wait_ready

CLAIMS = 100_000
SEED = 7
IDLE_WINDOW_S = 2.0
IDLE_CPU_SHARE = 0.05  # of one core, summed over the process and its children
IDLE_TIMEOUT_S = 300.0
PROJECT = "bench"


# -- processes ----------------------------------------------------------------------------------


def run_process(command: Sequence[str], env: dict[str, str]) -> dict[str, float]:
    """``command`` to its end: wall seconds, CPU seconds (user + system) and peak RSS (MiB,
    ``wait4``'s ``ru_maxrss``); a failure stops the benchmark with its last words."""
    started = time.perf_counter()
    process = subprocess.Popen(
        list(command), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None
    errors = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed: {errors.strip()[-400:]}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mib": usage.ru_maxrss / 1024,
    }


def summary(runs: list[dict[str, float]]) -> dict[str, Any]:
    """Median, min and max wall time, median CPU and the largest peak RSS of ``runs``."""
    walls = [run["wall_s"] for run in runs]
    return {
        "runs": len(runs),
        "median_s": round(statistics.median(walls), 3),
        "min_s": round(min(walls), 3),
        "max_s": round(max(walls), 3),
        "cpu_median_s": round(statistics.median(run["cpu_s"] for run in runs), 3),
        "peak_rss_mib": round(max(run["peak_rss_mib"] for run in runs), 1),
    }


def tree(pid: int) -> list[int]:
    """``pid`` and all its descendants."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def tree_memory(pid: int) -> dict[str, Any]:
    """VmRSS and VmHWM (MiB) summed over ``pid`` and its descendants, and how many."""
    pids = tree(pid)
    rows = [proc_status(p) for p in pids]
    return {
        "processes": len(pids),
        "vmrss_mib": round(sum(r.get("vmrss_mib", 0.0) for r in rows), 1),
        "vmhwm_mib": round(sum(r.get("vmhwm_mib", 0.0) for r in rows), 1),
    }


def wait_tree_idle(pid: int) -> dict[str, Any]:
    """Wait until ``pid`` and its children use under IDLE_CPU_SHARE of a core over a window."""
    started = time.perf_counter()

    def cpu() -> float:
        return sum(cpu_seconds(p) for p in tree(pid))

    last = cpu()
    while time.perf_counter() - started < IDLE_TIMEOUT_S:
        time.sleep(IDLE_WINDOW_S)
        now = cpu()
        if (now - last) / IDLE_WINDOW_S < IDLE_CPU_SHARE:
            return {"waited_s": round(time.perf_counter() - started, 1), "idle": True}
        last = now
    return {"waited_s": round(time.perf_counter() - started, 1), "idle": False}


async def mcp_idle(command: Sequence[str], env: dict[str, str], tool: str) -> dict[str, Any]:
    """An MCP server spawned over stdio, asked one search by ``tool``, then left to go idle:
    its (and its children's) resident memory."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command[0], args=list(command[1:]), env=env)
    started = time.perf_counter()
    with Path(os.devnull).open("w") as errors:
        async with (
            stdio_client(params, errlog=errors) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool(tool, {"query": SEARCHES[0]})
            answered = time.perf_counter() - started
            if result.is_error:
                raise SystemExit(f"{tool} failed: {str(result.content)[:400]}")
            pid = server_pid(command)
            idle = await asyncio.to_thread(wait_tree_idle, pid)
            memory = tree_memory(pid)
    return {"first_answer_s": round(answered, 2), "idle": idle, **memory}


def server_pid(command: Sequence[str]) -> int:
    """The newest process under this one running ``command`` (the MCP client spawned it)."""
    wanted = "\0".join(command).encode()
    found = []
    for pid in tree(os.getpid())[1:]:
        try:
            if wanted in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            continue
    if not found:
        raise SystemExit(f"no process of {' '.join(command)} found")
    return max(found)


def language_server_idle(env: dict[str, str], vault: Path, log: Path) -> dict[str, Any]:
    """``lsp-memory serve`` on ``vault`` once its index is ready and it is idle."""
    client = Client(SERVER, env, log)
    try:
        client.initialize(vault, vs_code_capabilities())
        ready = wait_ready(client)
        idle = wait_idle(client)
        return {"index_ready_s": round(ready, 2), "idle": idle, **family(client.pid)}
    finally:
        client.close()


# -- the two sides ------------------------------------------------------------------------------


def bm_env(home: Path) -> dict[str, str]:
    """basic-memory's environment: its own home, no network, no update check."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "HF_HUB_OFFLINE": "1",
        "BASIC_MEMORY_AUTO_UPDATE": "false",
        "NO_COLOR": "1",
    }


def bm_index(bm: str, vault: Path, folder: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """basic-memory's home for ``vault`` under ``folder``, indexed (timed) unless a finished
    index is there: its environment and the index's figures (``reused`` True: from the run
    that built it). An index whose build did not finish (no ``indexed.json``) is redone."""
    home, copy, done = folder / "home", folder / "vault", folder / "indexed.json"
    env = bm_env(home)
    if done.exists():
        return env, json.loads(done.read_text()) | {"reused": True}
    shutil.rmtree(folder, ignore_errors=True)
    home.mkdir(parents=True)
    shutil.copytree(vault, copy)
    ran = run_process([bm, "project", "add", PROJECT, str(copy), "--default"], env)
    figures = {k: round(v, 2) for k, v in ran.items()} | {"load_average_at_end": os.getloadavg()}
    done.write_text(json.dumps(figures))
    return env, figures | {"reused": False}


def vault_1k(folder: Path) -> Path:
    """``benchmarks.search``'s 1 000 notes for seed 7, generated once into ``folder``."""
    from benchmarks.foundation import generate_user
    from benchmarks.search import generate_vault

    vault = folder / "vault-1k"
    if not vault.is_dir():
        rng = random.Random(SEED)  # the search benchmark's order: claims, then the vault
        claims = generate_user(
            rng, user=None, claims=CLAIMS, contexts=CONTEXTS, entities=ENTITIES, tags=TAGS
        )
        generate_vault(rng, vault, 1000, claims)
    return vault


def size_run(bm: str, notes: int, work: Path, cache: Path | None) -> dict[str, Any]:
    """Both sides on ``notes`` notes: indexes, searches in turns, MCP and server memory."""
    found: dict[str, Any] = {"notes": notes}
    if notes == 1000:
        vault = vault_1k(work)
        ours_root = work / "ours-1k"
        shutil.rmtree(ours_root, ignore_errors=True)
        store, xdg = ours_root / "store", ours_root / "xdg"
        env = isolated_env(xdg, store, USER)
        index = run_process(lsp_memory_command("--vault", str(vault), "index", "--full"), env)
        found["ours_index"] = {k: round(v, 2) for k, v in index.items()}
    elif notes == 10_000:
        assert cache is not None  # checked in main
        prepared = prepare_in(cache, CLAIMS, notes, SEED)
        vault, env = prepared.vault, prepared.env()
        found["ours_index"] = None
    else:
        raise AssertionError(notes)  # checked in main
    bm_env_, found["bm_index"] = bm_index(bm, vault, work / f"bm{notes // 1000}k")

    ours_cmd = lsp_memory_command("--vault", str(vault), "search")
    ours, hybrid, theirs = [], [], []
    for query in SEARCHES:
        ours.append(run_process([*ours_cmd, "--mode", "bm25", query], env))
        theirs.append(run_process([bm, "tool", "search-notes", query, "--json"], bm_env_))
        if notes == 10_000:
            hybrid.append(run_process([*ours_cmd, query], env))
    found["ours_search_bm25"] = summary(ours)
    if hybrid:
        found["ours_search_hybrid"] = summary(hybrid)
    found["bm_search"] = summary(theirs)

    found["bm_mcp_idle"] = asyncio.run(mcp_idle([bm, "mcp"], bm_env_, "search_notes"))
    ours_mcp = lsp_memory_command("--vault", str(vault), "mcp")
    found["ours_mcp_idle"] = asyncio.run(mcp_idle(ours_mcp, env, "search_memory"))
    found["ours_server_idle"] = language_server_idle(env, vault, work / f"serve-{notes}.log")
    return found


# -- main ---------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument(
        "--basic-memory",
        default=os.environ.get("BASIC_MEMORY_BIN"),
        help="basic-memory's executable (default: $BASIC_MEMORY_BIN)",
    )
    parser.add_argument(
        "--cache", type=Path, help="the server corpus folder (needed for 10 000 notes)"
    )
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/peer-basic-memory"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    args = parser.parse_args(argv)
    bm = args.basic_memory
    if not bm or shutil.which(bm) is None:
        print(
            "basic-memory is not installed: give its executable with --basic-memory or "
            "$BASIC_MEMORY_BIN (it needs Python ≥ 3.12); skipped",
            file=sys.stderr,
        )
        return 0
    if set(args.sizes) - {1000, 10_000}:
        parser.error("--sizes: 1000 and/or 10000")
    if 10_000 in args.sizes and args.cache is None:
        parser.error("10 000 notes: give the server corpus's folder with --cache")
    began = time.perf_counter()
    version = subprocess.run(
        [bm, "--version"], env=bm_env(args.workdir), capture_output=True, text=True, check=True
    ).stdout.strip()
    data = start_report("peer_basic_memory", basic_memory=version, sizes=args.sizes)
    data["load_average_at_start"] = os.getloadavg()
    args.workdir.mkdir(parents=True, exist_ok=True)
    data["runs"] = [size_run(bm, n, args.workdir.resolve(), args.cache) for n in args.sizes]
    emit(data, as_json=args.json, table=print_table, began=began)
    return 0


def print_table(report: dict[str, Any]) -> None:
    print(f"{report['basic_memory']}; load at start {report['load_average_at_start']}")
    for run in report["runs"]:
        print(f"\n{run['notes']} notes")
        for key, value in run.items():
            if key != "notes":
                print(f"  {key:20} {value}")
    print(f"\nload average at the end: {report['load_average_at_end']}")


if __name__ == "__main__":
    sys.exit(main())
