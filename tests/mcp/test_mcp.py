"""``lsp-memory mcp`` driven by the official SDK's client over stdio: the five tools and
their schemas, answers as structured content, the store they write, and bad arguments as
tool errors with one line while the server keeps serving."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = Path(__file__).parents[2]


@asynccontextmanager
async def connected(tmp_path: Path) -> AsyncIterator[ClientSession]:
    """A client session with ``lsp-memory mcp`` on a private store and vault (entered and
    left in the test's own task, as the SDK's streams require)."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "plan.md").write_text("# Plan\n\nPack light.\n", encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "lsp_memory", "--vault", str(vault), "mcp"],
        env={
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path / "home"),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "LSP_MEMORY_STORE": str(tmp_path / "store"),
            "LSP_MEMORY_USER": "ann",
            "PYTHONPATH": str(ROOT),
        },
        cwd=str(tmp_path),
    )
    with (tmp_path / "server.log").open("w") as errors:
        async with (
            stdio_client(params, errlog=errors) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    found: dict[str, Any] | None = result.structured_content
    assert found is not None
    return found


async def error(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error
    (content,) = result.content
    text: str = content.text  # type: ignore[union-attr]
    return text


async def test_the_tools_and_their_schemas(tmp_path: Path) -> None:
    async with connected(tmp_path) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) == {
        "search_memory",
        "remember",
        "ingest_messages",
        "build_context",
        "resolve",
    }
    search = tools["search_memory"].input_schema
    assert search["required"] == ["query"]
    assert search["properties"]["search_type"]["enum"] == ["facts", "episodes", "notes", "all"]
    assert tools["remember"].output_schema is not None


async def test_remember_ingest_search_resolve_and_build(tmp_path: Path) -> None:
    async with connected(tmp_path) as session:
        given = await _remember_ingest_search_resolve_and_build(session)
    assert "Traceback" not in (tmp_path / "server.log").read_text()
    # A search given the session id is kept as the session's references, on its latest
    # message (the reply), beside the message's own direct reference.
    shown = subprocess.run(
        [sys.executable, "-m", "lsp_memory", "session", "show", "trip", "--json"],
        env={
            **os.environ,
            "LSP_MEMORY_STORE": str(tmp_path / "store"),
            "LSP_MEMORY_USER": "ann",
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "PYTHONPATH": str(ROOT),
        },
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    question, reply = json.loads(shown.stdout)["messages"]
    assert [(r["label"], r["via"]) for r in question["references"]] == [("[[Plan]]", "direct")]
    searched = {(r["kind"], r["target"]) for r in reply["references"] if r["via"] == "search"}
    assert {(r["kind"], r["id"].split(":", 1)[1]) for r in given} <= searched, searched
    assert any(kind == "episode" for kind, _ in searched), searched


async def _remember_ingest_search_resolve_and_build(
    session: ClientSession,
) -> list[dict[str, Any]]:
    """Drive the five tools; the results of a search given the session "trip"."""
    first = await call(session, "remember", statement="I live in Lyon")
    assert first["claim"] == "#1" and first["category"] == "identity"
    ingested = await call(
        session,
        "ingest_messages",
        session_id="trip",
        user_message="btw I moved to Berlin last month. Can you check [[Plan]]?",
        assistant_response="Sure!",
        timestamp="2026-11-20T10:00:00Z",
    )
    assert len(ingested["episodes"]) == 2
    [claim] = ingested["claims"]
    assert (claim["statement"], claim["supersedes"]) == ("I moved to Berlin last month", ["#1"])
    again = await call(
        session,
        "ingest_messages",
        session_id="trip",
        user_message="btw I moved to Berlin last month. Can you check [[Plan]]?",
        assistant_response="Sure!",
        timestamp="2026-11-20T10:00:00Z",
    )
    assert again["duplicate"] is True and again["claims"] == []

    facts = await call(
        session, "search_memory", query="where does the user live", search_type="facts"
    )
    assert [r["title"] for r in facts["results"]] == ["I moved to Berlin last month"]
    episodes = await call(session, "search_memory", query="Berlin", search_type="episodes")
    assert episodes["results"][0]["kind"] == "episode"
    given = await call(session, "search_memory", query="Berlin", session_id="trip", limit=3)
    assert given["results"]
    results: list[dict[str, Any]] = given["results"]

    resolved = await call(session, "resolve", refs=["#2", "@nothing_here", "[[Plan]]"])
    first_ref, missing, note = resolved["results"]
    assert first_ref["claims"][0]["statement"] == "I moved to Berlin last month"
    assert missing["resolved"] is False and "nothing_here" in missing["error"]
    assert note["note"]["path"] == "plan.md"

    block = await call(session, "build_context", text="Packing for my trip", session_id="trip")
    assert "I moved to Berlin last month" in block["markdown"]
    assert block["tokens"] <= block["budget"]
    return results


async def test_bad_arguments_are_one_line_tool_errors(tmp_path: Path) -> None:
    async with connected(tmp_path) as session:
        await _bad_arguments(session)
    assert "Traceback" not in (tmp_path / "server.log").read_text()


async def _bad_arguments(session: ClientSession) -> None:
    assert "search_type" in await error(
        session, "search_memory", query="x", search_type="everything"
    )
    assert "limit" in await error(session, "search_memory", query="x", limit="ten")
    assert "no conversation 'nope'" in await error(
        session, "search_memory", query="x", session_id="nope"
    )
    message = await error(session, "build_context", text="hi", session_id="someone-elses")
    assert message == (
        "Error executing tool build_context: "
        "no conversation 'someone-elses': `lsp-memory conversation list` shows yours"
    )
    bad_time = await error(
        session, "ingest_messages", session_id="s", user_message="hi", timestamp="soon"
    )
    assert bad_time.endswith(": timestamp 'soon' is not an ISO 8601 date or time")
    typo = await error(session, "remember", statement="I like tea", category="prefrence")
    assert "unknown claim type 'prefrence'" in typo and "\n" not in typo
    # Still serving.
    assert (await call(session, "remember", statement="I like tea"))["claim"] == "#1"
    stored = json.loads(json.dumps(await call(session, "resolve", refs=["#1"])))
    assert stored["results"][0]["claims"][0]["statement"] == "I like tea"


async def test_no_tool_shows_another_users_records(tmp_path: Path) -> None:
    """kb.jsonl's mallory shares ann's ids and numbers (and has #99 alone): ann's tools
    answer with nothing of hers."""
    from lsp_memory.services.memory.interchange import import_records
    from lsp_memory.store.sqlite import open_store
    from tests.conftest import KB

    with open_store(tmp_path / "store") as store:
        import_records(store, KB.read_bytes(), user="ann", source="kb")
    mallorys = ("MALLORY", "Mallory's", "mallory.example", "MySQL", "at night")
    async with connected(tmp_path) as session:
        answers = [
            await call(session, "search_memory", query="MySQL Leaf service night"),
            await call(session, "resolve", refs=["#1", "#42", "#99", "@leaf_ctx", "@alice_ent"]),
            await call(session, "build_context", text="Ask @leaf_active_a001 and #99"),
        ]
    text = json.dumps(answers)
    assert "PostgreSQL 16" in text  # ann's own #1
    for theirs in mallorys:
        assert theirs not in text, (theirs, text[:2000])
