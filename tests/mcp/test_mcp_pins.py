"""The MCP tools that pin a claim, unpin it, and add it to a context or remove it from one:
each answers the claim and the line ``claim pin`` (…) prints, changes what the context block
and the store show, and a reference or context that names nothing is a tool error of one
line."""

from __future__ import annotations

from pathlib import Path

from lsp_memory.store.sqlite import open_store
from tests.mcp.test_mcp import call, connected, error


async def test_pin_unpin_and_contexts(tmp_path: Path) -> None:
    async with connected(tmp_path) as session:
        added = await call(session, "remember", statement="I like green tea", category="preference")
        name = f"#1 {added['reference']}"
        pinned = await call(session, "pin_memory", reference="#1")
        assert pinned == {
            "claim": "#1",
            "reference": added["reference"],
            "message": f"pinned: {name}",
        }
        block = await call(session, "build_context", text="Hello")
        assert "- [GLOBAL PINNED] [preference] I like green tea" in block["markdown"]
        again = await call(session, "pin_memory", reference=added["reference"])
        assert again["message"] == f"already pinned: {name}"
        unpinned = await call(session, "unpin_memory", reference="1")
        assert unpinned["message"] == f"unpinned: {name}"
        block = await call(session, "build_context", text="Hello")
        assert "GLOBAL PINNED" not in block["markdown"]

        assert "no context @work" in await error(
            session, "add_memory_to_context", reference="#1", context="work"
        )
        with open_store(tmp_path / "store") as store:
            from lsp_memory.services.memory.records import Records

            Records(store, "ann").add_context("Work", friendly_id="work")
        linked = await call(session, "add_memory_to_context", reference="#1", context="@work")
        assert linked["message"] == f"added to @work: {name}"
        block = await call(session, "build_context", text="What about @work?")
        assert "I like green tea" in block["markdown"]
        removed = await call(session, "remove_memory_from_context", reference="#1", context="work")
        assert removed["message"] == f"removed from @work: {name}"

        for tool, arguments in (
            ("pin_memory", {"reference": "#9"}),
            ("unpin_memory", {"reference": "@work"}),
            ("remove_memory_from_context", {"reference": "@nothing", "context": "work"}),
        ):
            said = await error(session, tool, **arguments)
            assert "\n" not in said and ("No memory" in said or "not a claim" in said), said
        await call(session, "resolve", refs=["#1"])  # still serving
    with open_store(tmp_path / "store") as store:
        claim = store.claim_by_number("ann", 1)
        assert claim is not None and not claim.pinned and not claim.contexts
    assert "Traceback" not in (tmp_path / "server.log").read_text()
