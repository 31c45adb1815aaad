"""Unlinked mentions against a real language server: ``textDocument/codeAction`` ("Link to
[[Title]]") on a 1 000-line document in a 10 000-note vault, and ``lspMemory.unlinkedMentions``
(the notes that mention a note).

    .venv/bin/python -m benchmarks.mentions --cache DIR [--samples 300] [--commands 20] [--json]

The corpus is the server benchmark's (``benchmarks.server_corpus``: 100 000 claims, 10 000
notes; kept in ``--cache``, keyed by size and seed). A fresh ``lsp-memory serve`` with VS
Code's capabilities (``benchmarks.lspclient``) indexes and goes idle; a document outside the
vault is opened — 1 000 lines of prose, one line in three naming a note by its title (half of
them in lower case), one in ten with a ``[[link]]``, one in twenty with a code span — and its
diagnostics awaited. Then:

- ``first``: the first code action (it builds the note set's mention index);
- ``code action``: ``--samples`` code actions at a random line's mention (or a random place
  on a line without one), one at a time; every one returns the whole handler's answer
  (quick fixes, Remember selection, Pin, Link to) — the time an editor waits;
- ``command``: ``lspMemory.unlinkedMentions`` for ``--commands`` random notes;
- ``index build`` (in this process, over the same vault): the note set's mention index built
  the first time, and again for a new note set (what an edit of a note costs the next code
  action: its names are remembered, only the lookups are redone), the median of 5.

Percentiles are ``benchmarks.common.percentile``'s.
"""

from __future__ import annotations

import random
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, emit, latency_ms, start_report, workspace
from benchmarks.lspclient import utf16
from benchmarks.server_corpus import Prepared, prepare_in
from benchmarks.server_suites import idle_server

LINES = 1000
TARGET_MS = 20.0
WORDS = (
    "the plan we wrote for it says that most of this is done and what is left needs a "
    "second look before the end of the week so ask around"
).split()


def document(prepared: Prepared, rng: random.Random) -> tuple[str, list[tuple[int, int]]]:
    """The document, and for each line the column (UTF-16) inside its mention, or -1."""
    lines: list[str] = []
    spots: list[tuple[int, int]] = []
    for number in range(LINES):
        words = rng.choices(WORDS, k=12)
        line = " ".join(words).capitalize()
        spot = -1
        if number % 3 == 0:
            title = rng.choice(prepared.titles)
            written = title.lower() if number % 2 else title
            line = f"{line} about {written}, then {' '.join(rng.choices(WORDS, k=4))}."
            spot = utf16(line[: line.index(f"about {written}") + 6 + len(written) // 2])
        if number % 10 == 0:
            line += f" See [[{rng.choice(prepared.titles)}]]."
        if number % 20 == 0:
            line += " Run `make all` first."
        lines.append(line)
        spots.append((number, spot))
    return "\n".join(lines) + "\n", spots


def run(prepared: Prepared, work: Path, samples: int, commands: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    text, spots = document(prepared, rng)
    lines = text.split("\n")
    uri = (work / "mentions.md").as_uri()
    item = {"uri": uri, "languageId": "markdown", "version": 1, "text": text}

    def action(line: int, column: int) -> tuple[float, list[Any]]:
        where = {"line": line, "character": column}
        params = {
            "textDocument": {"uri": uri},
            "range": {"start": where, "end": where},
            "context": {"diagnostics": []},
        }
        reply = client.request("textDocument/codeAction", params)
        return reply.seconds, list(reply.result or ())

    with idle_server(prepared, work / "server.stderr") as server:
        client = server.client
        since = client.mark()
        client.notify("textDocument/didOpen", {"textDocument": item})
        client.diagnostics(uri, since, timeout=600)
        first, _ = action(0, spots[0][1])
        times: list[float] = []
        linked = offered = 0
        for _ in range(samples):
            line, column = rng.choice(spots)
            if column < 0:
                column = rng.randrange(utf16(lines[line]) + 1)
            else:
                offered += 1
            seconds, found = action(line, column)
            times.append(seconds)
            linked += any(str(a.get("title", "")).startswith("Link to [[") for a in found)
        command_times: list[float] = []
        listed = 0
        for path in rng.sample(prepared.paths, commands):
            arguments = [(prepared.vault / path).resolve().as_uri()]
            reply = client.request(
                "workspace/executeCommand",
                {"command": "lspMemory.unlinkedMentions", "arguments": arguments},
                timeout=600,
            )
            command_times.append(reply.seconds)
            listed += len(reply.result or ())
    return {
        "document_lines": LINES,
        "first_action_ms": first * 1000,
        "code_action": latency_ms(times),
        "actions_at_a_mention": offered,
        "link_actions_returned": linked,
        "command": latency_ms(command_times),
        "command_mentions_listed": listed,
    }


def index_builds(prepared: Prepared) -> dict[str, float]:
    """Seconds to build the mention index of the vault's note set: first, then again."""
    from lsp_memory.notes import Vault
    from lsp_memory.notes.mentions import build_index
    from lsp_memory.notes.noteset import NoteSet

    vault = Vault(prepared.vault)
    vault.scan()
    noteset = vault.view()._noteset  # the note set itself: a measurement
    started = time.perf_counter()
    build_index(noteset)
    first = time.perf_counter() - started
    again = []
    for _ in range(5):
        copy = NoteSet(noteset.notes, noteset.keys, noteset.files)  # a new note set
        started = time.perf_counter()
        build_index(copy)
        again.append(time.perf_counter() - started)
    return {"first_ms": first * 1000, "again_median_ms": statistics.median(again) * 1000}


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__, seed=True, claims=100_000, notes=10_000, samples=300)
    parser.add_argument("--commands", type=int, default=20, help="unlinkedMentions requests")
    parser.add_argument("--cache", type=Path, help="keep the corpus, store and indexes here")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    report = start_report("mentions", parameters=vars(args) | {"cache": str(args.cache)})
    with workspace("mentions", args.cache, fresh=False) as base:
        prepared = prepare_in(base, args.claims, args.notes, args.seed)
        with workspace("mentions-run") as work:
            report["result"] = run(prepared, work, args.samples, args.commands, args.seed)
        report["result"]["index_build"] = index_builds(prepared)
    emit(report, as_json=args.json, table=print_table, began=began)
    return 0


def print_table(report: dict[str, Any]) -> None:
    result = report["result"]
    action, command = result["code_action"], result["command"]
    print(f"load average at end: {report.get('load_average_at_end')}")
    print(f"first code action (builds the index): {result['first_action_ms']:.1f} ms")
    print(
        f"code action, {result['document_lines']}-line document: p50 {action['p50_ms']:.1f} ms"
        f"  p90 {action['p90_ms']:.1f} ms  p99 {action['p99_ms']:.1f} ms  max "
        f"{action['max_ms']:.1f} ms  (target p99 ≤ {TARGET_MS:g} ms)"
    )
    print(
        f"  at a mention: {result['actions_at_a_mention']}, with a Link to action: "
        f"{result['link_actions_returned']}"
    )
    build = result["index_build"]
    print(
        f"mention index of 10 000 notes: first {build['first_ms']:.0f} ms, for a new note set "
        f"{build['again_median_ms']:.0f} ms"
    )
    print(
        f"lspMemory.unlinkedMentions: p50 {command['p50_ms']:.1f} ms  p99 {command['p99_ms']:.1f}"
        f" ms  ({result['command_mentions_listed']} mentions listed)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
