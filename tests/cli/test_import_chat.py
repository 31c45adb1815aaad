"""``lsp-memory import-chat`` on small ChatGPT and Claude exports written from the formats'
public descriptions, odd parts included: a regenerated reply and an edited question (branches
of ChatGPT's tree), hidden custom instructions, a tool call, an image part, an empty message,
attachments, an assistant message before any user message, a ``.zip``. What lands in the store
is checked through the CLI (``conversation show``, ``claim list``); importing twice stores
nothing new; a file with bad records names each of them and stores nothing."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

from lsp_memory.store.sqlite import STORE_FILE
from tests.cli.test_cli import Run, one_error_line, run, store_dir  # noqa: F401

T0 = 1_764_000_000.0  # 2025-11-24T16:00:00Z


def node(
    node_id: str,
    parent: str | None,
    children: list[str],
    role: str | None = None,
    parts: list[Any] | None = None,
    *,
    at: float | None = None,
    content_type: str = "text",
    hidden: bool = False,
) -> dict[str, Any]:
    message: dict[str, Any] | None = None
    if role is not None:
        message = {
            "id": node_id,
            "author": {"role": role, "name": None, "metadata": {}},
            "create_time": at,
            "content": {"content_type": content_type, "parts": parts or []},
            "metadata": {"is_visually_hidden_from_conversation": True} if hidden else {},
            "recipient": "all",
        }
    return {"id": node_id, "message": message, "parent": parent, "children": children}


def chatgpt_export() -> list[dict[str, Any]]:
    """One conversation: custom instructions (hidden), an edited first question (the old one
    on a branch), a regenerated reply (the first on a branch), a tool call and its output,
    an image with a caption, an empty message; and a second, plain conversation."""
    mapping = [
        node("root", None, ["sys"]),
        node("sys", "root", ["ci"], "system", [""], at=T0),
        node("ci", "sys", ["q-old", "q"], "user", ["I like short answers"], at=T0, hidden=True),
        node("q-old", "ci", ["a-old"], "user", ["I live in Paris"], at=T0 + 10),
        node("a-old", "q-old", [], "assistant", ["Nice."], at=T0 + 11),
        node("q", "ci", ["a1", "a2"], "user", ["I moved to Berlin last month"], at=T0 + 20),
        node("a1", "q", [], "assistant", ["First draft reply."], at=T0 + 21),
        node("a2", "q", ["tool"], "assistant", ["Welcome to Berlin!"], at=T0 + 22),
        node(
            "tool",
            "a2",
            ["out"],
            "assistant",
            ["search('berlin')"],
            at=T0 + 23,
            content_type="code",
        ),
        node(
            "out", "tool", ["img"], "tool", ["results"], at=T0 + 24, content_type="execution_output"
        ),
        node(
            "img",
            "out",
            ["empty"],
            "user",
            [
                {"content_type": "image_asset_pointer", "asset_pointer": "file-service://x"},
                "This is my dog Rex, I'm allergic to cats",
            ],
            at=T0 + 30,
            content_type="multimodal_text",
        ),
        node("empty", "img", ["last"], "assistant", [""], at=T0 + 31),
        node("last", "empty", [], "assistant", ["Rex looks great."], at=T0 + 32),
    ]
    return [
        {
            "id": "c-1",
            "title": "Moving",
            "create_time": T0,
            "mapping": {n["id"]: n for n in mapping},
            "current_node": "last",
        },
        {
            "id": "c-2",
            "title": "Weather",
            "create_time": T0 + 100,
            "mapping": {
                "r": node("r", None, ["u"]),
                "u": node("u", "r", ["v"], "user", ["What's the weather like?"], at=T0 + 100),
                "v": node("v", "u", [], "assistant", ["Sunny."], at=T0 + 101),
            },
            "current_node": "v",
        },
    ]


def claude_export() -> list[dict[str, Any]]:
    return [
        {
            "uuid": "k-1",
            "name": "Work",
            "created_at": "2025-11-24T16:00:00Z",
            "chat_messages": [
                {
                    "uuid": "m0",
                    "sender": "assistant",
                    "created_at": "2025-11-24T16:00:00Z",
                    "text": "Hello! How can I help?",
                },
                {
                    "uuid": "m1",
                    "sender": "human",
                    "created_at": "2025-11-24T16:00:05Z",
                    "text": "",
                    "content": [{"type": "text", "text": "I work at Acme now. Here is my CV."}],
                    "attachments": [
                        {"file_name": "cv.pdf", "extracted_content": "I am a secret agent"}
                    ],
                },
                {
                    "uuid": "m2",
                    "sender": "assistant",
                    "created_at": "2025-11-24T16:00:09Z",
                    "text": "Noted.",
                },
                {
                    "uuid": "m3",
                    "sender": "assistant",
                    "created_at": "2025-11-24T16:00:10Z",
                    "content": [
                        {"type": "tool_use", "name": "x"},
                        {"type": "text", "text": "More."},
                    ],
                },
                {
                    "uuid": "m4",
                    "sender": "human",
                    "created_at": "2025-11-24T16:01:00Z",
                    "text": "   ",
                },
            ],
        }
    ]


def write(tmp_path: Path, data: Any, name: str = "conversations.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def messages(cli: Run, session: str) -> list[tuple[str, str]]:
    shown = json.loads(cli("conversation", "show", session, "--json").stdout)
    return [(m["role"], m["text"]) for m in shown["messages"]]


def statements(cli: Run) -> list[str]:
    return sorted(c["statement"] for c in json.loads(cli("claim", "list", "--json").stdout))


def test_chatgpt_export_imports_the_thread_the_user_saw(run: Run, tmp_path: Path) -> None:  # noqa: F811
    done = run("import-chat", write(tmp_path, chatgpt_export()), "--format", "chatgpt")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # not a terminal: no progress bar
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Moving [chatgpt-c-1]: 4 messages stored, 2 claims added;")
    # system, custom instructions and the tool's output; the first question and its reply
    # and the first draft of the regenerated reply
    assert "skipped 3 system, tool or hidden, 1 tool calls and results, 1 empty, " in lines[0]
    assert "3 on other branches" in lines[0]
    assert lines[1] == "Weather [chatgpt-c-2]: 2 messages stored, 0 claims added"
    assert messages(run, "chatgpt-c-1") == [
        ("user", "I moved to Berlin last month"),
        ("assistant", "Welcome to Berlin!"),  # the regenerated reply, not the first draft
        ("user", "This is my dog Rex, I'm allergic to cats"),  # the image part left out
        ("assistant", "Rex looks great."),  # the empty message before it skipped
    ]
    found = statements(run)
    assert "I moved to Berlin last month" in found
    assert any("allergic to cats" in s for s in found)
    assert not any("Paris" in s or "short answers" in s for s in found)  # branch, hidden
    shown = json.loads(run("conversation", "show", "chatgpt-c-1", "--json").stdout)
    times = [m["timestamp"][:19] for m in shown["messages"]]  # each message its own time
    assert times == ["2025-11-24T16:00:20", "2025-11-24T16:00:22", "2025-11-24T16:00:30",
                     "2025-11-24T16:00:32"]  # fmt: skip


def test_importing_twice_stores_nothing_new(run: Run, tmp_path: Path) -> None:  # noqa: F811
    path = write(tmp_path, chatgpt_export())
    assert run("import-chat", path).returncode == 0  # told by its fields: ChatGPT
    before = statements(run)
    again = run("import-chat", path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0].startswith(
        "Moving [chatgpt-c-1]: 0 messages stored (4 already stored), 0 claims added"
    )
    assert statements(run) == before
    assert len(messages(run, "chatgpt-c-1")) == 4


def test_claude_export_from_a_zip(run: Run, tmp_path: Path, store_dir: Path) -> None:  # noqa: F811
    archive = tmp_path / "claude-export.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("users.json", "[]")
        out.writestr("conversations.json", json.dumps(claude_export()))
    done = run("import-chat", str(archive), "--format", "claude", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["conversations"] == [
        {"session_id": "claude-k-1", "title": "Work", "skipped": {"empty": 1}}
    ]
    assert messages(run, "claude-k-1") == [
        ("assistant", "Hello! How can I help?"),  # before any user message: alone
        ("user", "I work at Acme now. Here is my CV."),
        ("assistant", "Noted.\n\nMore."),  # two replies, one episode; the tool use left out
    ]
    found = statements(run)
    assert "I work at Acme now" in found
    assert not any("secret agent" in s for s in found)  # an attachment is not what was said
    with sqlite3.connect(store_dir / STORE_FILE) as db:
        kept = [
            json.loads(meta)
            for (meta,) in db.execute("SELECT meta FROM episodes ORDER BY occurred_at")
        ]
    assert kept[1] == {
        "title": "Work",
        "message_ids": ["m1", "m2", "m3"],
        "attachments": ["cv.pdf"],
    }


def test_bad_records_are_each_named_and_nothing_is_stored(run: Run, tmp_path: Path) -> None:  # noqa: F811
    data = chatgpt_export()
    data[0]["current_node"] = "nowhere"
    data[1]["mapping"]["u"]["message"]["create_time"] = "yesterday"
    data.append("not a conversation")  # type: ignore[arg-type]
    done = run("import-chat", write(tmp_path, data), "--format", "chatgpt")
    assert done.returncode != 0
    assert "3 bad conversations, nothing imported" in done.stderr
    assert (
        "conversation 1 (c-1): current_node 'nowhere' is not a node of the mapping" in done.stderr
    )
    assert "conversation 2 (c-2): message u: create_time is not a number of seconds" in done.stderr
    assert "conversation 3: not a JSON object" in done.stderr
    assert "Traceback" not in done.stderr
    assert json.loads(run("conversation", "list", "--json").stdout) == []


def test_a_file_that_is_no_export_is_one_line(run: Run, tmp_path: Path) -> None:  # noqa: F811
    for data, expected in [
        ({"hello": 1}, "expected a list of conversations"),
        ([{"title": "x"}], "neither a ChatGPT export"),
        ([], "no conversations"),
    ]:
        line = one_error_line(run("import-chat", write(tmp_path, data)))
        assert expected in line
    (tmp_path / "broken.json").write_text("[{", encoding="utf-8")
    assert "not JSON" in one_error_line(run("import-chat", str(tmp_path / "broken.json")))
    (tmp_path / "broken.zip").write_bytes(b"PK\x03\x04garbage")
    assert "not a readable .zip" in one_error_line(run("import-chat", str(tmp_path / "broken.zip")))
    claude = write(tmp_path, claude_export(), "claude.json")
    wrong = run("import-chat", claude, "--format", "chatgpt")  # the wrong format: named
    assert wrong.returncode == 1
    assert wrong.stderr.splitlines()[1:] == [
        "  conversation 1 (k-1): mapping is missing or not an object"
    ]


def on_terminal(tmp_path: Path, store: Path, *args: str) -> str:
    """What ``lsp-memory ARGS`` shows on a terminal's stderr, its colours taken out."""
    master, slave = pty.openpty()
    env = {**os.environ, "LSP_MEMORY_STORE": str(store), "HOME": str(tmp_path),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": "100"}  # fmt: skip
    process = subprocess.run(
        [sys.executable, "-m", "lsp_memory", *args],
        stdout=subprocess.PIPE,
        stderr=slave,
        env=env,
        timeout=120,
        check=False,
    )
    os.close(slave)
    shown = b""
    while select.select([master], [], [], 0.5)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    assert process.returncode == 0, shown
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.decode("utf-8", "replace"))


def test_a_terminal_sees_the_progress(tmp_path: Path, store_dir: Path, run: Run) -> None:  # noqa: F811
    """On a terminal ``import-chat`` (and ``ingest``, which it runs), ``import`` and
    ``consolidate`` show their stages as they go; the pipes of the other tests get none."""
    text = on_terminal(tmp_path, store_dir, "import-chat", write(tmp_path, chatgpt_export()))
    assert re.search(r"read\s.*\b3/3\b", text), text  # three pairs: two, then one
    assert re.search(r"store\s.*\b3/3\b", text), text
    record = {"kind": "claim", "statement": "I like tea"}
    (tmp_path / "kb.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    text = on_terminal(tmp_path, store_dir, "import", str(tmp_path / "kb.jsonl"))
    assert re.search(r"import\s.*\b3/3\b", text), text
    text = on_terminal(tmp_path, store_dir, "consolidate")
    assert re.search(r"consolidate\s.*\b8/8\b", text), text
    quiet = run("consolidate", "--dry-run")
    assert quiet.returncode == 0
    assert quiet.stderr == ""
