"""A large open document against the language server: how long another document's hover
waits, and how much memory the server takes, with and without ``max_document_bytes``.

For each case a fresh ``lsp-memory serve`` (VS Code's capabilities, ``benchmarks.lspclient``)
on a small generated corpus (``benchmarks.server_corpus``: 1 000 claims, 100 notes) indexes,
goes idle, then gets ``didOpen`` of a document of the given size full of references (one line
repeated: ``About @<claim> and [[<note>]] and #42 here.``) and of a small one (``See #1``), and
is asked for a hover on the small one every 0.5 s for 10 s. Reported: the worst of those hovers, the
first one (asked right after the ``didOpen``s) and the server's VmHWM at the end.

    .venv/bin/python -m benchmarks.large_document          # 10 and 60 MB, limit on; 10 MB off
    .venv/bin/python -m benchmarks.large_document --json
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, emit, proc_status, start_report, workspace
from benchmarks.server_corpus import Prepared, prepare
from benchmarks.server_suites import idle_server

NO_LIMIT = 10**12
"""``max_document_bytes`` for the runs without a limit (as before there was one)."""
HOVERS = 20
PAUSE_S = 0.5


def case(prepared: Prepared, work: Path, megabytes: float, limit: int | None) -> dict[str, Any]:
    """One server, one large document; ``limit`` None is the default setting."""
    config = prepared.vault / "lsp-memory.toml"
    config.write_text("" if limit is None else f"max_document_bytes = {limit}\n", "utf-8")
    claim = prepared.claims["claim_fids"][0]
    line = f"About @{claim} and [[{prepared.titles[0]}]] and #42 here.\n"
    big = line * int(megabytes * 1_000_000 / len(line))
    small = (work / "small.md").as_uri()
    where = {"textDocument": {"uri": small}, "position": {"line": 0, "character": 5}}
    waits = []
    try:
        with idle_server(prepared, work / "server.stderr") as server:
            client = server.client
            baseline = proc_status(client.pid)
            for name, text in (("big.md", big), ("small.md", "See #1\n")):
                item = {"uri": (work / name).as_uri(), "languageId": "markdown", "version": 1}
                client.notify("textDocument/didOpen", {"textDocument": {**item, "text": text}})
            for _ in range(HOVERS):
                reply = client.request("textDocument/hover", where, timeout=600)
                assert reply.result is not None, "no hover on #1"
                waits.append(reply.seconds)
                time.sleep(PAUSE_S)
            end = proc_status(client.pid)
    finally:
        config.unlink(missing_ok=True)
    return {
        "document_mb": megabytes,
        "limit": "default (2 MB)" if limit is None else "none",
        "first_hover_s": round(waits[0], 3),
        "worst_hover_s": round(max(waits), 3),
        "vmhwm_mib_before_open": round(baseline.get("vmhwm_mib", 0.0)),
        "vmhwm_mib": round(end.get("vmhwm_mib", 0.0)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--sizes", type=float, nargs="+", default=[10, 60], help="MB, limit on")
    parser.add_argument("--unlimited", type=float, nargs="*", default=[10], help="MB, no limit")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    report = start_report("large_document", parameters=vars(args))
    with workspace("large-document") as work:
        prepared = prepare(work / "corpus", 1000, 100, 7)
        runs = [case(prepared, work, size, None) for size in args.sizes]
        runs += [case(prepared, work, size, NO_LIMIT) for size in args.unlimited]
    report["runs"] = runs
    emit(report, as_json=args.json, table=print_runs, began=began)
    return 0


def print_runs(report: dict[str, Any]) -> None:
    print("document  limit            first hover  worst hover  VmHWM before open  VmHWM at end")
    for run in report["runs"]:
        print(
            f"{run['document_mb']:5.0f} MB  {run['limit']:15} {run['first_hover_s']:9.2f} s "
            f"{run['worst_hover_s']:10.2f} s {run['vmhwm_mib_before_open']:14} MiB "
            f"{run['vmhwm_mib']:9} MiB"
        )


if __name__ == "__main__":
    raise SystemExit(main())
