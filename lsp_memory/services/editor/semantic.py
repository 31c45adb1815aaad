"""Semantic highlighting: what each reference of a document is, so an editor colours it by
kind and by state (docs/reference.md, Semantic highlighting).

Every reference token becomes one or more ``Token``s (string offsets of the document, never
across a line): its kind — claim, context, entity, tag, domain, note, or the ``#Heading`` /
``#^block`` anchor of a link — and its state: ``deprecated`` for a claim that is no longer
current (retracted, superseded, merged, deprecated), ``unresolved`` for a reference that names
nothing (a link whose note exists but whose heading does not: its anchor alone). What the
checks call a mention — an ``@word`` without ``_`` that names nothing (a person's handle in
a note), a ``#N`` above every claim number (an issue number) — is no reference: no token.

Fast on a long document: the same written reference is classified once per request, and
what a record reference is (it depends on the store alone) is remembered per store
connection until the store changes, so a keystroke's request resolves only the references
it has not seen yet. Note links resolve over the vaults' note sets (a few dictionary
lookups) every time.
"""

from __future__ import annotations

from dataclasses import dataclass

from lsp_memory import refs
from lsp_memory.model import LIVE_STATUSES, Reference, RefKind
from lsp_memory.services.kernel.resolver import Resolution, Resolver

__all__ = ["DEPRECATED", "KINDS", "MODIFIERS", "UNRESOLVED", "Token", "tokens"]

CLAIM, CONTEXT, ENTITY, TAG, DOMAIN, NOTE, ANCHOR = (
    "claim",
    "context",
    "entity",
    "tag",
    "domain",
    "note",
    "anchor",
)
KINDS = (CLAIM, CONTEXT, ENTITY, TAG, DOMAIN, NOTE, ANCHOR)
"""Every kind a token has, in the order of the legend the server declares."""

DEPRECATED, UNRESOLVED = 1, 2
MODIFIERS = ("deprecated", "unresolved")
"""The state modifiers, as bits (``DEPRECATED``, ``UNRESOLVED``) in this order."""

_RECORD_KINDS = {"claim": CLAIM, "context": CONTEXT, "entity": ENTITY, "tag": TAG}


@dataclass(frozen=True, slots=True)
class Token:
    """A highlighted piece of a reference: ``text[start:end]`` of the document, on the line
    ``line``, its kind (one of ``KINDS``) and its modifier bits."""

    line: int
    start: int
    end: int
    kind: str
    modifiers: int = 0


def tokens(
    text: str,
    resolver: Resolver,
    *,
    language_id: str | None = None,
    path: str | None = None,
    lines: tuple[int, int] | None = None,
) -> list[Token]:
    """The tokens of every reference in ``text`` (Markdown code left out, as the reference
    grammar says), in document order; with ``lines``, only those on lines ``lines[0]`` to
    ``lines[1]``."""
    store, user = resolver.store, resolver.user
    # (kind, target) → (kind, modifiers) of a record reference, kept while the store is.
    records: dict[tuple[RefKind, str], tuple[str, int] | None] = store.remembered(
        ("semantic tokens", user), dict
    )
    links: dict[tuple[str, str | None], tuple[int, int]] = {}
    found: list[Token] = []
    for reference in refs.parse_document(text, language_id, path).references:
        line = reference.span.start.line
        if lines is not None and not lines[0] <= line <= lines[1]:
            continue
        if reference.kind is RefKind.NOTE:
            key = (reference.target, reference.heading)
            if key not in links:
                links[key] = _link_state(resolver.resolve(reference, members=False))
            found += _link_tokens(reference, *links[key])
            continue
        record = (reference.kind, reference.target)
        if record not in records:
            records[record] = _record(reference, resolver)
        state = records[record]
        if state is not None:
            found.append(Token(line, reference.offset, reference.end, *state))
    return found


def _record(reference: Reference, resolver: Resolver) -> tuple[str, int] | None:
    """The kind and modifiers of an ``@id``, ``#N`` or ``@memory:`` reference; None for a
    mention."""
    resolution = resolver.resolve(reference, members=False)
    if resolution.error is not None:  # names nothing: what it was written as, or a mention
        if reference.kind is RefKind.ID and "_" not in reference.target:
            return None
        number = reference.claim_number if reference.kind is RefKind.NUMBER else None
        if number is not None and number > resolver.store.last_claim_number(resolver.user):
            return None
        return CLAIM, UNRESOLVED
    if resolution.kind == "claim" and resolution.claims:
        live = resolution.claims[0].status in LIVE_STATUSES
        return CLAIM, 0 if live else DEPRECATED
    if resolution.kind == "domain":
        return DOMAIN, 0
    return _RECORD_KINDS.get(resolution.kind or "", CLAIM), 0


def _link_state(resolution: Resolution) -> tuple[int, int]:
    """The modifiers of a ``[[link]]``'s note part and of its anchor part."""
    target = resolution.note
    if resolution.error is not None and (target is None or target.note is None):
        return UNRESOLVED, UNRESOLVED  # no note, no file: the whole link
    if target is not None and target.error is not None:
        return 0, UNRESOLVED  # the note is there, the heading or block is not
    return 0, 0


def _link_tokens(link: Reference, note: int, anchor: int) -> list[Token]:
    """A link as a note token, its ``#Heading`` or ``#^block`` part (up to the label) as an
    anchor token between two note tokens."""
    line = link.span.start.line
    if link.heading is None:
        return [Token(line, link.offset, link.end, NOTE, note)]
    written = link.text
    hash_at = written.index("#", 2)  # the target holds no "#": the first one after "[["
    pipe = written.find("|", hash_at) if link.label is not None else -1
    anchor_end = pipe if pipe >= 0 else len(written) - 2
    if pipe > 0 and written[pipe - 1] == "\\":  # `\|` in a table: the escape is the pipe's
        anchor_end -= 1
    start = link.offset
    return [
        Token(line, start, start + hash_at, NOTE, note),
        Token(line, start + hash_at, start + anchor_end, ANCHOR, anchor),
        Token(line, start + anchor_end, link.end, NOTE, note),
    ]
