"""Ways to scan the real corpus's vectors, side by side: speed, memory, start and recall.

    python -m benchmarks.vector_scan --cache /tmp/bench-vec [--queries 300] [--json]

Reads every vector of the benchmark corpus (``benchmarks/server_corpus.py``'s cache folder:
the 117k embedded documents of the 100k-claim corpus) from its vector cache, then measures
each candidate in a fresh process of its own (so resident memory and start are its alone):

- ``f32-einsum``: today's exact scan, one float32 ``einsum`` over the whole matrix;
- ``f32-mmap``: the same over a memory-mapped ``.npy`` file;
- ``i8-numpy`` / ``f16-numpy``: the matrix quantized (int8 with a scale per dimension, or
  float16), memory-mapped, scored a block at a time in float32 by ``einsum``, then the best
  ``--rescore`` rows rescored exactly from the float32 file (read with ``pread``);
- ``simsimd-i8`` / ``simsimd-f16``: the same with simsimd's SIMD dot products;
- ``usearch-exact-*`` / ``usearch-hnsw-*``: usearch's brute force and its HNSW graph
  (``Index.view``, memory-mapped) over int8 and float16;
- ``faiss-flat`` / ``faiss-sq8``: faiss-cpu's exact float32 and 8-bit scalar-quantized flat
  indexes;
- ``sqlite-vec``: a ``vec0`` table of float32 vectors, KNN by ``MATCH``.

Queries are seeded: half are a stored vector plus noise, half the normalised mean of two
stored vectors. Recall is measured against float32 exact top-10 (ties by row): the share of
queries whose top 10 is the same set in the same order, and the mean overlap. A candidate
whose package is not installed is reported as missing. Candidates run one thread each.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

K = 10
CANDIDATES = (
    "f32-einsum",
    "f32-mmap",
    "i8-numpy",
    "f16-numpy",
    "simsimd-i8",
    "simsimd-f16",
    "usearch-exact-i8",
    "usearch-exact-f16",
    "usearch-hnsw-i8",
    "usearch-hnsw-f16",
    "faiss-flat",
    "faiss-sq8",
    "sqlite-vec",
)
BLOCK = 8192


def rss_mib() -> float:
    for row in Path("/proc/self/status").read_text().splitlines():
        if row.startswith("VmRSS:"):
            return int(row.split()[1]) / 1024
    return 0.0


def _vector_cache(cache: Path) -> Path:
    found = sorted(cache.glob("corpus-*/xdg/cache/lsp-memory/vectors.sqlite3"))
    if not found:
        raise SystemExit(f"no corpus vector cache under {cache}")
    return found[0]


def prepare(cache: Path, folder: Path, queries: int, seed: int) -> dict[str, Any]:
    """The float32, int8 and float16 files and the queries, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "f32.npy").exists():
        db = sqlite3.connect(_vector_cache(cache))
        blobs = [b for (b,) in db.execute("SELECT vector FROM vectors") if len(b) == 384 * 4]
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(-1, 384).copy()
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        np.save(folder / "f32.npy", matrix)
        scale = np.abs(matrix).max(axis=0) / 127
        np.save(folder / "i8.npy", np.round(matrix / scale).astype(np.int8))
        np.save(folder / "i8scale.npy", scale.astype(np.float32))
        np.save(folder / "f16.npy", matrix.astype(np.float16))
    matrix = np.load(folder / "f32.npy")
    rng = np.random.default_rng(seed)
    half = queries // 2
    one = matrix[rng.integers(0, len(matrix), half)]
    one = one + rng.normal(0, 0.04, one.shape).astype(np.float32)
    two = matrix[rng.integers(0, len(matrix), queries - half)]
    two = two + matrix[rng.integers(0, len(matrix), queries - half)]
    found = np.concatenate([one, two]).astype(np.float32)
    found /= np.linalg.norm(found, axis=1, keepdims=True)
    np.save(folder / "queries.npy", found)
    truth = []
    for query in found:
        scores = np.einsum("ij,j->i", matrix, query)
        top = np.argpartition(-scores, K)[: K * 4]
        truth.append(sorted(top.tolist(), key=lambda r: (-scores[r], r))[:K])
    np.save(folder / "truth.npy", np.array(truth))
    return {"vectors": int(matrix.shape[0]), "dim": int(matrix.shape[1]), "queries": queries}


def _top(scores: Any, rows: Any, k: int) -> list[int]:
    return [int(r) for _, r in sorted(zip((-scores).tolist(), rows.tolist(), strict=True))[:k]]


def _rescore(exact: Any, candidates: Any, query: Any, k: int) -> list[int]:
    """Exact float32 scores of the candidates, read with ``pread`` (a mapped row would put
    a whole large folio of the file into the process's resident memory)."""
    rows = np.sort(np.asarray(candidates, dtype=np.intp))
    width = exact.shape[1] * 4
    fd = _FD.setdefault("f32", os.open(exact.filename, os.O_RDONLY))
    data = b"".join(os.pread(fd, width, exact.offset + int(r) * width) for r in rows)
    scores = np.einsum("ij,j->i", np.frombuffer(data, "<f4").reshape(len(rows), -1), query)
    return _top(scores, rows, k)


_FD: dict[str, int] = {}


def _blocks(matrix: Any, score: Any) -> Any:
    out = np.empty(matrix.shape[0], dtype=np.float32)
    for start in range(0, matrix.shape[0], BLOCK):
        out[start : start + BLOCK] = score(matrix[start : start + BLOCK])
    return out


def build_index(name: str, folder: Path) -> None:
    """Build a candidate's index file once (HNSW graphs, faiss and sqlite-vec files)."""
    matrix = np.load(folder / "f32.npy")
    if name.startswith("usearch-hnsw"):
        from usearch.index import Index  # type: ignore[import-not-found,unused-ignore]

        path = folder / f"{name}.usearch"
        if not path.exists():
            index = Index(ndim=matrix.shape[1], metric="ip", dtype=name.rsplit("-", 1)[1])
            index.add(np.arange(len(matrix)), matrix, threads=1)
            index.save(str(path))
    elif name.startswith("faiss"):
        import faiss  # type: ignore[import-not-found,unused-ignore]

        path = folder / f"{name}.faiss"
        if not path.exists():
            if name == "faiss-flat":
                index = faiss.IndexFlatIP(matrix.shape[1])
            else:
                index = faiss.IndexScalarQuantizer(
                    matrix.shape[1], faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
                )
                index.train(matrix)
            index.add(matrix)
            faiss.write_index(index, str(path))
    elif name == "sqlite-vec":
        import sqlite_vec  # type: ignore[import-not-found,unused-ignore]

        path = folder / "vec.sqlite3"
        if not path.exists():
            db = sqlite3.connect(path)
            db.enable_load_extension(True)
            sqlite_vec.load(db)
            db.execute(f"CREATE VIRTUAL TABLE v USING vec0(e float[{matrix.shape[1]}])")
            db.executemany(
                "INSERT INTO v(rowid, e) VALUES (?, ?)",
                ((i, row.tobytes()) for i, row in enumerate(matrix)),
            )
            db.commit()
            db.close()


def run(name: str, folder: Path, rescore: int) -> dict[str, Any]:
    """One candidate in this (fresh) process."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    before = rss_mib()
    began = time.perf_counter()
    queries = np.load(folder / "queries.npy")
    truth = np.load(folder / "truth.npy")
    exact = np.load(folder / "f32.npy", mmap_mode="r")
    search: Any
    if name == "f32-einsum":
        matrix = np.load(folder / "f32.npy")

        def search(q: Any) -> list[int]:
            scores = np.einsum("ij,j->i", matrix, q)
            return _top_k(scores)

    elif name == "f32-mmap":

        def search(q: Any) -> list[int]:
            return _top_k(np.einsum("ij,j->i", exact, q))

    elif name in ("i8-numpy", "f16-numpy", "simsimd-i8", "simsimd-f16"):
        kind = "i8" if "i8" in name else "f16"
        quant = np.load(folder / f"{kind}.npy", mmap_mode="r")
        scale = np.load(folder / "i8scale.npy")
        if name.startswith("simsimd"):
            import simsimd  # type: ignore[import-not-found,unused-ignore]

            def score_of(q: Any) -> Any:
                if kind == "i8":
                    qq = np.round(q * scale * 127 / np.abs(q * scale).max()).astype(np.int8)
                else:
                    qq = q.astype(np.float16)
                return lambda block: np.asarray(
                    simsimd.cdist(qq[None, :], block, metric="dot", threads=1)
                )[0]
        else:

            def score_of(q: Any) -> Any:
                qq = (q * scale) if kind == "i8" else q
                return lambda block: np.einsum("ij,j->i", block.astype(np.float32), qq)

        def search(q: Any) -> list[int]:
            if name.startswith("simsimd"):  # one call over the whole mapped matrix
                scores = score_of(q)(quant)
            else:
                scores = _blocks(quant, score_of(q))
            return _rescore(exact, np.argpartition(-scores, rescore)[:rescore], q, K)

    elif name.startswith("usearch-exact"):
        from usearch.index import MetricKind, ScalarKind  # type: ignore[import-not-found,unused-ignore]
        from usearch.index import search as brute

        kind = name.rsplit("-", 1)[1]
        quant = np.load(folder / f"{kind}.npy", mmap_mode="r")
        scale = np.load(folder / "i8scale.npy")
        dtype = ScalarKind.I8 if kind == "i8" else ScalarKind.F16

        def search(q: Any) -> list[int]:
            if kind == "i8":
                qq = np.round(q * scale * 127 / np.abs(q * scale).max()).astype(np.int8)
            else:
                qq = q.astype(np.float16)
            found = brute(quant, qq, rescore, MetricKind.IP, exact=True, threads=1)
            return _rescore(exact, found.keys, q, K)

        del dtype

    elif name.startswith("usearch-hnsw"):
        from usearch.index import Index  # type: ignore[import-not-found,unused-ignore]

        index = Index.restore(str(folder / f"{name}.usearch"), view=True)

        def search(q: Any) -> list[int]:
            found = index.search(q, rescore, threads=1)
            return _rescore(exact, found.keys, q, K)

    elif name.startswith("faiss"):
        import faiss  # type: ignore[import-not-found,unused-ignore]

        faiss.omp_set_num_threads(1)
        index = faiss.read_index(str(folder / f"{name}.faiss"), faiss.IO_FLAG_MMAP)

        def search(q: Any) -> list[int]:
            wanted = K if name == "faiss-flat" else rescore
            _, rows = index.search(q[None, :], wanted)
            if name == "faiss-flat":
                return [int(r) for r in rows[0]]
            return _rescore(exact, rows[0], q, K)

    elif name == "sqlite-vec":
        import sqlite_vec  # type: ignore[import-not-found,unused-ignore]

        db = sqlite3.connect(folder / "vec.sqlite3")
        db.enable_load_extension(True)
        sqlite_vec.load(db)

        def search(q: Any) -> list[int]:
            rows = db.execute(
                "SELECT rowid FROM v WHERE e MATCH ? ORDER BY distance LIMIT ?",
                (q.astype(np.float32).tobytes(), rescore),
            ).fetchall()
            return _rescore(exact, [r for (r,) in rows], q, K)

    else:
        raise SystemExit(f"unknown candidate {name}")
    search(queries[0])
    start = time.perf_counter() - began
    samples = []
    same = overlap = 0
    for query, expected in zip(queries, truth, strict=True):
        t0 = time.perf_counter()
        got = search(query)
        samples.append(time.perf_counter() - t0)
        same += got == expected.tolist()
        overlap += len(set(got) & set(expected.tolist()))
    from benchmarks.common import latency_ms

    figures = latency_ms(samples)
    return {
        "candidate": name,
        "p50_ms": figures["p50_ms"],
        "p99_ms": figures["p99_ms"],
        "start_s": start,
        "rss_after_mib": rss_mib() - before,
        "top10_identical": same / len(queries),
        "top10_overlap": overlap / len(queries) / K,
    }


def _top_k(scores: Any) -> list[int]:
    top = np.argpartition(-scores, K * 4)[: K * 4]
    return sorted(top.tolist(), key=lambda r: (-scores[r], r))[:K]


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rescore", type=int, default=64)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", nargs="*", default=list(CANDIDATES))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--run", help=argparse.SUPPRESS)
    options = parser.parse_args()
    folder = options.cache / "vector-scan"
    if options.run:
        print(json.dumps(run(options.run, folder, options.rescore)))
        return 0
    report: dict[str, Any] = {
        "load_average_start": os.getloadavg(),
        **prepare(options.cache, folder, options.queries, options.seed),
        "rescore": options.rescore,
        "results": [],
    }
    for name in options.only:
        try:
            build_index(name, folder)
        except (ImportError, AttributeError) as error:  # sqlite3 without load_extension
            report["results"].append({"candidate": name, "missing": str(error)})
            continue
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.vector_scan",
                "--cache",
                str(options.cache),
                "--rescore",
                str(options.rescore),
                "--run",
                name,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            tail = (done.stderr.strip().splitlines() or ["?"])[-1]
            report["results"].append({"candidate": name, "failed": tail})
        else:
            report["results"].append(json.loads(done.stdout))
        print(json.dumps(report["results"][-1]), file=sys.stderr)
    report["load_average_end"] = os.getloadavg()
    if options.json:
        print(json.dumps(report, indent=2))
    else:
        print(
            f"{report['vectors']} vectors, {report['queries']} queries, rescore top "
            f"{report['rescore']}; load {report['load_average_start']} → "
            f"{report['load_average_end']}"
        )
        print("| candidate | p50 ms | p99 ms | start s | +RSS MiB | top-10 identical | overlap |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for row in report["results"]:
            if "p50_ms" not in row:
                print(f"| {row['candidate']} | {row.get('missing') or row.get('failed')} |")
                continue
            print(
                f"| {row['candidate']} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f} | "
                f"{row['start_s']:.3f} | {row['rss_after_mib']:.0f} | "
                f"{row['top10_identical']:.3f} | {row['top10_overlap']:.3f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
