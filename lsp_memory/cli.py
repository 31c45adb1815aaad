"""The command line: a composition root over ``app``.

User errors print one line on stderr (``lsp-memory: error: …``) and exit 1; usage errors exit
2 (argparse); nothing prints a traceback unless ``LSP_MEMORY_DEBUG`` is set.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sqlite3
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lsp_memory import __version__, refs
from lsp_memory.app import App
from lsp_memory.config import load_config
from lsp_memory.errors import ImportFailed, UnresolvedReference, UserError
from lsp_memory.model import Claim, ClaimStatus, ContextNode, Reference
from lsp_memory.services.kernel import lineage
from lsp_memory.services.kernel.claim_form import claim_record
from lsp_memory.services.kernel.resolver import (
    Resolution,
    parse_argument,
    reference_range,
    resolution_record,
)
from lsp_memory.services.memory.interchange import export_records, import_records
from lsp_memory.services.retrieval.search import SHOWN_STATUSES, hit_record
from lsp_memory.text import one_line

PROG = "lsp-memory"
MAX_HITS = 1000
"""The most hits `search -k` asks for."""
Handler = Callable[[App, argparse.Namespace], int]


# -- helpers ----------------------------------------------------------------------------------


def _read_input(name: str) -> bytes:
    """The bytes of FILE, or of standard input for ``-``."""
    if name == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(name).read_bytes()
    except OSError as error:
        raise UserError(f"cannot read {name}: {error.strerror or error}") from None


def _read_text(name: str) -> str:
    data = _read_input(name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UserError(
            f"{name}: not valid UTF-8 (byte {data[error.start]:#04x} at offset {error.start})"
        ) from None


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def _short(text: str, width: int = 72) -> str:
    return one_line(text, width)


def _claim_line(claim: Claim) -> str:
    status = "" if claim.status is ClaimStatus.ACTIVE else f" ({claim.status.value})"
    return (
        f"#{claim.number} @{claim.friendly_id} [{claim.claim_type}]{status} "
        f"{_short(claim.statement)}"
    )


def _warn(app: App) -> None:
    """Print the warnings the services collected (a failed ``classifier_command``, say)."""
    for warning in app.warnings:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    app.warnings.clear()


def _strip_at(value: str) -> str:
    return value[1:] if value.startswith("@") else value


def _claim_for(app: App, ref: str) -> Claim:
    """The claim a command-line REF names; one-line error when it names none or not a claim."""
    resolution = app.snapshot().resolver().resolve(parse_argument(ref))
    if resolution.error:
        raise UnresolvedReference(resolution.error)
    if resolution.kind != "claim":
        raise UnresolvedReference(f"{ref} is a {resolution.kind}, not a claim")
    return resolution.claims[0]


# -- claims -----------------------------------------------------------------------------------


def cmd_claim_add(app: App, args: argparse.Namespace) -> int:
    records = app.records()
    claim = records.add_claim(
        args.text,
        claim_type=args.type,
        domain=args.domain,
        contexts=[_strip_at(c) for c in args.context or ()],
        tags=[_strip_at(t) for t in args.tag or ()],
        entities=[_strip_at(e) for e in args.entity or ()],
        confidence=args.confidence,
        pinned=args.pin,
        supersede=not args.no_supersede,
    )
    _warn(app)
    replaced = ", ".join(f"#{old.number}" for old in records.last_superseded)
    print(f"added {_claim_line(claim)}" + (f" (supersedes {replaced})" if replaced else ""))
    return 0


def cmd_classify(app: App, args: argparse.Namespace) -> int:
    if args.texts == ["-"]:
        texts = [line for line in _read_text("-").splitlines() if line.strip()]
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
    _warn(app)
    if args.json:
        print(
            _dumps(
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
        )
        return 0
    for text, d in zip(texts, decisions, strict=True):
        print(f"{d.category:<14} {d.confidence:.2f}  (or {d.runner_up})  {_short(text, 60)}")
    return 0


def cmd_claim_show(app: App, args: argparse.Namespace) -> int:
    claim = _claim_for(app, args.ref)
    if args.json:
        print(_dumps(claim_record(claim)))
        return 0
    print(_claim_line(claim))
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
        ("superseded by", _handle(app, claim.superseded_by)),
        ("merged into", _handle(app, claim.merged_into)),
        ("derived from", ", ".join(claim.derived_from)),
        ("evidence", str(claim.evidence_count) if claim.evidence_count else ""),
        ("now", _current(app, claim)),
        ("id", claim.claim_id),
    ]
    for label, value in details:
        if value:
            print(f"  {label + ':':<15}{value}")
    return 0


def _handle(app: App, claim_id: str | None) -> str:
    """A claim named by a lineage field, as ``#N @friendly_id`` (its UUID if gone)."""
    if claim_id is None:
        return ""
    found = app.store.claim_by_uuid(app.config.user, claim_id)
    return f"#{found.number} @{found.friendly_id}" if found else claim_id


def _current(app: App, claim: Claim) -> str:
    """The live claim a superseded or merged one leads to, when it is not the next link
    (the one the editor's hover and quick fix name)."""
    found = lineage.successor(app.store, app.config.user, claim)
    if found is None or found.claim_id in (claim.superseded_by, claim.merged_into):
        return ""
    return f"#{found.number} @{found.friendly_id}"


def cmd_claim_list(app: App, args: argparse.Namespace) -> int:
    statuses = [ClaimStatus(s) for s in args.status] if args.status else None
    claims = app.records().claims(statuses, args.limit)
    if args.json:
        print(_dumps([claim_record(c) for c in claims]))
    else:
        for claim in claims:
            print(_claim_line(claim))
    return 0


def cmd_claim_retract(app: App, args: argparse.Namespace) -> int:
    claim = _claim_for(app, args.ref)
    if not app.records().retract(claim):
        print(f"#{claim.number} @{claim.friendly_id} was already retracted")
        return 0
    print(f"retracted #{claim.number} @{claim.friendly_id}")
    return 0


def cmd_claim_restore(app: App, args: argparse.Namespace) -> int:
    claim = _claim_for(app, args.ref)
    if not app.records().restore(claim):
        print(f"#{claim.number} @{claim.friendly_id} is already active")
        return 0
    print(f"restored #{claim.number} @{claim.friendly_id} (was {claim.status.value})")
    return 0


# -- contexts ---------------------------------------------------------------------------------


def cmd_context_add(app: App, args: argparse.Namespace) -> int:
    context = app.records().add_context(
        args.name,
        parent=_strip_at(args.parent) if args.parent else None,
        description=args.description,
        friendly_id=_strip_at(args.id) if args.id else None,
    )
    where = f" under @{context.parent}" if context.parent else ""
    print(f"added context @{context.friendly_id} {context.name!r}{where}")
    return 0


def cmd_context_tree(app: App, _args: argparse.Namespace) -> int:
    roots, stranded = app.store.context_tree(app.config.user)

    def show(node: ContextNode, prefix: str, last: bool, top: bool) -> None:
        branch = "" if top else ("└── " if last else "├── ")
        count = f"{node.claim_count} claim{'s' if node.claim_count != 1 else ''}"
        print(f"{prefix}{branch}{node.context.name}  @{node.context.friendly_id}  ({count})")
        inner = prefix + ("" if top else ("    " if last else "│   "))
        for index, child in enumerate(node.children):
            show(child, inner, index == len(node.children) - 1, False)

    if not roots and not stranded:
        print("no contexts yet; add one with: lsp-memory context add NAME")
    for root in roots:
        show(root, "", True, True)
    if stranded:
        names = ", ".join(f"@{c.friendly_id}" for c in stranded)
        print(f"in a parent cycle (not shown above): {names}")
    return 0


# -- import / export --------------------------------------------------------------------------


def cmd_import(app: App, args: argparse.Namespace) -> int:
    data = _read_input(args.file)
    source = "standard input" if args.file == "-" else args.file
    summary = import_records(app.store, data, user=app.config.user, source=source)
    print(f"{summary.describe()} into {app.store.path}", file=sys.stderr)
    return 0


def cmd_export(app: App, args: argparse.Namespace) -> int:
    lines = [line + "\n" for line in export_records(app.store, app.config.user)]
    if args.file in (None, "-"):
        sys.stdout.writelines(lines)
        return 0
    target = Path(args.file)
    temporary = target.with_name(f".{target.name}.partial")
    try:
        temporary.write_text("".join(lines), encoding="utf-8")
        temporary.replace(target)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise UserError(f"cannot write {target}: {error.strerror or error}") from None
    print(f"exported {len(lines)} records to {target}", file=sys.stderr)
    return 0


# -- references -------------------------------------------------------------------------------


def _parse_file(name: str, language_id: str | None) -> tuple[Reference, ...]:
    text = _read_text(name)
    path = None if name == "-" else name
    return refs.parse_document(text, language_id=language_id, path=path).references


def cmd_refs(_app: App, args: argparse.Namespace) -> int:
    tokens = _parse_file(args.file, args.language_id)
    if args.json:
        print(
            _dumps(
                [
                    {
                        "kind": t.kind.value,
                        "text": t.text,
                        "target": t.target,
                        "range": reference_range(t),
                    }
                    for t in tokens
                ]
            )
        )
        return 0
    for t in tokens:
        where = f"{t.span.start.line + 1}:{t.span.start.character + 1}"
        print(f"{where:>8}  {t.kind.value:<6}  {t.text}")
    return 0


def _print_resolution(resolution: Resolution) -> None:
    if resolution.error:
        print(f"{resolution.ref}  ✗ {resolution.error}")
        return
    if resolution.note is not None and resolution.note.note is not None:
        target = resolution.note
        note = target.note
        assert note is not None
        where = f"#{target.heading.text} (line {target.heading.line + 1})" if target.heading else ""
        flags = " (archived)" if note.archived else ""
        if len(target.candidates) > 1:
            flags += f" (ambiguous: {len(target.candidates)} notes match)"
        print(f"{resolution.ref}  → note {note.path}{where} {note.title!r}{flags}")
        return
    what = f"{resolution.kind} @{resolution.id}"
    if resolution.kind == "domain":
        what = f"domain {resolution.id!r}"
    if resolution.context is not None:
        what += f" {resolution.context.name!r}"
    if resolution.entity is not None:
        trashed = " (deleted)" if resolution.entity.trashed else ""
        what += f" {resolution.entity.name!r} ({resolution.entity.type}){trashed}"
    count = len(resolution.claims)
    if resolution.kind == "claim":
        print(f"{resolution.ref}  → {_claim_line(resolution.claims[0])}")
        return
    print(f"{resolution.ref}  → {what}: {count} claim{'s' if count != 1 else ''}")
    for claim in resolution.claims:
        print(f"    {_claim_line(claim)}")


def cmd_resolve(app: App, args: argparse.Namespace) -> int:
    if bool(args.refs) == bool(args.file):
        raise UserError("resolve takes REF arguments or --file FILE, not both and not neither")
    if args.file:
        references = _parse_file(args.file, None)
    else:
        references = tuple(parse_argument(ref) for ref in args.refs)
    resolutions = app.snapshot().resolver().resolve_all(references)
    if args.json:
        print(_dumps([resolution_record(r) for r in resolutions]))
    else:
        if args.file and not resolutions:
            print(f"{args.file}: no references")
        for resolution in resolutions:
            _print_resolution(resolution)
    unresolved = [r for r in resolutions if r.error]
    if args.file or not unresolved:
        return 0
    for resolution in unresolved:
        print(f"{PROG}: error: {resolution.ref}: {resolution.error}", file=sys.stderr)
    return 1


# -- index and search -------------------------------------------------------------------------

_KINDS = {"claim": ("claim",), "note": ("note",), "episode": ("episode",), "all": None}


def _progress_bar() -> tuple[Any, Callable[[str, int, int], None]]:
    """A progress display on stderr (counts, rate, time left) and the callback feeding it."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        Task,
        TextColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            return Text(f"{speed:,.0f}/s" if speed else "–/s")

    bar = Progress(
        TextColumn("{task.description:<10}"),
        BarColumn(),
        MofNCompleteColumn(),
        Rate(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=False,
    )
    tasks: dict[str, Any] = {}

    def update(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=total)
        bar.update(tasks[stage], completed=done, total=total)

    return bar, update


def cmd_serve(_app: App, args: argparse.Namespace) -> int:
    from lsp_memory.lsp.server import serve

    serve(args.tcp, overrides=_overrides(args))
    return 0


def cmd_status(app: App, args: argparse.Namespace) -> int:
    found = app.status()
    _warn(app)
    if args.json:
        print(_dumps(found))
        return 0
    claims = found["claims"]
    statuses = ", ".join(f"{count} {name}" for name, count in claims.items() if name != "total")
    print(
        f"user {found['user']}: {claims['total']} claims" + (f" ({statuses})" if statuses else "")
    )
    print(
        f"{found['contexts']} contexts, {found['entities']} entities, {found['notes']} notes, "
        f"{found['episodes']} episodes in {found['sessions']} sessions, "
        f"{found['review_items']} open review items"
    )
    index = found["index"]
    print(f"search index: {index['embedded']} embedded, {index['pending']} waiting to be embedded")
    for name, path in found["paths"].items():
        if path:
            print(f"{name}: {', '.join(path) if isinstance(path, list) else path}")
    return 0


def cmd_mcp(app: App, _args: argparse.Namespace) -> int:
    from lsp_memory.mcp.server import serve

    serve(app)
    return 0


def cmd_index(app: App, args: argparse.Namespace) -> int:
    bar, update = _progress_bar()
    try:
        with bar:
            try:
                report = app.keeper.index(full=args.full, embed=not args.text_only, progress=update)
            except BaseException:
                bar.live.transient = True  # a failed run leaves its error line alone
                raise
    except (OSError, ValueError, sqlite3.Error) as error:
        refused = app.cache_errors(error)
        if refused is None:
            raise
        raise refused from None
    for warning in report.warnings:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    text = report.text
    what = "rebuilt" if text.full else "updated"
    print(
        f"{what} the search index: {text.upserted} written, {text.deleted} removed "
        f"in {text.seconds:.1f} s; {report.embedded} embedded, {report.vectors} vectors, "
        f"{report.pending} waiting to be embedded"
    )
    return 0


def cmd_search(app: App, args: argparse.Namespace) -> int:
    app.refresh_indexes()
    for warning in app.warnings:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    hits = app.hybrid_search().search(
        args.query,
        user=app.config.user,
        kinds=_KINDS[args.kind],
        statuses=None if args.any_status else SHOWN_STATUSES,
        k=args.k,
        mode=args.mode,
        diverse=args.diverse,
    )
    rows = [hit_record(hit, app.store, app.config.user) for hit in hits]
    if args.json:
        print(_dumps(rows))
        return 0
    if not rows:
        print(f"no matches for {args.query!r}")
    for rank, row in enumerate(rows, start=1):
        number = f"#{row['number']} " if row.get("number") is not None else ""
        handle = number + (row["reference"] or f"episode {row['key'][:8]}")
        status = "" if row["status"] in ("active",) else f" ({row['status']})"
        print(f"{rank:>2}. [{row['kind']}] {handle}{status}  {_short(row['title'], 60)}")
        print(
            f"      score {row['score']:.3f} · bm25 {row['bm25']:.2f} · "
            f"cosine {row['similarity']:.2f}"
        )
    return 0


# -- consolidation and review -----------------------------------------------------------------


def cmd_consolidate(app: App, args: argparse.Namespace) -> int:
    from lsp_memory.ids import now, timestamp

    if args.undo is not None:
        undone = app.consolidation().undo(args.undo)
        print(f"undid run {args.undo}: {undone} change{'s' * (undone != 1)} put back")
        return 0
    try:
        moment = timestamp(args.now) if args.now else now()
    except ValueError as error:
        raise UserError(f"--now {args.now!r} is not an ISO 8601 date or time: {error}") from None
    app.refresh_indexes()
    report = app.consolidation().run(moment, dry_run=args.dry_run)
    decided, failed = ([], None) if args.dry_run else app.review().ask_command()
    for warning in [*app.warnings, *report.warnings, *([failed] if failed else [])]:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    app.warnings.clear()
    if args.json:
        print(_dumps({**report.to_json(), "decided": [o.message for o in decided]}))
        return 0
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
        print(_dumps(items))
        return 0
    if not items:
        print("nothing to review")
    for item in items:
        stale = " (out of date: its claims changed)" if item["stale"] else ""
        print(f"{item['id']}. [{item['kind']}] proposed {item['proposal']}{stale}")
        print(f"   {item['reason']}")
        for claim in item["claims"]:
            print(
                f"   {claim['claim']} ({claim['status']}, {claim['confidence']:g}) "
                f"{_short(claim['statement'], 64)}"
            )
    return 0


# -- conversations ----------------------------------------------------------------------------


def cmd_ingest(app: App, args: argparse.Namespace) -> int:
    from lsp_memory.services.conversations.ingest import parse_pairs

    source = "standard input" if args.file == "-" else args.file
    pairs = parse_pairs(_read_input(args.file), source)
    results = app.ingester().ingest(pairs)
    _warn(app)
    if args.json:
        print(_dumps([result.to_json() for result in results]))
        return 0
    for result in results:
        print(result.describe())
    return 0


def cmd_session_list(app: App, args: argparse.Namespace) -> int:
    found = app.sessions().summaries()
    if args.json:
        print(_dumps(found))
        return 0
    if not found:
        print("no sessions yet: `lsp-memory ingest` stores conversations")
    for session in found:
        count = session["messages"]
        print(
            f"{session['session_id']}  {count} message{'s' * (count != 1)}  "
            f"{session['first']} – {session['last']}"
        )
    return 0


def cmd_session_show(app: App, args: argparse.Namespace) -> int:
    shown = app.sessions().show(args.id)
    if args.json:
        print(_dumps(shown))
        return 0
    print(f"session {shown['session_id']}")
    for message in shown["messages"]:
        print(f"[{message['timestamp']}] {message['role']}: {_short(message['text'], 100)}")
        for ref in message["references"]:
            where = f" ({ref['path']})" if ref.get("path") else ""
            warning = f": {ref['warning']}" if ref.get("warning") else ""
            print(f"    {ref['label']}{where}{warning} [{ref['via']}]")
    if shown["pins"]:
        print("pinned: " + ", ".join(pin["label"] for pin in shown["pins"]))
    return 0


def cmd_session_pin(app: App, args: argparse.Namespace) -> int:
    print(app.sessions().pin(args.id, args.ref))
    return 0


# -- build-context ----------------------------------------------------------------------------


def cmd_build_context(app: App, args: argparse.Namespace) -> int:
    from lsp_memory.services.block import referenced_lines

    document = _read_text(args.file)
    app.refresh_indexes()
    for warning in app.warnings:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    options: dict[str, Any] = {
        "path": None if args.file == "-" else args.file,
        "language_id": args.language_id,
        "budget": args.budget,
        "attach": args.attach or (),
        "pin": args.pin or (),
        "query": args.query,
    }
    assembler = app.snapshot().assembler()
    if args.session:
        from lsp_memory.services.conversations.sessions import recalled

        block = recalled(assembler, app.sessions(), args.session, document, **options)
    else:
        block = assembler.build(document, **options)
    if args.referenced_only:
        lines = referenced_lines(block.markdown)
        if args.format == "json":
            print(_dumps(lines))
        else:
            sys.stdout.write("".join(line + "\n" for line in lines))
        return 0
    if args.format == "json":
        print(_dumps(block.to_json()))
    else:
        sys.stdout.write(block.markdown)
    return 0


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, not {value}")
    return value


def _hits(text: str) -> int:
    value = _positive(text)
    if value > MAX_HITS:
        raise argparse.ArgumentTypeError(f"expected at most {MAX_HITS}, not {value}")
    return value


# -- the parser -------------------------------------------------------------------------------


def _globals(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """--store/--vault/--user, accepted before or after the command."""
    default: dict[str, Any] = {"default": argparse.SUPPRESS} if suppress else {}
    parser.add_argument("--store", metavar="DIR", help="the store folder", **default)
    parser.add_argument(
        "--vault", metavar="DIR", action="append", help="a notes vault (repeatable)", **default
    )
    parser.add_argument(
        "--user", metavar="NAME", help="whose memory (default: login name)", **default
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Reference your personal knowledge base from any editor.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _globals(parser, suppress=False)
    shared = argparse.ArgumentParser(add_help=False)
    _globals(shared, suppress=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(group: Any, name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = group.add_parser(
            name, help=help_text, description=help_text, parents=[shared]
        )
        sub.set_defaults(handler=handler)
        return sub

    sub = command(commands, "import", cmd_import, "import records from a JSONL file")
    sub.add_argument("file", metavar="FILE", help="a JSONL file, or - for standard input")
    sub = command(commands, "export", cmd_export, "export your records as JSONL")
    sub.add_argument("file", metavar="FILE", nargs="?", help="where to write (default stdout)")

    claim = commands.add_parser(
        "claim", help="add, show, list, retract and restore claims", parents=[shared]
    )
    claims = claim.add_subparsers(dest="claim_command", metavar="ACTION", required=True)
    sub = command(claims, "add", cmd_claim_add, "add a claim")
    sub.add_argument("text", metavar="TEXT", help="the statement")
    sub.add_argument("--type", metavar="T", help="claim type (default: classified from TEXT)")
    sub.add_argument("--domain", metavar="D", help="context domain, e.g. work")
    sub.add_argument("--context", metavar="ID", action="append", help="a context (repeatable)")
    sub.add_argument("--tag", metavar="ID", action="append", help="a tag (repeatable)")
    sub.add_argument("--confidence", metavar="X", type=float, help="0 to 1 (default 1)")
    sub.add_argument("--pin", action="store_true", help="pin globally")
    sub.add_argument("--entity", metavar="ID", action="append", help="an entity (repeatable)")
    sub.add_argument(
        "--no-supersede", action="store_true", help="supersede no older claim of its type"
    )
    sub = command(claims, "show", cmd_claim_show, "show one claim")
    sub.add_argument("ref", metavar="REF", help="#42, @claim_42, @friendly_id or @memory:<uuid>")
    sub.add_argument("--json", action="store_true", help="print JSON")
    sub = command(claims, "list", cmd_claim_list, "list claims by number")
    sub.add_argument(
        "--status",
        action="append",
        choices=[s.value for s in ClaimStatus],
        help="only this status (repeatable)",
    )
    sub.add_argument("--limit", type=_positive, metavar="N", help="at most N claims")
    sub.add_argument("--json", action="store_true", help="print JSON")
    sub = command(claims, "retract", cmd_claim_retract, "mark a claim retracted")
    sub.add_argument("ref", metavar="REF", help="#42, @claim_42, @friendly_id or @memory:<uuid>")
    sub = command(claims, "restore", cmd_claim_restore, "make a claim active again")
    sub.add_argument("ref", metavar="REF", help="#42, @claim_42, @friendly_id or @memory:<uuid>")

    sub = command(commands, "classify", cmd_classify, "the category of each statement")
    sub.add_argument("texts", metavar="TEXT", nargs="*", help="statements, or - for stdin lines")
    sub.add_argument("--json", action="store_true", help="print JSON")

    context = commands.add_parser(
        "context", help="add contexts and show their tree", parents=[shared]
    )
    contexts = context.add_subparsers(dest="context_command", metavar="ACTION", required=True)
    sub = command(contexts, "add", cmd_context_add, "add a context")
    sub.add_argument("name", metavar="NAME")
    sub.add_argument("--parent", metavar="ID", help="the parent context's friendly id")
    sub.add_argument("--description", metavar="TEXT")
    sub.add_argument("--id", metavar="ID", help="its friendly id (generated if absent)")
    command(contexts, "tree", cmd_context_tree, "show the context tree with claim counts")

    sub = command(commands, "refs", cmd_refs, "list the references in a document")
    sub.add_argument("file", metavar="FILE", help="a document, or - for standard input")
    sub.add_argument("--json", action="store_true", help="print JSON")
    sub.add_argument("--language-id", metavar="ID", help="LSP language id (default: by name)")

    sub = command(commands, "serve", cmd_serve, "run the language server (stdio by default)")
    sub.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead (one client)")

    command(commands, "mcp", cmd_mcp, "serve your memory to agents over MCP (stdio)")

    sub = command(commands, "status", cmd_status, "what your memory holds, and where")
    sub.add_argument("--json", action="store_true", help="print JSON")

    sub = command(commands, "index", cmd_index, "(re)build the full-text and vector indexes")
    sub.add_argument("--full", action="store_true", help="rebuild from scratch")
    sub.add_argument("--text-only", action="store_true", help="leave embedding for later")

    sub = command(commands, "search", cmd_search, "search your memory and notes")
    sub.add_argument("query", metavar="QUERY")
    sub.add_argument("--kind", choices=sorted(_KINDS), default="all", help="default: all")
    sub.add_argument(
        "-k", type=_hits, default=10, metavar="N", help="how many, 1 to 1000 (default 10)"
    )
    sub.add_argument("--mode", choices=["hybrid", "bm25", "dense"], default="hybrid")
    sub.add_argument("--diverse", action="store_true", help="near-duplicates once")
    sub.add_argument("--any-status", action="store_true", help="include retracted etc.")
    sub.add_argument("--json", action="store_true", help="print JSON")

    sub = command(
        commands,
        "build-context",
        cmd_build_context,
        "the token-budgeted context block of a document's references",
    )
    sub.add_argument("file", metavar="FILE", help="a document, or - for standard input")
    sub.add_argument(
        "--budget", type=_positive, metavar="N", help="tokens (default: config budget, 1500)"
    )
    sub.add_argument("--format", choices=["markdown", "json"], default="markdown")
    sub.add_argument(
        "--attach", metavar="REF", action="append", help="attach a claim or context (repeatable)"
    )
    sub.add_argument(
        "--pin", metavar="REF", action="append", help="pin for this conversation (repeatable)"
    )
    sub.add_argument("--query", metavar="TEXT", help="retrieval query instead of the clean text")
    sub.add_argument(
        "--referenced-only",
        action="store_true",
        help="print only the [REFERENCED …] lines (to put back after distilling)",
    )
    sub.add_argument("--language-id", metavar="ID", help="LSP language id (default: by name)")
    sub.add_argument(
        "--session", metavar="ID", help="passive recall: the session's last turns and pins"
    )

    sub = command(commands, "ingest", cmd_ingest, "store conversation messages, extract claims")
    sub.add_argument("file", metavar="FILE", help="JSONL message pairs, or - for standard input")
    sub.add_argument("--json", action="store_true", help="print JSON")

    session = commands.add_parser(
        "session", help="conversation sessions and their references", parents=[shared]
    )
    sessions = session.add_subparsers(dest="session_command", metavar="ACTION", required=True)
    sub = command(sessions, "list", cmd_session_list, "your sessions, most recent first")
    sub.add_argument("--json", action="store_true", help="print JSON")
    sub = command(sessions, "show", cmd_session_show, "a session's messages and references")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("--json", action="store_true", help="print JSON")
    sub = command(sessions, "pin", cmd_session_pin, "pin a claim or note to a session")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("ref", metavar="REF", help="#42, @friendly_id or [[Note]]")

    sub = command(
        commands,
        "consolidate",
        cmd_consolidate,
        "evidence, decay, contradictions, merges and deprecation over your claims",
    )
    sub.add_argument("--dry-run", action="store_true", help="show what would change; write nothing")
    sub.add_argument("--now", metavar="ISO-8601", help="the time to consolidate as of")
    sub.add_argument("--json", action="store_true", help="print JSON")
    sub.add_argument("--undo", metavar="RUN_ID", type=_positive, help="put back what a run changed")

    sub = command(commands, "review", cmd_review, "list or decide consolidation's review items")
    sub.add_argument("decision", nargs="?", choices=["accept", "reject", "keep-both"])
    sub.add_argument("item", metavar="ID", nargs="?", type=_positive, help="the item's number")
    sub.add_argument("--json", action="store_true", help="print JSON")

    sub = command(commands, "resolve", cmd_resolve, "resolve references")
    sub.add_argument("refs", metavar="REF", nargs="*", help="@id, #N, @claim_N, @memory:<uuid>")
    sub.add_argument("--file", metavar="FILE", help="resolve every reference in a document")
    sub.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The global options given (``--store``, ``--user``, ``--vault``), as settings; paths
    absolute (``~`` expanded: an editor starts the server without a shell), so that they
    mean the same from the language server's workspace root."""
    overrides: dict[str, Any] = {}
    if getattr(args, "store", None):
        overrides["store"] = str(Path(args.store).expanduser().absolute())
    if getattr(args, "user", None):
        overrides["user"] = args.user
    if getattr(args, "vault", None):
        overrides["vaults"] = [str(Path(v).expanduser().absolute()) for v in args.vault]
    return overrides


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return the exit code."""
    # Warnings reach the user through ``app.warnings``, once: not also as bare log lines.
    logging.getLogger("lsp_memory").addHandler(logging.NullHandler())
    args = build_parser().parse_args(argv)
    config, warnings = load_config(_overrides(args))
    for warning in warnings:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    app = App(config)
    try:
        handler: Handler = args.handler
        return handler(app, args)
    except ImportFailed as failed:
        print(f"{PROG}: error: {failed}", file=sys.stderr)
        for problem in failed.problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    except UserError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`); quietly stop writing.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as error:
        if os.environ.get("LSP_MEMORY_DEBUG"):
            raise
        print(
            f"{PROG}: internal error: {type(error).__name__}: {error} "
            "(set LSP_MEMORY_DEBUG=1 for a traceback, and please report it)",
            file=sys.stderr,
        )
        return 70
    finally:
        app.close()
