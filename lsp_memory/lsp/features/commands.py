"""``workspace/executeCommand``: ``lspMemory.search``, ``lspMemory.addClaim``,
``lspMemory.rememberSelection`` (what the "Remember selection" code actions run),
``lspMemory.reindex``, ``lspMemory.buildContext``, ``lspMemory.review``,
``lspMemory.status``, ``lspMemory.createNote`` (the "Create note" quick fix of a client
that cannot create files through an edit), and ``lspMemory.pinClaim`` / ``lspMemory.unpinClaim``
(what "Pin @x" / "Unpin @x" run), and ``lspMemory.addBlockId`` (what a ``[[Note#^``
completion of a block without an id runs, to write the id into its note).

``buildContext`` returns the context block's JSON, built by the same service as
``lsp-memory build-context``. Every command but ``reindex`` does its work in a worker
thread (``lsp/dispatch.py``): a write may classify, embed or wait for another writer.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from lsp_memory.errors import UserError
from lsp_memory.lsp.actions import ADD_BLOCK_ID, CREATE_NOTE, PIN, REMEMBER, UNPIN, selected_text
from lsp_memory.lsp.convert import (
    Places,
    as_document,
    edit_capability,
    open_document,
    open_texts,
    workspace_edit,
)
from lsp_memory.model import Claim
from lsp_memory.services.editor.checks import create_note_file
from lsp_memory.services.editor.completion import block_id_write, block_id_write_file
from lsp_memory.services.editor.references import Document
from lsp_memory.services.kernel.asof import as_of_moment
from lsp_memory.services.kernel.claim_form import claim_record
from lsp_memory.services.kernel.resolver import claim_named
from lsp_memory.services.memory.review import VERBS
from lsp_memory.services.retrieval.search import REFERABLE, SCOPES, SHOWN_STATUSES

if TYPE_CHECKING:
    from lsp_memory.app import Snapshot
    from lsp_memory.lsp.server import MemoryServer
    from lsp_memory.lsp.session import Session


# Command handlers are annotated with pygls's own class: pygls reads their annotations at run
# time to convert arguments, and MemoryServer cannot be imported here (server imports us).
def _session(ls: LanguageServer) -> Session:
    session = cast("MemoryServer", ls).session
    if session is None:
        raise UserError("lsp-memory is not initialized yet")
    return session


def _documents(ls: LanguageServer) -> Mapping[str, TextDocument]:
    return cast("MemoryServer", ls).documents


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{name} must be a non-empty string")
    return value


def _as_of(options: Any) -> str | None:
    """The ``asOf`` of a command's options object (None: now), as a stored moment."""
    if options is None:
        return None
    if not isinstance(options, dict):
        raise UserError('options must be an object, e.g. {"asOf": "2026-03-01"}')
    value = options.get("asOf")
    if value is None:
        return None
    if not isinstance(value, str):
        raise UserError("asOf must be an ISO 8601 date or date-time string")
    return as_of_moment(value)


def _plain_errors(function: Callable[..., Any]) -> Callable[..., Any]:
    """A command whose UserError (bad arguments, nothing open, a store problem) is answered
    as ``InvalidParams`` with its one line, not as an internal error with a traceback."""
    if inspect.iscoroutinefunction(function):

        @functools.wraps(function)
        async def run_async(*args: Any) -> Any:
            try:
                return await function(*args)
            except UserError as error:
                raise JsonRpcInvalidParams(str(error)) from None

        return run_async

    @functools.wraps(function)
    def run(*args: Any) -> Any:
        try:
            return function(*args)
        except UserError as error:
            raise JsonRpcInvalidParams(str(error)) from None

    return run


def register(server: MemoryServer) -> None:
    def command(name: str) -> Callable[[Callable[..., Any]], Any]:
        return lambda function: server.command(name)(_plain_errors(function))

    @command("lspMemory.search")
    async def search(ls: LanguageServer, *args: Any) -> list[dict[str, Any]]:
        """Arguments: query, then optionally kind (claim, note, episode, all), k and options
        (``{"asOf": DATE}``: what the memory held then). Each hit as ``lsp-memory search
        --json`` gives it."""
        session = _session(ls)
        query = _text(args[0] if args else None, "query")
        kind = args[1] if len(args) > 1 else "all"
        if kind not in SCOPES:
            raise UserError(f"kind must be one of {', '.join(SCOPES)}, not {kind!r}")
        k = args[2] if len(args) > 2 else 10
        if isinstance(k, bool) or not isinstance(k, int) or not 0 < k <= 100:
            raise UserError("k must be a whole number from 1 to 100")
        as_of = _as_of(args[3] if len(args) > 3 else None)
        # Each hit is inserted as a reference: what has none (an episode) is not searched.
        kinds = [each for each in SCOPES[kind] if each in REFERABLE] or SCOPES[kind]
        return await session.run(
            lambda reads: reads.search_records(
                query,
                kinds=kinds,
                statuses=SHOWN_STATUSES,
                k=k,
                min_similarity=reads.config.min_similarity,
                as_of=as_of,
            )
        )

    @command("lspMemory.addClaim")
    async def add_claim(ls: LanguageServer, *args: Any) -> dict[str, Any]:
        """Arguments: statement, then optionally claim type."""
        session = _session(ls)
        statement = _text(args[0] if args else None, "statement")
        claim_type = _text(args[1], "claim type") if len(args) > 1 and args[1] else None
        claim, supersedes = await session.run(
            lambda reads: _added(reads, statement, claim_type=claim_type)
        )
        session.poke()
        return {
            **claim_record(claim),
            "reference": f"@{claim.friendly_id}",
            "supersedes": supersedes,
        }

    @command(REMEMBER)
    async def remember(ls: LanguageServer, *args: Any) -> dict[str, Any]:
        """Arguments: an open document's URI, a range in it, and whether to replace the
        range with the new claim's reference (through ``workspace/applyEdit``)."""
        session = _session(ls)
        uri = _text(args[0] if args else None, "document URI")
        doc = open_document(_documents(ls), uri)
        if doc is None:
            raise UserError(f"{uri} is not open")
        where = _range(args[1] if len(args) > 1 else None)
        statement = selected_text(doc, where)
        if not statement:
            raise UserError("the selection is empty: select the text to remember")
        claim, supersedes = await session.run(lambda reads: _added(reads, statement))
        session.poke()
        reference = f"@{claim.friendly_id}"
        replaced = False
        if len(args) > 2 and args[2] is True:
            capability = edit_capability(ls.client_capabilities)
            replacement = types.TextEdit(range=where, new_text=reference)
            edit = workspace_edit(capability, {doc.uri: [replacement]}, {doc.uri: doc.version})
            label = f"Replace the selection with {reference}"
            result = await ls.workspace_apply_edit_async(
                types.ApplyWorkspaceEditParams(edit=edit, label=label)
            )
            replaced = result.applied
        return {
            **claim_record(claim),
            "reference": reference,
            "replaced": replaced,
            "supersedes": supersedes,
        }

    async def pinned(ls: LanguageServer, args: tuple[Any, ...], pin: bool) -> dict[str, Any]:
        """Argument: the claim's reference. ``{"reference", "pinned", "message"}``."""
        session = _session(ls)
        ref = _text(args[0] if args else None, "reference")

        def change(reads: Snapshot) -> tuple[Claim, str]:
            claim = claim_named(reads.resolver(), ref)
            return claim, reads.records().pin(claim, pinned=pin)

        claim, message = await session.run(change)
        session.poke()
        return {"reference": f"@{claim.friendly_id}", "pinned": pin, "message": message}

    @command(PIN)
    async def pin_claim(ls: LanguageServer, *args: Any) -> dict[str, Any]:
        return await pinned(ls, args, True)

    @command(UNPIN)
    async def unpin_claim(ls: LanguageServer, *args: Any) -> dict[str, Any]:
        return await pinned(ls, args, False)

    @command("lspMemory.reindex")
    def reindex(ls: LanguageServer, *_args: Any) -> dict[str, str]:
        _session(ls).poke(files=True)
        return {"status": "started"}

    @command("lspMemory.buildContext")
    async def build_context(ls: LanguageServer, *args: Any) -> dict[str, Any]:
        """Arguments: a document URI (the document must be open), then optionally
        ``{"budget", "attach", "pin", "query", "conversation", "asOf"}`` as ``build-context``
        takes them (``conversation``, or ``session`` as it was called before: passive recall
        from that conversation; ``asOf``: the block as of that date). The context block's
        JSON (docs/reference.md, The context block), the same as ``build-context --format
        json``."""
        session = _session(ls)
        uri = _text(args[0] if args else None, "document URI")
        options = args[1] if len(args) > 1 and args[1] is not None else {}
        if not isinstance(options, dict):
            raise UserError(
                "options must be an object: {budget, attach, pin, query, conversation, asOf}"
            )
        doc = open_document(_documents(ls), uri)
        if doc is None:
            raise UserError(f"{uri} is not open")
        document, buffers = as_document(doc), open_texts(_documents(ls))
        chosen = _build_options(options)
        return await session.run(
            lambda reads: session.build_context(reads, document, buffers, **chosen).to_json()
        )

    @command("lspMemory.status")
    async def status(ls: LanguageServer, *_args: Any) -> dict[str, Any]:
        """What this memory holds and where, as ``lsp-memory status --json`` gives it."""
        session = _session(ls)
        return await session.run(lambda _reads: session.status())

    @command(CREATE_NOTE)
    async def create_note(ls: LanguageServer, *args: Any) -> dict[str, Any]:
        """Arguments: a new note's file URI and its text. The "Create note" quick fix of a
        client that cannot create files through an edit: only a Markdown file inside a vault
        that does not exist yet."""
        session = _session(ls)
        uri = _text(args[0] if args else None, "note URI")
        content = args[1] if len(args) > 1 and isinstance(args[1], str) else ""
        path = Path(to_fs_path(uri) or "") if uri.startswith("file:") else None
        if path is None:
            raise UserError(f"{uri}: a note is a .md or .markdown file")
        vaults = session.config.vaults
        resolved = await session.run(lambda _reads: create_note_file(path, content, vaults))
        session.poke(files=True)
        window = ls.client_capabilities.window
        shown = window.show_document if window is not None else None
        if shown is not None and shown.support:  # open it, as the edit's CreateFile would
            opened = types.ShowDocumentParams(uri=resolved.as_uri(), take_focus=True)
            cast("MemoryServer", ls).ask(ls.window_show_document_async(opened), "showDocument")
        return {"path": str(resolved), "uri": resolved.as_uri(), "created": True}

    @command(ADD_BLOCK_ID)
    async def add_block_id(ls: LanguageServer, *args: Any) -> dict[str, Any]:
        """Arguments: a note's URI, the first line (0-based) of one of its blocks and a new
        id. Asks the client to append `` ^id`` to that block (in the note's open buffer,
        else in its file), what a ``[[Note#^`` completion item runs for a block of another
        note that has no id yet. ``{"uri", "id", "applied"}``."""
        session = _session(ls)
        uri = _text(args[0] if args else None, "note URI")
        first = args[1] if len(args) > 1 else None
        if isinstance(first, bool) or not isinstance(first, int) or not 0 <= first < 2**31:
            raise UserError("the second argument must be the block's first line (0-based)")
        block_id = _text(args[2] if len(args) > 2 else None, "block id")
        name = to_fs_path(uri) if uri.startswith("file:") else None
        if name is None:
            raise UserError(f"{uri}: a note is a file")
        doc = open_document(_documents(ls), uri)
        if doc is not None:
            write = block_id_write(Path(name), doc.source, first, block_id)
            text, version = doc.source, doc.version
        else:
            text, write = await session.run(
                lambda _reads: block_id_write_file(Path(name), first, block_id)
            )
            version = None
        at = Places(ls.workspace.position_codec).position(
            Document(uri, Path(name), text), write.offset
        )
        insert = types.TextEdit(range=types.Range(start=at, end=at), new_text=write.text)
        edit = workspace_edit(
            edit_capability(ls.client_capabilities), {uri: [insert]}, {uri: version}
        )
        result = await ls.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(edit=edit, label=f"Add block id ^{block_id}")
        )
        return {"uri": uri, "id": block_id, "applied": result.applied}

    @command("lspMemory.review")
    async def review(ls: LanguageServer, *args: Any) -> Any:
        """No arguments: the open review items, as ``lsp-memory review --json`` gives them.
        Arguments ``decision, id`` (accept, reject or keep-both, and an item's number):
        decide it, answering ``{"item", "run_id", "message"}``."""
        session = _session(ls)
        if not args:
            return await session.run(lambda reads: reads.reviewer().items())
        verb = args[0]
        number = args[1] if len(args) > 1 else None
        if verb not in VERBS:
            raise UserError(f"decision must be one of {', '.join(VERBS)}, not {verb!r}")
        if isinstance(number, bool) or not isinstance(number, int):
            raise UserError("the second argument must be the item's number")
        outcome = await session.run(lambda reads: reads.reviewer().decide(number, verb))
        session.poke()
        return {"item": outcome.item, "run_id": outcome.run_id, "message": outcome.message}


def _added(
    reads: Snapshot, statement: str, claim_type: str | None = None
) -> tuple[Claim, list[str]]:
    """A new claim, written in a worker (it may classify, embed, or wait for another
    writer), and the references of the claims it supersedes."""
    records = reads.records()
    claim = records.add_claim(statement, claim_type=claim_type)
    return claim, [f"@{old.friendly_id}" for old in records.last_superseded]


def _range(value: Any) -> types.Range:
    """A range argument as JSON gives it: ``{"start": {"line", "character"}, "end": …}``."""
    try:
        points = [value[end] for end in ("start", "end")]
        lines = [point["line"] for point in points]
        columns = [point["character"] for point in points]
        numbers = [*lines, *columns]
        # LSP positions are uintegers: 0 to 2**31 - 1.
        if not all(
            isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**31 for n in numbers
        ):
            raise TypeError
    except (TypeError, KeyError, IndexError):
        raise UserError(
            "range must be {start: {line, character}, end: {line, character}}"
        ) from None
    return types.Range(
        start=types.Position(line=lines[0], character=columns[0]),
        end=types.Position(line=lines[1], character=columns[1]),
    )


def _build_options(options: dict[str, Any]) -> dict[str, Any]:
    """``build-context``'s options from a command's JSON object, checked."""
    found: dict[str, Any] = {}
    for key, value in options.items():
        if key == "budget":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError("budget must be a whole number of tokens, at least 1")
            found["budget"] = value
        elif key in ("attach", "pin"):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise UserError(f"{key} must be a list of references")
            found[key] = tuple(value)
        elif key == "query":
            found["query"] = _text(value, "query")
        elif key in ("conversation", "session"):  # its name before conversations had their own
            found["conversation"] = _text(value, key)
        elif key == "asOf":
            found["as_of"] = _as_of(options)
        else:
            raise UserError(
                f"unknown option {key!r} (budget, attach, pin, query, conversation, asOf)"
            )
    return found
