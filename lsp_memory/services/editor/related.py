"""Related-note suggestions: for the paragraph under the cursor, the few notes and claims
closest to it by meaning that its document does not link or reference yet (docs/reference.md,
Related notes).

The paragraph (its links read as their words, other references left out) is embedded as a
query and searched by cosine alone over live claims and unarchived notes; a hit is offered
when its raw cosine reaches ``threshold`` (``related_similarity``), at most ``LIMIT`` of them,
best first. Never offered: the document's own note, and every note and claim the document
already links or references (whatever its paragraph), nor another user's claims. A paragraph
of fewer than ``MIN_WORDS`` words, a heading, front matter or code gets nothing: too little
meaning to judge.

Pure over a snapshot's search, resolver and vaults; the embedding of a paragraph is kept
(``_Vectors``) so moving the cursor within it asks the model once.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_memory import refs
from lsp_memory.model import LIVE_STATUSES, RefKind, doc_id
from lsp_memory.notes import VaultView
from lsp_memory.notes.parse import front_matter_end
from lsp_memory.services.kernel.resolver import Resolver
from lsp_memory.services.retrieval.search import HybridSearch
from lsp_memory.store.vectors import ModelError
from lsp_memory.text import one_line

LIMIT = 3
"""Never more suggestions than this for one paragraph."""
MIN_WORDS = 8
"""A paragraph with fewer words gets no suggestion (a list item of two words, a label)."""
POOL = 12
"""Hits asked of the search: enough to leave ``LIMIT`` after what the document names."""
STATUSES = tuple(status.value for status in LIVE_STATUSES)
"""A claim's or note's status for it to be offered: live claims, unarchived notes."""
_WORD = re.compile(r"\w+")
_HEADING = re.compile(r"[ \t]{0,3}#{1,6}(?:[ \t]|$)")
_FENCE = re.compile(r"[ \t]{0,3}(?:```|~~~)")
_LINK_TEXT = re.compile(r"[\[\]|#^]")


@dataclass(frozen=True, slots=True)
class Suggestion:
    """One related note or claim, and the text that links or references it."""

    kind: str  # "note" or "claim"
    reference: str  # the text inserted: "[[Title]]", "@friendly_id"
    label: str  # a note's title, a claim's statement
    similarity: float  # raw cosine between the paragraph and it


@dataclass(frozen=True, slots=True)
class Paragraph:
    """The paragraph under the cursor: ``text[start:end]``, trailing white space excluded."""

    start: int
    end: int


def paragraph_at(text: str, offset: int) -> Paragraph | None:
    """The paragraph holding ``offset`` of Markdown ``text``: its run of non-blank lines,
    headings and fences ending it; None on a blank line, a heading, in front matter or code."""
    top = front_matter_end(text)
    if offset < top or refs.in_code(text, offset):
        return None
    lines = _lines(text)
    index = next((i for i, (s, e) in enumerate(lines) if s <= offset <= e), len(lines) - 1)
    if not _body(text, *lines[index]):
        return None
    first = last = index
    while first > 0 and lines[first - 1][0] >= top and _body(text, *lines[first - 1]):
        first -= 1
    while last + 1 < len(lines) and _body(text, *lines[last + 1]):
        last += 1
    start, end = lines[first][0], lines[last][1]
    while end > start and text[end - 1].isspace():
        end -= 1
    return Paragraph(start, end) if end > start else None


def _lines(text: str) -> list[tuple[int, int]]:
    """Each line's start and end (before its line break) as string offsets."""
    found: list[tuple[int, int]] = []
    start = 0
    for match in re.finditer(r"\r\n|\r|\n", text):
        found.append((start, match.start()))
        start = match.end()
    found.append((start, len(text)))
    return found


def _body(text: str, start: int, end: int) -> bool:
    """Whether a line belongs to a paragraph: not blank, not a heading, not a fence."""
    line = text[start:end]
    return bool(line.strip()) and not _HEADING.match(line) and not _FENCE.match(line)


def query_text(paragraph: str) -> str:
    """What is embedded for a paragraph: its words, a link read as its label or target, other
    references (``@id``, ``#N``) left out."""
    pieces: list[str] = []
    start = 0
    for reference in refs.parse(paragraph, markdown=True).references:
        pieces.append(paragraph[start : reference.offset])
        if reference.kind is RefKind.NOTE:
            pieces.append(reference.label or reference.target)
        start = reference.end
    pieces.append(paragraph[start:])
    return " ".join("".join(pieces).split())


class _Vectors:
    """The embeddings of the last paragraphs asked about, by embedder and text
    (thread-safe). An entry holds its embedder, so another embedder never takes its id."""

    SIZE = 64

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[int, str], tuple[object, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, embedder: object, text: str) -> Any:
        key = (id(embedder), text)
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                return None
            self._kept.move_to_end(key)
            return found[1]

    def put(self, embedder: object, text: str, vector: Any) -> None:
        with self._lock:
            self._kept[(id(embedder), text)] = (embedder, vector)
            while len(self._kept) > self.SIZE:
                self._kept.popitem(last=False)


_VECTORS = _Vectors()


class Suggester:
    """Related-note suggestions over one snapshot's search, resolver and vaults."""

    def __init__(
        self, search: HybridSearch, resolver: Resolver, vaults: Sequence[VaultView], user: str
    ) -> None:
        self.search = search
        self.resolver = resolver
        self.vaults = vaults
        self.user = user

    def suggest(
        self,
        text: str,
        offset: int,
        *,
        threshold: float,
        path: str | None = None,
        language_id: str | None = None,
        wait: bool = True,
    ) -> tuple[Paragraph | None, list[Suggestion]]:
        """The paragraph at ``offset`` of a document and what to suggest for it. Without
        ``wait``, a paragraph not embedded yet gets nothing while the embedding helper is
        not running: it is started, and the next request answers."""
        if not refs.is_markdown(language_id, path) or not self.search.semantic:
            return None, []
        paragraph = paragraph_at(text, offset)
        if paragraph is None:
            return None, []
        query = query_text(text[paragraph.start : paragraph.end])
        if len(_WORD.findall(query)) < MIN_WORDS:
            return paragraph, []
        vector = self._vector(query, wait)
        if vector is None:
            return paragraph, []
        # The user's claims and the vaults' notes (the search gives both to every user).
        hits = sorted(
            self.search.search(
                query,
                user=self.user,
                kinds=("claim", "note"),
                statuses=STATUSES,
                k=2 * POOL,
                mode="dense",
                query_vector=vector,
            ),
            key=lambda hit: (-hit.similarity, hit.id),
        )
        hits = [hit for hit in hits if hit.similarity >= threshold]
        if not hits:
            return paragraph, []
        # Only now: parsing and resolving a long document's references costs more than the
        # search (~100 ms for 5 000 references).
        named = self._named(text, language_id, path)
        found: list[Suggestion] = []
        for hit in hits:
            if hit.id in named:
                continue
            found.append(self._suggestion(hit.id, hit.kind, hit.key, hit.title, hit.similarity))
            if len(found) == LIMIT:
                break
        return paragraph, found

    def _vector(self, query: str, wait: bool) -> Any:
        embedder = self.search.embedder
        assert embedder is not None  # ``semantic``
        # Not by model id: asking a remote embedder for it starts its helper.
        vector = _VECTORS.get(embedder, query)
        if vector is not None:
            return vector
        if not wait and getattr(embedder, "pid", 0) is None:
            warm = getattr(embedder, "warm", None)
            if warm is not None:
                warm()
            return None
        try:
            vector = embedder.embed([query])[0]
        except ModelError:  # the helper exited or hung: no suggestion, the other actions stand
            return None
        _VECTORS.put(embedder, query, vector)
        return vector

    def _named(self, text: str, language_id: str | None, path: str | None) -> set[str]:
        """The index ids of what the document is (its note) and what it names."""
        named: set[str] = set()
        if path is not None:
            for vault in self.vaults:
                note = vault.note_at(Path(path))
                if note is not None:
                    named.add(doc_id("note", note.key))
        seen: set[tuple[RefKind, str]] = set()
        for reference in refs.parse_document(text, language_id, path).references:
            if (reference.kind, reference.target) in seen:
                continue
            seen.add((reference.kind, reference.target))
            resolution = self.resolver.resolve(reference, members=False)
            if resolution.note is not None and resolution.note.note is not None:
                named.add(doc_id("note", resolution.note.note.key))
            named.update(doc_id("claim", claim.claim_id) for claim in resolution.claims)
        return named

    def _suggestion(
        self, document: str, kind: str, key: str, title: str, similarity: float
    ) -> Suggestion:
        if kind == "claim":
            return Suggestion("claim", f"@{key}", one_line(title, 80), similarity)
        target = self._link_target(document, key, title)
        return Suggestion("note", f"[[{target}]]", title, similarity)

    def _link_target(self, document: str, path: str, title: str) -> str:
        """What to write between ``[[`` and ``]]`` for the note at ``path``: its title when
        that names it (as ``[[`` completion writes), else its path without ``.md``."""
        if not _LINK_TEXT.search(title):
            for vault in self.vaults:
                found = vault.resolve(title).note
                if found is not None and doc_id("note", found.key) == document:
                    return title
        return one_line(path.removesuffix(".md"), 200)
