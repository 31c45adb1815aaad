"""What the search indexes hold for each record: the full-text document of a claim, a
context, an entity, a note or an episode, and the text of it the vector side embeds."""

from __future__ import annotations

import re
from collections.abc import Iterable

from lsp_memory import ids
from lsp_memory.model import Claim, Context, Entity, Note, doc_id
from lsp_memory.store.fulltext import TextDoc
from lsp_memory.store.sqlite import Episode


def epoch(stamp: str | None) -> int:
    """A stored timestamp as whole seconds since the epoch (0 when absent)."""
    return int(ids.seconds(stamp))


def _words(ids: Iterable[str] | None) -> str:
    """Friendly ids as words (``project_alpha`` → ``project alpha``) for full-text matching."""
    return " ".join(i.replace("_", " ") for i in ids or ())


def claim_doc(claim: Claim, sources: Iterable[str] = ()) -> TextDoc:
    """A claim as the index holds it: its statement as title, what it is filed under as body,
    ``sources`` (the text of the messages it was derived from) as its context."""
    return TextDoc(
        id=doc_id("claim", claim.claim_id),
        kind="claim",
        user=claim.user,
        status=claim.status.value,
        title=claim.statement,
        body="\n".join(
            part
            for part in (
                " ".join(claim.possible_questions),
                " ".join(claim.claim_types),
                " ".join(claim.domains),
                _words(claim.contexts),
                _words(claim.tags),
                _words(claim.entities),
            )
            if part
        ),
        keys=(claim.friendly_id, f"claim_{claim.number}"),
        context="\n".join(sources),
        confidence=claim.confidence,
        updated=epoch(claim.updated_at),
    )


def context_doc(context: Context) -> TextDoc:
    return TextDoc(
        id=doc_id("context", context.context_id),
        kind="context",
        user=context.user,
        status="active",
        title=context.name,
        body=context.description,
        keys=(context.friendly_id,),
        updated=epoch(context.updated_at),
    )


def _field_text(value: object) -> str:
    if isinstance(value, list):
        return " ".join(str(item) for item in value)
    return "" if value is None else str(value)


def entity_doc(entity: Entity) -> TextDoc:
    return TextDoc(
        id=doc_id("entity", entity.entity_id),
        kind="entity",
        user=entity.user,
        status="trashed" if entity.trashed else "active",
        title=entity.name,
        body="\n".join(
            [entity.type, *(f"{k}: {_field_text(v)}" for k, v in entity.fields.items())]
        ),
        keys=(entity.friendly_id,),
        updated=epoch(entity.updated_at),
    )


def note_doc(note: Note) -> TextDoc:
    return TextDoc(
        id=doc_id("note", note.key),
        kind="note",
        user="",
        status="archived" if note.archived else "active",
        title=note.title,
        body="\n".join(
            [" ".join(note.aliases), " ".join(h.text for h in note.headings), note.body]
        ),
        keys=(note.path,),
        version=note.content_hash,
        updated=note.mtime_ns // 1_000_000_000,
    )


def day_words(stamp: str | None) -> str:
    """A timestamp's day as words a question may hold: ``2023-05-08T13:56:00`` → ``8 May
    2023``; '' when there is none."""
    if not stamp:
        return ""
    moment = ids.moment_of(stamp)
    return f"{moment.day} {moment:%B %Y}"


def episode_doc(
    episode: Episode, before: str = "", facts: Iterable[str] = (), after: str = ""
) -> TextDoc:
    """An episode as the index holds it: the message as its body (no title: a title field
    would count its words twice, and short messages — "Cool! What did it look like?" — rose
    above the ones that answer), ``before`` (the previous message of its conversation) as its
    context, ``after`` (the next one: its reply) as its reply, ``facts`` (the statements of
    the claims extracted from it) and its day as words as keys of their own."""
    return TextDoc(
        id=doc_id("episode", episode.episode_id),
        kind="episode",
        user=episode.user,
        status="active",
        title="",
        body=episode.text,
        keys=(episode.episode_id, episode.conversation_id),
        context=before,
        reply=after,
        facts="\n".join(facts),
        when=day_words(episode.occurred_at),
        updated=epoch(episode.occurred_at),
    )


_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")


def statements(text: str) -> str:
    """``text`` without its questions, or the whole text when it is only questions: what a
    message's embedding should be close to. A question in a message ("How did it make you
    feel?") is close to every question a user asks of the memory, and tells nothing."""
    kept = [s for s in _SENTENCE_END.split(text) if s.strip() and not s.rstrip().endswith("?")]
    return " ".join(kept) if kept else text


def embed_text(doc: TextDoc) -> str:
    """What the vector side embeds for a document: the claim itself, an episode's statements,
    or a note's title and opening (the model reads 256 tokens at most)."""
    if doc.kind == "claim":
        return doc.title
    if doc.kind == "episode":
        return statements(doc.body)[:1200]
    return f"{doc.title}\n{doc.body[:1200]}"
