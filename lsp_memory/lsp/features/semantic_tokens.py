"""``textDocument/semanticTokens/full`` and ``/range``: every reference coloured by what it
names and struck through when it names a claim no longer current
(``services.editor.semantic``; docs/reference.md, Semantic highlighting).

Each kind is a standard LSP token type, so themes colour it with no setting: a claim is a
``variable``, a context a ``namespace``, an entity a ``class``, a tag an ``enumMember``, a
domain a ``type``, a ``[[note]]`` link a ``string`` and its ``#Heading`` / ``#^block``
anchor a ``property``. Modifiers: ``deprecated`` (standard: clients strike it through) and
``unresolved`` (our own, declared in the legend). Runs in a worker: a long document may
hold hundreds of references to resolve the first time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from lsp_memory.lsp.convert import LineUnits, open_document
from lsp_memory.services.editor import semantic

if TYPE_CHECKING:
    from lsp_memory.app import Snapshot
    from lsp_memory.lsp.server import MemoryServer

TOKEN_TYPES = {
    semantic.CLAIM: types.SemanticTokenTypes.Variable,
    semantic.CONTEXT: types.SemanticTokenTypes.Namespace,
    semantic.ENTITY: types.SemanticTokenTypes.Class,
    semantic.TAG: types.SemanticTokenTypes.EnumMember,
    semantic.DOMAIN: types.SemanticTokenTypes.Type,
    semantic.NOTE: types.SemanticTokenTypes.String,
    semantic.ANCHOR: types.SemanticTokenTypes.Property,
}
LEGEND = types.SemanticTokensLegend(
    token_types=[TOKEN_TYPES[kind].value for kind in semantic.KINDS],
    token_modifiers=list(semantic.MODIFIERS),
)
_INDEX = {kind: index for index, kind in enumerate(semantic.KINDS)}


def encoded(found: list[semantic.Token], units: LineUnits) -> list[int]:
    """The tokens as LSP's relative integers: line and start deltas, length, type, modifiers."""
    data: list[int] = []
    last_line = last_column = 0
    for token in found:
        column, length = units.columns(token.line, token.start, token.end)
        if length <= 0:
            continue
        delta = token.line - last_line
        data += [
            delta,
            column - last_column if delta == 0 else column,
            length,
            _INDEX[token.kind],
            token.modifiers,
        ]
        last_line, last_column = token.line, column
    return data


def refresh(ls: MemoryServer) -> None:
    """The memory changed (a claim's status, a note's headings may have): ask the client
    for the tokens again, where it takes that request."""
    workspace = ls.client_capabilities.workspace
    tokens = workspace.semantic_tokens if workspace is not None else None
    if tokens is not None and tokens.refresh_support:
        ls.ask(ls.workspace_semantic_tokens_refresh_async(None), "workspace/semanticTokens/refresh")


def register(server: MemoryServer) -> None:
    server.on_memory_changed.append(refresh)

    async def answer(
        ls: MemoryServer, uri: str, lines: tuple[int, int] | None
    ) -> types.SemanticTokens | None:
        session = ls.session
        doc = open_document(ls.documents, uri)
        if session is None or doc is None or not session.ready.is_set():
            return None  # before the first index sync: asked again once it ends (refresh)
        text, language_id, units = doc.source, doc.language_id, LineUnits(doc)

        def tokens(reads: Snapshot) -> types.SemanticTokens:
            found = semantic.tokens(
                text, reads.resolver(), language_id=language_id, path=uri, lines=lines
            )
            return types.SemanticTokens(data=encoded(found, units))

        return await session.run(tokens)

    @server.feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, LEGEND)
    async def full(
        ls: MemoryServer, params: types.SemanticTokensParams
    ) -> types.SemanticTokens | None:
        return await answer(ls, params.text_document.uri, None)

    @server.feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE, LEGEND)
    async def in_range(
        ls: MemoryServer, params: types.SemanticTokensRangeParams
    ) -> types.SemanticTokens | None:
        lines = (params.range.start.line, params.range.end.line)
        return await answer(ls, params.text_document.uri, lines)
