"""``trust``: let a folder's ``lsp-memory.toml`` run programs."""

from __future__ import annotations

import argparse
from pathlib import Path

from lsp_memory.app import App
from lsp_memory.config import COMMAND_SETTINGS, trust
from lsp_memory.errors import UserError


def cmd_trust(_app: App, args: argparse.Namespace) -> int:
    folder = Path(args.folder or ".")
    if not folder.is_dir():
        raise UserError(f"{folder} is not a folder")
    trusted = trust(folder)
    print(
        f"trusted: {trusted} (its lsp-memory.toml, and those of the folders inside it, may "
        f"now set {', '.join(COMMAND_SETTINGS)})"
    )
    return 0
