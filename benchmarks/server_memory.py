"""Memory of a language server and of its embedding helper (issue 24).

- ``family``: VmRSS and VmHWM of the server and of its embedding helper
  (``python -m lsp_memory.store.embedhelper``, a child of the server), and their sums. A
  server that embeds in its own process (``embedIdleSeconds: 0``, or a commit before the
  helper) has no helper: its figures are the server's alone.
- ``MemorySampler``: the largest summed VmRSS seen every ``SAMPLE_S`` while something runs
  (a helper that has exited takes its VmHWM with it, so the peak is sampled).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from benchmarks.common import proc_status

HELPER = "lsp_memory.store.embedhelper"
SAMPLE_S = 0.25


def helpers(pid: int) -> list[int]:
    """The embedding helpers among ``pid``'s children."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if parent == pid and HELPER.encode() in command:
            found.append(int(entry.name))
    return found


def family(pid: int) -> dict[str, Any]:
    """The server's and its helper's memory (MiB), and the sums."""
    server = proc_status(pid)
    helper: dict[str, float] = {}
    for child in helpers(pid):
        for key, value in proc_status(child).items():
            helper[key] = helper.get(key, 0.0) + value
    return {
        "server": server,
        "helper": helper or None,
        "total_vmrss_mib": server.get("vmrss_mib", 0.0) + helper.get("vmrss_mib", 0.0),
        "total_vmhwm_mib": server.get("vmhwm_mib", 0.0) + helper.get("vmhwm_mib", 0.0),
    }


class MemorySampler:
    """The largest VmRSS of server + helper seen while it runs (``with``)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_mib = 0.0
        self.helper_peak_mib = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            now = family(self.pid)
            self.peak_mib = max(self.peak_mib, now["total_vmrss_mib"])
            helper = (now["helper"] or {}).get("vmrss_mib", 0.0)
            self.helper_peak_mib = max(self.helper_peak_mib, helper)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
