"""What the language-server benchmark types and asks, drawn from the corpus by a seed: open
documents kept in step with the server by incremental edits, prompt-like and diagnostic
documents, and each request's input (a typed fragment or a reference, and the cursor in it).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchmarks.foundation import WORDS
from benchmarks.lspclient import Client, utf16
from benchmarks.server_corpus import Prepared

WARMUP = 30  # untimed requests before each case
PROMPT_LINES = 100
DIAGNOSTIC_LINES = 1000
DIAGNOSTIC_REFERENCES = 200
TRIGGERS = ("@", "#", "[[")
KINDS = ("claim", "number", "context", "entity", "note")
KIND_LABELS = {
    "claim": "@friendly_id (claim)",
    "number": "#N",
    "context": "@context",
    "entity": "@entity",
    "note": "[[note]]",
}


# -- documents ----------------------------------------------------------------------------------


class Document:
    """An open document: its lines as the server has them, and edits that keep them so."""

    def __init__(self, client: Client, uri: str, lines: list[str]) -> None:
        self.client = client
        self.uri = uri
        self.lines = lines
        self.version = 1

    def open(self) -> float:
        return self.client.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": self.uri,
                    "languageId": "markdown",
                    "version": self.version,
                    "text": "\n".join(self.lines) + "\n",
                }
            },
        )

    def set_line(self, index: int, text: str) -> float:
        """Replace line ``index`` by an incremental change, as an editor sends it."""
        old = self.lines[index]
        self.lines[index] = text
        self.version += 1
        change = {
            "range": {
                "start": {"line": index, "character": 0},
                "end": {"line": index, "character": utf16(old)},
            },
            "text": text,
        }
        return self.client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": self.uri, "version": self.version},
                "contentChanges": [change],
            },
        )

    def close(self) -> float:
        return self.client.notify("textDocument/didClose", {"textDocument": {"uri": self.uri}})

    def position(self, line: int, column: int) -> dict[str, Any]:
        """Request params at ``column`` (a Python index) of ``line``."""
        return {
            "textDocument": {"uri": self.uri},
            "position": {"line": line, "character": utf16(self.lines[line][:column])},
        }


def _filler(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choices(WORDS, k=words))
    return text[0].upper() + text[1:] + "."


def prompt_lines(rng: random.Random, prepared: Prepared, count: int) -> list[str]:
    """A prompt-like Markdown document: headings, paragraphs, a list, a few references."""
    claims = prepared.claims
    lines = ["# Notes for the assistant", ""]
    while len(lines) < count:
        roll = rng.random()
        if roll < 0.08:
            lines += [f"## {_filler(rng, 3)[:-1]}", ""]
        elif roll < 0.2:
            lines.append(f"- {_filler(rng, rng.randint(4, 10))}")
        elif roll < 0.35:
            ref = rng.choice(
                [
                    "@" + rng.choice(claims["claim_fids"]),
                    "@" + rng.choice(claims["context_fids"]),
                    f"#{rng.randint(1, len(claims['claim_fids']))}",
                    f"[[{rng.choice(prepared.titles)}]]",
                ]
            )
            lines.append(f"{_filler(rng, rng.randint(4, 10))} See {ref} too.")
        else:
            lines.append(_filler(rng, rng.randint(8, 18)))
    return lines[:count]


def diagnostic_lines(rng: random.Random, prepared: Prepared) -> tuple[list[str], dict[str, int]]:
    """A 1 000-line document with 200 references: claims (some inactive), ``#N``, contexts,
    entities, tags, ``[[links]]`` (by title, with a label, by path), and unresolved ones."""
    claims = prepared.claims
    count = len(claims["claim_fids"])
    kinds: list[tuple[str, Callable[[], str]]] = [
        ("claim", lambda: "@" + rng.choice(claims["claim_fids"])),
        ("number", lambda: f"#{rng.randint(1, count)}"),
        ("context", lambda: "@" + rng.choice(claims["context_fids"])),
        ("entity", lambda: "@" + rng.choice(claims["entity_fids"])),
        ("tag", lambda: "@" + rng.choice(claims["tag_fids"])),
        ("link", lambda: f"[[{rng.choice(prepared.titles)}]]"),
        ("link_label", lambda: f"[[{rng.choice(prepared.titles)}|{rng.choice(WORDS)}]]"),
        ("link_path", lambda: f"[[{rng.choice(prepared.paths).removesuffix('.md')}]]"),
        ("unresolved", lambda: f"@{rng.choice(WORDS)}_{rng.choice(WORDS)}_{rng.randrange(9999)}"),
        ("unresolved_number", lambda: f"#{count + rng.randint(1000, 999999)}"),
        ("broken_link", lambda: f"[[{rng.choice(WORDS).title()} Missing {rng.randrange(999)}]]"),
    ]
    plan = dict(
        zip(
            [name for name, _ in kinds],
            (50, 20, 20, 10, 10, 30, 5, 5, 20, 10, 20),
            strict=True,
        )
    )
    references = [make() for name, make in kinds for _ in range(plan[name])]
    rng.shuffle(references)
    lines = ["# Working notes", ""]
    while len(lines) < DIAGNOSTIC_LINES:
        roll = rng.random()
        if roll < 0.05:
            lines += ["", f"## {_filler(rng, 3)[:-1]}", ""]
        elif roll < 0.15:
            lines.append(f"- {_filler(rng, rng.randint(4, 10))}")
        else:
            lines.append(_filler(rng, rng.randint(6, 16)))
    lines = lines[:DIAGNOSTIC_LINES]
    lines[500:503] = ["```text", "not a reference: @code_sample and #12 in a fence", "```"]
    slots = rng.sample([i for i, line in enumerate(lines) if line and line[0].isupper()], 200)
    for slot, reference in zip(slots, references, strict=False):
        lines[slot] = f"{lines[slot][:-1]}, see {reference}."
    return lines, plan


# -- inputs -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Probe:
    """One request's input: the line to type and where the cursor goes in it."""

    text: str
    column: int
    meta: str = ""  # e.g. a context's level


def typed(rng: random.Random, prepared: Prepared, trigger: str, length: int) -> Probe:
    """``trigger`` and ``length`` leading characters of something a user would complete."""
    claims = prepared.claims
    if trigger == "@":
        roll = rng.random()
        pool = (
            claims["claim_fids"]
            if roll < 0.6
            else claims["context_fids"]
            if roll < 0.8
            else claims["entity_fids"]
            if roll < 0.9
            else claims["tag_fids"]
        )
        source = rng.choice(pool)
    elif trigger == "#":
        source = str(rng.randint(1, len(claims["claim_fids"])))
    else:
        title = rng.choice(prepared.titles)
        words = title.split()
        source = rng.choice(words) if rng.random() < 0.3 else title
        if rng.random() < 0.3:
            source = source.lower()
    fragment = source[:length]
    while len(fragment) < length:  # a short id or number: pad as typed further
        fragment += rng.choice("0123456789" if trigger == "#" else "abcdefghij")
    text = f"Tell me about {trigger}{fragment}"
    return Probe(text, len(text), meta=fragment)


def reference(rng: random.Random, prepared: Prepared, kind: str) -> Probe:
    """A line holding one reference of ``kind``, the cursor inside it."""
    claims = prepared.claims
    meta = ""
    if kind == "claim":
        token = "@" + rng.choice(claims["claim_fids"])
    elif kind == "number":
        token = f"#{rng.randint(1, len(claims['claim_fids']))}"
    elif kind == "context":
        index = rng.randrange(len(claims["context_fids"]))
        token = "@" + claims["context_fids"][index]
        meta = f"level {claims['context_levels'][index]}"
    elif kind == "entity":
        token = "@" + rng.choice(claims["entity_fids"])
    else:
        token = f"[[{rng.choice(prepared.titles)}]]"
    head = "Compare this with "
    return Probe(f"{head}{token} before answering.", len(head) + len(token) // 2, meta)


@dataclass(slots=True)
class Inputs:
    """Every request's input, timed and warm-up, drawn once from the seed."""

    completion: dict[tuple[str, int], list[Probe]]
    references: dict[str, list[Probe]]
    warm_completion: dict[tuple[str, int], list[Probe]]
    warm_references: dict[str, list[Probe]]


def make_inputs(rng: random.Random, prepared: Prepared, samples: int) -> Inputs:
    count = samples
    completion = {
        (t, n): [typed(rng, prepared, t, n) for _ in range(count)]
        for t in TRIGGERS
        for n in range(1, 5)
    }
    warm_completion = {
        (t, n): [typed(rng, prepared, t, n) for _ in range(WARMUP)]
        for t in TRIGGERS
        for n in range(1, 5)
    }
    references = {k: [reference(rng, prepared, k) for _ in range(count)] for k in KINDS}
    warm_references = {k: [reference(rng, prepared, k) for _ in range(WARMUP)] for k in KINDS}
    return Inputs(completion, references, warm_completion, warm_references)
