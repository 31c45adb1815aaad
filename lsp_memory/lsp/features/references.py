"""``textDocument/references``: every place in the vaults' notes and the open documents that
names the same claim, context, entity, tag, domain or note as the reference under the
cursor, in any of its forms (``@id``, ``#N``, ``@claim_N``; ``[[Title]]``, ``[[alias]]``,
``[[path]]``, ``[[file#Heading|label]]``).

Off any reference, in a note of a vault, the cursor stands for the note itself: its
backlinks. ``includeDeclaration`` adds a note's title (its front-matter ``title``, its
title heading, or the top of its file when the file name is the title); a record is
declared in the store, not in a document, so it adds nothing for records. Requests on an
unopened document, on plain text elsewhere or on a reference that does not resolve answer
null. The search runs in a worker thread, on the documents as they were when asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from lsp_memory.lsp.convert import Places, as_document, as_documents, cursor_at

if TYPE_CHECKING:
    from lsp_memory.app import Snapshot
    from lsp_memory.lsp.server import MemoryServer


def register(server: MemoryServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    async def references(
        ls: MemoryServer, params: types.ReferenceParams
    ) -> list[types.Location] | None:
        session = ls.session
        documents = ls.documents
        at = cursor_at(documents, params.text_document.uri, params.position)
        if session is None or at is None:
            return None
        document, offset, opened = as_document(at.doc), at.offset, as_documents(documents)
        declare = bool(params.context.include_declaration)
        places = Places(ls.workspace.position_codec)

        def find(reads: Snapshot) -> list[types.Location] | None:
            finder = reads.references()
            found = finder.target_at(document, offset)
            if found is None:
                return None
            target, _ = found
            where = finder.find(target, opened)
            if declare:
                declaration = finder.declaration(target, opened)
                if declaration is not None:
                    where.insert(0, declaration)
            return [places.location(place) for place in where]

        return await session.run(find)
