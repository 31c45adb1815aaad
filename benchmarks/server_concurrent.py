"""Concurrent requests: do completion and hover answers slow down while a slow request runs on
the same server?

On one server, after its first index sync and once its background thread is idle, completion
(``@`` and 2 typed characters) and hover (a claim by friendly id) are timed in three ways:

- **alone**: the request on a quiet server;
- **during code lens**: ``textDocument/codeLens`` sent for a prompt with five references (the
  build-context benchmark's prompts, ``benchmarks.context``), then at once, without waiting
  for its answer, the request;
- **during buildContext**: the same with ``workspace/executeCommand lspMemory.buildContext``
  on that prompt.

The slow request's own time is recorded too, and whether the request's answer came before
the slow one's ("overtook"): a server that runs every handler on its event loop answers in
order, so the request waits for the slow one; a server that runs slow handlers on worker
threads can answer the request first. The next slow request is sent only once both answers
came. The three ways take turns, one round each, so a change in the machine's load falls on
all three alike; each has its own inputs, drawn from the seed.

Each round's request goes to a fresh copy of one 100-line prompt (the latency suite's kind of
document) with the input on its middle line, opened and checked before the round and closed
after it, instead of an edited line: an edit starts the debounced check, which would then run
during a later round. The slow request, likewise, goes to a fresh copy of its prompt, opened
and checked first: the server keeps a code lens per document version (an editor asks again
after every edit, so a lens asked after an edit is built anew), and a copy is what makes each
round's lens be built rather than read back.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import latency_ms, proc_status
from benchmarks.context import PROMPTS, prompt
from benchmarks.lspclient import Client, Reply
from benchmarks.server_corpus import Prepared
from benchmarks.server_inputs import PROMPT_LINES, Document, Probe, prompt_lines, reference, typed
from benchmarks.server_suites import (
    CAPPED_RUNS,
    TARGET_COMPLETION_P99_MS,
    TARGET_HOVER_P99_MS,
    Bench,
    Timings,
    count_items,
    idle_server,
)

_SERIAL = itertools.count(1)  # every document of a run has its own URI
WARMUP_ROUNDS = 10  # untimed rounds (each way once) before each case
CAP_S = 150.0  # a case stops after this much time once it has CAPPED_RUNS rounds
BUILD = "lspMemory.buildContext"
# The ways a request is timed: alone, or right behind a slow request of this kind.
WAYS = {
    "alone": "alone",
    "code_lens": "during code lens",
    "build_context": "during buildContext",
}
CASES = {
    "completion @ 2": ("textDocument/completion", "completion @xx", TARGET_COMPLETION_P99_MS),
    "hover claim": ("textDocument/hover", "hover @friendly_id (claim)", TARGET_HOVER_P99_MS),
}


@dataclass(slots=True)
class Way:
    """One way's rounds: the request's round trips, and the slow request's beside them."""

    request: Timings
    slow: list[float] = field(default_factory=list)
    overtook: list[bool] = field(default_factory=list)  # the request answered first

    def figures(self, target_ms: float) -> dict[str, Any]:
        figures = self.request.figures(target_ms)
        figures.pop("checks_fired")  # no edits here, so no debounced checks
        figures["samples_ms"] = [s * 1000 for s in self.request.samples]
        figures["sent"] = self.request.sent
        if self.slow:
            figures["overtook_share"] = sum(self.overtook) / len(self.overtook)
            figures["slow"] = latency_ms(self.slow)
            figures["slow_samples_ms"] = [s * 1000 for s in self.slow]
        return figures


def draw(rng: random.Random, prepared: Prepared, key: str) -> Probe:
    """One input of the case ``key``: ``@`` and 2 typed characters, or a claim's reference."""
    if key.startswith("completion"):
        return typed(rng, prepared, "@", 2)
    return reference(rng, prepared, "claim")


def ask_slow(client: Client, way: str, uri: str) -> tuple[int, float]:
    """Send the slow request of ``way`` for the open document ``uri``; its id and when."""
    if way == "code_lens":
        return client.ask("textDocument/codeLens", {"textDocument": {"uri": uri}})
    return client.ask("workspace/executeCommand", {"command": BUILD, "arguments": [uri]})


def _checked(way: str, reply: Reply) -> Reply:
    """The slow answer, if the server did the work: a code lens or a context block."""
    if way == "code_lens" and not reply.result:
        raise RuntimeError(f"no code lens on a prompt with references: {reply.result!r}")
    if way == "build_context" and not isinstance(reply.result, dict):
        raise RuntimeError(f"{BUILD} gave no context block: {reply.result!r}")
    return reply


def one_round(
    client: Client,
    lines: list[str],
    uri: str,
    method: str,
    probe: Probe,
    *,
    way: str,
    prompt: Document,
) -> tuple[Reply, Reply | None]:
    """The request at ``probe`` in a fresh document, behind the slow request of ``way``
    (none when alone) on ``prompt``, itself a fresh copy of a prompt: a server may keep a
    code lens per document version, and an editor asks for one after every edit, so each
    round's must be built; both answers."""
    line = PROMPT_LINES // 2
    doc = Document(client, uri, [*lines[:line], probe.text, *lines[line + 1 :]])
    opened = [doc] if way == "alone" else [doc, prompt]
    for each in opened:
        since = client.mark()
        each.open()
        client.diagnostics(each.uri, since)  # the check on open, out of the way
    slow = None if way == "alone" else ask_slow(client, way, prompt.uri)
    number, sent = client.ask(method, doc.position(line, probe.column))
    reply = client.answer(number, sent)
    slow_reply = None if slow is None else _checked(way, client.answer(*slow))
    for each in opened:
        since = client.mark()
        each.close()
        client.diagnostics(each.uri, since)  # the empty list a close publishes
    return reply, slow_reply


def run_ways(
    client: Client,
    work: Path,
    lines: list[str],
    method: str,
    label: str,
    *,
    probes: dict[str, list[Probe]],
    warmup: Sequence[Probe],
    prompts: Sequence[str],
) -> dict[str, Way]:
    """Rounds of every way in turn, untimed over ``warmup`` first; round ``i`` of each way
    uses a copy of the ``i``-th prompt (in turn) for its slow request. Stops after CAP_S once
    it has CAPPED_RUNS rounds."""

    def uri(kind: str = "concurrent") -> str:
        return (work / f"{kind}-{client.pid}-{next(_SERIAL)}.md").as_uri()

    def copy(index: int) -> Document:
        return Document(client, uri("slow"), prompts[index % len(prompts)].splitlines())

    for index, probe in enumerate(warmup):
        for way in WAYS:
            one_round(client, lines, uri(), method, probe, way=way, prompt=copy(index))
    runs = min(len(p) for p in probes.values())
    found = {way: Way(Timings(f"{label} {name}", planned=runs)) for way, name in WAYS.items()}
    began = time.perf_counter()
    for index in range(runs):
        for way, timed in found.items():
            probe = probes[way][index]
            reply, slow = one_round(
                client, lines, uri(), method, probe, way=way, prompt=copy(index)
            )
            count, incomplete = count_items(method, reply.result)
            timed.request.samples.append(reply.seconds)
            timed.request.items.append(count)
            timed.request.incomplete.append(incomplete)
            timed.request.sent.append(reply.sent)
            if slow is not None:
                timed.slow.append(slow.seconds)
                timed.overtook.append(reply.received < slow.received)
        if time.perf_counter() - began > CAP_S and index + 1 >= min(runs, CAPPED_RUNS):
            break
    return found


def concurrent(bench: Bench, samples: int) -> dict[str, Any]:
    """Completion and hover alone, during a code lens and during buildContext, on one idle
    server; the slow requests' own times."""
    prepared, work = bench.prepared, bench.work
    # Its own random source: the inputs do not depend on which suites ran before.
    rng = random.Random(f"{bench.seed}-concurrent")
    lines = prompt_lines(rng, prepared, PROMPT_LINES)
    prompts = [prompt(rng, prepared) for _ in range(PROMPTS)]
    inputs: dict[str, dict[str, list[Probe]]] = {}
    warm: dict[str, list[Probe]] = {}
    for key in CASES:
        inputs[key] = {way: [draw(rng, prepared, key) for _ in range(samples)] for way in WAYS}
        warm[key] = [draw(rng, prepared, key) for _ in range(WARMUP_ROUNDS)]
    with idle_server(prepared, work / "concurrent.stderr", bench.capabilities) as server:
        began = time.perf_counter()
        cases: dict[str, dict[str, Any]] = {}
        for key, (method, label, target) in CASES.items():
            ways = run_ways(
                server.client,
                work,
                lines,
                method,
                label,
                probes=inputs[key],
                warmup=warm[key],
                prompts=prompts,
            )
            cases[key] = {
                "label": label,
                "target_p99_ms": target,
                **{way: timed.figures(target) for way, timed in ways.items()},
            }
        took = time.perf_counter() - began
        memory = proc_status(server.client.pid)
    slow: dict[str, Any] = {}
    for way in WAYS:
        if way == "alone":
            continue
        times = [s / 1000 for case in cases.values() for s in case[way]["slow_samples_ms"]]
        slow[way] = {"runs": len(times), **latency_ms(times)}
    return {
        "ready_s": server.ready_s,
        "idle": server.idle,
        "seconds": took,
        "prompts": len(prompts),
        "warmup_rounds": WARMUP_ROUNDS,
        "slow": slow,
        "cases": cases,
        "memory": memory,
    }
