"""``textDocument/inlayHint``: after ``#N`` and ``@claim_N``, the claim's statement, cut short
(and its status when not active)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from lsp_memory.lsp.convert import open_document, token_range

if TYPE_CHECKING:
    from lsp_memory.lsp.server import MemoryServer


def refresh(ls: MemoryServer) -> None:
    """The memory changed (a claim's statement or status may have): ask the client for the
    hints again, where it takes that request."""
    workspace = ls.client_capabilities.workspace
    hints = workspace.inlay_hint if workspace is not None else None
    if hints is not None and hints.refresh_support:
        ls.ask(ls.workspace_inlay_hint_refresh_async(None), "workspace/inlayHint/refresh")


def register(server: MemoryServer) -> None:
    server.on_memory_changed.append(refresh)

    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT)
    def hints(ls: MemoryServer, params: types.InlayHintParams) -> list[types.InlayHint]:
        doc = open_document(ls.documents, params.text_document.uri)
        if ls.session is None or doc is None:
            return []
        annotator = ls.session.reads().annotator()
        lines = (params.range.start.line, params.range.end.line)
        text_document = ls.client_capabilities.text_document
        support = text_document.inlay_hint if text_document is not None else None
        resolvable = support.resolve_support if support is not None else None
        # The full statement as a tooltip only where the client says it takes one.
        tooltips = bool(resolvable and "tooltip" in resolvable.properties)
        return [
            types.InlayHint(
                position=token_range(doc, hint.reference).end,
                label=hint.label,
                padding_left=True,
                tooltip=hint.tooltip if tooltips else None,
            )
            for hint in annotator.hints(doc.source, doc.language_id, doc.uri, lines)
        ]
