"""Ingestion of conversations (``lsp-memory ingest``, MCP ``ingest_messages``): message pairs
become episodes, what the user says about themselves becomes claims.

A pair is one JSON object: ``contentSessionId`` and ``userMessage`` required;
``assistantResponse``, ``source``, ``channel``, ``timestamp`` (ISO 8601; default: now) and
``metadata`` (an object) optional. A file is checked whole first: any bad line is named with
its number and nothing is stored. Then each pair's messages are stored as episodes (a
message already stored — same conversation, time, role and text — is skipped, so ingesting a file
twice stores nothing new), the references in their text are recorded, and the user's message
goes through extraction (``services.conversations.extract``, or ``extractor_command``; a
short answer is read with the assistant's message before it: the previous pair's reply, or
the conversation's last stored one); each
claim found is written like ``claim add`` (classified, superseding older claims), valid from
the message's time, with its episode in ``derived_from``. A pair's messages, references and
claims are one transaction: a message is never stored without them (the kills of
``tests/faults`` left episodes whose claims a second ingest skipped as "already stored"), so
ingesting a file again finishes an ingest cut short.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lsp_memory import refs
from lsp_memory.errors import ImportFailed, UserError
from lsp_memory.ids import OutOfRange, new_uuid, now, timestamp
from lsp_memory.model import Claim
from lsp_memory.services.conversations.extract import (
    Extracted,
    answers_to_extracted,
    extract,
    short_answer,
)
from lsp_memory.services.kernel.command import CommandFailed, ask
from lsp_memory.services.kernel.resolver import Resolution, Resolver
from lsp_memory.services.memory.records import Records
from lsp_memory.store.sqlite import Episode, EpisodeRef, Store
from lsp_memory.text import blank

log = logging.getLogger(__name__)

MAX_MESSAGE = 100_000
"""Characters a message may have (a longer one is refused: it is a document, not a turn)."""
MAX_SESSION_ID = 200


@dataclass(frozen=True, slots=True)
class Pair:
    """One checked message pair."""

    line: int
    conversation_id: str
    user_message: str | None  # None: replies before any user message (an imported chat)
    assistant_response: str | None
    timestamp: str
    source: str | None
    channel: str | None
    metadata: dict[str, Any]
    stamped: bool = True  # False: no timestamp was given (``timestamp`` is the ingest's time)
    replied: str | None = None  # the assistant's time when it differs (an imported chat)


CHUNK_PAIRS = 1000
"""Pairs extracted, embedded and stored together. A file read whole was held whole: 90 000
pairs peaked at 702 MB (the statements' vectors, the plans of every pair); a chunk holds
~5 MB, and embeds in batches as large as before."""


@dataclass(slots=True)
class Ingested:
    """What one pair did."""

    line: int
    conversation_id: str
    episodes: list[str] = field(default_factory=list)  # ids of the episodes stored
    claims: list[tuple[Claim, list[Claim]]] = field(default_factory=list)  # added, superseded

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "session_id": self.conversation_id,
            "episodes": self.episodes,
            "duplicate": not self.episodes,
            "claims": [
                {
                    "claim": f"#{claim.number}",
                    "reference": f"@{claim.friendly_id}",
                    "category": claim.claim_type,
                    "statement": claim.statement,
                    "supersedes": [f"#{old.number}" for old in superseded],
                }
                for claim, superseded in self.claims
            ],
        }

    def describe(self) -> str:
        if not self.episodes:
            return f"line {self.line}: already stored"
        count = len(self.episodes)
        parts = [f"line {self.line}: {count} episode{'s' * (count != 1)} stored"]
        for claim, superseded in self.claims:
            replaced = (
                f" (supersedes {', '.join(f'#{old.number}' for old in superseded)})"
                if superseded
                else ""
            )
            parts.append(
                f"added #{claim.number} @{claim.friendly_id} [{claim.claim_type}] "
                f"{claim.statement}{replaced}"
            )
        return "; ".join(parts)


def parse_pairs(data: bytes, source: str) -> list[Pair]:
    """The pairs of a JSONL file; ``ImportFailed`` naming every bad line (nothing is
    stored), ``UserError`` for a file that is not UTF-8."""
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")  # a byte-order mark is no data
    except UnicodeDecodeError as error:
        raise UserError(
            f"{source}: not valid UTF-8 (byte {data[error.start]:#04x} at offset {error.start})"
        ) from None
    pairs: list[Pair] = []
    problems: list[str] = []
    # Lines end at \n (and \r\n) only: U+2028 and the like may stand raw inside a JSON
    # string, where str.splitlines() would cut it.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            pairs.append(pair_from(json.loads(line), number))
        except json.JSONDecodeError as error:
            problems.append(f"line {number}: not JSON ({error.msg} at column {error.colno})")
        except ValueError as error:
            problems.append(f"line {number}: {error}")
    if problems:
        raise ImportFailed(source, problems)
    if not pairs:
        raise UserError(f"{source}: no message pairs")
    return pairs


def pair_from(value: Any, line: int = 1) -> Pair:
    """A pair from its JSON object; ``ValueError`` saying what is wrong."""
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object with contentSessionId and userMessage")
    conversation = value.get("contentSessionId")
    if not isinstance(conversation, str) or not conversation.strip():
        raise ValueError("contentSessionId is missing or not a non-empty string")
    if len(conversation) > MAX_SESSION_ID:
        raise ValueError(f"contentSessionId is longer than {MAX_SESSION_ID} characters")
    message = value.get("userMessage")
    if not isinstance(message, str) or blank(message):
        raise ValueError("userMessage is missing or not a non-empty string")
    answer = value.get("assistantResponse")
    if answer is not None and not isinstance(answer, str):
        raise ValueError("assistantResponse must be a string")
    for name, text in (("userMessage", message), ("assistantResponse", answer or "")):
        if len(text) > MAX_MESSAGE:
            raise ValueError(
                f"{name} has {len(text):,} characters; a message may have {MAX_MESSAGE:,}"
            )
    for name in ("source", "channel"):
        if value.get(name) is not None and not isinstance(value.get(name), str):
            raise ValueError(f"{name} must be a string")
    metadata = value.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValueError("metadata must be a JSON object")
    when = value.get("timestamp")
    if when is None:
        stamp = now()
    elif not isinstance(when, str):
        raise ValueError("timestamp must be an ISO 8601 string")
    else:
        try:
            stamp = timestamp(when)
        except OutOfRange as error:
            raise ValueError(f"timestamp {error}") from None
        except ValueError:
            raise ValueError(f"timestamp {when!r} is not an ISO 8601 date or time") from None
    return Pair(
        line=line,
        conversation_id=conversation.strip(),
        user_message=message,
        assistant_response=answer if answer and answer.strip() else None,
        timestamp=stamp,
        source=value.get("source"),
        channel=value.get("channel"),
        metadata=metadata or {},
        stamped=when is not None,
    )


class Ingester:
    """Stores message pairs for one user and extracts their claims."""

    def __init__(
        self,
        store: Store,
        user: str,
        records: Records,
        resolver: Callable[[], Resolver],
        *,
        command: str | None = None,
        timeout_s: float = 30.0,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        """``resolver`` gives a resolver for the episodes' references (asked for only when a
        message has one); ``command``: the ``extractor_command``."""
        self.store = store
        self.user = user
        self.records = records
        self.resolver = resolver
        self.command = command
        self.timeout_s = timeout_s
        self.warn = warn or log.warning

    def ingest(
        self, pairs: Sequence[Pair], progress: Callable[[str, int, int], None] | None = None
    ) -> list[Ingested]:
        """Store ``pairs`` in order, each whole: its new messages, the references in them and
        the claims extracted from its user message, in one transaction. A message is thus
        stored with all that comes of it or not at all, and an ingest cut short (killed, a
        full disk) is finished by ingesting the same pairs again: those stored are "already
        stored", the rest are stored then, as they would have been.

        The slow part — extraction, the statements' embeddings (the model loads), resolving
        the references — is done first, for the messages not stored yet, outside any
        transaction, for ``CHUNK_PAIRS`` pairs at a time (what is held in memory meanwhile
        does not grow with the file). ``progress(stage, done, total)`` hears of each pair
        read (``read``) and stored (``store``)."""
        report = progress or (lambda stage, done, total: None)
        created = now()
        results: list[Ingested] = []
        for start in range(0, len(pairs), CHUNK_PAIRS):
            chunk = pairs[start : start + CHUNK_PAIRS]

            def told(stage: str, done: int, _total: int, start: int = start) -> None:
                report(stage, start + done, len(pairs))

            results += self._ingest_chunk(chunk, created, told)
        return results

    def _ingest_chunk(
        self, pairs: Sequence[Pair], created: str, report: Callable[[str, int, int], None]
    ) -> list[Ingested]:
        """``ingest`` of at most ``CHUNK_PAIRS`` pairs: the pairs before are stored, so a
        message repeated from them is "already stored" and a short answer's question is
        their last stored reply, as within one chunk."""
        planned = [(pair, self._episodes(pair, created)) for pair in pairs]
        known = self.store.stored_keys(self.user, [e.key for _, turns in planned for e in turns])
        fresh = [(pair, [e for e in turns if e.key not in known]) for pair, turns in planned]
        asked = self._questions(pairs)
        found: dict[int, list[Extracted]] = {}
        for done, (pair, turns) in enumerate(fresh, start=1):
            if any(e.role == "user" for e in turns):
                found[pair.line] = self._extract(pair, asked.get(pair.line))
            report("read", done, len(fresh))
        # One batch of embeddings for the chunk's statements (one at a time, embedding was 60 % of
        # ingestion), then the claims in order: each may supersede those before it.
        statements = [claim.statement for claims in found.values() for claim in claims]
        vectors = iter(self.records.embed(statements) or [None] * len(statements))
        references = self._resolve([e for _, turns in fresh for e in turns])
        results = {pair.line: Ingested(pair.line, pair.conversation_id) for pair in pairs}
        for done, (pair, turns) in enumerate(fresh, start=1):
            extracted = [(claim, next(vectors)) for claim in found.get(pair.line, ())]
            if turns:
                self._store(pair, turns, extracted, references, results[pair.line])
            report("store", done, len(fresh))
        return [results[pair.line] for pair in pairs]

    def _episodes(self, pair: Pair, created: str) -> list[Episode]:
        """The pair's messages as episodes: the user's, then the assistant's reply, if any."""
        turns = [] if pair.user_message is None else [("user", pair.user_message)]
        if pair.assistant_response is not None:
            turns.append(("assistant", pair.assistant_response))
        return [
            Episode(
                episode_id=new_uuid(),
                user=self.user,
                conversation_id=pair.conversation_id,
                role=role,
                text=text,
                occurred_at=pair.replied
                if role == "assistant" and pair.replied
                else pair.timestamp,
                created_at=created,
                source=pair.source,
                channel=pair.channel,
                meta=pair.metadata,
                stamped=pair.stamped,
            )
            for role, text in turns
        ]

    def _store(
        self,
        pair: Pair,
        turns: Sequence[Episode],
        extracted: Sequence[tuple[Extracted, Any]],
        references: Mapping[str, Sequence[tuple[str, str, str]]],
        result: Ingested,
    ) -> None:
        """One pair's new messages, their references and the user message's claims (with
        their embeddings), in one transaction."""
        with self.store.transaction():
            # A message stored since the check (an earlier line of the same file, another
            # process) is left as it is, and gives no claims.
            stored = self.store.add_episodes(turns)
            rows = [
                EpisodeRef(episode.row, "direct", kind, target, label)
                for episode in stored
                for kind, target, label in references.get(episode.key, ())
            ]
            if rows:
                self.store.add_episode_refs(rows)
            for episode in stored:
                result.episodes.append(episode.episode_id)
                if episode.role != "user":
                    continue
                for claim, vector in extracted:
                    added = self.records.add_claim(
                        claim.statement,
                        claim_type=claim.category,
                        derived_from=(episode.episode_id,),
                        valid_from=pair.timestamp,
                        vector=vector,
                    )
                    result.claims.append((added, list(self.records.last_superseded)))

    def _questions(self, pairs: Sequence[Pair]) -> dict[int, str]:
        """For each pair whose user message is a short answer ("yes, two kids"), the
        assistant's message before it — the previous pair's reply in this batch, else the
        conversation's last stored reply up to the pair's time — by line."""
        found: dict[int, str] = {}
        last: dict[str, str | None] = {}
        for pair in pairs:
            if pair.user_message is not None and short_answer(pair.user_message):
                if pair.conversation_id in last:
                    before = last[pair.conversation_id]
                else:
                    stored = self.store.conversation_episodes(self.user, pair.conversation_id)
                    replies = [
                        e.text
                        for e in stored
                        if e.role == "assistant" and e.occurred_at <= pair.timestamp
                    ]
                    before = replies[-1] if replies else None
                if before:
                    found[pair.line] = before
            last[pair.conversation_id] = pair.assistant_response
        return found

    def _extract(self, pair: Pair, question: str | None = None) -> list[Extracted]:
        if self.command:
            try:
                return answers_to_extracted(
                    ask(
                        self.command,
                        {"userMessage": pair.user_message or "",
                         "assistantResponse": pair.assistant_response},
                        self.timeout_s,
                    )
                )  # fmt: skip
            except CommandFailed as failure:
                self.warn(f"extractor_command failed ({failure}); used the built-in extractor")
        return extract(pair.user_message or "", pair.assistant_response, question=question)

    def _resolve(self, episodes: Sequence[Episode]) -> dict[str, list[tuple[str, str, str]]]:
        """The references in each episode's text (by ``Episode.key``), each as what it
        names — ``(kind, target, label)`` — resolved now, before anything is stored."""
        found: dict[str, list[tuple[str, str, str]]] = {}
        resolver: Resolver | None = None
        for episode in episodes:
            tokens = refs.parse(episode.text, markdown=True).references
            if not tokens:
                continue
            resolver = resolver or self.resolver()
            named = found.setdefault(episode.key, [])
            for reference in tokens:
                kind, target = ref_target(resolver.resolve(reference, members=False))
                # Two links to one note ([[Alice Profile]], [[alice]]) are one reference.
                if kind == "unresolved" or all((k, t) != (kind, target) for k, t, _ in named):
                    named.append((kind, target, reference.text))
        return found


def ref_target(resolution: Resolution) -> tuple[str, str]:
    """What a resolved reference names, as stored with an episode: its kind and its id (a
    claim's uuid, a note's key, a friendly id, a domain), or ``unresolved`` and ''."""
    if resolution.error is not None or resolution.kind is None:
        return "unresolved", ""
    if resolution.kind == "note":
        note = resolution.note.note if resolution.note is not None else None
        return ("note", note.key) if note is not None else ("unresolved", "")
    if resolution.kind == "claim" and resolution.claims:
        return "claim", resolution.claims[0].claim_id
    return resolution.kind, resolution.id or ""
