"""``import`` and ``export``: the user's records as JSONL."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lsp_memory.app import App
from lsp_memory.cli.inputs import read_input, source_name
from lsp_memory.cli.progress import progress
from lsp_memory.errors import UserError


def cmd_import(app: App, args: argparse.Namespace) -> int:
    data = read_input(args.file)
    with progress() as update:
        summary = app.import_records(data, source=source_name(args.file), progress=update)
    print(f"{summary.describe()} into {app.store_file}", file=sys.stderr)
    return 0


def cmd_export(app: App, args: argparse.Namespace) -> int:
    lines = [line + "\n" for line in app.export_records()]
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
