"""The parts of a note's text that a link or an embed can name (docs/reference.md, Block
references and embeds): the whole note without its front matter, one heading's section, or
one block — a paragraph or a list item, with its ``^id`` when it has one.

Pure over text (and :func:`read_text`, which reads a note's file). A block's id is read the
way :func:`lsp_memory.notes.parse.build_note` reads it, so a ``[[Note#^id]]`` that resolves to
a :class:`~lsp_memory.model.Block` finds its :class:`TextBlock` here by line.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from lsp_memory.model import Block, Heading, Note
from lsp_memory.notes.parse import BLOCK_ID, NEWLINE, decode, front_matter_close

__all__ = [
    "TextBlock",
    "block_of",
    "embedded_part",
    "new_block_id",
    "note_markdown",
    "read_text",
    "text_blocks",
]

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_ITEM = re.compile(r"[ \t]*(?:[-*+]|[0-9]{1,9}[.)])(?:[ \t]|$)")
_RULE = re.compile(r" {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})")
_ALONE_ID = re.compile(r"[ \t]*\^([A-Za-z0-9-]+)[ \t]*")
_FIRST_WORDS = 60


@dataclass(frozen=True, slots=True)
class TextBlock:
    """A paragraph or a list item of a note: its first and last lines (0-based, inclusive),
    its ``^id`` (without ``^``) and the line holding it (the last line, or the ``^id`` line
    after the block), and its text without the id."""

    kind: str  # "paragraph" or "item"
    first: int
    last: int
    text: str
    id: str | None = None
    id_line: int | None = None

    @property
    def label(self) -> str:
        """The block's first words, on one line: what completion shows."""
        words = " ".join(self.text.split())
        if self.kind == "item":
            words = _ITEM.sub("", words, count=1)
        if len(words) <= _FIRST_WORDS:
            return words
        return words[:_FIRST_WORDS].rsplit(" ", 1)[0] + "…"


def read_text(note: Note) -> str:
    """A note's text as its file holds it (the parsed body when it cannot be read): read once
    per version of the note the vault knows (its content hash), so completion after
    ``[[Note#^`` and the hover of an embed — both answered on the event loop, keystroke after
    keystroke — read the file once, not on every request."""
    return _read(str(Path(note.vault) / note.path), note.content_hash, note.body)


@functools.lru_cache(maxsize=16)
def _read(path: str, content_hash: str, body: str) -> str:
    try:
        return decode(Path(path).read_bytes())
    except OSError:
        return body


def text_blocks(text: str) -> list[TextBlock]:
    """The blocks of ``text``, in order (see :func:`_text_blocks`); the last few texts'
    are remembered (read only), so typing after ``[[Note#^`` splits the note once."""
    return _text_blocks(text)


@functools.lru_cache(maxsize=8)
def _text_blocks(text: str) -> list[TextBlock]:
    """The paragraphs and list items of ``text``, in order; front matter, headings, fenced
    code, thematic breaks and blank lines are no blocks. A list item runs to the next item or
    the first blank line; a line holding only ``^id`` after a block (directly or after one
    blank line, as Obsidian writes an id under a table or a quote) gives that block its id."""
    lines = NEWLINE.split(text)
    blocks: list[TextBlock] = []
    number = _body_start(lines)
    fence = ""
    current: list[int] = []  # the lines of the block being read
    kind = "paragraph"

    def close() -> None:
        if current:
            blocks.append(_block(kind, lines, current))
            current.clear()

    while number < len(lines):
        line = lines[number]
        if fence:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = ""
            number += 1
            continue
        opening = _FENCE.match(line)
        alone = _ALONE_ID.fullmatch(line)
        if opening is not None:
            close()
            fence = opening.group(1)
        elif alone is not None and blocks and not current and _follows(lines, number, blocks[-1]):
            previous = blocks[-1]
            if previous.id is None:
                blocks[-1] = TextBlock(
                    previous.kind,
                    previous.first,
                    previous.last,
                    previous.text,
                    alone.group(1),
                    number,
                )
        elif not line.strip() or _HEADING.match(line) or _RULE.fullmatch(line):
            close()
        elif _ITEM.match(line):
            close()
            kind = "item"
            current.append(number)
        else:
            if not current:
                kind = "paragraph"
            current.append(number)
        number += 1
    close()
    return blocks


def block_of(text: str, block: Block) -> TextBlock | None:
    """The block of ``text`` that ``block`` (a resolved ``^id``) names: the one whose id is on
    its line, else the first with its id (the text changed since the note was parsed)."""
    found = text_blocks(text)
    return next((b for b in found if b.id_line == block.line and b.id == block.id), None) or next(
        (b for b in found if b.id == block.id), None
    )


def note_markdown(text: str, heading: Heading | None = None) -> str:
    """A note's Markdown without its front matter, or with ``heading`` just that heading's
    section (the heading line to the next heading of the same or a higher level)."""
    lines = NEWLINE.split(text)
    if heading is not None and heading.line < len(lines):
        end = len(lines)
        in_fence = False
        for number in range(heading.line + 1, len(lines)):
            stripped = lines[number].lstrip(" ")
            if stripped.startswith(("```", "~~~")):
                in_fence = not in_fence
            level = len(stripped) - len(stripped.lstrip("#"))
            if (
                not in_fence
                and 1 <= level <= heading.level
                and stripped[level : level + 1] in (" ", "\t", "")
            ):
                end = number
                break
        lines = lines[heading.line : end]
    else:
        lines = lines[_body_start(lines) :]
    return "\n".join(line.rstrip() for line in lines).strip("\n")


def embedded_part(text: str, heading: Heading | None = None, block: Block | None = None) -> str:
    """What ``![[Note]]``, ``![[Note#Heading]]`` or ``![[Note#^id]]`` shows of a note whose
    text is ``text``: the note without front matter, the heading's section, or the block's
    text (empty when the block is no longer there)."""
    if block is not None:
        found = block_of(text, block)
        return found.text if found is not None else ""
    return note_markdown(text, heading)


def new_block_id(text: str, taken: set[str]) -> str:
    """A short id for a block whose text is ``text``, not in ``taken``: six lower-case
    letters and digits taken from the text's hash (the same block gets the same id), as
    Obsidian's own ids look."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    salt = 0
    while True:
        found = digest[:6]
        if found not in taken and not found.isdigit():
            return found
        salt += 1
        digest = hashlib.sha256(f"{salt}:{text}".encode("utf-8", "surrogatepass")).hexdigest()


def _block_id(line: str) -> re.Match[str] | None:
    """The ``^id`` ending ``line``: searched from its last ``^`` only (the pattern's
    look-behinds tried at every position made listing a long note's blocks 30 times
    slower)."""
    caret = line.rfind("^")
    return None if caret < 0 else BLOCK_ID.search(line, caret)


def _body_start(lines: list[str]) -> int:
    """The first line after the front matter (0 when there is none)."""
    end = front_matter_close(lines)
    return 0 if end is None else end + 1


def _follows(lines: list[str], number: int, block: TextBlock) -> bool:
    """Whether line ``number`` comes right after ``block`` or after one blank line."""
    gap = number - block.last
    return gap == 1 or (gap == 2 and not lines[number - 1].strip())


def _block(kind: str, lines: list[str], numbers: list[int]) -> TextBlock:
    """The block of ``lines[numbers]``: its id read off the last of its lines that ends in
    one (as the parser reads it, any line of the block)."""
    texts = [lines[n].strip() for n in numbers]
    block_id = id_line = None
    for index in range(len(numbers) - 1, -1, -1):
        found = _block_id(lines[numbers[index]])
        if found is not None:
            block_id, id_line = found.group(1), numbers[index]
            texts[index] = lines[numbers[index]][: found.start()].strip()
            break
    return TextBlock(
        kind, numbers[0], numbers[-1], "\n".join(t for t in texts if t), block_id, id_line
    )
