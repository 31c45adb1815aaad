"""Chat histories exported from ChatGPT and Claude (``lsp-memory import-chat``): each
conversation becomes a conversation of the memory, each message an episode, and what the user
says about themselves becomes claims, exactly as ``ingest`` does it
(``services.conversations.ingest``) — so importing a file twice stores nothing new.

Both services export a ``conversations.json`` (inside a ``.zip``; either is read):

- **ChatGPT**: a list of conversations, each with ``id`` (or ``conversation_id``), ``title``,
  ``create_time`` (seconds since 1970), ``mapping`` (message nodes by id, each with ``parent``,
  ``children`` and ``message``: ``author.role``, ``create_time``, ``content.content_type`` and
  ``content.parts``, ``metadata``) and ``current_node``. A conversation is a tree: an edited
  question or a regenerated reply starts a branch. The thread read is the one the user last
  saw — from ``current_node`` up to the root — and the other branches are left out (counted).
  Only ``text`` and ``multimodal_text`` messages of the user and the assistant are read; their
  string parts are the text (an image part is left out); system, tool and hidden messages
  (``metadata.is_visually_hidden_from_conversation``, such as custom instructions) are not
  messages of the conversation.
- **Claude**: a list of conversations, each with ``uuid``, ``name``, ``created_at`` and
  ``chat_messages`` (each with ``uuid``, ``sender`` ``human`` or ``assistant``, ``created_at``,
  ``text`` and/or ``content`` — the ``text`` items of which are the text — and ``attachments``
  / ``files``). Attachments are documents, not things the user said: their names are kept in
  the episode's metadata, their content is not read.

A user message and the assistant's replies up to the next user message are one pair (replies
joined by a blank line); an assistant message before any user message is stored alone. Empty
messages are skipped (counted). The whole file is checked first: every bad record is named
(conversation number and id, message id) and nothing is stored. A message longer than
``MAX_MESSAGE`` is kept cut to that length, with a warning.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from lsp_memory.errors import ImportFailed, UserError
from lsp_memory.ids import OutOfRange, timestamp
from lsp_memory.services.conversations.ingest import MAX_MESSAGE, MAX_SESSION_ID, Pair

FORMATS = ("chatgpt", "claude")
MAX_EXPORT = 2 * 1024**3
"""Bytes of ``conversations.json`` read from a ``.zip`` (a larger one is refused)."""


@dataclass(frozen=True, slots=True)
class Message:
    role: str  # "user" or "assistant"
    text: str
    when: str  # ISO 8601
    message_id: str
    attachments: tuple[str, ...] = ()


@dataclass(slots=True)
class Conversation:
    """One exported conversation, read and checked."""

    number: int  # its place in the file, from 1
    session_id: str  # "chatgpt-<id>" / "claude-<uuid>"
    title: str
    messages: list[Message] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)  # why → how many

    def skip(self, why: str, count: int = 1) -> None:
        if count:
            self.skipped[why] = self.skipped.get(why, 0) + count


@dataclass(slots=True)
class Export:
    """A whole export file, read and checked: its conversations and what was cut."""

    source: str
    format: str
    conversations: list[Conversation]
    warnings: list[str] = field(default_factory=list)

    def pairs(self) -> list[tuple[Conversation, Pair]]:
        """Every conversation's messages as ingest pairs, in order, each with its
        conversation (a pair's ``line`` numbers the pairs of the whole file from 1)."""
        found: list[tuple[Conversation, Pair]] = []
        for conversation in self.conversations:
            for user, replies in _turns(conversation.messages):
                head = user or replies[0]
                found.append(
                    (
                        conversation,
                        Pair(
                            line=len(found) + 1,
                            conversation_id=conversation.session_id,
                            user_message=user.text if user else None,
                            assistant_response="\n\n".join(r.text for r in replies) or None,
                            timestamp=head.when,
                            source=self.format,
                            channel="import",
                            metadata=_metadata(conversation, user, replies),
                            replied=replies[0].when if replies else None,
                        ),
                    )
                )
        return found


def read_export(data: bytes, source: str, format: str | None = None) -> Export:
    """The conversations of an export (``conversations.json`` or the ``.zip`` holding it);
    ``format`` None: told by the records' fields. ``ImportFailed`` naming every bad record,
    ``UserError`` for a file that is no export at all."""
    records = _records(_json_of(data, source), source)
    if format is None:
        format = _guess(records, source)
    elif format not in FORMATS:
        raise UserError(f"--format {format!r}: expected one of {', '.join(FORMATS)}")
    read = _chatgpt if format == "chatgpt" else _claude
    export = Export(source, format, [])
    problems: list[str] = []
    for number, record in enumerate(records, start=1):
        try:
            conversation = read(record, number)
        except ValueError as error:
            problems.append(f"conversation {number}{_named(record)}: {error}")
            continue
        for message in conversation.messages:
            if len(message.text) > MAX_MESSAGE:
                export.warnings.append(
                    f"conversation {number}, message {message.message_id}: "
                    f"{len(message.text):,} characters, kept the first {MAX_MESSAGE:,}"
                )
        conversation.messages = [
            Message(m.role, m.text[:MAX_MESSAGE], m.when, m.message_id, m.attachments)
            for m in conversation.messages
        ]
        export.conversations.append(conversation)
    if problems:
        raise ImportFailed(source, problems, unit="conversation")
    return export


def _json_of(data: bytes, source: str) -> Any:
    if data[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                inner = [
                    n for n in archive.namelist() if n.rsplit("/", 1)[-1] == "conversations.json"
                ]
                if not inner:
                    raise UserError(f"{source}: a .zip without conversations.json")
                if archive.getinfo(inner[0]).file_size > MAX_EXPORT:
                    raise UserError(f"{source}: conversations.json is larger than 2 GiB")
                data = archive.read(inner[0])
        except (zipfile.BadZipFile, OSError) as error:
            raise UserError(f"{source}: not a readable .zip ({error})") from None
    try:
        return json.loads(data.decode("utf-8").removeprefix("\ufeff"))
    except UnicodeDecodeError as error:
        raise UserError(
            f"{source}: not valid UTF-8 (byte {data[error.start]:#04x} at offset {error.start})"
        ) from None
    except json.JSONDecodeError as error:
        raise UserError(
            f"{source}: not JSON ({error.msg} at line {error.lineno} column {error.colno})"
        ) from None


def _records(value: Any, source: str) -> list[Any]:
    if isinstance(value, dict) and isinstance(value.get("conversations"), list):
        value = value["conversations"]
    if not isinstance(value, list):
        raise UserError(f"{source}: expected a list of conversations (conversations.json)")
    if not value:
        raise UserError(f"{source}: no conversations")
    return value


def _guess(records: list[Any], source: str) -> str:
    for record in records:
        if isinstance(record, dict) and "mapping" in record:
            return "chatgpt"
        if isinstance(record, dict) and "chat_messages" in record:
            return "claude"
    raise UserError(
        f"{source}: neither a ChatGPT export (conversations with a mapping) nor a Claude "
        "export (conversations with chat_messages); --format says which"
    )


def _named(record: Any) -> str:
    if isinstance(record, dict):
        for key in ("id", "conversation_id", "uuid"):
            if isinstance(record.get(key), str) and record[key]:
                return f" ({record[key][:60]})"
    return ""


def _session(prefix: str, record: dict[str, Any], *keys: str) -> str:
    for key in keys:
        value = record.get(key)
        if isinstance(value, str) and value.strip():
            return f"{prefix}-{value.strip()}"[:MAX_SESSION_ID]
    raise ValueError(f"no {' or '.join(keys)}")


def _title(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _chatgpt(record: Any, number: int) -> Conversation:
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    mapping = record.get("mapping")
    if not isinstance(mapping, dict):
        raise ValueError("mapping is missing or not an object")
    conversation = Conversation(
        number, _session("chatgpt", record, "id", "conversation_id"), _title(record.get("title"))
    )
    thread = _thread(mapping, record.get("current_node"))
    when = _epoch(record.get("create_time"), "create_time")
    for node_id in thread:
        message = mapping[node_id].get("message")
        if message is None:
            continue  # the root holds none
        if not isinstance(message, dict):
            raise ValueError(f"message of node {node_id}: not an object")
        message_id = str(message.get("id") or node_id)
        author = message.get("author")
        role = author.get("role") if isinstance(author, dict) else None
        content = message.get("content")
        if not isinstance(content, dict):
            raise ValueError(f"message {message_id}: content is missing or not an object")
        stamp = message.get("create_time")
        if stamp is not None:
            when = _epoch(stamp, f"message {message_id}: create_time")
        meta = message.get("metadata")
        hidden = isinstance(meta, dict) and meta.get("is_visually_hidden_from_conversation")
        if role not in ("user", "assistant") or hidden:
            conversation.skip("system, tool or hidden")
            continue
        if content.get("content_type") not in ("text", "multimodal_text"):
            conversation.skip("tool calls and results")
            continue
        parts = content.get("parts")
        if not isinstance(parts, list):
            raise ValueError(f"message {message_id}: content.parts is not a list")
        text = "\n".join(p for p in parts if isinstance(p, str)).strip()
        if not text:
            conversation.skip("empty")
            continue
        if when is None:
            raise ValueError(f"message {message_id}: no create_time, and none for the conversation")
        conversation.messages.append(Message(role, text, when, message_id))
    others = sum(1 for node in mapping.values() if isinstance(node, dict) and node.get("message"))
    conversation.skip(
        "on other branches", others - sum(1 for n in thread if mapping[n].get("message"))
    )
    return conversation


def _thread(mapping: dict[str, Any], current: Any) -> list[str]:
    """The ids of the thread the user last saw, root first: from ``current_node`` up the
    parents (without one: down the newest child of each node)."""
    for node_id, node in mapping.items():
        if not isinstance(node, dict):
            raise ValueError(f"node {node_id}: not an object")
    if current is None:
        roots = [i for i, node in mapping.items() if node.get("parent") not in mapping]
        if not roots:
            raise ValueError("no root node and no current_node")
        current = roots[0]
        while True:
            children = [c for c in mapping[current].get("children") or [] if c in mapping]
            if not children:
                break
            current = children[-1]
    if not isinstance(current, str) or current not in mapping:
        raise ValueError(f"current_node {current!r} is not a node of the mapping")
    thread: list[str] = []
    seen: set[str] = set()
    step: Any = current
    while step is not None:
        if step in seen:
            raise ValueError(f"node {step}: its parents make a cycle")
        if step not in mapping:
            raise ValueError(f"parent {step!r} is not a node of the mapping")
        seen.add(step)
        thread.append(step)
        step = mapping[step].get("parent")
    return thread[::-1]


def _epoch(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} is not a number of seconds")
    try:
        return timestamp(datetime.fromtimestamp(value, UTC).isoformat())
    except (OverflowError, OSError, ValueError, OutOfRange):
        raise ValueError(f"{what} {value!r} is not a time") from None


def _claude(record: Any, number: int) -> Conversation:
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    messages = record.get("chat_messages")
    if not isinstance(messages, list):
        raise ValueError("chat_messages is missing or not a list")
    conversation = Conversation(
        number, _session("claude", record, "uuid", "id"), _title(record.get("name"))
    )
    when = _iso(record.get("created_at"), "created_at")
    for place, message in enumerate(messages, start=1):
        if not isinstance(message, dict):
            raise ValueError(f"message {place}: not an object")
        message_id = str(message.get("uuid") or place)
        sender = message.get("sender")
        if sender not in ("human", "assistant"):
            raise ValueError(f"message {message_id}: sender {sender!r} is not human or assistant")
        if message.get("created_at") is not None:
            when = _iso(message.get("created_at"), f"message {message_id}: created_at")
        text = _claude_text(message, message_id)
        files = tuple(
            str(item["file_name"])
            for key in ("attachments", "files")
            for item in message.get(key) or ()
            if isinstance(item, dict) and item.get("file_name")
        )
        if not text:
            conversation.skip("empty")
            continue
        if when is None:
            raise ValueError(f"message {message_id}: no created_at, and none for the conversation")
        role = "user" if sender == "human" else "assistant"
        conversation.messages.append(Message(role, text, when, message_id, files))
    return conversation


def _claude_text(message: dict[str, Any], message_id: str) -> str:
    content = message.get("content")
    if isinstance(content, list):
        texts = [
            item["text"]
            for item in content
            if isinstance(item, dict)
            and item.get("type") == "text"
            and isinstance(item.get("text"), str)
        ]
        if texts:
            return "\n\n".join(texts).strip()
    text = message.get("text")
    if text is not None and not isinstance(text, str):
        raise ValueError(f"message {message_id}: text is not a string")
    return (text or "").strip()


def _iso(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{what} is not an ISO 8601 string")
    try:
        return timestamp(value)
    except (ValueError, OutOfRange):
        raise ValueError(f"{what} {value!r} is not an ISO 8601 date or time") from None


def _turns(messages: Iterable[Message]) -> list[tuple[Message | None, list[Message]]]:
    """The messages as (user message, the assistant's replies to it) in order; replies
    before any user message have None."""
    turns: list[tuple[Message | None, list[Message]]] = []
    for message in messages:
        if message.role == "user" or not turns:
            turns.append((message, []) if message.role == "user" else (None, [message]))
        else:
            turns[-1][1].append(message)
    return turns


def _metadata(
    conversation: Conversation, user: Message | None, replies: list[Message]
) -> dict[str, Any]:
    found: dict[str, Any] = {"title": conversation.title} if conversation.title else {}
    found["message_ids"] = [m.message_id for m in ([user] if user else []) + replies]
    files = [name for m in ([user] if user else []) + replies for name in m.attachments]
    if files:
        found["attachments"] = files
    return found


def summary(export: Export, results: Iterable[tuple[Conversation, int, int]]) -> list[str]:
    """One line per conversation: its title, messages stored (and already stored), claims
    added, what was skipped; ``results``: per pair, its conversation, the episodes it stored
    and the claims it added."""
    done: dict[str, list[int]] = {}
    for conversation, episodes, claims in results:
        counts = done.setdefault(conversation.session_id, [0, 0])
        counts[0] += episodes
        counts[1] += claims
    lines = []
    for conversation in export.conversations:
        episodes, claims = done.get(conversation.session_id, [0, 0])
        planned = sum(
            (user is not None) + bool(replies) for user, replies in _turns(conversation.messages)
        )
        skipped = ", ".join(f"{n} {why}" for why, n in conversation.skipped.items())
        lines.append(
            f"{conversation.title or '(untitled)'} [{conversation.session_id}]: "
            f"{episodes} message{'s' * (episodes != 1)} stored"
            + (f" ({planned - episodes} already stored)" if planned > episodes else "")
            + f", {claims} claim{'s' * (claims != 1)} added"
            + (f"; skipped {skipped}" if skipped else "")
        )
    return lines
