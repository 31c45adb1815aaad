"""The language server's memory with its embedding helper (issue 24), and what the helper
costs a search by meaning (memory figures: ``server_memory``).

- The ``helper`` suite: one server with ``embedIdleSeconds`` = ``IDLE_S``; memory once ready and
  idle; ``lspMemory.search`` (hybrid: the query embedded by the helper) timed warm; memory
  after the helper's idle stop; then ``COLD_RUNS`` times: wait for the helper to stop, time
  the first search (the spawn and the model load included), and the one right after it.
"""

from __future__ import annotations

import time
from typing import Any

from benchmarks.common import latency_ms
from benchmarks.lspclient import Client
from benchmarks.server_memory import MemorySampler, family, helpers
from benchmarks.server_suites import SERVER, Bench, wait_idle, wait_ready

IDLE_S = 10.0
COLD_RUNS = 5
QUERIES = (
    "morning routine",
    "project deadline",
    "who is my manager",
    "kitchen renovation budget",
    "weekend plans with the family",
    "database migration",
    "how did I sleep last week",
    "which tools do I use for notes",
)


def _search(client: Client, query: str) -> tuple[float, bool]:
    reply = client.request(
        "workspace/executeCommand",
        {"command": "lspMemory.search", "arguments": [query, "all", 10]},
    )
    hits = reply.result or []
    return reply.seconds, any(hit.get("similarity", 0) > 0 for hit in hits)


def _wait_stopped(pid: int, timeout: float) -> float | None:
    """Seconds until the server has no helper; None if it still has one after ``timeout``
    (or never had one: a server embedding in its own process)."""
    began = time.perf_counter()
    while helpers(pid):
        if time.perf_counter() - began > timeout:
            return None
        time.sleep(0.1)
    return time.perf_counter() - began


def helper_suite(bench: Bench, samples: int) -> dict[str, Any]:
    """Memory idle and while searching, warm search latency, cold first search."""
    prepared, work = bench.prepared, bench.work
    client = Client(SERVER, prepared.env(), work / "helper.stderr")
    memory: dict[str, Any] = {}
    try:
        client.initialize(prepared.vault, bench.capabilities, options={"embedIdleSeconds": IDLE_S})
        ready = wait_ready(client)
        idle = wait_idle(client)
        memory["ready_idle"] = family(client.pid)
        warm: list[float] = []
        semantic = 0
        with MemorySampler(client.pid) as sampler:
            for index in range(samples):
                seconds, by_meaning = _search(client, QUERIES[index % len(QUERIES)])
                warm.append(seconds)
                semantic += by_meaning
        memory["after_searches"] = family(client.pid)
        memory["searching_peak_vmrss_mib"] = sampler.peak_mib
        stopped = _wait_stopped(client.pid, IDLE_S + 30)
        memory["after_idle_stop"] = family(client.pid)
        cold: list[float] = []
        after: list[float] = []
        for index in range(COLD_RUNS):
            if helpers(client.pid) and _wait_stopped(client.pid, IDLE_S + 30) is None:
                break
            cold.append(_search(client, QUERIES[index % len(QUERIES)])[0])
            after.append(_search(client, QUERIES[(index + 1) % len(QUERIES)])[0])
    finally:
        client.close()
    return {
        "idle_setting_s": IDLE_S,
        "ready_s": ready,
        "idle": idle,
        "memory": memory,
        "helper_stopped_after_s": stopped,
        "warm_search": {
            **latency_ms(warm),
            "runs": len(warm),
            "semantic_share": semantic / max(len(warm), 1),
        },
        "cold_first_search": {**latency_ms(cold), "runs": len(cold)} if cold else None,
        "search_after_cold": {**latency_ms(after), "runs": len(after)} if after else None,
        "cold_samples_ms": [s * 1000 for s in cold],
    }


def print_helper(h: dict[str, Any]) -> None:
    """The suite's lines of the table."""
    mem = h["memory"]

    def line(label: str, step: dict[str, Any]) -> str:
        server = step["server"].get("vmrss_mib", 0.0)
        helper = (step["helper"] or {}).get("vmrss_mib", 0.0)
        return (
            f"  {label:32} server {server:6.0f}  helper {helper:6.0f}  "
            f"total VmRSS {step['total_vmrss_mib']:6.0f} MiB  "
            f"(VmHWM sum {step['total_vmhwm_mib']:6.0f})"
        )

    print(f"\nEmbedding helper (embedIdleSeconds {h['idle_setting_s']:.0f}):")
    print(line("ready and idle", mem["ready_idle"]))
    print(line("after the searches", mem["after_searches"]))
    print(f"  {'peak while searching':32} total VmRSS {mem['searching_peak_vmrss_mib']:6.0f} MiB")
    print(line("after the helper's idle stop", mem["after_idle_stop"]))
    w = h["warm_search"]
    print(
        f"  lspMemory.search warm, n={w['runs']}: p50 {w['p50_ms']:.1f} ms, p99 "
        f"{w['p99_ms']:.1f} ms ({w['semantic_share']:.0%} with vectors)"
    )
    for key, label in (
        ("cold_first_search", "first search after the idle stop"),
        ("search_after_cold", "the search right after it"),
    ):
        row = h[key]
        if row:
            print(
                f"  {label}, n={row['runs']}: p50 {row['p50_ms']:.0f} ms, "
                f"max {row['max_ms']:.0f} ms"
            )
