"""SIGKILL during ``lsp-memory ingest`` of 60 message pairs (four sessions, a ``[[note]]``
reference in some, two claims a message): while the interpreter starts, as soon as the
episodes are stored, once their references are, halfway through the claims, and after the
report. Wherever the kill lands, each message is stored with its references and the claims
extracted from it, or not at all, and ingesting the file again ends where an uninterrupted
ingest ends."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.faults.harness import (
    NOTES,
    Cli,
    KillPoint,
    after,
    copy_store,
    count,
    integrity,
    log,
    query,
    stdout_has,
    store_file,
)

PAIRS = 60
PEOPLE = ("sister Ana", "dog Pixel", "boss Lena", "friend Omar", "cousin Tom")

Message = tuple[str, str, str, str]  # session, role, text, time


def write_pairs(path: Path) -> Path:
    lines = []
    for n in range(PAIRS):
        note = " Can you check [[Project Plan]] for me?" if n % 7 == 0 else ""
        lines.append(
            json.dumps(
                {
                    "contentSessionId": f"session-{n % 4}",
                    "timestamp": f"2026-03-{1 + n % 28:02d}T10:{n:02d}:00Z",
                    "userMessage": f"I started learning pottery lesson {n} this week and my "
                    f"{PEOPLE[n % 5]} lives in town {n}.{note}",
                    "assistantResponse": f"That sounds great, lesson {n}!",
                }
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@dataclass(frozen=True, slots=True)
class State:
    """What an ingest leaves, without generated ids and clock times."""

    messages: list[Message]
    references: list[tuple[Message, str, str, str]]  # message, via, kind, label
    claims: list[tuple[Any, ...]]  # statement, type, status, superseded by, messages
    facts: dict[Message, list[str]]  # a user message → the statements extracted from it


def state(cli: Cli) -> State:
    store = store_file(cli.store)
    episodes: dict[str, Message] = {
        row[0]: (row[1], row[2], row[3], row[4])
        for row in query(
            store, "SELECT episode_id, session_id, role, text, occurred_at FROM episodes"
        )
    }
    references = sorted(
        (episodes[row[0]], row[1], row[2], row[3])
        for row in query(
            store,
            "SELECT e.episode_id, r.via, r.kind, r.label "
            "FROM episode_refs r JOIN episodes e ON e.id = r.episode",
        )
    )
    exported = [json.loads(line) for line in cli.ok("export").stdout.splitlines()]
    records = {r["claim_id"]: r for r in exported if r["kind"] == "claim"}
    claims = []
    facts: dict[Message, list[str]] = defaultdict(list)
    for record in records.values():
        sources = tuple(sorted(episodes[e] for e in record.get("derived_from", ())))
        successor = records.get(record.get("superseded_by") or "")
        claims.append(
            (
                record["statement"],
                record["claim_type"],
                record["status"],
                successor["statement"] if successor else None,
                sources,
            )
        )
        for message in sources:
            facts[message].append(record["statement"])
    return State(
        sorted(episodes.values()),
        references,
        sorted(claims, key=repr),
        {message: sorted(found) for message, found in facts.items()},
    )


@dataclass(frozen=True, slots=True)
class Reference:
    pristine: Path  # a store with one claim the ingest supersedes
    pairs: Path
    state: State


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    root = tmp_path_factory.mktemp("ingest")
    cli = Cli(root / "reference", vaults=[NOTES])
    cli.ok("claim", "add", "My sister Ana lives in Porto", "--type", "relationship")
    pristine = root / "pristine"
    copy_store(cli.store, pristine)
    pairs = write_pairs(root / "chat.jsonl")
    done = cli.ok("ingest", str(pairs))
    assert done.stdout.splitlines()[0].startswith("line 1: 2 episodes stored; added #2 @")
    found = state(cli)
    assert len(found.messages) == 2 * PAIRS
    assert len(found.references) == len(range(0, PAIRS, 7))
    assert len(found.claims) == 1 + 2 * PAIRS, found.claims
    assert all(len(statements) == 2 for statements in found.facts.values())
    return Reference(pristine, pairs, found)


def points(cli: Cli, reference: Reference) -> dict[str, KillPoint]:
    half = 1 + len(reference.state.claims) // 2
    return {
        "starting": KillPoint("starting", after(0.05)),
        "episodes-stored": KillPoint("episodes stored", lambda _: count(cli.store, "episodes") > 0),
        "references-stored": KillPoint(
            "references stored", lambda _: count(cli.store, "episode_refs") > 0
        ),
        "claims-half": KillPoint(
            "half the claims written", lambda _: count(cli.store, "claims") >= half
        ),
        "reported": KillPoint("report printed", stdout_has(f"line {PAIRS}:"), may_finish=True),
    }


@pytest.mark.parametrize(
    "point", ["starting", "episodes-stored", "references-stored", "claims-half", "reported"]
)
def test_ingest_killed_keeps_messages_whole_and_recovers(
    point: str, reference: Reference, tmp_path: Path
) -> None:
    cli = Cli(tmp_path, vaults=[NOTES])
    copy_store(reference.pristine, cli.store)
    where = points(cli, reference)[point]
    running = cli.start("ingest", str(reference.pairs))
    reached = running.wait_for(where.when)
    killed = running.kill()
    landed = f"kill point {where.name!r} at {running.seconds:.3f} s, killed={killed}"
    assert reached or where.may_finish, f"{landed}: the command ended before the point"
    assert killed or where.may_finish, landed
    assert integrity(store_file(cli.store)) == "ok", landed

    left = state(cli)
    expected = reference.state
    user_messages = [m for m in left.messages if m[1] == "user"]
    landed += (
        f": {len(left.messages)} episodes, {len(left.references)} references, "
        f"{len(left.claims) - 1} claims of {len(expected.claims) - 1}"
    )
    log.info("ingest: %s", landed)
    assert set(left.messages) <= set(expected.messages), landed
    for message in user_messages:
        assert left.facts.get(message) == expected.facts[message], f"{landed}: {message}"
        refs = [r for r in left.references if r[0] == message]
        assert refs == [r for r in expected.references if r[0] == message], landed

    again = cli.ok("ingest", str(reference.pairs))
    assert len(again.stdout.splitlines()) == PAIRS, landed
    assert state(cli) == expected, f"{landed}: differs after recovery"
