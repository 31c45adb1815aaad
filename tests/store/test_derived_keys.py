"""What a record is found by besides its own words: an episode by the statements of the claims
derived from it (written with it, or later: the episode is indexed again), by the message that
answered it and by its day in words; a claim by the messages it was derived from; never by
another user's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from lsp_memory.app import App
from lsp_memory.config import Config
from lsp_memory.services.memory.interchange import import_records
from lsp_memory.store.sqlite import Episode
from tests.conftest import USER


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    config = replace(
        Config(), store=tmp_path / "store", cache=tmp_path / "cache", user=USER, vaults=()
    )
    opened = App(config)
    yield opened
    opened.close()


def _episode(episode_id: str, text: str, when: str) -> Episode:
    return Episode(episode_id, USER, "chat", "user", text, when, when)


def _found(app: App, query: str, kind: str = "episode", user: str = USER) -> list[str]:
    hits = app.hybrid_search().search(query, user=user, kinds={kind}, k=5, mode="bm25")
    return [hit.title for hit in hits]


def test_an_episode_is_found_by_the_claims_derived_from_it(app: App) -> None:
    app.store.add_episodes(
        [
            _episode("e1", "Finally signed the papers for the flat!", "2026-11-20T10:00:00Z"),
            _episode("e2", "The weather is lovely.", "2026-11-20T10:01:00Z"),
        ]
    )
    app.records().add_claim("I bought an apartment in Porto", derived_from=("e1",))
    app.keeper.index(embed=False)
    assert _found(app, "apartment Porto") == ["Finally signed the papers for the flat!"]


def test_a_claim_derived_later_indexes_its_episode_again(app: App) -> None:
    app.store.add_episodes(
        [_episode("e1", "Finally signed the papers for the flat!", "2026-11-20T10:00:00Z")]
    )
    app.keeper.index(embed=False)
    assert _found(app, "apartment Porto") == []
    app.records().add_claim("I bought an apartment in Porto", derived_from=("e1",))
    app.keeper.index(embed=False)
    assert _found(app, "apartment Porto") == ["Finally signed the papers for the flat!"]


def test_an_episode_is_found_by_its_day_in_words(app: App) -> None:
    app.store.add_episodes(
        [
            _episode("e1", "We went hiking.", "2023-05-08T13:56:00Z"),
            _episode("e2", "We went swimming.", "2023-06-20T09:00:00Z"),
        ]
    )
    app.keeper.index(embed=False)
    assert _found(app, "8 May 2023")[0] == "We went hiking."
    assert _found(app, "what did we do in June 2023")[0] == "We went swimming."
    assert _found(app, "May") == ["We went hiking."]


def test_a_claim_is_found_by_the_message_it_was_derived_from(app: App) -> None:
    app.store.add_episodes(
        [_episode("e1", "Finally signed the papers for the flat!", "2026-11-20T10:00:00Z")]
    )
    app.records().add_claim("I bought an apartment in Porto", derived_from=("e1",))
    app.records().add_claim("I like trains")
    app.keeper.index(embed=False)
    assert _found(app, "signed papers", kind="claim") == ["I bought an apartment in Porto"]


def test_another_users_message_and_claims_are_no_keys(app: App) -> None:
    """``derived_from`` is not checked on import: a claim naming another user's message
    neither finds nor is found by it."""
    app.store.add_episodes(
        [_episode("e1", "Finally signed the papers for the flat!", "2026-11-20T10:00:00Z")]
    )
    line = {"kind": "claim", "statement": "I adopted a greyhound", "derived_from": ["e1"]}
    import_records(app.store, json.dumps(line).encode(), user="mallory", source="mallory")
    app.keeper.index(embed=False)
    assert _found(app, "signed papers", kind="claim", user="mallory") == []
    assert _found(app, "greyhound") == []


def test_an_episode_is_found_by_its_reply(app: App) -> None:
    """The next message of the conversation is a key of the one before it: a question is
    found by the words of the answer it got ("Lisbon" is only in the reply)."""
    app.store.add_episodes(
        [
            _episode("e1", "Where is your sister moving?", "2026-11-20T10:00:00Z"),
            _episode("e2", "She got a job in Lisbon.", "2026-11-20T10:01:00Z"),
        ]
    )
    app.keeper.index(embed=False)
    assert _found(app, "Lisbon") == ["She got a job in Lisbon.", "Where is your sister moving?"]


def test_a_reply_stored_later_indexes_the_message_before_it_again(app: App) -> None:
    app.store.add_episodes([_episode("e1", "Where is your sister moving?", "2026-11-20T10:00:00Z")])
    app.keeper.index(embed=False)
    assert _found(app, "Lisbon") == []
    app.store.add_episodes([_episode("e2", "She got a job in Lisbon.", "2026-11-20T10:01:00Z")])
    app.keeper.index(embed=False)
    assert _found(app, "Lisbon") == ["She got a job in Lisbon.", "Where is your sister moving?"]
    # Stored late but dated between them, a message becomes the first one's reply and the
    # second one's previous message: both are indexed again.
    app.store.add_episodes([_episode("e3", "Guess what, Porto!", "2026-11-20T10:00:30Z")])
    app.keeper.index(embed=False)
    porto = _found(app, "Porto")
    assert porto[0] == "Guess what, Porto!"
    assert set(porto[1:]) == {"Where is your sister moving?", "She got a job in Lisbon."}
    assert set(_found(app, "Lisbon")) == {"She got a job in Lisbon.", "Guess what, Porto!"}
