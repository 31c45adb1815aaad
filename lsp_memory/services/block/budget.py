"""Filling a context block's token budget (docs/reference.md, The context block): which pieces are
kept, which notes are
cut, which pieces are dropped, and the block and its JSON that result.

Budget: tokens of o200k_base over the whole Markdown block. Items are taken in the filling
priority of docs/reference.md, The budget: referenced claims (always, even over budget: then
``over_budget`` and a warning) and the lines of references that name nothing, attached and
pinned claims, pinned notes, directly mentioned entities, deeper entities, entity-linked
notes, automatic memories, referenced-documents lines. An item that
does not fit is dropped (listed in ``dropped``), except a note, whose body is first cut to
what fits (when at least 24 tokens of it do); a later, smaller item may still fit after a
larger one was dropped, and an entity-linked note goes with its entity. Pieces are counted
once each; the assembled block is then counted whole and, while it is over (token merges
across piece boundaries), the last item taken is cut or dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from lsp_memory.services.block.pieces import (
    BLOCK_SECTIONS,
    GROUP_TEXT,
    HEADERS,
    SECTIONS,
    Build,
    ContextBlock,
    Piece,
    Section,
    group,
    note_text,
    render,
)
from lsp_memory.services.kernel.tokens import TokenCounter
from lsp_memory.text import ELLIPSIS

MIN_NOTE_TOKENS = 24
"""A note cut to fit keeps at least this many tokens of its body, or is dropped."""


def fit(build: Build, budget: int, counter: TokenCounter) -> ContextBlock:
    """The block of ``build``'s pieces filled to ``budget`` tokens of ``counter``, with what
    was left out (over a count limit or the budget) and the warnings."""
    filled = fill(build.pieces, budget, counter)
    warnings = list(build.warnings)
    if filled.over_budget:
        warnings.append(
            f"the referenced claims alone take {filled.tokens} tokens, over the budget of "
            f"{budget}; nothing else was added"
        )
    sections = []
    for name in SECTIONS:
        items = sorted((p for p in filled.pieces if p.section == name), key=lambda p: p.order)
        if items:
            sections.append(
                Section(
                    name,
                    tuple(
                        {**p.data, "tokens": filled.costs[p.key], "markdown": p.text} for p in items
                    ),
                )
            )
    listed = [_dropped(p, "limit", counter.count("\n" + p.text)) for p in build.limited]
    listed += [_dropped(*entry) for entry in filled.dropped]
    return ContextBlock(
        budget=budget,
        tokens=filled.tokens,
        tokenizer=counter.name,
        over_budget=filled.over_budget,
        sections=tuple(sections),
        dropped=tuple(listed),
        warnings=tuple(warnings),
        markdown=filled.markdown,
    )


@dataclass(frozen=True, slots=True)
class Filled:
    """What :func:`fill` kept (in filling order, notes perhaps cut), what it dropped (with
    the reason and the tokens it would have taken) and the block it made."""

    pieces: tuple[Piece, ...]
    costs: Mapping[str, int]  # piece key → its tokens, counted alone
    dropped: tuple[tuple[Piece, str, int], ...]
    markdown: str
    tokens: int
    budget: int

    @property
    def over_budget(self) -> bool:
        return self.tokens > self.budget


def fill(pieces: Sequence[Piece], budget: int, counter: TokenCounter) -> Filled:
    """Take ``pieces`` in filling priority (then their order) while they fit in ``budget``
    tokens of the rendered block. Referenced claims are always taken. A note that does not
    fit whole is cut to what fits; anything else that does not fit is dropped, as is a piece
    whose ``requires`` was not taken. Each piece and header is counted once; the block is
    then counted whole, and while it is over (token merges across piece edges) the last
    piece taken is cut or dropped. Over budget only when the referenced claims alone are."""
    header_cost = {
        name: counter.count(text) + (1 if name in HEADERS else 0)
        for name, text in GROUP_TEXT.items()
    }

    def cost(piece: Piece) -> int:
        prefix = "\n" if piece.section in BLOCK_SECTIONS else ""
        return counter.count(prefix + piece.text)

    taken: list[Piece] = []
    taken_keys: set[str] = set()
    costs: dict[str, int] = {}
    opened: set[str] = set()
    used = 0
    dropped: list[tuple[Piece, str, int]] = []
    for piece in sorted(pieces, key=lambda p: (p.priority, p.order)):
        size = cost(piece)
        if piece.requires is not None and piece.requires not in taken_keys:
            dropped.append((piece, "budget", size))
            continue
        headers = sum(header_cost[g] for g in group(piece) if g not in opened)
        fitted: Piece | None = piece
        if not piece.referenced and used + headers + size > budget:
            fitted = cut_piece(piece, budget - used - headers, counter)
            if fitted is None:
                dropped.append((piece, "budget", size))
                continue
            size = cost(fitted)
        assert fitted is not None
        taken.append(fitted)
        taken_keys.add(fitted.key)
        costs[fitted.key] = size
        opened.update(group(fitted))
        used += headers + size
    markdown = render(taken)
    tokens = counter.count(markdown)
    while tokens > budget:
        victims = [i for i, p in enumerate(taken) if not p.referenced]
        if not victims:
            break
        index = victims[-1]
        victim = taken[index]
        smaller = cut_piece(victim, costs[victim.key] - (tokens - budget) - 1, counter)
        if smaller is not None and smaller.text != victim.text:
            taken[index] = smaller
            costs[victim.key] = cost(smaller)
        else:
            del taken[index]
            dropped.append((victim, "budget", costs.pop(victim.key)))
        markdown = render(taken)
        tokens = counter.count(markdown)
    dropped.sort(key=lambda entry: (entry[0].priority, entry[0].order))
    return Filled(tuple(taken), costs, tuple(dropped), markdown, tokens, budget)


def cut_piece(piece: Piece, room: int, counter: TokenCounter) -> Piece | None:
    """``piece`` with its note body cut (ending in ``…``) so that it takes at most ``room``
    tokens with the blank line before it; None when it is not a note or cannot keep
    :data:`MIN_NOTE_TOKENS` of its body."""
    if not piece.body:
        return None
    frame = counter.count("\n" + piece.head + piece.tail) + 2  # + "…" and a line break
    allowed = room - frame
    for _ in range(4):
        if allowed < MIN_NOTE_TOKENS:
            return None
        body = counter.head(piece.body, allowed).rstrip()
        if not body:
            return None
        body = body.removesuffix(ELLIPSIS).rstrip() + ELLIPSIS
        text = note_text(piece.head, body, piece.tail)
        over = counter.count("\n" + text) - room
        if over <= 0:
            data = {**piece.data, "chars": len(body), "truncated": True}
            return replace(piece, text=text, body=body, data=data)
        allowed -= over
    return None


def _dropped(piece: Piece, reason: str, tokens: int) -> dict[str, Any]:
    """A ``dropped`` entry: section, kind, id (claim or entity friendly id, note path or
    link), a claim's label, tokens and reason (``budget`` or ``limit``)."""
    entry: dict[str, Any] = {"section": piece.section, "kind": piece.kind}
    data = piece.data
    if piece.kind == "claim":
        entry["id"] = data["friendly_id"]
        entry["label"] = data["label"]
    elif piece.kind in ("note", "document", "unresolved"):
        entry["id"] = data.get("path") or data.get("ref")
    elif piece.kind in ("message", "episode"):
        entry["id"] = data["episode_id"]
    else:
        entry["id"] = data["friendly_id"]
    entry["tokens"] = tokens
    entry["reason"] = reason
    return entry
