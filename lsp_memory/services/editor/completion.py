"""Completion of references as they are typed: ``@`` memories, ``#`` claim numbers, ``[[``
notes, ``[[Note#`` headings and ``[[Note#^`` blocks. Pure over the store, the full-text index
and the vaults (and a linked note's text, its editor buffer when open); the language server
converts the candidates to LSP items.

A block that has no ``^id`` yet gets one when chosen: the candidate carries the edit that
appends `` ^id`` to the block's last line in the target note (:func:`block_id_write`), which
the server sends with the item (the same document) or asks the client to apply (another
note).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from lsp_memory.errors import UserError
from lsp_memory.ids import name_key
from lsp_memory.model import LIVE_STATUSES, Claim, Note, Tag, doc_key
from lsp_memory.notes import VaultView
from lsp_memory.notes.parse import NEWLINE, decode
from lsp_memory.notes.parts import TextBlock, new_block_id, read_text, text_blocks
from lsp_memory.services.kernel import tokens
from lsp_memory.store.fulltext import FullTextIndex
from lsp_memory.store.sqlite import Listed, Store

LIMIT = 50
_LIVE = tuple(status.value for status in LIVE_STATUSES)
_OPENERS = " \t([{\"'"
_MEMORY = re.compile(r"@([A-Za-z0-9_:-]*)$")
_NUMBER = re.compile(r"#([0-9]*)$")
_NOTE = re.compile(r"(!?)\[\[([^\[\]|#\r\n]*)(?:#([^\[\]|\r\n]*))?$")
_CLAIM_N = re.compile(r"claim_([0-9]*)")
_BLOCK_ID = re.compile(r"[A-Za-z0-9-]+")


@dataclass(frozen=True, slots=True)
class Typed:
    """The reference being typed at the cursor."""

    kind: Literal["memory", "number", "note", "heading", "block"]
    prefix: str  # what follows the trigger (or the heading part after '#', the id after '#^')
    start: int  # where the replaced text starts: the '@'/'#', after '[[', or after '[[Note#'
    note: str = ""  # for headings and blocks: the note target
    closed: bool = False  # for notes: ']]' already follows the cursor (the edit covers it)


def typed_at(line: str, column: int) -> Typed | None:
    """What reference, if any, ``line[:column]`` ends in the middle of."""
    before = line[:column]
    note = _NOTE.search(before)
    if note is not None:
        closed = line[column:].startswith("]]")
        if note.group(3) is not None:  # only the heading after '#' is replaced
            target = note.group(2).strip()
            if note.group(3).startswith("^"):  # a block: '^' and what follows are replaced
                return Typed("block", note.group(3)[1:], note.start(3), note=target, closed=closed)
            return Typed("heading", note.group(3), note.start(3), note=target, closed=closed)
        start = note.start() + len(note.group(1)) + 2
        return Typed("note", note.group(2), start, closed=closed)
    for pattern, kind in ((_MEMORY, "memory"), (_NUMBER, "number")):
        found = pattern.search(before)
        if found is not None and (found.start() == 0 or before[found.start() - 1] in _OPENERS):
            return Typed(kind, found.group(1), found.start())  # type: ignore[arg-type]
    return None


@dataclass(frozen=True, slots=True)
class Candidate:
    """One completion: what it inserts over ``[typed.start, cursor)`` (and over the ``]]``
    after the cursor when ``typed.closed``) and how it shows."""

    label: str
    kind: str  # claim, context, entity, tag, domain, note, heading
    insert: str
    detail: str
    documentation: str  # Markdown
    sort: str
    filter: str
    inactive: bool = False  # a non-live claim, a trashed entity, an archived note
    write: BlockIdWrite | None = None  # for a block without an id: the id to write


@dataclass(frozen=True, slots=True)
class BlockIdWrite:
    """Insert ``text`` (`` ^id``) at ``offset`` of the note file ``path`` (``line`` and
    ``column``: the same place as a line and a string index on it): the new id of the
    block whose first line is ``first``."""

    path: Path
    first: int
    line: int
    column: int
    offset: int
    text: str
    block_id: str


def block_id_write_file(path: Path, first: int, block_id: str) -> tuple[str, BlockIdWrite]:
    """:func:`block_id_write` over the note file ``path`` as it is on disk: its text and the
    edit. Raises ``UserError`` when it cannot be read or the edit cannot be made."""
    try:
        text = decode(path.read_bytes())
    except OSError as error:
        raise UserError(f"{path}: cannot read it ({error.strerror or error})") from None
    return text, block_id_write(path, text, first, block_id)


def block_id_write(path: Path, text: str, first: int, block_id: str) -> BlockIdWrite:
    """The edit that gives the block starting on line ``first`` of ``text`` the id
    ``block_id``: `` ^id`` at the end of its last line (on a line of its own after a blank
    line under a table, as Obsidian writes it). Raises ``UserError`` when no block starts
    there, when it has an id already, or when the note has one named ``block_id``."""
    blocks = text_blocks(text)
    block = next((b for b in blocks if b.first == first), None)
    if block is None:
        raise UserError(f"{path.name}: no paragraph or list item starts on line {first + 1}")
    if block.id is not None:
        raise UserError(f"{path.name}: the block on line {first + 1} has an id: ^{block.id}")
    if not _BLOCK_ID.fullmatch(block_id):
        raise UserError(f"^{block_id}: a block id is letters, digits and hyphens")
    if any(b.id == block_id for b in blocks):
        raise UserError(f"{path.name}: ^{block_id} names another block already")
    return _write(path, text, _line_starts(text), block, block_id)


def _line_starts(text: str) -> list[int]:
    """The offset where each line of ``text`` starts (LSP line breaks)."""
    return [0, *(found.end() for found in NEWLINE.finditer(text))]


def _write(
    path: Path, text: str, starts: list[int], block: TextBlock, block_id: str
) -> BlockIdWrite:
    """The edit appending ``block_id`` to ``block`` of ``text`` (lines starting at
    ``starts``); see :func:`block_id_write`."""
    end = NEWLINE.search(text, starts[block.last])
    content = text[starts[block.last] : end.start() if end else len(text)]
    column = len(content.rstrip())
    table = content.lstrip().startswith("|")
    written = f"\n\n^{block_id}" if table else f" ^{block_id}"
    offset = starts[block.last] + column
    return BlockIdWrite(path, block.first, block.last, column, offset, written, block_id)


@dataclass(frozen=True, slots=True)
class _Groups:
    """The user's contexts (rows, by row), tags and domains, and the keys ``@`` completion
    matches a typed prefix against, sorted so the matches are found by bisection: a
    context's friendly id (lower-cased) and name key, a tag's friendly id and name
    (lower-cased), ``<domain>_domain``. Read once per store change, not per keystroke
    (listing and comparing 2 000 contexts each time took ~4 ms)."""

    contexts: list[int]
    context_ids: list[str]  # their friendly ids
    tags: list[Tag]
    domains: list[str]
    keys: list[str]
    owners: list[tuple[int, int]]  # per key: (0 context, 1 tag, 2 domain; index in its list)

    @classmethod
    def of(cls, store: Store, user: str) -> _Groups:
        found = store.context_names(user)
        tags = store.tags(user)
        domains = store.domains(user)
        pairs = [
            *((key, 0, i) for i, (_, f, n) in enumerate(found) for key in (f.lower(), name_key(n))),
            *(
                (key, 1, i)
                for i, t in enumerate(tags)
                for key in (t.friendly_id.lower(), t.name.lower())
            ),
            *((f"{domain}_domain", 2, i) for i, domain in enumerate(domains)),
        ]
        pairs.sort()
        return cls(
            [row for row, _, _ in found],
            [friendly_id for _, friendly_id, _ in found],
            tags,
            domains,
            [key for key, _, _ in pairs],
            [(group, i) for _, group, i in pairs],
        )

    def matching(self, prefix: str) -> tuple[list[int], list[int], list[int]]:
        """The indexes of the contexts, tags and domains with a key starting with
        ``prefix``, each list in its original order."""
        hits: tuple[set[int], set[int], set[int]] = (set(), set(), set())
        keys = self.keys
        at = bisect_left(keys, prefix)
        while at < len(keys) and keys[at].startswith(prefix):
            group, index = self.owners[at]
            hits[group].add(index)
            at += 1
        return sorted(hits[0]), sorted(hits[1]), sorted(hits[2])


_GROUPS = {"context": "0", "claim": "1", "entity": "2", "tag": "3", "domain": "4"}


def _sort(exact: bool, inactive: bool, kind: str, then: str) -> str:
    """Exact prefixes of the id first, live before retracted and the like, then contexts,
    claims, entities, tags, domains, then ``then`` (a rank or a name)."""
    return f"{0 if exact else 1}{1 if inactive else 0}{_GROUPS.get(kind, '5')}{then}"


def _claim_candidate(claim: Claim | Listed, label: str, typed: str, then: str) -> Candidate:
    status = "" if claim.status.value == "active" else f" · {claim.status.value}"
    questions = "".join(f"\n- {q}" for q in claim.possible_questions)
    return Candidate(
        label=label,
        kind="claim",
        insert=label,
        detail=f"#{claim.number} · {claim.claim_type}{status} · "
        f"{tokens.count(claim.statement)} tokens",
        documentation=f"{claim.statement}\n\n`@{claim.friendly_id}` · `#{claim.number}`"
        + (f"\n\nAnswers:{questions}" if questions else ""),
        sort=_sort(
            label[1:].lower().startswith(typed), claim.status.value not in _LIVE, "claim", then
        ),
        filter=f"{label} {claim.statement}",
        inactive=claim.status.value not in _LIVE,
    )


class Completer:
    """Completion candidates for one user."""

    def __init__(
        self,
        store: Store,
        text: FullTextIndex | None,
        vaults: Sequence[VaultView],
        user: str,
        buffers: Mapping[str, str] | None = None,
    ) -> None:
        self.store = store
        self.text = text
        self.vaults = vaults
        self.user = user
        self.buffers = buffers or {}  # the open editor buffers' text, by file path

    def complete(self, typed: Typed) -> tuple[list[Candidate], bool]:
        """Candidates, best first, and whether the list is incomplete (more would match)."""
        if typed.kind == "memory":
            found = self._memories(typed.prefix)
        elif typed.kind == "number":
            found = self._numbers(typed.prefix)
        elif typed.kind == "note":
            found = self._notes(typed.prefix)
        elif typed.kind == "block":
            found = self._blocks(typed.note, typed.prefix)
        else:
            found = self._headings(typed.note, typed.prefix)
        # Before a vault's notes are first known (a server just started), `[[` may find
        # nothing: the client asks again as the user types, instead of keeping that.
        waiting = typed.kind == "note" and not all(vault.loaded for vault in self.vaults)
        return found[:LIMIT], len(found) > LIMIT or typed.kind == "memory" or waiting

    # -- @ ----------------------------------------------------------------------------------

    def _memories(self, prefix: str) -> list[Candidate]:
        if prefix.startswith(("memory:", "mem:")):
            return []  # a UUID is pasted, not typed
        user, low = self.user, prefix.lower()
        found: dict[str, Candidate] = {}
        # The labels of matching contexts left unread (below): a later item of the same
        # label would have been dropped for the context's, and still is.
        unread: set[str] = set()

        def add(candidate: Candidate) -> None:
            if candidate.label not in unread:
                found.setdefault(candidate.label, candidate)

        number = _CLAIM_N.fullmatch(low)
        if number is not None:
            for claim in self.store.claims_by_number_prefix(user, number.group(1)):
                add(_claim_candidate(claim, f"@claim_{claim.number}", low, f"{claim.number:09d}"))
        groups = self.store.remembered(("@ groups", user), lambda: _Groups.of(self.store, user))
        contexts, tags, domains = groups.matching(low)
        # Only the contexts that can be among the first LIMIT + 1 items are read and made
        # into items, in their items' order (their id starting with the input, then the id):
        # `@` alone read all 2 000 contexts, `@c` 227, to keep 50.
        ids = groups.context_ids
        contexts.sort(key=lambda i: (not ids[i].lower().startswith(low), ids[i]))
        unread.update(f"@{ids[i]}" for i in contexts[LIMIT + 1 :])
        unread.difference_update(found)
        for context in self.store.contexts_by_rows(
            [groups.contexts[i] for i in contexts[: LIMIT + 1]]
        ):
            key = name_key(context.name)
            order = "0" if context.friendly_id.lower().startswith(low) else "1"
            add(
                Candidate(
                    label=f"@{context.friendly_id}",
                    kind="context",
                    insert=f"@{context.friendly_id}",
                    detail=f"context · {context.name}",
                    documentation=f"**{context.name}**\n\n{context.description}".strip(),
                    sort=_sort(order == "0", False, "context", context.friendly_id),
                    filter=f"@{context.friendly_id} @{key} {context.name}",
                )
            )
        for tag in (groups.tags[i] for i in tags):
            add(
                Candidate(
                    label=f"@{tag.friendly_id}",
                    kind="tag",
                    insert=f"@{tag.friendly_id}",
                    detail=f"tag · {tag.name}",
                    documentation=f"Claims tagged **{tag.name}** or a tag beneath it.",
                    sort=_sort(
                        tag.friendly_id.lower().startswith(low), False, "tag", tag.friendly_id
                    ),
                    filter=f"@{tag.friendly_id} {tag.name}",
                )
            )
        for domain in (groups.domains[i] for i in domains):
            label = f"@{domain}_domain"
            add(
                Candidate(
                    label=label,
                    kind="domain",
                    insert=label,
                    detail="domain",
                    documentation=f"Every live claim in the **{domain}** domain.",
                    sort=_sort(True, False, "domain", label),
                    filter=label,
                )
            )
        if not prefix:
            for claim in self.store.recent_claims(user, 20):
                add(_claim_candidate(claim, f"@{claim.friendly_id}", "", f"~{claim.updated_at}"))
            return sorted(found.values(), key=lambda c: c.sort)
        if self.text is not None:
            hits = self.text.prefix(
                prefix, user=user, kinds={"claim", "context", "entity"}, k=LIMIT
            )
            # The hits' claims in one query, only what a candidate shows (one lookup each
            # took 5 ms for 50; whole records 0.7 ms for 35).
            claims = {
                claim.friendly_id: claim
                for claim in self.store.listed_claims(
                    user, [doc_key(h.id) for h in hits if h.kind == "claim"]
                )
            }
            for rank, hit in enumerate(hits):
                label = f"@{hit.key}"
                if hit.kind == "claim":
                    match = claims.get(hit.key)
                    if match is not None:
                        add(_claim_candidate(match, label, low, f"{rank:04d}"))
                    continue
                add(
                    Candidate(
                        label=label,
                        kind=hit.kind,
                        insert=label,
                        detail=f"{hit.kind} · {hit.title}",
                        documentation=f"**{hit.title}**\n\n{hit.snippet}".strip(),
                        sort=_sort(
                            hit.key.lower().startswith(low),
                            hit.status not in _LIVE,
                            hit.kind,
                            f"{rank:04d}",
                        ),
                        filter=f"{label} {hit.title}",
                        inactive=hit.status not in _LIVE,
                    )
                )
        return sorted(found.values(), key=lambda c: c.sort)

    # -- # ----------------------------------------------------------------------------------

    def _numbers(self, digits: str) -> list[Candidate]:
        claims = self.store.claims_by_number_prefix(self.user, digits, LIMIT + 1)
        # By number alone: shorter numbers first (#4 before #42), whatever the status.
        return [
            replace(
                _claim_candidate(c, f"#{c.number}", "", ""),
                sort=f"{len(str(c.number)):02d}{c.number:010d}",
            )
            for c in claims
        ]

    # -- [[ ---------------------------------------------------------------------------------

    def _notes(self, typed: str) -> list[Candidate]:
        scored: list[tuple[int, str, Note]] = []
        for vault in self.vaults:
            notes = vault.notes
            scored += [
                (s, path, notes[path]) for s, path in vault.names().matches(typed, LIMIT + 1)
            ]
        scored.sort(key=lambda item: (item[0], len(item[1]), item[1]))
        del scored[LIMIT + 1 :]
        return [
            Candidate(
                label=note.title,
                kind="note",
                insert=note.title + "]]",
                detail=f"note · {note.path}" + (" · archived" if note.archived else ""),
                documentation=f"**{note.title}** — `{note.path}`\n\n{note.body[:400]}".strip(),
                sort=f"{score}{len(path):04d}{path}",
                filter=" ".join([note.title, *note.aliases, note.path]),
                inactive=note.archived,
            )
            for score, path, note in scored
        ]

    def _headings(self, target: str, typed: str) -> list[Candidate]:
        for vault in self.vaults:
            found = vault.resolve(target)
            if found.note is None:
                continue
            want = typed.strip().casefold()
            return [
                Candidate(
                    label=heading.text,
                    kind="heading",
                    insert=heading.text + "]]",
                    detail=f"{'#' * heading.level} heading · line {heading.line + 1}",
                    documentation=f"In **{found.note.title}** (`{found.note.path}`)",
                    sort=f"{_match(want, heading.text.casefold())}{index:04d}",
                    filter=heading.text,
                )
                for index, heading in enumerate(found.note.headings)
                if _match(want, heading.text.casefold()) < 9
            ]
        return []

    def _blocks(self, target: str, typed: str) -> list[Candidate]:
        """The target note's paragraphs and list items matching ``typed`` (against their id
        and first words), the best :data:`LIMIT` + 1, each in the note's order."""
        for vault in self.vaults:
            found = vault.resolve(target)
            note = found.note
            if note is None:
                continue
            path = Path(note.vault) / note.path
            text = self.buffers.get(str(path))
            if text is None:
                text = read_text(note)
            blocks = text_blocks(text)
            taken = {b.id for b in blocks if b.id is not None}
            want = typed.strip().casefold()
            scored = [
                (score, index, block)
                for index, block in enumerate(blocks)
                if (
                    score := min(
                        _match(want, (block.id or "").casefold()),
                        _match(want, block.label.casefold()),
                    )
                )
                < 9
            ]
            scored.sort(key=lambda item: item[:2])
            starts = _line_starts(text)
            candidates = []
            for score, index, block in scored[: LIMIT + 1]:
                block_id = block.id or new_block_id(block.text, taken)
                taken.add(block_id)
                where = "list item" if block.kind == "item" else "paragraph"
                write = None if block.id else _write(path, text, starts, block, block_id)
                candidates.append(
                    Candidate(
                        label=block.label,
                        kind="block",
                        insert=f"^{block_id}]]",
                        detail=f"^{block.id}" if block.id else f"{where} · line {block.first + 1}",
                        documentation=f"{block.text}\n\nIn **{note.title}** (`{note.path}`)",
                        sort=f"{score}{index:05d}",
                        filter=f"^{block.id or ''} {block.label}",
                        write=write,
                    )
                )
            return candidates
        return []


def _match(want: str, name: str) -> int:
    """How well ``name`` matches what was typed: 0 prefix, 1 a word's prefix, 2 substring,
    3 the letters in order (fuzzy), 9 not at all."""
    if not want or name.startswith(want):
        return 0
    if any(word.startswith(want) for word in re.split(r"[\s/_.-]+", name)):
        return 1
    if want in name:
        return 2
    letters = iter(name)
    return 3 if all(char in letters for char in want) else 9
