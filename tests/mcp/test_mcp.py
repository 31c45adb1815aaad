"""``lsp-memory mcp`` driven by the official SDK's client over stdio: the tools and
their schemas, answers as structured content, the store they write, bad arguments (and
arguments beyond the limits) as tool errors with one line while the server keeps serving,
and reads answered while a slow write runs."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from lsp_memory.mcp.server import MAX_REF, MAX_REFS, MAX_TEXT
from tests.mcp.fuzzing import TOOLS

ROOT = Path(__file__).parents[2]


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    """An ``lsp-memory`` process's environment: a private store, cache and home in
    ``tmp_path``, the user ann, this tree's code; and ``extra``."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path / "home"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "LSP_MEMORY_STORE": str(tmp_path / "store"),
        "LSP_MEMORY_USER": "ann",
        "PYTHONPATH": str(ROOT),
        **extra,
    }


@asynccontextmanager
async def connected(tmp_path: Path) -> AsyncIterator[ClientSession]:
    """A client session with ``lsp-memory mcp`` on a private store and vault (entered and
    left in the test's own task, as the SDK's streams require)."""
    vault = tmp_path / "vault"
    vault.mkdir(exist_ok=True)
    (vault / "plan.md").write_text("# Plan\n\nPack light.\n", encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "lsp_memory", "--vault", str(vault), "mcp"],
        env=environment(tmp_path),
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
    # Every tool the server lists is one the fuzz suite calls (tests/mcp/fuzzing.py).
    assert set(tools) == set(TOOLS)
    assert {"list_memories", "update_memory", "edit_note", "review_decide"} <= set(tools)
    # Every tool tells agents whether it changes anything, as the README's table says.
    hints = {
        name: (
            tool.annotations.read_only_hint,
            tool.annotations.destructive_hint,
            tool.annotations.idempotent_hint,
        )
        for name, tool in tools.items()
        if tool.annotations is not None
    }
    assert set(hints) == set(tools)
    assert hints == readme_hints()
    assert {name for name, (read_only, _, _) in hints.items() if read_only} == {
        "resolve",
        "list_memories",
        "get_memory",
        "recent_activity",
        "read_note",
        "review_queue",
    }
    assert hints["forget_memory"] == (False, True, True)
    assert hints["update_memory"] == (False, True, False)
    assert hints["pin_memory"] == (False, False, True)
    assert all(tool.output_schema is not None for tool in tools.values())
    search = tools["search_memory"].input_schema
    assert search["required"] == ["query"]
    assert search["properties"]["query"]["maxLength"] == MAX_TEXT  # the limit, told to agents
    assert search["properties"]["search_type"]["enum"] == [
        "facts",
        "episodes",
        "both",
        "notes",
        "all",
    ]
    assert tools["remember"].output_schema is not None


def readme_hints() -> dict[str, tuple[bool, bool, bool]]:
    """The README's table of the tools' annotations: each tool's read-only, destructive
    and idempotent hints."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split("| tool | read-only | destructive | idempotent |", 1)[1]
    found = {}
    for row in table.split("\n\n", 1)[0].splitlines()[2:]:
        named, *flags = (cell.strip() for cell in row.strip("|").split("|"))
        for name in re.findall(r"`(\w+)`", re.sub(r"\([^)]*\)", "", named)):
            found[name] = tuple(flag == "yes" for flag in flags)
    return found  # type: ignore[return-value]


async def test_remember_ingest_search_resolve_and_build(tmp_path: Path) -> None:
    async with connected(tmp_path) as session:
        given = await _remember_ingest_search_resolve_and_build(session)
    assert "Traceback" not in (tmp_path / "server.log").read_text()
    # A search given the session id is kept as the session's references (``tool``: given
    # by search_memory), on its latest message (the reply), beside the message's own direct
    # reference.
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
    searched = {(r["kind"], r["target"]) for r in reply["references"] if r["via"] == "tool"}
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

    facts = await call(session, "search_memory", query="where did I move", search_type="facts")
    assert [r["title"] for r in facts["results"]] == ["I moved to Berlin last month"]
    episodes = await call(session, "search_memory", query="Berlin", search_type="episodes")
    assert episodes["results"][0]["kind"] == "episode"
    # Near-duplicates once: "all" would give the claim and leave out its episode.
    given = await call(
        session, "search_memory", query="Berlin", search_type="episodes", session_id="trip"
    )
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


async def test_arguments_beyond_the_limits_are_refused_at_once(tmp_path: Path) -> None:
    """A text argument over ``MAX_TEXT`` characters, a reference over ``MAX_REF``, more than
    ``MAX_REFS`` references: a tool error of one short line; a call of 10 MB (over the
    4 MiB a message may have): an InvalidRequest error at once. Each of them held every
    other call for seconds before (6–30 s for 10 MB)."""
    async with connected(tmp_path) as session:
        long_query = await error(session, "search_memory", query="x" * (MAX_TEXT + 1))
        assert long_query.startswith(
            f"Error executing tool search_memory: query: String should have at most {MAX_TEXT} "
            "characters, not 'xxx"
        ), long_query
        assert long_query.endswith(f" ({MAX_TEXT + 1:,} characters)") and len(long_query) < 300
        long_ref = await error(session, "resolve", refs=["#1", "@" + "a" * MAX_REF])
        assert "refs.1: String should have at most" in long_ref, long_ref
        many = await error(session, "resolve", refs=["#1"] * (MAX_REFS + 1))
        assert f"refs: List should have at most {MAX_REFS} items" in many, many
        text = await error(session, "build_context", text="😀" * (MAX_TEXT + 1))
        assert "text: String should have at most" in text and "\n" not in text, text
        started = time.perf_counter()
        with pytest.raises(MCPError) as refused:
            await session.call_tool("remember", {"statement": "x" * 10_000_000})
        took = time.perf_counter() - started
        assert refused.value.error.code == -32600, refused.value.error
        assert "4 MiB" in refused.value.error.message, refused.value.error
        assert took < 3.0, took
        # Still serving.
        assert (await call(session, "remember", statement="I like tea"))["claim"] == "#1"


SLOW = 5.0  # seconds the classifier command of the next test takes


async def test_a_slow_write_holds_no_read(tmp_path: Path) -> None:
    """While a ``remember`` waits for a slow ``classifier_command`` (the user's own setting:
    a program may take its time), ``resolve`` and ``build_context`` answer at once (they
    waited for it: tool calls ran one at a time)."""
    settings = tmp_path / "config" / "lsp-memory"
    settings.mkdir(parents=True)
    sleeper = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep({SLOW})'"
    (settings / "lsp-memory.toml").write_text(
        f"classifier_command = {json.dumps(sleeper)}\nclassifier_timeout_s = 20\n", "utf-8"
    )
    async with connected(tmp_path) as session:
        # Given a category, no classifier runs; the first calls open the model and indexes.
        await call(session, "remember", statement="I live in Lyon", category="identity")
        await call(session, "build_context", text="Where do I live? #1")
        started = time.perf_counter()
        slow = asyncio.create_task(session.call_tool("remember", {"statement": "I like tea"}))
        await asyncio.sleep(0.5)  # the write is under way
        resolved = await call(session, "resolve", refs=["#1"])
        block = await call(session, "build_context", text="Where do I live? #1")
        took = time.perf_counter() - started
        assert not slow.done() and took < SLOW - 1.5, took
        assert resolved["results"][0]["claims"][0]["statement"] == "I live in Lyon"
        assert "I live in Lyon" in block["markdown"]
        written = await slow
        assert not written.is_error and time.perf_counter() - started >= SLOW, written


async def test_reads_and_writes_at_once(tmp_path: Path) -> None:
    """Forty calls sent at once — remembers, ingests, searches (with and without a
    conversation), context blocks and resolves: every one answers, none with an error, and
    every claim written is there (the reads run beside the writes, each thread on its own
    store connection)."""
    async with connected(tmp_path) as session:
        await call(session, "ingest_messages", session_id="trip", user_message="Hello")
        calls = []
        for n in range(8):
            calls += [
                call(session, "remember", statement=f"I have {n + 2} cats", category="fact"),
                call(session, "search_memory", query="cats", session_id="trip" if n % 2 else None),
                call(session, "build_context", text=f"About my cats #{n + 1}"),
                call(session, "resolve", refs=[f"#{n + 1}", "[[Plan]]"]),
                call(session, "ingest_messages", session_id="trip", user_message=f"Day {n}"),
            ]
        answers = await asyncio.gather(*calls)
        numbers = {answer["claim"] for answer in answers if "claim" in answer}
        assert len(numbers) == 8, answers
        listed = await call(session, "resolve", refs=sorted(numbers))
    statements = {r["claims"][0]["statement"] for r in listed["results"]}
    assert statements == {f"I have {n + 2} cats" for n in range(8)}, statements
    assert "Traceback" not in (tmp_path / "server.log").read_text()


async def test_the_agents_contract(tmp_path: Path) -> None:
    """Seed 001's mode B: ``search_type="both"`` (facts and episodes) was refused; results
    had no time; a search gave any number of tokens; ``build_context`` had none of the
    command line's attach, pin, query and referenced-only."""
    async with connected(tmp_path) as session:
        await call(session, "remember", statement="I live in Lyon", category="identity")
        await call(session, "remember", statement="I keep a paper notebook", category="preference")
        places = ["the old town", "the Croix-Rousse hill", "the Rhone quays", "Fourviere",
                  "the Part-Dieu station", "the Tete d'Or park", "the Saone market",
                  "the silk museum"]  # fmt: skip
        for n, place in enumerate(places):
            await call(
                session,
                "ingest_messages",
                session_id="long",
                user_message=f"In Lyon I went to {place} on day {n}, and "
                + f"it rained while I walked around {place} for hours. " * 6,
                timestamp=f"2026-11-{n + 1:02d}T10:00:00Z",
            )
        both = await call(session, "search_memory", query="Lyon", search_type="both", limit=20)
        kinds = {r["kind"] for r in both["results"]}
        assert kinds == {"claim", "episode"}, both
        assert all(r["timestamp"] and r["timestamp"].endswith("Z") for r in both["results"])
        # At most 400 tokens of titles and snippets unless asked: the rest is counted.
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        limit = tools["search_memory"].input_schema["properties"]["max_tokens"]
        assert limit["default"] == 400
        capped = await call(
            session, "search_memory", query="Lyon", search_type="both", limit=20, max_tokens=60
        )
        assert 0 < len(capped["results"]) < len(both["results"])
        assert capped["left_out"] == len(both["results"]) - len(capped["results"])
        tight = await call(session, "search_memory", query="silk museum", max_tokens=5)
        assert len(tight["results"]) == 1  # the best one, its snippet cut to fit

        block = await call(
            session,
            "build_context",
            text="Where do I live? #1",
            attach=["#2"],
            query="notebook",
        )
        labels = [i.get("label") for s in block["sections"] for i in s["items"]]
        assert labels[:2] == ["REFERENCED #1", "ATTACHED"]
        pinned = await call(session, "build_context", text="Hello", pin=["#2"])
        assert "- [CONV PINNED] [preference] I keep a paper notebook" in pinned["markdown"]
        only = await call(session, "build_context", text="#1 and @nope", referenced_only=True)
        assert only["referenced"] == ["- [REFERENCED #1] [identity] I live in Lyon"]
        assert "@nope: No memory or context found with ID: nope" in only["warnings"]
        assert "@nope" in await error(session, "build_context", text="Hi", attach=["@nope"])


async def test_a_conversations_block_shows_its_searches_and_recall_made_ahead(
    tmp_path: Path,
) -> None:
    """Seed 001's turn: what ``search_memory`` found in the conversation's last turn has its
    own section of the next block (before, nothing of it appeared), and the recall from the
    conversation's last messages is made when they arrive (before, always when asked)."""
    async with connected(tmp_path) as session:
        cello, city = "I play the cello in an amateur orchestra", "My favourite city is Lisbon"
        for statement in (cello, city):
            await call(session, "remember", statement=statement)
        # The recall made ahead reads the indexes as they are; a search brings them up to date.
        await call(session, "search_memory", query="orchestra")

        async def exchange(user: str, day: int) -> None:
            await call(
                session,
                "ingest_messages",
                session_id="s",
                user_message=user,
                assistant_response="Noted.",
                timestamp=f"2026-11-{day:02d}T10:00:00Z",
            )
            await asyncio.sleep(0.5)  # the assistant writes its answer meanwhile

        await exchange("Our orchestra rehearses the cello part on Friday.", 20)
        block = await call(session, "build_context", text="hello", session_id="s")
        assert block["recall"] == "precomputed"
        items = [i for s in block["sections"] for i in s["items"]]
        recalled = [i for i in items if i.get("tier") == "conversation"]
        assert [i["statement"] for i in recalled] == [cello]
        assert sum(i["tokens"] for i in recalled) <= 200
        assert "Searched memory" not in {s["name"] for s in block["sections"]}

        found = await call(
            session, "search_memory", query="favourite city", search_type="facts", session_id="s"
        )
        assert [r["title"] for r in found["results"]] == [city]
        block = await call(session, "build_context", text="hello", session_id="s")
        sections = {s["name"]: s["items"] for s in block["sections"]}
        (searched,) = sections["Searched memory"]
        assert (searched["label"], searched["statement"]) == ("SEARCHED", city)
        assert "## Searched memory\n" in block["markdown"]
        assert f"- [SEARCHED] [{searched['claim_type']}] {city}\n" in block["markdown"]
        # Shown once: not again among the automatic memories.
        assert block["markdown"].count(city) == 1

        # The search outlives the exchange it served, not the one after.
        await exchange("Thanks, that helps.", 21)
        block = await call(session, "build_context", text="hello", session_id="s")
        assert block["recall"] == "precomputed"
        assert "Searched memory" in {s["name"] for s in block["sections"]}
        await exchange("Anything else for Friday?", 22)
        block = await call(session, "build_context", text="hello", session_id="s")
        assert "Searched memory" not in {s["name"] for s in block["sections"]}
        # The conversation as stored (its id stripped) is the one recalled from.
        await call(session, "ingest_messages", session_id="  s ", user_message="And Saturday?")
        await asyncio.sleep(0.5)
        block = await call(session, "build_context", text="hello", session_id="s")
        assert block["recall"] == "precomputed"
    log = (tmp_path / "server.log").read_text()
    assert "Traceback" not in log and "background work failed" not in log
