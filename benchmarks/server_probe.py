"""The cycle collector and the background thread: some cases again on a server started
through a bootstrap that records every cycle collection (``gc.callbacks``) and every
background sync of its indexing thread (``IndexKeeper.index``, ``VectorSide.drain``); which slow
requests overlapped one, and the p99 with the collections' time taken out.
"""

from __future__ import annotations

import bisect
import json
import os
import signal
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.common import latency_ms
from benchmarks.server_suites import (
    SIDE_PASS_CHECKS,
    Bench,
    diagnostics_suite,
    idle_server,
    latency_suite,
)

GC_SLOW_MS = 1.0  # a collection this long counts as a pause
# Runs the server with every cycle collection and every background sync (the indexing
# thread's IndexKeeper.index and VectorSide.drain) recorded, in perf_counter time (CLOCK_MONOTONIC,
# shared with the harness); SIGUSR1 writes them to argv[1]. The server's code is unchanged.
PROBE_BOOTSTRAP = """
import gc, json, signal, sys, time
from lsp_memory.services.retrieval.embedding import VectorSide
from lsp_memory.services.retrieval.keeper import IndexKeeper
events, busy = [], []
began = [0.0]
def track(phase, info):
    if phase == "start":
        began[0] = time.perf_counter()
    else:
        events.append((began[0], time.perf_counter(), info["generation"], info["collected"]))
gc.callbacks.append(track)
def timed(cls, name):
    original = getattr(cls, name)
    def wrapper(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            busy.append((start, time.perf_counter(), name))
    setattr(cls, name, wrapper)
timed(IndexKeeper, "index")
timed(VectorSide, "drain")
def dump(signum, frame):
    data = {"events": events, "busy": busy, "stats": gc.get_stats(),
            "frozen": gc.get_freeze_count(), "threshold": gc.get_threshold(),
            "young": [len(gc.get_objects(g)) for g in range(3)]}
    with open(sys.argv[1] + ".tmp", "w") as out:
        json.dump(data, out)
    import os
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
signal.signal(signal.SIGUSR1, dump)
from lsp_memory.cli import main
sys.exit(main(["serve"]))
"""


def _overlaps(
    begin: float, end: float, intervals: Sequence[Sequence[Any]], starts: Sequence[float]
) -> float:
    """Seconds of ``[begin, end]`` covered by ``intervals`` (sorted by start, each at most
    a minute long; ``starts`` their starts)."""
    total = 0.0
    index = bisect.bisect_left(starts, begin - 60.0)
    while index < len(intervals) and intervals[index][0] < end:
        total += max(0.0, min(intervals[index][1], end) - max(intervals[index][0], begin))
        index += 1
    return total


def attribution(
    cases: dict[str, dict[str, Any]],
    events: list[list[float]],
    busy: list[list[Any]],
) -> dict[str, dict[str, Any]]:
    """For each case: which requests overlapped a collection pause (≥ GC_SLOW_MS) or a
    background sync of the indexing thread; the p99 with the pauses' time taken out, and
    the p99 of the requests that overlapped neither."""
    pauses = sorted(e for e in events if (e[1] - e[0]) * 1000 >= GC_SLOW_MS)
    pause_starts = [p[0] for p in pauses]
    syncs = sorted(busy)
    sync_starts = [b[0] for b in syncs]
    found: dict[str, dict[str, Any]] = {}
    for key, case in cases.items():
        sent: list[float] = case.get("sent") or []
        samples: list[float] = case.get("samples_ms") or []
        if len(sent) < 2:
            continue
        in_gc: list[float] = []
        in_sync: list[bool] = []
        for begin, took in zip(sent, samples, strict=True):
            end = begin + took / 1000
            in_gc.append(_overlaps(begin, end, pauses, pause_starts) * 1000)
            in_sync.append(_overlaps(begin, end, syncs, sync_starts) > 0)
        count = max(1, len(samples) // 100)
        slowest = sorted(range(len(samples)), key=samples.__getitem__)[-count:]
        without = [s - g for s, g in zip(samples, in_gc, strict=True)]
        quiet = [
            s / 1000 for s, g, b in zip(samples, in_gc, in_sync, strict=True) if g == 0 and not b
        ]
        found[key] = {
            "runs": len(samples),
            "p50_ms": statistics.median(samples),
            "p99_ms": latency_ms([s / 1000 for s in samples])["p99_ms"],
            "p99_without_gc_ms": latency_ms([s / 1000 for s in without])["p99_ms"],
            "quiet_runs": len(quiet),
            "quiet_p99_ms": latency_ms(quiet)["p99_ms"] if len(quiet) > 1 else None,
            "with_gc_pause": sum(1 for g in in_gc if g > 0),
            "with_sync": sum(in_sync),
            "slowest": count,
            "slowest_with_gc_pause": sum(1 for i in slowest if in_gc[i] > 0),
            "slowest_with_sync": sum(1 for i in slowest if in_sync[i]),
            "gc_ms_in_slowest": [round(in_gc[i], 2) for i in slowest],
        }
    return found


PROBE_CASES = {
    "completion @ 2",
    "completion # 2",
    "completion [[ 2",
    "hover claim",
    "hover context",
    "hover note",
    "definition claim",
    "definition entity",
}


def probe(bench: Bench, samples: int) -> dict[str, Any]:
    """Some cases on a server that records its collections and its background syncs: which
    slow requests overlapped one."""
    prepared, work = bench.prepared, bench.work
    events_file = work / "probe-events.json"
    command = [sys.executable, "-c", PROBE_BOOTSTRAP, str(events_file)]
    with idle_server(prepared, work / "probe.stderr", bench.capabilities, command) as server:
        client = server.client
        began = time.perf_counter()
        cases = latency_suite(client, bench, samples, selection=PROBE_CASES, large_document=False)
        checks = diagnostics_suite(client, bench, SIDE_PASS_CHECKS, debounced=0)
        took = time.perf_counter() - began
        cases["diagnostics did_open"] = checks["did_open"]
        cases["diagnostics did_save"] = checks["did_save"]
        os.kill(client.pid, signal.SIGUSR1)
        for _ in range(200):
            if events_file.exists():
                break
            time.sleep(0.05)
        data = json.loads(events_file.read_text())
    after_ready = client.spawned + server.ready_s
    events = [e for e in data["events"] if e[0] >= after_ready]
    busy = [b for b in data["busy"] if b[0] >= after_ready]
    by_generation: dict[str, dict[str, float]] = {}
    for generation in (0, 1, 2):
        mine = sorted((e[1] - e[0]) * 1000 for e in events if e[2] == generation)
        if mine:
            by_generation[str(generation)] = {
                "count": len(mine),
                "median_ms": statistics.median(mine),
                "p99_ms": latency_ms([m / 1000 for m in mine])["p99_ms"]
                if len(mine) > 1
                else mine[0],
                "max_ms": mine[-1],
                "total_ms": sum(mine),
            }
    syncs: dict[str, dict[str, float]] = {}
    for name in ("index", "drain"):
        mine = sorted((b[1] - b[0]) * 1000 for b in busy if b[2] == name)
        if mine:
            syncs[name] = {
                "count": len(mine),
                "median_ms": statistics.median(mine),
                "max_ms": mine[-1],
                "share_of_time": sum(mine) / 1000 / took,
            }
    return {
        "ready_s": server.ready_s,
        "idle": server.idle,
        "seconds": took,
        "collections_after_ready": len(events),
        "collections_over_1ms": sum(1 for e in events if (e[1] - e[0]) * 1000 >= GC_SLOW_MS),
        "by_generation": by_generation,
        "frozen_objects": data["frozen"],
        "young_objects_at_end": data["young"],
        "threshold": data["threshold"],
        "background_syncs": syncs,
        "cases": attribution(cases, events, busy),
    }
