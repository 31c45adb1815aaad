"""``textDocument/publishDiagnostics`` for the references of open documents, and their quick
fixes: unresolved references, inactive claims, broken, ambiguous and archived ``[[links]]``.
This module answers ``textDocument/codeAction`` (one handler per method), adding the
"Remember selection" actions, "Pin @x" / "Unpin @x" on a claim's reference and "Link to
[[Title]]" on an unlinked mention (``lsp/actions.py``), and the related-note suggestions
(``lsp/related.py``).

Documents are checked when opened and saved, and ``DEBOUNCE_SECONDS`` after the last change
(each change cancels the pending check, so the latest text wins); closing clears them. Checks
run in a worker thread on the text as it was when the check started; findings for a version
the editor has moved past are not published. At the same moments an open note's text goes to
the indexes (``Session.note_edited``), so unsaved edits are searched, linked and completed;
closing gives the file back.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from lsp_memory.lsp.actions import (
    CREATE_NOTE,
    LINK_KIND,
    REMEMBER_KIND,
    claim_at,
    mention_actions,
    pin_actions,
    remember_actions,
)
from lsp_memory.lsp.convert import edit_capability, open_document, workspace_edit
from lsp_memory.lsp.related import RELATED_KIND, related_actions
from lsp_memory.services.editor import checks
from lsp_memory.services.editor.checks import CreateNote, Finding, Fix, Replace

if TYPE_CHECKING:
    from lsp_memory.app import Snapshot
    from lsp_memory.lsp.server import MemoryServer
    from lsp_memory.lsp.session import Session
    from lsp_memory.model import Reference

SOURCE = "lsp-memory"
DEBOUNCE_SECONDS = 0.3
_READY_POLL_SECONDS = 0.05

_SEVERITIES = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


class _Columns:
    """Client positions of string offsets of one document, for tokens visited in document
    order: each line's prefix is measured once, not once per token (long non-ASCII lines)."""

    def __init__(self, doc: TextDocument) -> None:
        self._text = doc.source
        self._units = doc.position_codec.client_num_units
        self._line = -1
        self._offset = 0
        self._column = 0

    def _count(self, piece: str) -> int:
        return len(piece) if piece.isascii() else int(self._units(piece))

    def range(self, reference: Reference, start: int, end: int) -> types.Range:
        """The client range of ``text[start:end]``, inside ``reference`` (one line)."""
        line, token = reference.span.start.line, reference.offset
        if line != self._line or token < self._offset:
            # LSP lines end at "\n", "\r" or "\r\n" only, as in refs (not str.splitlines).
            text = self._text
            self._offset = max(text.rfind("\n", 0, token), text.rfind("\r", 0, token)) + 1
            self._line, self._column = line, 0
        self._column += self._count(self._text[self._offset : token])
        self._offset = token
        base = self._column
        return types.Range(
            start=types.Position(line, base + self._count(self._text[token:start])),
            end=types.Position(line, base + self._count(self._text[token:end])),
        )


def _diagnostic(finding: Finding, columns: _Columns, tags: bool) -> types.Diagnostic:
    reference = finding.reference
    return types.Diagnostic(
        range=columns.range(reference, reference.offset, reference.end),
        severity=_SEVERITIES[finding.severity],
        code=finding.kind,
        source=SOURCE,
        message=finding.message,
        tags=[types.DiagnosticTag.Deprecated] if tags and finding.deprecated else None,
    )


def _supports_deprecated(ls: MemoryServer) -> bool:
    text = ls.client_capabilities.text_document
    publish = text.publish_diagnostics if text is not None else None
    support = publish.tag_support if publish is not None else None
    return support is not None and types.DiagnosticTag.Deprecated in support.value_set


async def _check(
    ls: MemoryServer, session: Session, doc: TextDocument
) -> tuple[list[Finding], list[str]]:
    """The findings of an open document as it is now, and the warnings of the note it is
    (broken front matter, not UTF-8), checked in a worker thread."""
    text, language_id, uri = doc.source, doc.language_id, doc.uri
    path = to_fs_path(uri)
    loop = asyncio.get_running_loop()

    def failed(reference: Reference, error: Exception) -> None:
        message = f"cannot check {reference.text} in {uri}: {type(error).__name__}: {error}"
        loop.call_soon_threadsafe(_log, ls, message)

    def check(reads: Snapshot) -> tuple[list[Finding], list[str]]:
        findings = checks.check(
            text,
            reads.resolver(),
            language_id=language_id,
            path=uri,
            severities=reads.config.severities,
            on_error=failed,
        )
        return findings, list(checks.note_warnings(Path(path), reads.vaults)) if path else []

    return await session.run(check)


def _note_problems(warnings: list[str]) -> list[types.Diagnostic]:
    """A note that could not be read as written: one warning at its top. The note is still
    indexed."""
    start = types.Position(line=0, character=0)
    return [
        types.Diagnostic(
            range=types.Range(start=start, end=start),
            message=message,
            severity=types.DiagnosticSeverity.Warning,
            source=SOURCE,
            code="note-unreadable",
        )
        for message in warnings
    ]


def _edited(ls: MemoryServer, session: Session, uri: str) -> None:
    """Hand an open document's text to the indexes: a note in a vault is searched, linked
    and completed as the buffer has it, saved or not."""
    doc = open_document(ls.documents, uri)
    path = to_fs_path(uri) if uri.startswith("file:") else None
    if doc is not None and path is not None:
        session.note_edited(Path(path), doc.source)


def _log(ls: MemoryServer, message: str) -> None:
    ls.window_log_message(
        types.LogMessageParams(type=types.MessageType.Error, message=f"lsp-memory: {message}")
    )


def _edit(
    ls: MemoryServer, doc: TextDocument, fix: Fix, columns: _Columns, reference: Reference
) -> types.WorkspaceEdit | None:
    """The workspace edit of ``fix``; None for a new note when the client cannot create
    files."""
    capability = edit_capability(ls.client_capabilities)
    if isinstance(fix, Replace):
        edit = types.TextEdit(
            range=columns.range(reference, fix.start, fix.end), new_text=fix.new_text
        )
        return workspace_edit(capability, {doc.uri: [edit]}, {doc.uri: doc.version})
    return _create(fix, capability)


def _create(
    fix: CreateNote, capability: types.WorkspaceEditClientCapabilities
) -> types.WorkspaceEdit | None:
    if types.ResourceOperationKind.Create not in (capability.resource_operations or ()):
        return None
    uri = fix.path.as_uri()
    start = types.Position(line=0, character=0)
    heading = types.TextEdit(range=types.Range(start, start), new_text=fix.content)
    # Neither overwrite nor ignore: an existing file makes the client refuse the edit rather
    # than prepend a heading to it.
    create = types.CreateFile(uri=uri, options=types.CreateFileOptions(overwrite=False))
    return workspace_edit(capability, {uri: [heading]}, before=[create])


def _overlaps(a: types.Range, b: types.Range) -> bool:
    """Whether two ranges share a position (touching counts: a cursor at a token's end)."""
    return _key(a.start) <= _key(b.end) and _key(b.start) <= _key(a.end)


def _key(position: types.Position) -> tuple[int, int]:
    return position.line, position.character


def _sent(ours: types.Diagnostic, context: types.CodeActionContext) -> types.Diagnostic | None:
    """The client's copy of ``ours`` among the diagnostics it sent, if any."""
    for diagnostic in context.diagnostics:
        if (
            diagnostic.source == SOURCE
            and diagnostic.code == ours.code
            and diagnostic.range == ours.range
        ):
            return diagnostic
    return None


def _actions(
    ls: MemoryServer,
    doc: TextDocument,
    findings: list[Finding],
    params: types.CodeActionParams,
    preferred: bool,
) -> list[types.CodeAction]:
    """The quick fixes of the findings that meet the requested range, each linked to its
    diagnostic (the client's copy when it sent one)."""
    columns, tags = _Columns(doc), _supports_deprecated(ls)
    actions: list[types.CodeAction] = []
    for finding in findings:
        if not finding.fixes:
            continue
        ours = _diagnostic(finding, columns, tags)
        if not _overlaps(ours.range, params.range):
            continue
        diagnostic = _sent(ours, params.context) or ours
        for fix in finding.fixes:
            edit = _edit(ls, doc, fix, columns, finding.reference)
            command = None
            if edit is None and isinstance(fix, CreateNote):  # no file creation in edits
                arguments = [fix.path.as_uri(), fix.content]
                command = types.Command(title=fix.title, command=CREATE_NOTE, arguments=arguments)
            if edit is None and command is None:
                continue
            actions.append(
                types.CodeAction(
                    title=fix.title,
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic],
                    edit=edit,
                    command=command,
                    is_preferred=True
                    if preferred and isinstance(fix, Replace) and fix.preferred
                    else None,
                )
            )
    return actions


def register(server: MemoryServer) -> None:
    pending: dict[str, asyncio.Task[None]] = {}
    checked: dict[str, tuple[int | None, list[Finding]]] = {}  # uri → version, findings
    # uri → version, what was published: checked again for a change elsewhere with nothing
    # new for it, nothing is sent (an editor redraws its problems list on each publish, and
    # the redraw loses the list's focus and selection).
    published: dict[str, tuple[int | None, list[types.Diagnostic]]] = {}

    async def publish(ls: MemoryServer, session: Session, uri: str, again: bool) -> None:
        doc = open_document(ls.documents, uri)
        if doc is None:
            return
        version = doc.version
        try:
            findings, warnings = await _check(ls, session, doc)
        except Exception as error:  # e.g. the store cannot be opened: no diagnostics
            _log(ls, f"cannot check {uri}: {type(error).__name__}: {error}")
            return
        doc = open_document(ls.documents, uri)
        if doc is None or doc.version != version:
            return  # closed or changed meanwhile: its own check follows
        checked[uri] = (doc.version, findings)
        columns, tags = _Columns(doc), _supports_deprecated(ls)
        diagnostics = [_diagnostic(f, columns, tags) for f in findings]
        diagnostics += _note_problems(warnings)
        if again and published.get(uri) == (doc.version, diagnostics):
            return
        published[uri] = (doc.version, diagnostics)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=doc.version)
        )

    async def later(ls: MemoryServer, uri: str, delay: float, again: bool) -> None:
        try:
            await asyncio.sleep(delay)
            session = ls.session
            # Before the first index sync ends the vaults are not scanned yet (every link
            # would look broken), and the scan is the only writer of the vaults. Read again
            # each time: new settings replace the session, and the old one never gets ready.
            while session is not None and not session.ready.is_set():
                await asyncio.sleep(_READY_POLL_SECONDS)
                session = ls.session
            if session is not None:
                _edited(ls, session, uri)
                await publish(ls, session, uri, again)
        finally:
            if pending.get(uri) is asyncio.current_task():
                del pending[uri]

    def schedule(ls: MemoryServer, uri: str, delay: float, *, again: bool = False) -> None:
        previous = pending.pop(uri, None)
        if previous is not None:
            previous.cancel()
        pending[uri] = asyncio.get_running_loop().create_task(later(ls, uri, delay, again))

    def recheck(ls: MemoryServer) -> None:
        """Notes or records changed (a note created by a quick fix, a claim added, another
        process's write): check every open document again, but one whose own check is
        already on its way."""
        for uri in list(ls.workspace.text_documents):
            if uri not in pending:
                schedule(ls, uri, 0, again=True)

    server.on_memory_changed.append(recheck)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: MemoryServer, params: types.DidOpenTextDocumentParams) -> None:
        schedule(ls, params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: MemoryServer, params: types.DidChangeTextDocumentParams) -> None:
        schedule(ls, params.text_document.uri, DEBOUNCE_SECONDS)
        if ls.session is not None:
            ls.session.query_expected()

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: MemoryServer, params: types.DidSaveTextDocumentParams) -> None:
        schedule(ls, params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: MemoryServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        previous = pending.pop(uri, None)
        if previous is not None:
            previous.cancel()
        checked.pop(uri, None)
        published.pop(uri, None)
        path = to_fs_path(uri)
        if ls.session is not None and path is not None:
            ls.session.note_edited(Path(path), None)  # the file is the truth again
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[
                types.CodeActionKind.QuickFix,
                REMEMBER_KIND,
                RELATED_KIND,
                LINK_KIND,
            ]
        ),
    )
    async def code_action(
        ls: MemoryServer, params: types.CodeActionParams
    ) -> list[types.CodeAction | types.Command] | None:
        session = ls.session
        doc = open_document(ls.documents, params.text_document.uri)
        if session is None or doc is None:
            return None
        text = ls.client_capabilities.text_document
        capability = text.code_action if text is not None else None
        # Without literal support a client takes only Commands: no quick fixes (they are
        # edits), but "Remember selection" runs a command.
        literal = capability is not None and capability.code_action_literal_support is not None
        found: list[types.CodeAction | types.Command] = []
        only = params.context.only
        if (
            capability is not None
            and literal
            and (not only or types.CodeActionKind.QuickFix in only)
        ):
            cached = checked.get(doc.uri)
            if cached is not None and cached[0] == doc.version:
                findings = cached[1]
            elif session.ready.is_set():
                version = doc.version
                findings, _ = await _check(ls, session, doc)
                if doc.version != version:
                    findings = []  # changed meanwhile: the ranges would be off
            else:
                findings = []
            preferred = bool(capability.is_preferred_support)
            found += _actions(ls, doc, findings, params, preferred)
        found += remember_actions(doc, params, literal)
        source, language_id = doc.source, doc.language_id
        offset = doc.offset_at_position(params.range.start)
        path = to_fs_path(doc.uri)
        claim = await session.run(lambda reads: claim_at(reads, source, offset, language_id, path))
        found += pin_actions(claim, params, literal)
        found += await related_actions(session, ls.client_capabilities, doc, params, literal)
        found += await mention_actions(session, doc, params, ls.client_capabilities, literal)
        return found or None
