"""What the indexes see of an episode: the message as body (no title), the previous message
as context, and for the embedding the message's statements without its questions."""

from __future__ import annotations

from lsp_memory.services.retrieval.documents import embed_text, episode_doc, statements
from lsp_memory.store.sqlite import Episode


def _episode(text: str) -> Episode:
    return Episode("e1", "ann", "s", "user", text, "2026-11-20T10:00:00Z", "2026-11-20T10:00:00Z")


def test_statements_drop_questions_unless_nothing_else_is_said() -> None:
    assert statements("Cool! What did it look like?") == "Cool!"
    assert statements("I painted it last week. Do you like it? It's for my mum.") == (
        "I painted it last week. It's for my mum."
    )
    assert statements("What did it look like? Was it big?") == "What did it look like? Was it big?"
    assert statements("First line\nsecond line") == "First line second line"


def test_an_episode_is_its_body_with_the_previous_message_as_context() -> None:
    doc = episode_doc(_episode("Yes, two. How about you?"), "Do you have any children?")
    assert (doc.title, doc.body, doc.context) == (
        "",
        "Yes, two. How about you?",
        "Do you have any children?",
    )
    assert embed_text(doc) == "Yes, two."
