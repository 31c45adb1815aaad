"""The search indexes and what the memory holds: ``index``, ``search`` and ``status``."""

from __future__ import annotations

import argparse
import sqlite3

from lsp_memory.app import App
from lsp_memory.cli.output import print_json, short, warn
from lsp_memory.cli.progress import progress
from lsp_memory.services.retrieval.search import SCOPES, SHOWN_STATUSES


def cmd_index(app: App, args: argparse.Namespace) -> int:
    try:
        with progress() as update:
            report = app.keeper.index(full=args.full, embed=not args.text_only, progress=update)
    except (OSError, ValueError, sqlite3.Error) as error:
        refused = app.cache_errors(error)
        if refused is None:
            raise
        raise refused from None
    warn(app)  # the report's warnings are the App's
    text = report.text
    what = "rebuilt" if text.full else "updated"
    print(
        f"{what} the search index: {text.upserted} written, {text.deleted} removed "
        f"in {text.seconds:.1f} s; {report.embedded} embedded, {report.vectors} vectors, "
        f"{report.pending} waiting to be embedded"
    )
    return 0


def cmd_search(app: App, args: argparse.Namespace) -> int:
    by_words = args.mode == "bm25"
    if by_words:
        app.defer_model()  # nothing is embedded: the model is never loaded
    else:
        app.load_model_ahead()  # the query's vector: loaded while the indexes are brought up
    app.refresh_indexes(embed=not by_words)
    warn(app)
    rows = app.search_records(
        args.query,
        kinds=SCOPES[args.kind],
        statuses=None if args.any_status else SHOWN_STATUSES,
        k=args.k,
        mode=args.mode,
        diverse=args.diverse,
        min_similarity=app.config.min_similarity,
        as_of=args.as_of,
    )
    if args.json:
        return print_json(rows)
    if not rows:
        print(f"no matches for {args.query!r}")
    for rank, row in enumerate(rows, start=1):
        number = f"#{row['number']} " if row.get("number") is not None else ""
        handle = number + (row["reference"] or f"episode {row['key'][:8]}")
        status = "" if row["status"] in ("active",) else f" ({row['status']})"
        print(f"{rank:>2}. [{row['kind']}] {handle}{status}  {short(row['title'], 60)}")
        print(
            f"      score {row['score']:.3f} · bm25 {row['bm25']:.2f} · "
            f"cosine {row['similarity']:.2f}"
        )
    return 0


def cmd_status(app: App, args: argparse.Namespace) -> int:
    found = app.status()
    warn(app)
    if args.json:
        return print_json(found)
    claims = found["claims"]
    statuses = ", ".join(f"{count} {name}" for name, count in claims.items() if name != "total")
    print(
        f"user {found['user']}: {claims['total']} claims" + (f" ({statuses})" if statuses else "")
    )
    print(
        f"{found['contexts']} contexts, {found['entities']} entities, {found['notes']} notes, "
        f"{found['episodes']} episodes in {found['sessions']} conversations, "
        f"{found['review_items']} open review items"
    )
    index = found["index"]
    print(f"search index: {index['embedded']} embedded, {index['pending']} waiting to be embedded")
    for name, path in found["paths"].items():
        if path:
            print(f"{name}: {', '.join(path) if isinstance(path, list) else path}")
    return 0
