"""What a document references: ``refs``, ``resolve``, ``build-context``; and ``mentions``,
the notes that mention a note without linking it."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from lsp_memory.app import App
from lsp_memory.cli.inputs import parse_file, read_text
from lsp_memory.cli.output import claim_line, error, print_json, warn
from lsp_memory.errors import UserError
from lsp_memory.services.kernel.resolver import (
    Resolution,
    parse_argument,
    reference_range,
    resolution_record,
)


def cmd_refs(_app: App, args: argparse.Namespace) -> int:
    tokens = parse_file(args.file, args.language_id)
    if args.json:
        return print_json(
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
        print(f"{resolution.ref}  → {claim_line(resolution.claims[0])}")
        return
    print(f"{resolution.ref}  → {what}: {count} claim{'s' if count != 1 else ''}")
    for claim in resolution.claims:
        print(f"    {claim_line(claim)}")


def cmd_resolve(app: App, args: argparse.Namespace) -> int:
    if bool(args.refs) == bool(args.file):
        raise UserError("resolve takes REF arguments or --file FILE, not both and not neither")
    if args.file:
        references = parse_file(args.file, None)
    else:
        references = tuple(parse_argument(ref) for ref in args.refs)
    resolutions = app.snapshot().resolver().resolve_all(references)
    if args.as_of:
        resolutions = app.records().resolved_then(resolutions, args.as_of)
    if args.json:
        print_json([resolution_record(r) for r in resolutions])
    else:
        if args.file and not resolutions:
            print(f"{args.file}: no references")
        for resolution in resolutions:
            _print_resolution(resolution)
    unresolved = [r for r in resolutions if r.error]
    if args.file or not unresolved:
        return 0
    for resolution in unresolved:
        error(f"{resolution.ref}: {resolution.error}")
    return 1


def cmd_mentions(app: App, args: argparse.Namespace) -> int:
    from pathlib import Path

    from lsp_memory.services.editor.mentions import mention_record

    mentions = app.snapshot().mentions()
    note = mentions.note_named(args.note, Path.cwd())
    found = [mention_record(other, place) for other, place in mentions.of_note(note)]
    if args.json:
        return print_json(found)
    if not found:
        print(f"no unlinked mentions of {note.title!r}")
    for record in found:
        start = record["range"]["start"]
        where = f"{record['note']}:{start['line'] + 1}:{start['character'] + 1}"
        print(f"{where}  {record['snippet']}")
    return 0


def cmd_build_context(app: App, args: argparse.Namespace) -> int:
    from lsp_memory.services.block import referenced_lines

    document = read_text(args.file)
    app.load_model_ahead()  # the semantic tier's query vector
    app.refresh_indexes()
    warn(app)
    options: dict[str, Any] = {
        "path": None if args.file == "-" else args.file,
        "language_id": args.language_id,
        "budget": args.budget,
        "attach": args.attach or (),
        "pin": args.pin or (),
        "query": args.query,
    }
    if args.as_of:
        options["as_of"] = args.as_of
    assembler = app.snapshot().assembler()
    if args.conversation:
        from lsp_memory.services.conversations.recall import recalled

        block = recalled(assembler, app.conversations(), args.conversation, document, **options)
    else:
        block = assembler.build(document, **options)
    if args.format == "json" and not args.referenced_only:
        return print_json(block.to_json())  # its warnings are in it
    warn(app, *block.warnings)  # one line each on stderr: the block goes to stdout whole
    if args.referenced_only:
        lines = referenced_lines(block.markdown)
        if args.format == "json":
            return print_json(lines)
        sys.stdout.write("".join(line + "\n" for line in lines))
        return 0
    sys.stdout.write(block.markdown)
    return 0
