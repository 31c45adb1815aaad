"""Extraction and evidence from conversations, as ``ingest`` and ``consolidate`` do them: a
pair of subjects stays whole ("Abby and I are planning…"); a short answer is read with the
assistant's question before it, in the same file or stored by an earlier ingest; only the
user's own messages are evidence for their claims, never the assistant's replies."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import Run, run, store_dir  # noqa: F401
from tests.cli.test_consolidate import claims_file


def pairs(tmp_path: Path, name: str, *rows: tuple[str, str | None, str]) -> str:
    path = tmp_path / name
    lines = [
        {"contentSessionId": "trip", "userMessage": u, "assistantResponse": a, "timestamp": t}
        for u, a, t in rows
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return str(path)


def statements(run: Run) -> list[tuple[str, str]]:  # noqa: F811
    claims = json.loads(run("claim", "list", "--json").stdout)
    return [(c["statement"], c["claim_type"]) for c in claims]


def test_subjects_and_short_answers(run: Run, tmp_path: Path) -> None:  # noqa: F811
    first = pairs(
        tmp_path,
        "first.jsonl",
        ("Abby and I are planning a Japan trip in April 2026.", "Lovely! Do you have kids?",
         "2026-01-01T10:00:00Z"),
        ("yes, two kids", "Great. Are you vegetarian?", "2026-01-01T10:01:00Z"),
    )  # fmt: skip
    assert run("ingest", first).returncode == 0
    assert [s for s, _ in statements(run)] == [
        "Abby and I are planning a Japan trip in April 2026",
        "I have two kids",
    ]
    # The question is the conversation's last stored reply.
    later = pairs(tmp_path, "later.jsonl", ("nope", "Noted.", "2026-01-01T10:05:00Z"))
    assert run("ingest", later).returncode == 0
    assert statements(run)[-1][0] == "I'm not vegetarian"
    # An answer that says more than yes and a thing one has, or a reply that asks nothing,
    # gives nothing.
    vague = pairs(
        tmp_path,
        "vague.jsonl",
        ("Do you think so?", "Do you have a car?", "2026-01-01T10:10:00Z"),
        ("yes, but only at weekends", "OK.", "2026-01-01T10:11:00Z"),
        ("yes", None, "2026-01-01T10:12:00Z"),
    )
    assert run("ingest", vague).returncode == 0
    assert len(statements(run)) == 3


def test_only_the_user_s_messages_are_evidence(run: Run, tmp_path: Path) -> None:  # noqa: F811
    memory = [("I live in Lyon", "identity", 0.8), ("I play the cello", "identity", 0.8)]
    assert run("import", str(claims_file(tmp_path, memory))).returncode == 0
    chat = pairs(
        tmp_path,
        "chat.jsonl",
        ("What should I wear tomorrow?", "I live in Lyon.", "2026-01-01T10:00:00Z"),
        ("What a day: the cello is what I play.", "Nice.", "2026-01-01T10:01:00Z"),
    )
    assert run("ingest", chat).returncode == 0
    done = run("consolidate", "--now", "2026-01-01T12:00:00Z", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    gained = {c["claim"] for c in report["changes"] if c["field"] == "evidence_count"}
    assert gained == {"#2"}  # the cello, from the user; Lyon was only in the assistant's reply
