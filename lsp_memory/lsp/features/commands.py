"""``workspace/executeCommand``: ``lspMemory.search``, ``lspMemory.addClaim``,
``lspMemory.reindex`` and ``lspMemory.buildContext``.

``buildContext`` returns the resolution of the document's references until the context
assembler exists; it will then return the context block's JSON (SPEC §6), same command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from pygls.lsp.server import LanguageServer

from lsp_memory import refs
from lsp_memory.errors import UserError
from lsp_memory.lsp.convert import open_document
from lsp_memory.services.interchange import add_record, claim_record

if TYPE_CHECKING:
    from lsp_memory.lsp.server import MemoryServer
    from lsp_memory.lsp.session import Session

_KINDS = {"claim": ("claim",), "note": ("note",), "all": None}


# Command handlers are annotated with pygls's own class: pygls reads their annotations at run
# time to convert arguments, and MemoryServer cannot be imported here (server imports us).
def _session(ls: LanguageServer) -> Session:
    session = cast("MemoryServer", ls).session
    if session is None:
        raise UserError("lsp-memory is not initialized yet")
    return session


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{name} must be a non-empty string")
    return value


def register(server: MemoryServer) -> None:
    @server.command("lspMemory.search")
    def search(ls: LanguageServer, *args: Any) -> list[dict[str, Any]]:
        """Arguments: query, then optionally kind (claim, note, all) and k."""
        session = _session(ls)
        query = _text(args[0] if args else None, "query")
        kind = args[1] if len(args) > 1 else "all"
        if kind not in _KINDS:
            raise UserError(f"kind must be one of {', '.join(_KINDS)}, not {kind!r}")
        k = args[2] if len(args) > 2 else 10
        if isinstance(k, bool) or not isinstance(k, int) or not 0 < k <= 100:
            raise UserError("k must be a whole number from 1 to 100")
        hits = session.search.search(
            query,
            user=session.config.user,
            kinds=_KINDS[kind],
            k=k,
            statuses=("active", "contested", "archived"),
        )
        return [
            {
                "id": hit.id,
                "kind": hit.kind,
                "key": hit.key,
                "title": hit.title,
                "snippet": hit.snippet,
                "status": hit.status,
                "score": hit.score,
                "bm25": hit.bm25,
                "similarity": hit.similarity,
                "confidence": hit.confidence,
                "recency": hit.recency,
                "reference": f"[[{hit.title}]]" if hit.kind == "note" else f"@{hit.key}",
            }
            for hit in hits
        ]

    @server.command("lspMemory.addClaim")
    def add_claim(ls: LanguageServer, *args: Any) -> dict[str, Any]:
        """Arguments: statement, then optionally claim type."""
        session = _session(ls)
        record: dict[str, Any] = {
            "kind": "claim",
            "statement": _text(args[0] if args else None, "statement"),
        }
        if len(args) > 1 and args[1]:
            record["claim_type"] = _text(args[1], "claim type")
        claim = add_record(session.app.store, record, user=session.config.user).claims[0]
        session.poke()
        return {**claim_record(claim), "reference": f"@{claim.friendly_id}"}

    @server.command("lspMemory.reindex")
    def reindex(ls: LanguageServer, *_args: Any) -> dict[str, str]:
        _session(ls).poke()
        return {"status": "started"}

    @server.command("lspMemory.buildContext")
    def build_context(ls: LanguageServer, *args: Any) -> dict[str, Any]:
        """Argument: a document URI (the document must be open)."""
        session = _session(ls)
        uri = _text(args[0] if args else None, "document URI")
        doc = open_document(ls.workspace.text_documents, uri)
        if doc is None:
            raise UserError(f"{uri} is not open")
        parsed = refs.parse_document(doc.source, doc.language_id, doc.uri)
        resolutions = session.resolver.resolve_all(parsed.references)
        return {
            "references": [
                {
                    "ref": r.ref,
                    "resolved": r.resolved,
                    "kind": r.kind,
                    "id": r.id,
                    "error": r.error,
                    "claims": [claim_record(c) for c in r.claims],
                }
                for r in resolutions
            ],
            "clean_text": parsed.clean_text,
        }
