"""How long block completion and an embed's hover take on a long note.

    .venv/bin/python -m benchmarks.blocks [--blocks 1000] [--runs 200] [--json]

A vault of two notes in a scratch folder: ``long.md``, with ``--blocks`` paragraphs and list
items (one in ten with a ``^id``, about 100 characters each), and the prompt. Measured in the
process, on the services the language server calls on its event loop: completion after
``[[Long#^`` (``Completer.complete``: resolve the note, read its file, list its blocks, make
the new ids and their edits) with nothing typed and with two letters typed, and the hover of
``![[Long#^b500]]`` and of ``![[Long]]`` (``Describer.hover_at``: read the note, find the
part). Percentiles by ``benchmarks.common.percentile``.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, emit, latency_ms, machine_line, start_report


def long_note(blocks: int) -> str:
    """A note of ``blocks`` paragraphs and list items; every tenth ends in ``^b<N>``."""
    lines = ["# Long", ""]
    for number in range(blocks):
        words = f"Block {number} says something about topic {number % 37} and its details"
        text = f"{words}, with a few more words to make a line of a hundred characters."
        if number % 10 == 0:
            text += f" ^b{number}"
        lines += [f"- {text}" if number % 3 == 0 else text, ""]
    return "\n".join(lines)


def measure(blocks: int, runs: int) -> dict[str, Any]:
    from lsp_memory.app import App
    from lsp_memory.config import load_config
    from lsp_memory.services.editor.completion import typed_at

    with tempfile.TemporaryDirectory(prefix="lsp-memory-blocks-") as folder:
        vault = Path(folder) / "vault"
        vault.mkdir()
        (vault / "long.md").write_text(long_note(blocks), encoding="utf-8")
        settings = {"store": f"{folder}/store", "vaults": [str(vault)], "user": "bench"}
        config, _ = load_config(settings, environ={"XDG_CACHE_HOME": folder})
        app = App(config)
        try:
            snapshot = app.snapshot()
            figures: dict[str, Any] = {}
            for name, line in (("complete_all", "[[Long#^"), ("complete_typed", "[[Long#^to")):
                typed = typed_at(line, len(line))
                assert typed is not None
                samples = []
                for _ in range(runs):
                    began = time.perf_counter()
                    found, _ = snapshot.completer().complete(typed)
                    samples.append(time.perf_counter() - began)
                figures[name] = {"items": len(found), **latency_ms(samples)}
            prompt = "Quote ![[Long#^b500]] and ![[Long]]\n"
            for name, needle in (("hover_block", "[[Long#^b500"), ("hover_note", "[[Long]]")):
                at = prompt.index(needle) + 3
                samples = []
                for _ in range(runs):
                    began = time.perf_counter()
                    described = snapshot.describer().hover_at(prompt, at, "markdown")
                    samples.append(time.perf_counter() - began)
                assert described is not None
                figures[name] = {"chars": len(described.markdown), **latency_ms(samples)}
        finally:
            app.close()
    return figures


def main() -> int:
    parser = arguments(__doc__, blocks=1000, runs=200)
    args = parser.parse_args()
    began = time.perf_counter()
    report = start_report("blocks", blocks=args.blocks, runs=args.runs)
    report["figures"] = measure(args.blocks, args.runs)

    def table(data: dict[str, Any]) -> None:
        print(machine_line(data["machine"]))
        print(f"{data['blocks']} blocks, {data['runs']} runs each")
        for name, row in data["figures"].items():
            print(
                f"{name:16} p50 {row['p50_ms']:7.2f} ms  p99 {row['p99_ms']:7.2f} ms  "
                f"max {row['max_ms']:7.2f} ms"
            )

    emit(report, as_json=args.json, table=table, began=began)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
