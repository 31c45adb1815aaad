"""MCP ``search_memory`` and ``resolve`` with ``as_of``, through the official SDK's client,
over the memory ``tests/cli/test_asof.py`` writes across dates: a claim superseded today is
found as it was before, the claim that superseded it is not (nor resolved); a bad date is a
tool error of one line."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_asof import write_memory
from tests.cli.test_cli import Run, run, store_dir  # noqa: F401
from tests.mcp.test_mcp import call, connected, error


async def test_search_memory_as_of(run: Run, tmp_path: Path) -> None:  # noqa: F811
    memory = write_memory(run, tmp_path)
    async with connected(tmp_path) as session:
        then = await call(
            session, "search_memory", query="Lyon", search_type="facts", as_of=memory.before
        )
        now = await call(session, "search_memory", query="Lyon", search_type="facts")
        berlin = await call(
            session, "search_memory", query="Berlin", search_type="facts", as_of=memory.before
        )
        empty = await call(session, "search_memory", query="coffee", as_of="2025-12-31")
        bad = await error(session, "search_memory", query="Lyon", as_of="last March")
        resolved = await call(session, "resolve", refs=["#3", "#5"], as_of=memory.before)
    assert [(r["title"], r["status"]) for r in then["results"]] == [("I live in Lyon", "active")]
    assert now["results"] == []
    assert "I moved to Berlin" not in [r["title"] for r in berlin["results"]]
    assert empty["results"] == []
    assert bad == (
        "Error executing tool search_memory: not a date: 'last March' (give an ISO 8601 "
        "date or date-time, e.g. 2026-03-01 or 2026-03-01T09:30:00Z)"
    )
    lyon, berlin_then = resolved["results"]
    assert [c["status"] for c in lyon["claims"]] == ["active"]
    assert berlin_then["error"].startswith("#5 did not exist yet on ")
    assert "Traceback" not in (tmp_path / "server.log").read_text()


async def test_build_context_as_of(run: Run, tmp_path: Path) -> None:  # noqa: F811
    memory = write_memory(run, tmp_path)
    text = "Where do I live, #3 or #5?"
    async with connected(tmp_path) as session:
        then = await call(session, "build_context", text=text, as_of=memory.before)
        now = await call(session, "build_context", text=text)
        bad = await error(session, "build_context", text=text, as_of="last March")
        refused = await error(
            session, "build_context", text=text, session_id="trip", as_of="2026-03-01"
        )
    assert "- [REFERENCED #3] [identity] I live in Lyon\n" in then["markdown"]
    assert "- [NOT FOUND #5] #5 did not exist yet on " in then["markdown"]
    assert "- [REFERENCED #3] [identity] [superseded] I live in Lyon\n" in now["markdown"]
    assert "- [REFERENCED #5] [identity] I moved to Berlin\n" in now["markdown"]
    assert bad.startswith("Error executing tool build_context: not a date: 'last March'")
    assert refused.endswith("a context block as of a date cannot serve a conversation")
    assert "Traceback" not in (tmp_path / "server.log").read_text()
