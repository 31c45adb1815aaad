"""The embedding helper's memory and speed while it embeds notes (issue 24), with the
settings it had before and the ones it has now, in fresh processes taken in turns so the
machine's load falls on both alike.

Each process is what the helper (``lsp_memory.store.embedhelper``) does with the model:
``Embedder.load`` in a fresh interpreter, then the server's background embedding, one
request of ``REQUEST`` notes at a time in batches of 32 (``services.retrieval.embedding``),
on notes of the server corpus's vault in a fixed shuffled order.

- **before**: onnxruntime's CPU arena off and its memory pattern on, the heap never
  trimmed;
- **after**: the arena on and the memory pattern off (``Embedder.load``), the heap trimmed
  after the load and after each request (``embedhelper.release_memory``, as the helper does
  when no request is under way).

Per process: VmRSS and VmHWM once the model is loaded (VmHWM: the load's peak, constant
folding), the peak while embedding (VmHWM reset after the load, ``/proc/self/clear_refs``),
VmRSS at the end, and notes per second. The vectors of both are compared (largest
``1 - cosine``). Linux only (``/proc``).

    .venv/bin/python -m benchmarks.embed_memory --cache DIR [--notes 192] [--turns 3] [--json]
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

from benchmarks.common import arguments, emit, proc_status, start_report
from benchmarks.server_corpus import prepare_in
from lsp_memory.store.embedhelper import _helper_env, release_memory

REQUEST = 64
"""Notes per request: the background embedding's batch (``embedding.BATCH``)."""
CONFIGS = ("before", "after")


def child(config: str, texts_file: Path, vectors_file: Path) -> dict[str, Any]:
    """One helper-like process: load the model, embed the notes, report its memory."""
    import onnxruntime as ort

    from lsp_memory.store.vectors import Embedder

    if config == "before":
        session = ort.InferenceSession

        def with_pattern(model: Any, sess_options: Any = None, **kwargs: Any) -> Any:
            sess_options.enable_cpu_mem_arena = False
            sess_options.enable_mem_pattern = True
            return session(model, sess_options=sess_options, **kwargs)

        ort.InferenceSession = with_pattern
    texts = json.loads(texts_file.read_text())
    started = time.perf_counter()
    embedder = Embedder.load()
    load_s = time.perf_counter() - started
    release = release_memory if config == "after" else lambda: None
    release()
    loaded = proc_status()
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM from here: the embedding's peak
    started = time.perf_counter()
    rows = []
    for at in range(0, len(texts), REQUEST):
        rows.append(embedder.embed(texts[at : at + REQUEST], batch_size=32))
        release()
    took = time.perf_counter() - started
    end = proc_status()
    np.save(vectors_file, np.vstack(rows))
    return {
        "load_s": load_s,
        "loaded_vmrss_mib": loaded["vmrss_mib"],
        "load_peak_mib": loaded["vmhwm_mib"],
        "embedding_peak_mib": end["vmhwm_mib"],
        "end_vmrss_mib": end["vmrss_mib"],
        "notes_per_s": len(texts) / took,
    }


def spawn(config: str, texts_file: Path, vectors_file: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.embed_memory", "--child", config]
    command += [str(texts_file), str(vectors_file)]
    done = subprocess.run(command, capture_output=True, text=True, env=_helper_env(), check=False)
    if done.returncode != 0:
        raise SystemExit(f"the {config} process failed: {done.stderr.strip()[-500:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))))
        return 0
    parser = arguments(__doc__, seed=True, claims=100_000, notes=10_000)
    parser.add_argument("--cache", type=Path, required=True, help="the server corpus folder")
    parser.add_argument("--embed", type=int, default=192, help="notes embedded per process")
    parser.add_argument("--turns", type=int, default=3, help="processes per configuration")
    args = parser.parse_args()
    began = time.perf_counter()
    report = start_report("embed_memory", parameters=vars(args) | {"cache": str(args.cache)})
    from lsp_memory.notes import Vault
    from lsp_memory.services.retrieval.documents import embed_text, note_doc

    vault = Vault(prepare_in(args.cache, args.claims, args.notes, args.seed).vault)
    vault.scan()
    notes = sorted(vault.notes.values(), key=lambda note: note.key)
    random.Random(args.seed).shuffle(notes)
    texts = [embed_text(note_doc(note)) for note in notes[: args.embed]]
    runs: dict[str, list[dict[str, Any]]] = {config: [] for config in CONFIGS}
    with tempfile.TemporaryDirectory() as folder:
        texts_file = Path(folder) / "texts.json"
        texts_file.write_text(json.dumps(texts))
        vectors = {config: Path(folder) / f"{config}.npy" for config in CONFIGS}
        for turn in range(args.turns):
            for config in CONFIGS if turn % 2 == 0 else CONFIGS[::-1]:
                runs[config].append(spawn(config, texts_file, vectors[config]))
        a, b = (np.load(vectors[config]) for config in CONFIGS)
    cosine = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    report["notes"] = len(texts)
    report["largest_1_minus_cosine"] = float(np.max(1.0 - cosine))
    report["runs"] = runs
    report["median"] = {
        config: {key: median(run[key] for run in rows) for key in rows[0]}
        for config, rows in runs.items()
    }
    emit(report, as_json=args.json, table=print_report, began=began)
    return 0


def print_report(report: dict[str, Any]) -> None:
    load = report["machine"].get("load_average_at_start")
    turns = report["parameters"]["turns"]
    print(f"The helper's memory while embedding {report['notes']} notes (load {load})")
    for config, row in report["median"].items():
        print(
            f"  {config:6} median of {turns}: loaded {row['loaded_vmrss_mib']:.0f} MiB "
            f"(load peak {row['load_peak_mib']:.0f}), peak while embedding "
            f"{row['embedding_peak_mib']:.0f}, end {row['end_vmrss_mib']:.0f}; "
            f"{row['notes_per_s']:.2f} notes/s, model load {row['load_s']:.2f} s"
        )
    print(f"  largest 1 - cosine between the two: {report['largest_1_minus_cosine']:.2e}")
    print(f"total {report['total_s']:.0f} s; load average at end {report['load_average_at_end']}")


if __name__ == "__main__":
    sys.exit(main())
