"""What the benchmarks share: the machine a figure was measured on, percentiles by one method,
the JSON report, the scratch folders and processes they run, and the pieces of corpus several
of them build.

Every benchmark is a module of the ``benchmarks`` package, run from the repository's root:
``.venv/bin/python -m benchmarks.foundation``; it imports what it shares from here
(``from benchmarks.common import …``) or from another benchmark (``from benchmarks.x import
…``).

**Percentiles, one method for every benchmark.** ``percentile(samples, p)`` sorts the samples
and interpolates linearly between the two nearest ranks: with ``n`` samples, the value at
0-based position ``(n - 1) · p / 100``, so p0 is the minimum, p100 the maximum and p50 the
median (the mean of the two middle samples when ``n`` is even); with one sample every
percentile is that sample. This is ``statistics.quantiles(samples, n=100,
method="inclusive")`` (computed here the same way, so the figures are identical to the last
bit), NumPy's default ``numpy.percentile(samples, p)`` ("linear"), and Hyndman and Fan's
type 7. With 300 samples p99 lies between the 297th and 298th smallest, 1 % of the way to the
298th; with 150, 51 % of the way from the 148th to the 149th; with 60, 41 % of the way from
the 59th to the largest.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from mcp import ClientSession

    from lsp_memory.services.retrieval.embedding import VectorSide
    from lsp_memory.store.fulltext import TextDoc
    from lsp_memory.store.vectors import FloatMatrix

ROOT = Path(__file__).resolve().parents[1]
"""The repository: benchmarks run with it as the working folder, ``lsp-memory`` processes too."""
EXTRACTION_SET = ROOT / "tests" / "data" / "extraction.jsonl"
"""The labelled message pairs (tests/data/README.md): messages for ingestion and search."""
VERSIONS = ("numpy", "onnxruntime", "tantivy", "tokenizers", "pygls")
"""Packages whose version a report names (read from their metadata, not imported)."""


# -- percentiles --------------------------------------------------------------------------------


def percentile(samples: Sequence[float], p: int) -> float:
    """The ``p``-th percentile (0-100) of ``samples`` by linear interpolation between the two
    nearest ranks (the module's docstring)."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    last = len(ordered) - 1
    if not 0 <= p <= 100:
        raise ValueError(f"percentile {p} is not in 0-100")
    j, delta = divmod(p * last, 100)
    following = ordered[min(j + 1, last)]
    return (ordered[j] * (100 - delta) + following * delta) / 100


def latency_ms(
    samples_s: Sequence[float], points: Sequence[int] = (50, 90, 99)
) -> dict[str, float]:
    """Percentiles (``p50_ms`` … for ``points``), max and mean of timings in seconds, in
    milliseconds."""
    figures = {f"p{p}_ms": percentile(samples_s, p) * 1000 for p in points}
    figures["max_ms"] = max(samples_s) * 1000
    figures["mean_ms"] = statistics.fmean(samples_s) * 1000
    return figures


# -- the machine and the code -------------------------------------------------------------------


def load_average() -> list[float] | None:
    """The 1-, 5- and 15-minute load averages, or None where the system has none."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _cpu_model() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return model


def _memory_gib() -> float | None:
    try:
        for row in Path("/proc/meminfo").read_text().splitlines():
            if row.startswith("MemTotal:"):
                return round(int(row.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def machine() -> dict[str, Any]:
    """What a figure was measured on: platform, CPU, cores, memory, versions, and the load
    average at the start (other work on the same cores moves every figure)."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        **{name: _version(name) for name in VERSIONS},
        "load_average_at_start": load_average(),
    }


def machine_line(facts: dict[str, Any]) -> str:
    """``machine()`` in one line, for a table's head."""
    return (
        f"machine: {facts['platform']}, {facts['cpu']}, {facts['cpus']} CPUs, "
        f"{facts['memory_gib']} GiB, Python {facts['python']}, SQLite {facts['sqlite']}, "
        f"load {facts['load_average_at_start']}"
    )


def print_head(title: str, report: dict[str, Any], data: str) -> None:
    """A table's first lines: its title, the machine, and what data it ran on."""
    print(title)
    print(machine_line(report["machine"]))
    print(f"data: {data}")


def print_memory_steps(steps: dict[str, dict[str, float]], width: int) -> None:
    """A process's memory after each step (``proc_status`` figures), a line a step."""
    for step, row in steps.items():
        print(
            f"  {step:{width}} VmRSS {row.get('vmrss_mib', 0):5.0f} MiB (anon "
            f"{row.get('rssanon_mib', 0):4.0f}, file {row.get('rssfile_mib', 0):3.0f})  "
            f"VmHWM {row.get('vmhwm_mib', 0):5.0f} MiB"
        )


def code_version() -> dict[str, Any]:
    """The commit measured, and the files of the package changed since it (others edit it
    while benchmarks run)."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
        return done.stdout.strip()

    changed = git("status", "--porcelain", "--", "lsp_memory").splitlines()
    return {"commit": git("rev-parse", "--short", "HEAD"), "package_changes": changed}


def peak_rss_mib() -> float:
    """This process's peak resident memory (``ru_maxrss``), in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 / (1024 if sys.platform == "darwin" else 1)


def proc_status(pid: int | str = "self") -> dict[str, float]:
    """VmRSS, VmHWM, RssAnon and RssFile of a process in MiB, and its thread count, from
    ``/proc/<pid>/status`` (empty where there is none)."""
    found: dict[str, float] = {}
    try:
        rows = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return found
    for row in rows:
        key = row.split(":", 1)[0]
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            found[key.lower() + "_mib"] = int(row.split()[1]) / 1024
        elif key == "Threads":
            found["threads"] = int(row.split()[1])
    return found


# -- the report ---------------------------------------------------------------------------------


COUNTS = {
    "claims": "generated claims",
    "notes": "generated Markdown notes",
    "samples": "timed requests per case",
    "queries": "timed queries per case",
}
"""The counts several benchmarks take, and what they count."""


def arguments(doc: str | None, *, seed: bool = False, **counts: int) -> argparse.ArgumentParser:
    """A benchmark's parser: the first paragraph of its docstring, ``--json``, ``--seed``
    (default 7) with ``seed``, and an integer option per count with its default
    (``claims=100_000``: ``--claims``)."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    if seed:
        parser.add_argument("--seed", type=int, default=7)
    for name, default in counts.items():
        option = "--" + name.replace("_", "-")
        parser.add_argument(option, type=int, default=default, help=COUNTS.get(name))
    return parser


def start_report(name: str, **fields: Any) -> dict[str, Any]:
    """A report's opening fields: the benchmark's name, ``machine()`` and the code measured,
    then ``fields``."""
    return {"benchmark": name, "machine": machine(), "code": code_version(), **fields}


def emit(
    data: dict[str, Any],
    *,
    as_json: bool,
    table: Callable[[dict[str, Any]], None] | None = None,
    began: float | None = None,
) -> None:
    """Close a report (with ``began``, a ``perf_counter`` time: the seconds since, the load
    average at the end and this process's peak RSS) and print it: one JSON object, or
    ``table``'s rendering of it."""
    if began is not None:
        data["total_s"] = time.perf_counter() - began
        data["load_average_at_end"] = load_average()
        data["peak_rss_mib_harness"] = peak_rss_mib()
    if as_json or table is None:
        print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    else:
        table(data)


# -- scratch folders and processes --------------------------------------------------------------


@contextmanager
def workspace(name: str, keep: Path | None = None, *, fresh: bool = True) -> Iterator[Path]:
    """A folder for a run's files. ``keep`` None: a temporary one, removed afterwards. Else
    kept: a new folder inside ``keep`` (``fresh``), or ``keep`` itself, reused (a cache)."""
    if keep is None:
        folder = Path(tempfile.mkdtemp(prefix=f"lsp-memory-{name}-"))
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    keep.mkdir(parents=True, exist_ok=True)
    yield Path(tempfile.mkdtemp(prefix=f"{name}-", dir=keep)) if fresh else keep.resolve()


def lsp_memory_command(*args: str) -> list[str]:
    """``python -m lsp_memory ARGS`` with this interpreter."""
    return [sys.executable, "-m", "lsp_memory", *args]


def isolated_env(
    xdg: Path, store: Path, user: str, cache_home: Path | None = None
) -> dict[str, str]:
    """An ``lsp-memory`` process's environment: its settings from the environment, home and
    every XDG folder under ``xdg`` (the cache under ``xdg/cache`` unless ``cache_home``)."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(xdg / "home"),
        "XDG_CACHE_HOME": str(cache_home or xdg / "cache"),
        "XDG_CONFIG_HOME": str(xdg / "config"),
        "XDG_DATA_HOME": str(xdg / "data"),
        "XDG_STATE_HOME": str(xdg / "state"),
        "LSP_MEMORY_STORE": str(store),
        "LSP_MEMORY_USER": user,
        "PYTHONPATH": str(ROOT),
    }


def timed_process(env: dict[str, str], *args: str, output: Path | None = None) -> dict[str, Any]:
    """Run ``python -m lsp_memory ARGS`` to its end (its output to ``output``, if given):
    its wall time and peak RSS (``wait4``'s ``ru_maxrss``); a failure stops the benchmark."""
    started = time.perf_counter()
    with Path(output or os.devnull).open("w") as out:
        process = subprocess.Popen(
            lsp_memory_command(*args),
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stderr is not None
        errors = process.stderr.read()
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"lsp-memory {' '.join(args)} failed ({code}): {errors.strip()[-400:]}")
    return {"seconds": round(wall, 2), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1)}


@asynccontextmanager
async def mcp_session(env: dict[str, str]) -> AsyncIterator[ClientSession]:
    """``lsp-memory mcp`` spawned by the MCP SDK's own client over stdio, initialised."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "lsp_memory", "mcp"], env=env, cwd=str(ROOT)
    )
    with Path(os.devnull).open("w") as errors:
        async with (
            stdio_client(params, errlog=errors) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


# -- corpus pieces ------------------------------------------------------------------------------


def extraction_rows() -> list[dict[str, Any]]:
    """The labelled extraction set, one dict per message pair."""
    lines = EXTRACTION_SET.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def noisy_copies(
    pool: FloatMatrix, count: int, generator: np.random.Generator, sigma: float
) -> FloatMatrix:
    """``count`` vectors, each a random row of ``pool`` plus Gaussian noise (``sigma`` per
    component), not normalised. An exact vector search costs the same whatever the vectors
    hold, so noisy copies of a few real vectors stand in for embedding a corpus for real."""
    import numpy as np

    base = pool[generator.integers(0, len(pool), size=count)]
    return base + generator.normal(0.0, sigma, size=base.shape).astype(np.float32)


def store_vectors(
    side: VectorSide, docs: Sequence[TextDoc], hashes: Sequence[str], matrix: FloatMatrix
) -> None:
    """Vectors of ``docs`` (content hashes ``hashes``) through the library's own path: into
    the vector cache, and the documents marked embedded in the queue."""
    from lsp_memory.store.catalog import Entry

    side.cache.put_many(side.embedder.model_id, dict(zip(hashes, matrix, strict=True)))
    side.catalog.mark_embedded(
        [Entry(d.id, d.user, d.kind, d.status, h) for d, h in zip(docs, hashes, strict=True)]
    )
