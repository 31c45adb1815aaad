"""Consolidation and its review: ``consolidate`` and ``review``."""

from __future__ import annotations

import argparse
from typing import Any

from lsp_memory.app import App
from lsp_memory.cli.output import print_json, short, warn
from lsp_memory.cli.progress import progress
from lsp_memory.errors import UserError


def cmd_consolidate(app: App, args: argparse.Namespace) -> int:
    from lsp_memory.ids import now, timestamp

    if args.undo is not None:
        for done in app.consolidation().undo(args.undo, cascade=args.cascade):
            print(
                f"undid run {done.run}: {done.changes} change{'s' * (done.changes != 1)} put back"
            )
        return 0
    if args.cascade:
        raise UserError("--cascade goes with --undo RUN_ID: it undoes the later runs first")
    try:
        moment = timestamp(args.now) if args.now else now()
    except ValueError as error:
        raise UserError(f"--now {args.now!r} is not an ISO 8601 date or time: {error}") from None
    app.refresh_indexes()
    with progress() as update:
        report = app.consolidation().run(moment, dry_run=args.dry_run, progress=update)
    decided, failed = ([], None) if args.dry_run else app.review().ask_command()
    warn(app, *report.warnings, *([failed] if failed else []))
    if args.json:
        return print_json({**report.to_json(), "decided": [o.message for o in decided]})
    _print_consolidation(report.to_json())
    for outcome in decided:
        print(f"  {outcome.message}")
    return 0


def _print_consolidation(report: dict[str, Any]) -> None:
    changes = report["changes"]
    decayed = {c["claim"] for c in changes if c["reason"].startswith("decay:")}
    head = "would make" if report["dry_run"] else f"run {report['run_id']}:"
    print(
        f"{head} {len(changes)} change{'s' * (len(changes) != 1)} as of {report['now']}: "
        f"{report['merged']} merged, {report['contradictions']} contradiction"
        f"{'s' * (report['contradictions'] != 1)}, {report['deprecated']} deprecated, "
        f"{len(decayed)} decayed, {len(report['review'])} for review"
    )
    shown = set()
    for change in changes:
        reason = change["reason"]
        if reason.startswith("decay:") or (change["claim"], reason) in shown:
            continue
        shown.add((change["claim"], reason))
        print(f"  {change['claim']}: {reason}")
    for item in report["review"]:
        label = f"review {item['id']}" if item["id"] is not None else "review"
        print(f"  {label}: {item['reason']}")
    if report["review"] and not report["dry_run"]:
        print("decide with `lsp-memory review accept|reject|keep-both ID`")
    if changes and not report["dry_run"]:
        print(f"undo with `lsp-memory consolidate --undo {report['run_id']}`")


def cmd_review(app: App, args: argparse.Namespace) -> int:
    review = app.review()
    if args.decision is not None:
        if args.item is None:
            raise UserError(f"review {args.decision} needs the item's ID (`lsp-memory review`)")
        print(review.decide(args.item, args.decision).message)
        return 0
    if args.item is not None:
        raise UserError("review takes a decision before the ID: accept, reject or keep-both")
    items = review.items()
    if args.json:
        return print_json(items)
    if not items:
        print("nothing to review")
    for item in items:
        stale = " (out of date: its claims changed)" if item["stale"] else ""
        print(f"{item['id']}. [{item['kind']}] proposed {item['proposal']}{stale}")
        print(f"   {item['reason']}")
        for claim in item["claims"]:
            print(
                f"   {claim['claim']} ({claim['status']}, {claim['confidence']:g}) "
                f"{short(claim['statement'], 64)}"
            )
    return 0
