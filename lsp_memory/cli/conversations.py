"""Conversations: ``ingest``, ``import-chat`` and ``conversation list|show|pin|unpin``."""

from __future__ import annotations

import argparse

from lsp_memory.app import App
from lsp_memory.cli.inputs import read_input, source_name
from lsp_memory.cli.output import print_json, short, warn
from lsp_memory.cli.progress import progress


def cmd_ingest(app: App, args: argparse.Namespace) -> int:
    from lsp_memory.services.conversations.ingest import parse_pairs

    pairs = parse_pairs(read_input(args.file), source_name(args.file))
    with progress() as update:
        results = app.ingester().ingest(pairs, progress=update)
    warn(app)
    if args.json:
        return print_json([result.to_json() for result in results])
    for result in results:
        print(result.describe())
    return 0


def cmd_import_chat(app: App, args: argparse.Namespace) -> int:
    from lsp_memory.services.conversations.chats import read_export, summary

    export = read_export(read_input(args.file), source_name(args.file), args.format)
    pairs = export.pairs()
    with progress() as update:
        results = app.ingester().ingest([pair for _, pair in pairs], progress=update)
    warn(app, *export.warnings)
    done = [
        (conversation, len(result.episodes), len(result.claims))
        for (conversation, _), result in zip(pairs, results, strict=True)
    ]
    if args.json:
        return print_json(
            {
                "format": export.format,
                "conversations": [
                    {"session_id": c.session_id, "title": c.title, "skipped": c.skipped}
                    for c in export.conversations
                ],
                "pairs": [  # as ``ingest --json`` gives them, numbered from 1 in the file
                    {
                        ("pair" if key == "line" else key): value
                        for key, value in r.to_json().items()
                    }
                    for r in results
                ],
                "warnings": export.warnings,
            }
        )
    for line in summary(export, done):
        print(line)
    return 0


def cmd_conversation_list(app: App, args: argparse.Namespace) -> int:
    found = app.conversations().summaries()
    if args.json:
        return print_json(found)
    if not found:
        print("no conversations yet: `lsp-memory ingest` stores them")
    for conversation in found:
        count = conversation["messages"]
        print(
            f"{conversation['session_id']}  {count} message{'s' * (count != 1)}  "
            f"{conversation['first']} – {conversation['last']}"
        )
    return 0


def cmd_conversation_show(app: App, args: argparse.Namespace) -> int:
    shown = app.conversations().show(args.id)
    if args.json:
        return print_json(shown)
    print(f"conversation {shown['session_id']}")
    for message in shown["messages"]:
        print(f"[{message['timestamp']}] {message['role']}: {short(message['text'], 100)}")
        for ref in message["references"]:
            where = f" ({ref['path']})" if ref.get("path") else ""
            said = ref.get("warning") or ref.get("summary")
            print(f"    {ref['label']}{where}{f': {said}' if said else ''} [{ref['via']}]")
    if shown["pins"]:
        print("pinned: " + ", ".join(pin["label"] for pin in shown["pins"]))
    return 0


def cmd_conversation_pin(app: App, args: argparse.Namespace) -> int:
    print(app.conversations().pin(args.id, args.ref))
    return 0


def cmd_conversation_unpin(app: App, args: argparse.Namespace) -> int:
    print(app.conversations().unpin(args.id, args.ref))
    return 0
