"""``context add`` and ``context tree``."""

from __future__ import annotations

import argparse

from lsp_memory.app import App
from lsp_memory.cli.inputs import strip_at
from lsp_memory.model import ContextNode


def cmd_context_add(app: App, args: argparse.Namespace) -> int:
    context = app.records().add_context(
        args.name,
        parent=strip_at(args.parent) if args.parent else None,
        description=args.description,
        friendly_id=strip_at(args.id) if args.id else None,
    )
    where = f" under @{context.parent}" if context.parent else ""
    print(f"added context @{context.friendly_id} {context.name!r}{where}")
    return 0


def cmd_context_tree(app: App, _args: argparse.Namespace) -> int:
    roots, stranded = app.records().context_tree()

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
