"""``textDocument/prepareRename`` and ``textDocument/rename``: a note's title, or a claim's,
context's, entity's or tag's friendly id, with every reference to it in the vaults' notes
and the open documents (see :mod:`lsp_memory.services.editor.rename` for what each rename does).

A friendly id is renamed in the store when the server answers the rename request — LSP
gives no "applied" callback to wait for — and the indexing thread is poked to re-index.
A note's file is renamed by the client, as a ``RenameFile`` operation after the text
edits, only when it declares ``workspace.workspaceEdit.documentChanges`` and the ``rename``
resource operation; otherwise the file keeps its name. The rename is planned (and the store
renamed) in a worker thread, on the documents as they were when asked.

Errors: a reference that cannot be renamed (``#N``, ``@claim_N``, a domain, an unresolved
reference) and a store that is locked or read-only answer ``RequestFailed`` with one line;
an unacceptable new name answers ``InvalidParams``. Nothing is changed then. Plain text and
unopened documents answer null.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from lsp_memory.errors import StoreError
from lsp_memory.lsp.convert import (
    Places,
    as_document,
    as_documents,
    cursor_at,
    edit_capability,
    plan_edit,
)
from lsp_memory.services.editor.rename import BadName, CannotRename

if TYPE_CHECKING:
    from lsp_memory.app import Snapshot
    from lsp_memory.lsp.server import MemoryServer


def _failed(error: Exception) -> JsonRpcException:
    return JsonRpcException(message=str(error), code=types.LSPErrorCodes.RequestFailed)


def register(server: MemoryServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_PREPARE_RENAME)
    def prepare_rename(
        ls: MemoryServer, params: types.PrepareRenameParams
    ) -> types.PrepareRenamePlaceholder | None:
        session = ls.session
        at = cursor_at(ls.documents, params.text_document.uri, params.position)
        if session is None or at is None:
            return None
        try:
            found = session.reads().renamer().prepare(as_document(at.doc), at.offset)
        except CannotRename as error:
            raise _failed(error) from None
        if found is None:
            return None
        return types.PrepareRenamePlaceholder(
            range=Places(ls.workspace.position_codec).range(found.place),
            placeholder=found.placeholder,
        )

    @server.feature(types.TEXT_DOCUMENT_RENAME)
    async def rename(ls: MemoryServer, params: types.RenameParams) -> types.WorkspaceEdit | None:
        session = ls.session
        documents = ls.documents
        at = cursor_at(documents, params.text_document.uri, params.position)
        if session is None or at is None:
            return None
        capability = edit_capability(ls.client_capabilities)
        moves = types.ResourceOperationKind.Rename in (capability.resource_operations or ())
        document, offset, opened = as_document(at.doc), at.offset, as_documents(documents)
        versions = {uri: doc.version for uri, doc in documents.items()}
        places = Places(ls.workspace.position_codec)

        def plan(reads: Snapshot) -> types.WorkspaceEdit | None:
            try:
                found = reads.renamer().rename(
                    document,
                    offset,
                    params.new_name,
                    opened,
                    move_files=bool(capability.document_changes) and moves,
                )
            except BadName as error:
                raise JsonRpcInvalidParams(message=str(error)) from None
            except (CannotRename, StoreError) as error:
                raise _failed(error) from None
            if found is None:
                return None
            if found.store_changed:
                session.poke()
            return plan_edit(found, places, capability, versions)

        return await session.run(plan)
