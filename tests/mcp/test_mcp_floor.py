"""MCP ``search_memory`` and the relevance floor (setting ``min_similarity``): a query whose
words BM25 finds but whose meaning is elsewhere gets no result; a related one does; a lower
floor in ``lsp-memory.toml`` lets the hit back. Real embeddings, the SDK's own client."""

from __future__ import annotations

from pathlib import Path

from lsp_memory.services.memory.interchange import import_records
from lsp_memory.store.sqlite import open_store
from tests.conftest import KB
from tests.mcp.test_mcp import call, connected

UNRELATED = "Friday chromodynamics"  # "Friday" is in a claim; the meaning is not (cosine 0.22)


def titles(found: dict[str, object]) -> list[str]:
    results = found["results"]
    assert isinstance(results, list)
    return [r["title"] for r in results]


async def test_search_memory_leaves_out_hits_below_the_floor(tmp_path: Path) -> None:
    with open_store(tmp_path / "store") as store:
        import_records(store, KB.read_bytes(), user="ann", source="kb")
    async with connected(tmp_path) as session:
        assert titles(await call(session, "search_memory", query=UNRELATED)) == []
        related = await call(session, "search_memory", query="Which database does Leaf use?")
        assert titles(related)[0] == "The Leaf service uses PostgreSQL 16"
    (tmp_path / "lsp-memory.toml").write_text("min_similarity = 0.2\n", encoding="utf-8")
    (tmp_path / "vault").rename(tmp_path / "vault-before")
    async with connected(tmp_path) as session:
        found = await call(session, "search_memory", query=UNRELATED, search_type="facts")
        assert titles(found)[:1] == ["I review my notes every Friday afternoon"]
