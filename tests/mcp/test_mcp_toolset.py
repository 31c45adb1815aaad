"""The MCP toolset beyond search and remember, through the official SDK's client against
``lsp-memory mcp``: listing, getting, updating (a new claim that supersedes) and forgetting
claims; recent activity; reading, writing and editing notes — the refused edits and every
way out of the vault; consolidation and its review queue; the resources, their templates and
the prompts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.shared.exceptions import MCPError

from tests.cli.test_consolidate import MEMORY, claims_file
from tests.mcp.test_mcp import call, connected, environment, error


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command line on the store and user ``connected`` serves."""
    return subprocess.run(
        [sys.executable, "-m", "lsp_memory", "--vault", str(tmp_path / "vault"), *args],
        env=environment(tmp_path),
        capture_output=True,
        text=True,
        check=True,
    )


async def test_list_get_update_and_forget_memories(tmp_path: Path) -> None:
    async with connected(tmp_path) as session:
        await call(session, "remember", statement="I live in Lyon", category="identity")
        await call(session, "remember", statement="I play the cello", category="technical")
        await call(session, "remember", statement="I like green tea", category="preference")
        listed = await call(session, "list_memories")
        assert [m["reference"] for m in listed["memories"]] == ["#3", "#2", "#1"]
        assert listed["memories"][0]["statement"] == "I like green tea"
        only = await call(session, "list_memories", type="identity")
        assert [m["reference"] for m in only["memories"]] == ["#1"]
        assert (await call(session, "list_memories", limit=1))["count"] == 1
        assert (await call(session, "list_memories", since="2d"))["count"] == 3
        assert (await call(session, "list_memories", since="2999-01-01"))["count"] == 0

        got = await call(session, "get_memory", reference="#1")
        assert (got["statement"], got["status"]) == ("I live in Lyon", "active")

        updated = await call(session, "update_memory", reference="#1", statement="I live in Porto")
        assert updated["supersedes"] == ["#1"]
        assert updated["memory"]["reference"] == "#4"
        assert updated["memory"]["claim_type"] == "identity"
        # Nothing overwritten: the old claim is there, superseded by the new one.
        old = await call(session, "get_memory", reference="#1")
        assert (old["statement"], old["status"]) == ("I live in Lyon", "superseded")
        assert old["superseded_by"] == updated["memory"]["claim_id"]
        refused = await error(session, "update_memory", reference="#1", statement="I live in Nice")
        assert "superseded, not live" in refused and "\n" not in refused

        forgot = await call(session, "forget_memory", reference="#2")
        assert forgot["retracted"] is True
        again = await call(session, "forget_memory", reference="#2")
        assert again["retracted"] is False and again["message"].startswith("already retracted")
        live = await call(session, "list_memories")
        assert [m["reference"] for m in live["memories"]] == ["#4", "#3"]
        retracted = await call(session, "list_memories", status="retracted")
        assert [m["reference"] for m in retracted["memories"]] == ["#2"]
        assert (await call(session, "list_memories", status="all"))["count"] == 4

        assert "no context @nowhere" in await error(session, "list_memories", context="nowhere")
        assert "neither a timeframe" in await error(session, "list_memories", since="lately")
        assert "claim_99" in await error(session, "get_memory", reference="#99")


async def test_list_memories_by_context(tmp_path: Path) -> None:
    (tmp_path / "vault").mkdir()
    cli(tmp_path, "context", "add", "Travel", "--id", "travel")
    cli(tmp_path, "context", "add", "Japan", "--id", "japan", "--parent", "travel")
    async with connected(tmp_path) as session:
        await call(session, "remember", statement="Kyoto in April", contexts=["japan"])
        await call(session, "remember", statement="I use a fountain pen")
        found = await call(session, "list_memories", context="travel")
        assert [m["statement"] for m in found["memories"]] == ["Kyoto in April"]


async def test_recent_activity(tmp_path: Path) -> None:
    async with connected(tmp_path) as session:
        await call(session, "remember", statement="I like green tea", category="preference")
        recent = await call(session, "recent_activity", timeframe="1h")
        assert [m["statement"] for m in recent["memories"]] == ["I like green tea"]
        assert [n["path"] for n in recent["notes"]] == ["plan.md"]
        old = await call(session, "recent_activity", timeframe="2999-01-01")
        assert (old["memories"], old["notes"]) == ([], [])


async def test_recent_activity_counts_the_messages(tmp_path: Path) -> None:
    """Messages by their time: one of today's exchange (two messages) in the last hour, an
    exchange of 2020 not."""
    async with connected(tmp_path) as session:
        for conversation, stamp in (("trip", None), ("old", "2020-05-01T10:00:00Z")):
            await call(
                session,
                "ingest_messages",
                session_id=conversation,
                user_message=f"Which train do we take? {'x' * 400}",
                assistant_response="The one at nine.",
                **({"timestamp": stamp} if stamp else {}),
            )
        recent = await call(session, "recent_activity", timeframe="1h", limit=1)
        everything = await call(session, "recent_activity", timeframe="2019-01-01")
    assert recent["episodes"]["count"] == 2
    (latest,) = recent["episodes"]["latest"]
    assert (latest["session_id"], latest["role"]) == ("trip", "assistant")
    assert latest["text"] == "The one at nine."
    assert everything["episodes"]["count"] == 4
    first = everything["episodes"]["latest"][-1]
    assert (first["session_id"], first["role"], first["timestamp"][:10]) == (
        "old",
        "user",
        "2020-05-01",
    )
    assert len(first["text"]) <= 300 and first["text"].endswith("…")


async def test_move_note_rewrites_the_links_to_it(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    async with connected(tmp_path) as session:
        await call(session, "write_note", path="trips/japan.md", text="See [[plan#Plan]].\n")
        await call(session, "write_note", path="pack.md", text="Read [[Plan|the plan]]\n")
        await call(session, "write_note", path="other.md", text="# Other\n")
        moved = await call(session, "move_note", path="plan.md", new_path="archive/old plan.md")
        resolved = await call(session, "resolve", refs=["[[old plan]]"])
        taken = await error(session, "move_note", path="pack.md", new_path="other.md")
        gone = await error(session, "move_note", path="plan.md", new_path="again.md")
    assert moved["path"] == "archive/old plan.md" and moved["moved_from"] == "plan.md"
    assert moved["links_rewritten_in"] == ["pack.md", "trips/japan.md"]
    assert not (vault / "plan.md").exists()
    assert (vault / "archive" / "old plan.md").read_text() == "# Plan\n\nPack light.\n"
    assert (vault / "trips" / "japan.md").read_text() == "See [[old plan#Plan]].\n"
    assert (vault / "pack.md").read_text() == "Read [[old plan|the plan]]\n"
    assert resolved["results"][0]["resolved"] is True
    assert taken.endswith("'other.md' exists: a move never replaces a note")
    assert (vault / "other.md").read_text() == "# Other\n"
    assert (vault / "pack.md").exists()
    assert gone.endswith("no note 'plan.md' in " + str(vault))


async def test_delete_note(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n")
    async with connected(tmp_path) as session:
        (vault / "out.md").symlink_to(outside / "secret.md")
        (vault / "ext").symlink_to(outside)
        (vault / "notes.txt").write_text("not a note\n")
        refused = {
            "out.md": await error(session, "delete_note", path="out.md"),
            "notes.txt": await error(session, "delete_note", path="notes.txt"),
            "../outside/secret.md": await error(
                session, "delete_note", path="../outside/secret.md"
            ),
            "move out": await error(session, "move_note", path="plan.md", new_path="ext/p.md"),
        }
        deleted = await call(session, "delete_note", path="plan.md")
        again = await error(session, "delete_note", path="plan.md")
        resolved = await call(session, "resolve", refs=["[[plan]]"])
    assert deleted["deleted"] is True and deleted["path"] == "plan.md"
    assert not (vault / "plan.md").exists()
    assert again.endswith(f"no note 'plan.md' in {vault}")
    assert resolved["results"][0]["resolved"] is False
    assert refused["out.md"].endswith("'out.md' leads outside the vault (a symlink): refused")
    assert "is not a note's path" in refused["notes.txt"]
    assert "'..' may not be part of a note's path" in refused["../outside/secret.md"]
    assert refused["move out"].endswith("leads outside the vault (a symlink): refused")
    assert (outside / "secret.md").read_text() == "# Secret\n"
    assert (vault / "notes.txt").exists() and not (outside / "p.md").exists()


async def test_read_write_and_edit_notes(tmp_path: Path) -> None:
    async with connected(tmp_path) as session:
        vault = tmp_path / "vault"
        read = await call(session, "read_note", path="plan.md")
        assert read["text"] == "# Plan\n\nPack light.\n"

        made = await call(session, "write_note", path="trips/japan.md", text="# Japan\n")
        assert made["created"] is True
        assert (vault / "trips" / "japan.md").read_text() == "# Japan\n"
        refused = await error(session, "write_note", path="trips/japan.md", text="# Other\n")
        assert "exists" in refused
        await call(
            session,
            "write_note",
            path="trips/japan.md",
            text="# Japan\n\n## Days\n\nTBD\n\n## Food\n\nRamen.\n",
            overwrite=True,
        )
        # The vault reads what was written: [[Japan]] resolves at once.
        resolved = await call(session, "resolve", refs=["[[Japan]]"])
        assert resolved["results"][0]["resolved"] is True

        await call(session, "edit_note", path="plan.md", operation="append", text="Book trains.")
        assert (vault / "plan.md").read_text() == "# Plan\n\nPack light.\nBook trains.\n"
        await call(
            session,
            "edit_note",
            path="trips/japan.md",
            operation="replace_section",
            heading="## Days",
            text="Kyoto, then Nara.",
        )
        assert (vault / "trips" / "japan.md").read_text() == (
            "# Japan\n\n## Days\nKyoto, then Nara.\n\n## Food\n\nRamen.\n"
        )
        await call(
            session,
            "edit_note",
            path="trips/japan.md",
            operation="find_replace",
            find="Ramen.",
            text="Ramen and soba.",
        )
        assert "Ramen and soba." in (vault / "trips" / "japan.md").read_text()

        # An anchor found not exactly once changes nothing.
        before = (vault / "trips" / "japan.md").read_text()
        for arguments, said in [
            ({"operation": "find_replace", "find": "Sushi", "text": "x"}, "is not in"),
            ({"operation": "find_replace", "find": "a", "text": "x"}, "times, not once"),
            ({"operation": "replace_section", "heading": "Hotels", "text": "x"}, "is not in"),
            ({"operation": "replace_section", "text": "x"}, "needs the heading"),
            ({"operation": "find_replace", "text": "x"}, "needs the text to find"),
        ]:
            told = await error(session, "edit_note", path="trips/japan.md", **arguments)
            assert said in told and "\n" not in told, told
        await call(session, "write_note", path="twice.md", text="## A\n\nx\n\n## A\n\ny\n")
        told = await error(
            session, "edit_note", path="twice.md", operation="replace_section", heading="A", text=""
        )
        assert "2 times, not once" in told
        assert (vault / "trips" / "japan.md").read_text() == before
        told = await error(session, "edit_note", path="missing.md", operation="append", text="x")
        assert "no note 'missing.md'" in told

        leftovers = [p.name for p in vault.rglob("*") if p.name.endswith(".tmp")]
        assert leftovers == []


async def test_notes_outside_the_vault_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret\n", encoding="utf-8")
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "out").symlink_to(outside, target_is_directory=True)
    (vault / "leak.md").symlink_to(outside / "secret.md")
    async with connected(tmp_path) as session:
        for path, said in [
            ("../outside/secret.md", "'..' may not be part"),
            ("trips/../../outside/secret.md", "'..' may not be part"),
            (str(outside / "secret.md"), "not an absolute one"),
            ("/etc/passwd.md", "not an absolute one"),
            ("out/secret.md", "leads outside the vault"),
            ("leak.md", "leads outside the vault"),
            ("notes.txt", "is not a note's path"),
            (".hidden/x.md", "is not a note's path"),
        ]:
            tries: list[tuple[str, dict[str, Any]]] = [
                ("read_note", {}),
                ("write_note", {"text": "x", "overwrite": True}),
                ("edit_note", {"operation": "append", "text": "x"}),
            ]
            for tool, arguments in tries:
                told = await error(session, tool, path=path, **arguments)
                assert said in told and "\n" not in told, (tool, path, told)
        assert "no vault 'other'" in await error(session, "read_note", path="a.md", vault="other")
    assert (outside / "secret.md").read_text() == "secret\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]
    assert "Traceback" not in (tmp_path / "server.log").read_text()


async def test_consolidate_dry_run_and_the_review_queue(tmp_path: Path) -> None:
    (tmp_path / "vault").mkdir()
    cli(tmp_path, "import", str(claims_file(tmp_path, MEMORY, inferred=True)))
    async with connected(tmp_path) as session:
        dry = await call(session, "consolidate", now_at="2026-01-02")
        assert dry["dry_run"] is True and dry["run_id"] is None and dry["changes"]
        assert (await call(session, "review_queue"))["items"] == []
        assert (await call(session, "get_memory", reference="#2"))["status"] == "active"

        done = await call(session, "consolidate", dry_run=False, now_at="2026-01-02")
        assert done["run_id"] == 1 and done["changes"] == dry["changes"]
        assert (await call(session, "get_memory", reference="#2"))["status"] == "merged"
        items = (await call(session, "review_queue"))["items"]
        assert [item["id"] for item in items] == [1]
        assert items[0]["claims"][0]["claim"] == "#4"
        decided = await call(session, "review_decide", item=1, decision="accept")
        assert decided["message"].startswith("review 1: #4 stands; #3 superseded by it")
        assert (await call(session, "review_queue"))["items"] == []
        assert "already closed" in await error(session, "review_decide", item=1, decision="reject")
        assert "no review item 9" in await error(
            session, "review_decide", item=9, decision="reject"
        )
        assert "not an ISO 8601" in await error(session, "consolidate", now_at="soon")
        huge = await error(session, "review_decide", item=10**20, decision="reject")
        assert "item: Input should be less than or equal to" in huge


async def _read(session: ClientSession, uri: str) -> str:
    result = await session.read_resource(uri)
    (content,) = result.contents
    text: str = content.text  # type: ignore[union-attr]
    return text


async def test_resources_templates_and_prompts(tmp_path: Path) -> None:
    (tmp_path / "vault").mkdir()
    cli(tmp_path, "context", "add", "Travel", "--id", "travel")
    async with connected(tmp_path) as session:
        await call(session, "remember", statement="I like green tea", category="preference")
        await call(session, "remember", statement="Kyoto in April", contexts=["travel"])
        listed = await session.list_resources()
        assert [str(r.uri) for r in listed.resources] == ["memory://status"]
        templates = await session.list_resource_templates()
        assert sorted(t.uri_template for t in templates.resource_templates) == [
            "memory://claim/{number}",
            "memory://context/{id}",
            "memory://note/{+path}",
        ]
        status = json.loads(await _read(session, "memory://status"))
        assert status["claims"]["total"] == 2
        claim = json.loads(await _read(session, "memory://claim/1"))
        assert claim["statement"] == "I like green tea"
        context = json.loads(await _read(session, "memory://context/travel"))
        assert context["context"]["name"] == "Travel"
        assert [c["statement"] for c in context["claims"]] == ["Kyoto in April"]
        assert await _read(session, "memory://note/plan.md") == "# Plan\n\nPack light.\n"
        for uri, said in [
            ("memory://claim/9", "claim_9"),
            ("memory://context/nowhere", "nowhere"),
            ("memory://note/missing.md", "no note 'missing.md'"),
            ("memory://note/..%2F..%2Fetc%2Fpasswd.md", ""),
        ]:
            try:
                await session.read_resource(uri)
            except MCPError as refused:
                assert said in str(refused) and "\n" not in str(refused), (uri, refused)
            else:
                raise AssertionError(f"{uri} was read")

        prompts = {p.name: p for p in (await session.list_prompts()).prompts}
        assert set(prompts) == {"recall", "review_recent"}
        assert all(p.description for p in prompts.values())
        recalled = await session.get_prompt("recall", {"topic": "tea"})
        text = recalled.messages[0].content.text  # type: ignore[union-attr]
        assert "I like green tea" in text and "'tea'" in text
        recent = await session.get_prompt("review_recent", {"timeframe": "1h"})
        text = recent.messages[0].content.text  # type: ignore[union-attr]
        assert "Kyoto in April" in text and "plan.md" in text
    assert "Traceback" not in (tmp_path / "server.log").read_text()
