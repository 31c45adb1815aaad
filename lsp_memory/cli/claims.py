"""``claim add|show|list|retract|restore|pin|unpin``, ``claim context add|remove`` and
``classify``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from lsp_memory.app import App, Snapshot
from lsp_memory.cli.inputs import claim_for, read_text, strip_at
from lsp_memory.cli.output import claim_line, handle, print_json, short, warn
from lsp_memory.errors import UserError
from lsp_memory.model import Claim, ClaimLine, ClaimStatus
from lsp_memory.services.kernel.asof import change_record
from lsp_memory.services.kernel.claim_form import claim_record
from lsp_memory.services.memory.supersede import rule_for


def cmd_claim_add(app: App, args: argparse.Namespace) -> int:
    records = app.records()  # opens the store first: one that cannot be written fails here
    if not args.no_supersede and (
        args.type is None or rule_for(args.type, app.config.supersede) in ("similar", "person")
    ):
        app.load_model_ahead()  # the statement's vector, for supersede's cosine test
    claim = records.add_claim(
        args.text,
        claim_type=args.type,
        domain=args.domain,
        contexts=[strip_at(c) for c in args.context or ()],
        tags=[strip_at(t) for t in args.tag or ()],
        entities=[strip_at(e) for e in args.entity or ()],
        confidence=args.confidence,
        pinned=args.pin,
        supersede=not args.no_supersede,
    )
    warn(app)
    replaced = ", ".join(f"#{old.number}" for old in records.last_superseded)
    print(f"added {claim_line(claim)}" + (f" (supersedes {replaced})" if replaced else ""))
    return 0


def cmd_classify(app: App, args: argparse.Namespace) -> int:
    if args.texts == ["-"]:
        texts = [line for line in read_text("-").splitlines() if line.strip()]
        if not texts:
            raise UserError("nothing to classify: standard input has no non-empty line")
    elif not args.texts:
        raise UserError("nothing to classify: give one or more statements, or - for stdin")
    else:
        texts = args.texts
        blank = next((i for i, text in enumerate(texts, 1) if not text.strip()), None)
        if blank is not None:
            raise UserError(f"nothing to classify in statement {blank}: the text is empty")
    decisions = app.classifier().classify_all(texts)
    warn(app)
    if args.json:
        return print_json(
            [
                {
                    "text": text,
                    "category": d.category,
                    "confidence": d.confidence,
                    "runner_up": d.runner_up,
                }
                for text, d in zip(texts, decisions, strict=True)
            ]
        )
    for text, d in zip(texts, decisions, strict=True):
        print(f"{d.category:<14} {d.confidence:.2f}  (or {d.runner_up})  {short(text, 60)}")
    return 0


def cmd_claim_show(app: App, args: argparse.Namespace) -> int:
    claim = claim_for(app, args.ref)
    if args.as_of:
        then = app.records().then([claim], args.as_of)
        if not then:
            raise UserError(
                f"{handle(claim)} did not exist yet on {args.as_of}: created {claim.created_at}"
            )
        claim = then[0]
    if args.json:
        return print_json(claim_record(claim))
    reads = app.snapshot()
    if args.as_of:
        print(f"as of {args.as_of}:")
    print(claim_line(claim))
    print(claim.statement)
    details = [
        ("status", claim.status.value),
        ("confidence", f"{claim.confidence:g}"),
        ("types", ", ".join(claim.claim_types)),
        ("domains", ", ".join(claim.domains)),
        ("contexts", ", ".join(f"@{c}" for c in claim.contexts or ())),
        ("tags", ", ".join(f"@{t}" for t in claim.tags or ())),
        ("entities", ", ".join(f"@{e}" for e in claim.entities or ())),
        ("answers", "; ".join(claim.possible_questions)),
        ("pinned", "yes" if claim.pinned else ""),
        ("created", claim.created_at),
        ("updated", claim.updated_at),
        (
            "valid",
            " – ".join(v or "…" for v in (claim.valid_from, claim.valid_to))
            if claim.valid_from or claim.valid_to
            else "",
        ),
        ("superseded by", _linked(reads, claim.superseded_by)),
        ("merged into", _linked(reads, claim.merged_into)),
        ("derived from", ", ".join(claim.derived_from)),
        ("evidence", str(claim.evidence_count) if claim.evidence_count else ""),
        ("now", _current(reads, claim)),
        ("id", claim.claim_id),
    ]
    for label, value in details:
        if value:
            print(f"  {label + ':':<15}{value}")
    return 0


def _linked(reads: Snapshot, claim_id: str | None) -> str:
    """A claim named by a lineage field, as ``#N @friendly_id`` (its UUID if gone)."""
    if claim_id is None:
        return ""
    found = reads.claim(claim_id)
    return handle(found) if found else claim_id


def _current(reads: Snapshot, claim: Claim) -> str:
    """The live claim a superseded or merged one leads to, when it is not the next link
    (the one the editor's hover and quick fix name)."""
    found = reads.successor(claim)
    if found is None or found.claim_id in (claim.superseded_by, claim.merged_into):
        return ""
    return handle(found)


def cmd_claim_list(app: App, args: argparse.Namespace) -> int:
    statuses = [ClaimStatus(s) for s in args.status] if args.status else None
    records = app.records()
    claims: Sequence[ClaimLine]
    if args.as_of:  # statuses and the limit apply to the claims as they were then
        then = records.listed_then(statuses, args.limit, args.as_of, links=args.json)
        if args.json:
            return print_json([claim_record(c) for c in then])
        claims = then
    elif args.json:
        return print_json([claim_record(c) for c in records.claims(statuses, args.limit)])
    else:
        claims = records.lines(statuses, args.limit)
    if claims:  # one write: 100 000 prints took ~0.15 s
        print("\n".join(claim_line(claim) for claim in claims))
    return 0


def cmd_claim_history(app: App, args: argparse.Namespace) -> int:
    claim = claim_for(app, args.ref)
    changes = app.records().history(claim)
    if args.json:
        return print_json({**claim_record(claim), "history": [change_record(c) for c in changes]})
    print(claim_line(claim))
    for change in changes:
        run = "" if change.run is None else f"  [{change.run_kind} run {change.run}]"
        print(f"{change.at}  {change.what}{run}")
        if change.other is not None:
            other = change.other
            print(f"    {change.relation} {handle(other)}: {short(other.statement, 60)}")
        for name, (before, after) in change.fields.items():
            if name in HIDDEN:
                continue
            print(f"    {name}: {_value(before)} → {_value(after)}")
    return 0


HIDDEN = frozenset({"decayed_at", "evidence_at", "updated_at"})
"""Fields a history line leaves out (its JSON has them): decay's and evidence's bookkeeping,
and ``updated_at`` (every write sets it; the line's time says when)."""


def _value(value: object) -> str:
    """A field's value in a history line (a list by its length past three items)."""
    if value is None:
        return "–"
    if isinstance(value, list):
        return f"{len(value)} items" if len(value) > 3 else ", ".join(map(str, value)) or "none"
    return str(value)


def cmd_claim_retract(app: App, args: argparse.Namespace) -> int:
    claim = claim_for(app, args.ref)
    done = app.records().retract(claim)
    print(f"retracted {handle(claim)}" if done else f"{handle(claim)} was already retracted")
    return 0


def cmd_claim_restore(app: App, args: argparse.Namespace) -> int:
    claim = claim_for(app, args.ref)
    if not app.records().restore(claim):
        print(f"{handle(claim)} is already active")
        return 0
    print(f"restored {handle(claim)} (was {claim.status.value})")
    return 0


def cmd_claim_pin(app: App, args: argparse.Namespace) -> int:
    print(app.records().pin(claim_for(app, args.ref)))
    return 0


def cmd_claim_unpin(app: App, args: argparse.Namespace) -> int:
    print(app.records().pin(claim_for(app, args.ref), pinned=False))
    return 0


def cmd_claim_context_add(app: App, args: argparse.Namespace) -> int:
    print(app.records().link_context(claim_for(app, args.ref), args.context))
    return 0


def cmd_claim_context_remove(app: App, args: argparse.Namespace) -> int:
    print(app.records().link_context(claim_for(app, args.ref), args.context, linked=False))
    return 0
