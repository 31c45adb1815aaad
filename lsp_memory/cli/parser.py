"""The command line's grammar: every command, its arguments and the function that runs it."""

from __future__ import annotations

import argparse
from typing import Any

from lsp_memory import __version__
from lsp_memory.cli.claims import (
    cmd_claim_add,
    cmd_claim_context_add,
    cmd_claim_context_remove,
    cmd_claim_history,
    cmd_claim_list,
    cmd_claim_pin,
    cmd_claim_restore,
    cmd_claim_retract,
    cmd_claim_show,
    cmd_claim_unpin,
    cmd_classify,
)
from lsp_memory.cli.contexts import cmd_context_add, cmd_context_tree
from lsp_memory.cli.conversations import (
    cmd_conversation_list,
    cmd_conversation_pin,
    cmd_conversation_show,
    cmd_conversation_unpin,
    cmd_import_chat,
    cmd_ingest,
)
from lsp_memory.cli.documents import cmd_build_context, cmd_mentions, cmd_refs, cmd_resolve
from lsp_memory.cli.interchange import cmd_export, cmd_import
from lsp_memory.cli.lifecycle import cmd_consolidate, cmd_review
from lsp_memory.cli.options import Handler, add_globals, hits, moment, positive
from lsp_memory.cli.output import PROG
from lsp_memory.cli.search import cmd_index, cmd_search, cmd_status
from lsp_memory.cli.servers import cmd_mcp, cmd_serve
from lsp_memory.cli.trust import cmd_trust
from lsp_memory.model import ClaimStatus
from lsp_memory.services.retrieval.search import SCOPES

# The descriptions too long for the line that declares their command.
BUILD_CONTEXT = "the token-budgeted context block of a document's references"
MENTIONS = "list the notes that mention a note without linking it"
CONSOLIDATE = "evidence, decay, contradictions, merges and deprecation over your claims"


AS_OF = "what the memory held then: an ISO 8601 date (its end, UTC) or date-time"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Reference your personal knowledge base from any editor.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    add_globals(parser, suppress=False)
    shared = argparse.ArgumentParser(add_help=False)
    add_globals(shared, suppress=True)
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
        "claim",
        help="add, show, list, retract, restore and pin claims, and put them in contexts",
        parents=[shared],
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
    sub.add_argument("--as-of", type=moment, metavar="DATE", help=AS_OF)
    sub = command(claims, "history", cmd_claim_history, "every recorded change of a claim")
    sub.add_argument("ref", metavar="REF", help="#42, @claim_42, @friendly_id or @memory:<uuid>")
    sub.add_argument("--json", action="store_true", help="print JSON")
    sub = command(claims, "list", cmd_claim_list, "list claims by number")
    sub.add_argument(
        "--status",
        action="append",
        choices=[s.value for s in ClaimStatus],
        help="only this status (repeatable)",
    )
    sub.add_argument("--limit", type=positive, metavar="N", help="at most N claims")
    sub.add_argument("--json", action="store_true", help="print JSON")
    sub.add_argument("--as-of", type=moment, metavar="DATE", help=AS_OF)
    sub = command(claims, "retract", cmd_claim_retract, "mark a claim retracted")
    sub.add_argument("ref", metavar="REF", help="#42, @claim_42, @friendly_id or @memory:<uuid>")
    sub = command(claims, "restore", cmd_claim_restore, "make a claim active again")
    sub.add_argument("ref", metavar="REF", help="#42, @claim_42, @friendly_id or @memory:<uuid>")
    sub = command(claims, "pin", cmd_claim_pin, "pin a claim globally (in every context block)")
    sub.add_argument("ref", metavar="REF", help="#42, @claim_42, @friendly_id or @memory:<uuid>")
    sub = command(claims, "unpin", cmd_claim_unpin, "unpin a globally pinned claim")
    sub.add_argument("ref", metavar="REF", help="#42, @claim_42, @friendly_id or @memory:<uuid>")
    links = claims.add_parser(
        "context", help="add a claim to a context or remove it from one", parents=[shared]
    )
    link_actions = links.add_subparsers(dest="link_command", metavar="ACTION", required=True)
    for name, handler, help_text in (
        ("add", cmd_claim_context_add, "add a claim to a context"),
        ("remove", cmd_claim_context_remove, "remove a claim from a context"),
    ):
        sub = command(link_actions, name, handler, help_text)
        sub.add_argument("ref", metavar="REF", help="#42, @friendly_id or @memory:<uuid>")
        sub.add_argument("context", metavar="CONTEXT", help="the context's friendly id")

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

    sub = command(commands, "mentions", cmd_mentions, MENTIONS)
    sub.add_argument("note", metavar="NOTE", help="[[Note]], a title, alias or path, or its file")
    sub.add_argument("--json", action="store_true", help="print JSON")

    sub = command(commands, "serve", cmd_serve, "run the language server (stdio by default)")
    sub.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead (one client)")

    sub = command(
        commands, "mcp", cmd_mcp, "serve your memory to agents over MCP (stdio, or --http)"
    )
    sub.add_argument(
        "--http", metavar="HOST:PORT", help="streamable HTTP at http://HOST:PORT/mcp instead"
    )
    sub.add_argument(
        "--token-file", metavar="FILE", help="the bearer token (default: $LSP_MEMORY_MCP_TOKEN)"
    )
    sub.add_argument("--no-auth", action="store_true", help="no token (loopback only)")
    sub.add_argument("--allow-remote", action="store_true", help="listen on a non-loopback address")
    sub.add_argument(
        "--allow-host", metavar="NAME", action="append", help="a Host name to accept too"
    )

    sub = command(commands, "status", cmd_status, "what your memory holds, and where")
    sub.add_argument("--json", action="store_true", help="print JSON")

    sub = command(commands, "index", cmd_index, "(re)build the full-text and vector indexes")
    sub.add_argument("--full", action="store_true", help="rebuild from scratch")
    sub.add_argument("--text-only", action="store_true", help="leave embedding for later")

    sub = command(commands, "search", cmd_search, "search your memory and notes")
    sub.add_argument("query", metavar="QUERY")
    sub.add_argument("--kind", choices=sorted(SCOPES), default="all", help="default: all")
    sub.add_argument(
        "-k", type=hits, default=10, metavar="N", help="how many, 1 to 1000 (default 10)"
    )
    sub.add_argument("--mode", choices=["hybrid", "bm25", "dense"], default="hybrid")
    sub.add_argument("--diverse", action="store_true", help="near-duplicates once")
    sub.add_argument("--any-status", action="store_true", help="include retracted etc.")
    sub.add_argument("--json", action="store_true", help="print JSON")
    sub.add_argument("--as-of", type=moment, metavar="DATE", help=AS_OF)

    sub = command(commands, "build-context", cmd_build_context, BUILD_CONTEXT)
    sub.add_argument("file", metavar="FILE", help="a document, or - for standard input")
    sub.add_argument(
        "--budget", type=positive, metavar="N", help="tokens (default: config budget, 1500)"
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
        "--conversation",
        "--session",  # the name before conversations had their own word; still works
        dest="conversation",
        metavar="ID",
        help="passive recall: the conversation's last turns and pins",
    )
    sub.add_argument("--as-of", type=moment, metavar="DATE", help=AS_OF)

    sub = command(commands, "ingest", cmd_ingest, "store conversation messages, extract claims")
    sub.add_argument("file", metavar="FILE", help="JSONL message pairs, or - for standard input")
    sub.add_argument("--json", action="store_true", help="print JSON")

    sub = command(
        commands,
        "import-chat",
        cmd_import_chat,
        "import a ChatGPT or Claude export: conversations, messages, claims",
    )
    sub.add_argument(
        "file", metavar="FILE", help="the export's conversations.json, the .zip holding it, or -"
    )
    sub.add_argument(
        "--format",
        choices=("chatgpt", "claude"),
        help="whose export it is (default: told by the file's fields)",
    )
    sub.add_argument("--json", action="store_true", help="print JSON")

    conversation = commands.add_parser(
        "conversation",
        aliases=["session"],  # the name before conversations had their own word
        help="your conversations and their references",
        parents=[shared],
    )
    actions = conversation.add_subparsers(
        dest="conversation_command", metavar="ACTION", required=True
    )
    sub = command(actions, "list", cmd_conversation_list, "your conversations, most recent first")
    sub.add_argument("--json", action="store_true", help="print JSON")
    sub = command(actions, "show", cmd_conversation_show, "a conversation's messages, references")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("--json", action="store_true", help="print JSON")
    sub = command(actions, "pin", cmd_conversation_pin, "pin a claim or note to a conversation")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("ref", metavar="REF", help="#42, @friendly_id or [[Note]]")
    sub = command(actions, "unpin", cmd_conversation_unpin, "unpin a claim or note")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("ref", metavar="REF", help="#42, @friendly_id or [[Note]]")

    sub = command(commands, "trust", cmd_trust, "let a folder's lsp-memory.toml run programs")
    sub.add_argument("folder", metavar="FOLDER", nargs="?", help="default: the current folder")

    sub = command(commands, "consolidate", cmd_consolidate, CONSOLIDATE)
    sub.add_argument("--dry-run", action="store_true", help="show what would change; write nothing")
    sub.add_argument("--now", metavar="ISO-8601", help="the time to consolidate as of")
    sub.add_argument("--json", action="store_true", help="print JSON")
    sub.add_argument(
        "--undo",
        metavar="RUN_ID",
        type=positive,
        help="put back what a run (a consolidation or a review decision) changed; refused, "
        "naming them, when later runs changed the same claims or review items",
    )
    sub.add_argument(
        "--cascade",
        action="store_true",
        help="with --undo: undo those later runs first, newest first, all in one transaction",
    )

    sub = command(commands, "review", cmd_review, "list or decide consolidation's review items")
    sub.add_argument("decision", nargs="?", choices=["accept", "reject", "keep-both"])
    sub.add_argument("item", metavar="ID", nargs="?", type=positive, help="the item's number")
    sub.add_argument("--json", action="store_true", help="print JSON")

    sub = command(commands, "resolve", cmd_resolve, "resolve references")
    sub.add_argument("refs", metavar="REF", nargs="*", help="@id, #N, @claim_N, @memory:<uuid>")
    sub.add_argument("--file", metavar="FILE", help="resolve every reference in a document")
    sub.add_argument("--json", action="store_true", help="print JSON")
    sub.add_argument("--as-of", type=moment, metavar="DATE", help=AS_OF)
    return parser
