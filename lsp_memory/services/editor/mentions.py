"""Unlinked mentions (docs/reference.md, Unlinked mentions), both ways: in a document, the
places that name another note by its title or alias without linking it, each with the link
that would replace it ("Link to [[Title]]"); and for a note, the other notes that mention it
without linking it (``lspMemory.unlinkedMentions``, ``lsp-memory mentions``).

Where a Markdown text may mention a note: outside its front matter, fenced code, code spans,
Obsidian comments (``%% … %%``), reference tokens (``[[links]]``, embeds, ``@id``, ``#N``),
Markdown links and images, HTML tags and autolinks, bare URLs and ``#tags``. The names and
the quiet rule are the vault's :class:`~lsp_memory.notes.mentions.MentionIndex`.

Staying fast: the index is built once per note set; a code action scans only the lines of
its range (the hidden ranges and tokens are found over the whole text, in C-speed regex
passes). Looking for the notes that mention one note reads a file only when its indexed
plain text holds one of the note's names.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_memory import refs
from lsp_memory.errors import UnresolvedReference
from lsp_memory.model import Note, RefKind
from lsp_memory.notes import VaultView
from lsp_memory.notes.mentions import NOT_A_TARGET, Mention, MentionIndex
from lsp_memory.notes.noteset import fold
from lsp_memory.notes.parse import front_matter_end
from lsp_memory.services.editor.references import Document, Place, read_note
from lsp_memory.text import one_line

__all__ = ["LinkSuggestion", "Mentions", "mention_record"]

SNIPPET_WIDTH = 120

# Markdown that is not prose to link in: links and images, HTML tags and autolinks, bare
# URLs, Obsidian #tags. Each pattern starts with a literal character, so the regex engine
# jumps from candidate to candidate (one alternation with an optional first character tried
# every position: 20 ms on a 1 000-line document).
_NOT_PROSE = (
    ("[", re.compile(r"\[[^\[\]\r\n]*\]\([^()\r\n]*\)")),
    ("<", re.compile(r"<[^<>\r\n]+>")),
    ("#", re.compile(r"(?<![\w#&])\#[\w/-]+")),
    ("://", re.compile(r"://[^\s<>()\[\]]+")),
)
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class LinkSuggestion:
    """``text[start:end]`` mentions ``note``; ``new_text`` is the link to put there."""

    start: int
    end: int
    note: Note
    target: str  # what the link names the note by
    new_text: str  # ``[[target]]``, or ``[[target|as written]]`` when written otherwise

    @property
    def title(self) -> str:
        return f"Link to [[{self.target}]]"


def prose_segments(text: str) -> list[tuple[int, int]]:
    """The sorted, disjoint ranges of Markdown ``text`` where a note may be mentioned."""
    return _regions(text)[0]


@functools.lru_cache(maxsize=4)
def _regions(text: str) -> tuple[list[tuple[int, int]], frozenset[str]]:
    """:func:`prose_segments` of ``text``, and the targets of its ``[[links]]`` (one parse
    for both; remembered for the last few texts: an editor asks for code actions at every
    cursor move over the same text). Read only."""
    references = refs.parse(text, markdown=True).references
    skipped = [(0, front_matter_end(text))]
    skipped += refs.hidden(text)
    skipped += [(r.offset, r.end) for r in references]
    for first, pattern in _NOT_PROSE:
        if first in text:
            skipped += [m.span() for m in pattern.finditer(text)]
    skipped = [
        _with_scheme(text, span) if text.startswith("://", span[0]) else span for span in skipped
    ]
    skipped.sort()
    segments: list[tuple[int, int]] = []
    at = 0
    for start, end in skipped:
        if start > at:
            segments.append((at, start))
        at = max(at, end)
    if at < len(text):
        segments.append((at, len(text)))
    return segments, frozenset(r.target for r in references if r.kind is RefKind.NOTE)


def _with_scheme(text: str, span: tuple[int, int]) -> tuple[int, int]:
    """A URL's span from its ``://`` on, widened to its scheme (``https``)."""
    start = span[0]
    while start > 0 and text[start - 1] in _SCHEME_CHARS:
        start -= 1
    return start, span[1]


class Mentions:
    """Unlinked mentions over the vaults of one snapshot."""

    def __init__(self, vaults: Sequence[VaultView]) -> None:
        self.vaults = vaults

    # -- in a document ---------------------------------------------------------------------

    def in_document(
        self, document: Document, start: int = 0, end: int | None = None
    ) -> list[LinkSuggestion]:
        """The unlinked mentions in ``document`` that meet ``text[start:end]`` (touching
        counts), by position: none of a note the document links already, nor of the note
        it is, nor by its names. Nothing for a document that is not Markdown."""
        text = document.text
        if not refs.is_markdown(document.language_id, document.uri or _str(document.path)):
            return []
        end = len(text) if end is None else end
        # Only the lines of the range are scanned: a mention never spans lines.
        low = max(text.rfind("\n", 0, start), text.rfind("\r", 0, start)) + 1
        high = _line_end(text, end)
        segments, targets = _regions(text)
        window = [(max(a, low), min(b, high)) for a, b in segments if a < high and b > low]
        own, vaults = self._own(document)
        skip = _linked(targets, vaults)
        if own is not None:
            skip |= {own.path, *_folded_names(own)}
        found: list[LinkSuggestion] = []
        taken: list[tuple[int, int]] = []
        for vault in vaults:
            for mention in vault.mentions().find(text, window, skip=frozenset(skip)):
                if mention.end < start or mention.start > end:
                    continue
                if any(a < mention.end and mention.start < b for a, b in taken):
                    continue  # an earlier vault's name is there
                suggestion = self._suggestion(text, vault, mention)
                if suggestion is not None:
                    found.append(suggestion)
                    taken.append((mention.start, mention.end))
        found.sort(key=lambda s: s.start)
        return found

    def _own(self, document: Document) -> tuple[Note | None, Sequence[VaultView]]:
        """The note ``document`` is and its vault (the only one whose notes it links), or
        None and every vault."""
        if document.path is not None:
            for vault in self.vaults:
                note = vault.note_at(document.path)
                if note is not None:
                    return note, [vault]
        return None, self.vaults

    def _suggestion(self, text: str, vault: VaultView, mention: Mention) -> LinkSuggestion | None:
        note = vault.notes.get(mention.name.path)
        if note is None:
            return None
        target = self.link_target(note)
        if target is None:
            return None
        written = text[mention.start : mention.end]
        new_text = f"[[{target}]]" if written == target else f"[[{target}|{written}]]"
        return LinkSuggestion(mention.start, mention.end, note, target, new_text)

    def link_target(self, note: Note) -> str | None:
        """What a ``[[link]]`` names ``note`` by: its title when that resolves to it (from
        every vault, in order), else its path without the extension; None when neither
        does."""
        path = note.path.rsplit(".", 1)[0] if "." in note.path.rpartition("/")[2] else note.path
        for target in (note.title, path):
            if NOT_A_TARGET.search(target) or not target.strip():
                continue
            if self._resolves_to(target, note):
                return target
        return None

    def _resolves_to(self, target: str, note: Note) -> bool:
        for vault in self.vaults:
            found = vault.resolve(target).note
            if found is not None:
                return found.vault == note.vault and found.path == note.path
        return False

    # -- of a note ---------------------------------------------------------------------------

    def note_named(self, text: str, cwd: Path | None = None) -> Note:
        """The note ``text`` names: ``[[Target]]``, a note's file (absolute or from
        ``cwd``), or a title, alias, path or file name as a link target would give it.
        ``UnresolvedReference`` with one line when it names no note."""
        wanted = text.strip()
        if not self.vaults:
            raise UnresolvedReference("no vault to look in (set `vaults` or pass --vault DIR)")
        if wanted.startswith("[[") and wanted.endswith("]]"):
            parsed = refs.parse(wanted).references
            if len(parsed) == 1 and parsed[0].kind is RefKind.NOTE:
                wanted = parsed[0].target
        if not wanted:
            raise UnresolvedReference(f"not a note: {text!r}")
        file = Path(wanted) if cwd is None else cwd / wanted
        if wanted.lower().endswith((".md", ".markdown")) and file.is_file():
            for vault in self.vaults:
                note = vault.note_at(file.resolve())
                if note is not None:
                    return note
        for vault in self.vaults:
            found = vault.resolve(wanted)
            if found.note is not None:
                return found.note
        raise UnresolvedReference(f"Note not found: {text.strip()}")

    def of_note(self, note: Note, documents: Sequence[Document] = ()) -> list[tuple[Note, Place]]:
        """The unlinked mentions of ``note`` in the other notes of its vault that do not link
        it, each with the note it is in, by path then position; a note open in
        ``documents`` is read from its buffer."""
        vault = next((v for v in self.vaults if str(v.root) == note.vault), None)
        if vault is None:
            return []
        names = vault.mentions().of(note.path)
        if not names.names:
            return []
        linking = {source.path for source, _ in vault.backlinks(note.path)}
        opened: dict[str, Document] = {}  # path in the vault → its open buffer
        for buffer in documents:
            found = None if buffer.path is None else vault.note_at(buffer.path)
            if found is not None:
                opened[found.path] = buffer
        places: list[tuple[Note, Place]] = []
        notes = vault.notes
        for path in sorted(notes):
            other = notes[path]
            if path == note.path or path in linking:
                continue
            document = opened.get(path)
            if document is None:
                if not _may_mention(names, other.body):
                    continue
                document = read_note(Path(other.vault) / path)
                if document is None:
                    continue
            text = document.text
            segments, targets = _regions(text)
            if note.path in _linked(targets, [vault]):
                continue  # its unsaved text links it
            for mention in names.find(text, segments):
                places.append((other, Place(document, mention.start, mention.end)))
        return places


def mention_record(note: Note, place: Place) -> dict[str, Any]:
    """A mention as JSON: the note it is in (its path in the vault, title, file), its
    0-based LSP range (UTF-16 columns), the text and its line cut to a snippet."""
    document = place.document
    text = document.text
    line_start = max(text.rfind("\n", 0, place.start), text.rfind("\r", 0, place.start)) + 1
    line = len(_LINE_BREAK.findall(text, 0, line_start))
    start = refs.utf16_len(text[line_start : place.start])
    end = start + refs.utf16_len(text[place.start : place.end])
    return {
        "note": note.path,
        "title": note.title,
        "file": str(Path(note.vault) / note.path),
        "range": {
            "start": {"line": line, "character": start},
            "end": {"line": line, "character": end},
        },
        "text": text[place.start : place.end],
        "snippet": snippet(text, place.start, place.end),
    }


def snippet(text: str, start: int, end: int) -> str:
    """The line of ``text[start:end]``, on one line, cut around it to
    :data:`SNIPPET_WIDTH` characters."""
    line_start = max(text.rfind("\n", 0, start), text.rfind("\r", 0, start)) + 1
    line = text[line_start : _line_end(text, end)]
    at = start - line_start
    if len(line) > SNIPPET_WIDTH:
        begin = max(0, min(at - SNIPPET_WIDTH // 3, len(line) - SNIPPET_WIDTH))
        line = ("…" if begin else "") + line[begin:]
    return one_line(line, SNIPPET_WIDTH)


def _line_end(text: str, pos: int) -> int:
    found = _LINE_BREAK.search(text, pos)
    return found.start() if found else len(text)


def _folded_names(note: Note) -> set[str]:
    return {fold(note.title), *(fold(alias) for alias in note.aliases)}


def _may_mention(names: MentionIndex, body: str) -> bool:
    """Whether a note's plain text (white space folded, Markdown stripped) holds one of
    ``names``: a quick test before its file is read, which may pass a note the scan then
    finds nothing in, never the reverse (casefold and ``in``: a tenth of a case-blind
    regex's time over 10 000 notes)."""
    folded = body.casefold()
    return any(name.core in folded for name in names.names)


def _linked(targets: frozenset[str], vaults: Sequence[VaultView]) -> set[str]:
    """The paths of the notes the link ``targets`` name in ``vaults``."""
    found: set[str] = set()
    for target in targets:
        for vault in vaults:
            note = vault.resolve(target).note
            if note is not None:
                found.add(note.path)
                break
    return found


def _str(path: Path | None) -> str | None:
    return None if path is None else str(path)
