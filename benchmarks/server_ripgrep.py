"""The ``[[`` candidate lookup done the way obsidian.nvim does it: the two ``rg`` commands it
runs for ``[[`` completion (``Client:find_notes_async``), on the same vault and the same
prefixes as the language server's ``[[`` completion cases, timed beside them.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import statistics
import subprocess
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.common import latency_ms
from benchmarks.server_corpus import Prepared

RG_PREFIXES = 60  # per prefix length


def obsidian_commands(rg: str, root: str, term: str) -> tuple[list[str], list[str]]:
    """The two commands of obsidian.nvim's ``Client:find_notes_async`` (3.x,
    ``lua/obsidian/search.lua``) for the ``[[`` completion of ``term``: a content search
    (``--fixed-strings --ignore-case -m=1``) and a file-name search (``--files`` with the glob
    ``*term*.md``), run at once; their paths are then loaded as notes."""
    base = [rg, "--no-config", "--type=md"]
    search = [*base, "--json", "--fixed-strings", "--ignore-case", "-m=1", "-e", term, root]
    find = [*base, "--files", "--ignore-case", "-g", f"*{term}*.md", "--glob-case-insensitive"]
    return search, [*find, root]


def run_both(commands: Sequence[list[str]]) -> tuple[float, list[bytes]]:
    """Start the commands together, read their output to the end; wall seconds."""
    started = time.perf_counter()
    processes = [
        subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) for c in commands
    ]
    outputs = [bytearray() for _ in processes]
    selector = selectors.DefaultSelector()
    for index, process in enumerate(processes):
        assert process.stdout is not None
        os.set_blocking(process.stdout.fileno(), False)
        selector.register(process.stdout, selectors.EVENT_READ, index)
    open_streams = len(processes)
    while open_streams:
        for key, _ in selector.select():
            chunk = os.read(key.fileobj.fileno(), 1 << 16)  # type: ignore[union-attr]
            if chunk:
                outputs[key.data].extend(chunk)
            else:
                selector.unregister(key.fileobj)
                open_streams -= 1
    for process in processes:
        process.wait()
    seconds = time.perf_counter() - started
    selector.close()
    return seconds, [bytes(o) for o in outputs]


def _paths_found(outputs: list[bytes]) -> int:
    paths: set[str] = set()
    for line in outputs[0].splitlines():
        data = json.loads(line)
        if data.get("type") == "match":
            paths.add(data["data"]["path"]["text"])
    paths.update(p.decode() for p in outputs[1].splitlines() if p)
    return len(paths)


def ripgrep(prepared: Prepared, completion: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """obsidian.nvim's ripgrep search for the ``[[`` prefixes our completion answered."""
    rg = shutil.which("rg")
    if rg is None:
        return None
    version = subprocess.run([rg, "--version"], capture_output=True, text=True, check=False)
    result: dict[str, Any] = {
        "rg": rg,
        "version": version.stdout.splitlines()[0] if version.stdout else "",
        "by_length": {},
    }
    root = str(prepared.vault.resolve())
    for length in range(1, 5):
        ours = completion.get(f"completion [[ {length}")
        if ours is None:
            continue
        prefixes = ours["prefixes"][:RG_PREFIXES]
        ours_ms = ours["samples_ms"][: len(prefixes)]
        for term in prefixes[:3]:  # warm-up
            run_both(obsidian_commands(rg, root, term))
        walls: list[float] = []
        singles: list[list[float]] = [[], []]
        found: list[int] = []
        for term in prefixes:
            commands = obsidian_commands(rg, root, term)
            seconds, outputs = run_both(commands)
            walls.append(seconds)
            found.append(_paths_found(outputs))
        for term in prefixes[:20]:  # each command alone, for the split
            for which, command in enumerate(obsidian_commands(rg, root, term)):
                seconds, _ = run_both([command])
                singles[which].append(seconds)
        median_rg = statistics.median(walls) * 1000
        median_ours = statistics.median(ours_ms)
        result["by_length"][str(length)] = {
            "prefixes": len(prefixes),
            "rg": latency_ms(walls),
            "rg_content_median_ms": statistics.median(singles[0]) * 1000,
            "rg_files_median_ms": statistics.median(singles[1]) * 1000,
            "notes_found_median": statistics.median(found),
            "ours_median_ms": median_ours,
            "ours_p99_ms": latency_ms([s / 1000 for s in ours_ms])["p99_ms"],
            "ratio_rg_over_ours": median_rg / median_ours,
            "example": obsidian_commands("rg", "VAULT", prefixes[0]),
        }
    return result
