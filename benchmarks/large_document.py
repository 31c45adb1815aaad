"""A large open document against the language server: how long another document's hover
waits, and how much memory the server takes, with and without ``max_document_bytes``.

For each case a fresh ``lsp-memory serve`` (VS Code's capabilities, ``lspclient.py``) on a
small generated corpus (``server_corpus``: 1 000 claims, 100 notes) indexes, goes idle, then
gets ``didOpen`` of a document of the given size full of references (one line repeated:
``About @<claim> and [[<note>]] and #42 here.``) and of a small one (``See #1``), and is asked
for a hover on the small one every 0.5 s for 10 s. Reported: the worst of those hovers, the
first one (asked right after the ``didOpen``s) and the server's VmHWM at the end.

    .venv/bin/python benchmarks/large_document.py            # 10 and 60 MB, limit on; 10 MB off
    .venv/bin/python benchmarks/large_document.py --json
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from foundation import machine
from lspclient import Client, vs_code_capabilities
from server_corpus import Prepared, prepare
from server_suites import SERVER, proc_status, wait_idle, wait_ready

NO_LIMIT = 10**12
"""``max_document_bytes`` for the runs without a limit (as before there was one)."""
HOVERS = 20
PAUSE_S = 0.5


def case(prepared: Prepared, work: Path, megabytes: float, limit: int | None) -> dict[str, Any]:
    """One server, one large document; ``limit`` None is the default setting."""
    config = prepared.vault / "lsp-memory.toml"
    config.write_text("" if limit is None else f"max_document_bytes = {limit}\n", "utf-8")
    client = Client(SERVER, prepared.env(), work / "server.stderr")
    try:
        client.initialize(prepared.vault, vs_code_capabilities())
        wait_ready(client)
        wait_idle(client)
        baseline = proc_status(client.pid)
        claim = prepared.claims["claim_fids"][0]
        line = f"About @{claim} and [[{prepared.titles[0]}]] and #42 here.\n"
        big = line * int(megabytes * 1_000_000 / len(line))
        small = (work / "small.md").as_uri()
        for name, text in (("big.md", big), ("small.md", "See #1\n")):
            item = {"uri": (work / name).as_uri(), "languageId": "markdown", "version": 1}
            client.notify("textDocument/didOpen", {"textDocument": {**item, "text": text}})
        waits = []
        for _ in range(HOVERS):
            where = {"textDocument": {"uri": small}, "position": {"line": 0, "character": 5}}
            reply = client.request("textDocument/hover", where, timeout=600)
            assert reply.result is not None, "no hover on #1"
            waits.append(reply.seconds)
            time.sleep(PAUSE_S)
        end = proc_status(client.pid)
    finally:
        client.close()
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", type=float, nargs="+", default=[10, 60], help="MB, limit on")
    parser.add_argument("--unlimited", type=float, nargs="*", default=[10], help="MB, no limit")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="lsp-memory-large-document-"))
    try:
        prepared = prepare(work / "corpus", 1000, 100, 7)
        runs = [case(prepared, work, size, None) for size in args.sizes]
        runs += [case(prepared, work, size, NO_LIMIT) for size in args.unlimited]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report = {"benchmark": "large_document", "machine": machine(), "runs": runs}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print("document  limit            first hover  worst hover  VmHWM before open  VmHWM at end")
    for run in runs:
        print(
            f"{run['document_mb']:5.0f} MB  {run['limit']:15} {run['first_hover_s']:9.2f} s "
            f"{run['worst_hover_s']:10.2f} s {run['vmhwm_mib_before_open']:14} MiB "
            f"{run['vmhwm_mib']:9} MiB"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
