"""A message is stored whole or not at all: its episodes, the references in it and the claims
extracted from it are one transaction (``Store.transaction``, whose writes are savepoints),
so an ingest cut short leaves no message without its claims, and ingesting the same pairs
again ends where an uninterrupted ingest ends."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lsp_memory.app import App
from lsp_memory.config import Config
from lsp_memory.services.conversations.ingest import Ingester, Pair, parse_pairs
from lsp_memory.services.memory.records import Records
from lsp_memory.store.sqlite import Episode, EpisodeRef, Store
from tests.conftest import USER

NOTES = Path(__file__).parents[1] / "data" / "notes"


class Crash(BaseException):
    """The process dying mid-write: nothing catches it."""


def pairs() -> list[Pair]:
    lines = [
        {
            "contentSessionId": "s",
            "timestamp": f"2026-03-0{n}T10:00:00Z",
            "userMessage": f"I started pottery lesson {n} this week and my sister Ana lives "
            f"in town {n}. Can you check [[Project Plan]]?",
            "assistantResponse": f"Lesson {n}, great!",
        }
        for n in range(1, 4)
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    return parse_pairs(data, "pairs.jsonl")


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    opened = App(
        replace(
            Config(),
            store=tmp_path / "store",
            cache=tmp_path / "cache",
            user=USER,
            vaults=(NOTES,),
        )
    )
    yield opened
    opened.close()


def ingester(app: App, records: Records | None = None) -> Ingester:
    """Without a vector side: the model is not needed here."""
    return Ingester(
        app.store,
        USER,
        records or Records(app.store, USER),
        lambda: app.snapshot().resolver(),
    )


def messages(store: Store, *, statuses: bool = True) -> dict[tuple[str, str], Any]:
    """Each stored message (role, text) → its references and the claims derived from it
    (statement, and status unless not ``statuses``), without generated ids."""
    episodes = {e.episode_id: e for e in store.conversation_episodes(USER, "s")}
    found: dict[tuple[str, str], Any] = {
        (e.role, e.text): {
            "refs": [(r.kind, r.label) for r in store.episode_refs([e.row])],
            "claims": [],
        }
        for e in episodes.values()
    }
    for claim in store.claims(USER, statuses=None, limit=None):
        for source in claim.derived_from:
            episode = episodes[source]
            shown = (claim.statement, str(claim.status)) if statuses else claim.statement
            found[episode.role, episode.text]["claims"].append(shown)
    return found


def test_writes_inside_a_transaction_are_committed_together_or_not_at_all(store: Store) -> None:
    records = Records(store, USER)
    with pytest.raises(Crash), store.transaction():
        records.add_claim("I live in Lyon", claim_type="identity")
        records.add_claim("I work at Acme", claim_type="identity")
        raise Crash
    assert store.claims(USER, statuses=None, limit=None) == []
    with store.transaction():
        records.add_claim("I live in Lyon", claim_type="identity")
        records.add_claim("I moved to Berlin", claim_type="identity")
    found = {c.statement: str(c.status) for c in store.claims(USER, statuses=None, limit=None)}
    assert found == {"I live in Lyon": "superseded", "I moved to Berlin": "active"}


def test_a_failed_write_inside_a_transaction_is_undone_alone(store: Store) -> None:
    records = Records(store, USER)
    hello = Episode("e1", USER, "s", "user", "hi", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z")
    with store.transaction():
        records.add_claim("I live in Lyon", claim_type="identity")
        (stored,) = store.add_episodes([hello])
        kept = EpisodeRef(stored.row, "direct", "unresolved", "", "[[A]]")
        with pytest.raises(sqlite3.IntegrityError):  # no episode has row 999
            store.add_episode_refs([kept, replace(kept, episode_row=999)])
        records.add_claim("I work at Acme", claim_type="identity")
    statements = [c.statement for c in store.claims(USER, statuses=None, limit=None)]
    assert sorted(statements) == ["I live in Lyon", "I work at Acme"]
    assert [e.text for e in store.conversation_episodes(USER, "s")] == ["hi"]
    assert store.episode_refs([stored.row]) == []


@pytest.mark.parametrize("cut", [1, 2, 3, 4, 6])
def test_an_ingest_cut_short_leaves_messages_whole_and_finishes_when_run_again(
    app: App, tmp_path: Path, cut: int
) -> None:
    """The ingest dies writing its ``cut``-th claim (two a message, three messages)."""
    reference = App(replace(app.config, store=tmp_path / "reference"))
    ingester(reference).ingest(pairs())
    expected = messages(reference.store)
    said = messages(reference.store, statuses=False)
    reference.close()
    assert len(expected) == 6
    assert [len(m["claims"]) for (role, _), m in expected.items() if role == "user"] == [2] * 3

    records = Records(app.store, USER)
    written = 0
    add_claim = records.add_claim

    def dying(*args: Any, **kwargs: Any) -> Any:
        nonlocal written
        written += 1
        if written == cut:
            raise Crash
        return add_claim(*args, **kwargs)

    records.add_claim = dying  # type: ignore[method-assign]
    with pytest.raises(Crash):
        ingester(app, records).ingest(pairs())
    whole = (cut - 1) // 2  # the pairs whose claims were all written
    left = messages(app.store, statuses=False)
    assert len(left) == 2 * whole
    assert all(left[message] == said[message] for message in left)

    again = ingester(app).ingest(pairs())
    assert [bool(r.episodes) for r in again] == [n >= whole for n in range(3)]
    assert messages(app.store) == expected
