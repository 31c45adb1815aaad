"""One Markdown file's bytes → a :class:`~lsp_memory.model.Note` (docs/reference.md, Notes).

Pure: no file system access. Reads the front matter (YAML between a leading ``---`` line and a
closing ``---`` or ``...`` line: ``title``, ``aliases``, ``tags``, ``archived``), the ATX headings
outside fenced code, the ``[[links]]`` (through :func:`lsp_memory.refs.parse`, so ranges are
positions in the whole file) and a plain-text body for search. Bad input never raises: the
note is still built and carries one warning line per problem, each starting with its path.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from lsp_memory import refs
from lsp_memory.model import Block, Heading, Note, Reference, RefKind

__all__ = [
    "BINARY_PROBE",
    "BLOCK_ID",
    "MAX_NOTE_BYTES",
    "NEWLINE",
    "TitleSpot",
    "build_note",
    "decode",
    "front_matter_close",
    "front_matter_end",
    "front_matter_scalar",
    "is_binary",
    "loose_key",
    "parse_note",
    "title_spot",
]

MAX_NOTE_BYTES = 10 * 1024 * 1024
"""Only this many leading bytes of a note are parsed; a longer note is indexed cut, with a
warning (its ``size`` and ``content_hash`` still cover the whole file)."""

BINARY_PROBE = 8192
"""A NUL byte in this many leading bytes marks a file as binary: not a note."""

# libyaml is ten times faster than the pure-Python loader; both are the "safe" loader.
_SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Line breaks as refs.py counts them, so heading lines agree with link ranges.
NEWLINE = _NEWLINE = re.compile(r"\r\n|\r|\n")
_FRONT_MATTER_OPEN = re.compile(r"---[ \t]*")
_FRONT_MATTER_CLOSE = re.compile(r"(?:---|\.\.\.)[ \t]*")
_ATX_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*)|[ \t]*)")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_TAG_SEPARATORS = re.compile(r"[,\s]+")
_LOOSE = re.compile(r"[\W_]+")
_TITLE_LINE = re.compile(r"title[ \t]*:[ \t]*(.*?)[ \t]*")


@dataclass(frozen=True, slots=True)
class TitleSpot:
    """Where a note's title comes from in its text (docs/reference.md, Notes).

    ``source`` is ``front-matter`` (the ``title`` value as written, quotes included),
    ``heading`` (the text of the first ``# `` heading) or ``file`` (the file name: nothing in
    the text, ``start == end == 0``, ``title`` None). ``start``/``end`` are string offsets.
    ``editable`` is False for a front-matter title that no one-line edit can replace (a
    block scalar, a value over several lines). ``front_matter`` is the offset where a new
    key line can go (just after the opening ``---`` line) when the note has front matter
    that reads as a mapping; ``broken`` says it has front matter that does not.
    """

    source: str
    start: int
    end: int
    title: str | None = None
    editable: bool = True
    front_matter: int | None = None
    broken: bool = False


def is_binary(data: bytes) -> bool:
    """Whether ``data`` looks binary: a NUL byte in its first :data:`BINARY_PROBE` bytes."""
    return b"\0" in data[:BINARY_PROBE]


def parse_note(vault: Path, path: Path, data: bytes, *, mtime_ns: int) -> Note:
    """The note in file ``path`` of ``vault``, whose bytes are ``data``.

    ``path`` is absolute (inside ``vault``) or vault-relative. Callers skip binary files
    (:func:`is_binary`) first: they are not notes. Never raises for bad content.
    """
    relative = path.relative_to(vault) if path.is_absolute() else path
    return build_note(
        str(vault.absolute()),
        relative.as_posix(),
        data[: MAX_NOTE_BYTES + 4],
        size=len(data),
        content_hash=hashlib.sha256(data).hexdigest(),
        mtime_ns=mtime_ns,
    )


def build_note(
    vault: str, path: str, head: bytes, *, size: int, content_hash: str, mtime_ns: int
) -> Note:
    """The note at vault-relative POSIX ``path`` from the leading bytes ``head`` of its file.

    ``size`` and ``content_hash`` describe the whole file; when ``size`` is over
    :data:`MAX_NOTE_BYTES` only ``head`` up to that limit is parsed, and a warning says so.
    """
    warnings: list[str] = []
    if size > MAX_NOTE_BYTES:
        head = _cut(head, MAX_NOTE_BYTES)
        warnings.append(
            f"{path}: {size / 2**20:.0f} MB, only the first {MAX_NOTE_BYTES // 2**20} MB "
            "are indexed"
        )
    text = _decode(head, path, warnings)
    lines = _NEWLINE.split(text)
    body_line, meta = _front_matter(lines, path, warnings)
    tokens = refs.parse(text, markdown=True).references
    links = tuple(r for r in tokens if r.kind is RefKind.NOTE)
    headings, code, fences = _blocks(lines, body_line)
    blocks = tuple(
        Block(found.group(1), number)
        for number in range(body_line, len(lines))
        if number not in code and "^" in lines[number]
        for found in [BLOCK_ID.search(lines[number])]
        if found is not None
    )
    title = meta.title or next((h.text for h in headings if h.level == 1 and h.text), None)
    return Note(
        vault=vault,
        path=path,
        title=title or PurePosixPath(path).stem,
        aliases=meta.aliases,
        tags=meta.tags,
        archived=meta.archived,
        headings=headings,
        links=links,
        body=_body(text, links, body_line, code, fences),
        size=size,
        mtime_ns=mtime_ns,
        content_hash=content_hash,
        warnings=tuple(warnings),
        mentions=tuple(
            dict.fromkeys(sys.intern(r.text) for r in tokens if r.kind is not RefKind.NOTE)
        ),
        blocks=blocks,
    )


def decode(data: bytes) -> str:
    """A note file's bytes as the text an editor shows: UTF-8 (bad bytes replaced), without
    a leading byte order mark. Offsets into it agree with the parsed note's."""
    return _decode(data, "", [])


def title_spot(text: str) -> TitleSpot:
    """Where the title of the note whose text is ``text`` comes from (see :class:`TitleSpot`),
    by the rule :func:`build_note` applies."""
    lines = _NEWLINE.split(text)
    starts = [0, *(match.end() for match in _NEWLINE.finditer(text))]
    problems: list[str] = []
    body_line, meta = _front_matter(lines, "", problems)
    insert: int | None = None
    broken = False
    if body_line > 0:
        try:
            data = yaml.load("\n".join(lines[1 : body_line - 1]), Loader=_SAFE_LOADER)
        except Exception:
            data = False  # unreadable: no key line can be added safely
        if data is None or isinstance(data, dict):
            insert = starts[1]
        else:
            broken = True
    elif _FRONT_MATTER_OPEN.fullmatch(lines[0]):
        broken = True  # opened, never closed
    if meta.title is not None:
        title = meta.title
        for number in range(body_line - 2, 0, -1):  # PyYAML keeps the last of a repeated key
            line = _TITLE_LINE.fullmatch(lines[number])
            if line is None:
                continue
            start, end = starts[number] + line.start(1), starts[number] + line.end(1)
            editable = _reads_as(line.group(1), title)
            return TitleSpot("front-matter", start, end, title, editable, insert, broken)
        return TitleSpot("front-matter", 0, 0, title, False, insert, broken)
    headings, _, _ = _blocks(lines, body_line)
    heading = next((h for h in headings if h.level == 1 and h.text), None)
    if heading is not None:
        match = _ATX_HEADING.fullmatch(lines[heading.line])
        if match is not None and match.group(2) is not None:
            written = match.group(2)
            start = starts[heading.line] + match.start(2) + len(written) - len(written.lstrip())
            end = start + len(heading.text)
            return TitleSpot("heading", start, end, heading.text, True, insert, broken)
    return TitleSpot("file", 0, 0, None, True, insert, broken)


def front_matter_end(text: str) -> int:
    """The string offset where the body of the note whose text is ``text`` starts: after
    its front matter's closing line, or 0 when it has none (one never closed is text)."""
    if not text.startswith("---"):
        return 0
    lines = _NEWLINE.split(text)
    if not _FRONT_MATTER_OPEN.fullmatch(lines[0]):
        return 0
    close = next((i for i in range(1, len(lines)) if _FRONT_MATTER_CLOSE.fullmatch(lines[i])), None)
    if close is None:
        return 0
    ends = [match.end() for match in _NEWLINE.finditer(text)]
    return ends[close] if close < len(ends) else len(text)


def front_matter_scalar(value: str) -> str:
    """``value`` written for a ``title: …`` front-matter line: plain when YAML reads it back
    unchanged, else double-quoted (JSON's escapes are YAML's)."""
    quoted = json.dumps(value, ensure_ascii=False)
    if value and "\n" not in value and "\r" not in value and _reads_as(value, value):
        return value
    return quoted


def _reads_as(written: str, title: str) -> bool:
    """Whether ``title: <written>`` reads back as the title ``title``."""
    try:
        data = yaml.load(f"title: {written}", Loader=_SAFE_LOADER)
    except Exception:
        return False
    return isinstance(data, dict) and _scalar(data.get("title")) == title


def loose_key(text: str) -> str:
    """``text`` case-folded without punctuation, white space or ``_``: for forgiving matches
    of headings (``working-style`` finds "Working Style")."""
    return _LOOSE.sub("", text.casefold())


def _cut(data: bytes, limit: int) -> bytes:
    """``data`` cut to at most ``limit`` bytes, never inside a UTF-8 sequence."""
    if len(data) <= limit:
        return data
    end = limit
    # A continuation byte (10xxxxxx) at the cut belongs to a character begun before it.
    while end > limit - 3 and data[end] & 0xC0 == 0x80:
        end -= 1
    return data[:end]


def _decode(data: bytes, path: str, warnings: list[str]) -> str:
    """``data`` as text: UTF-8, a leading byte order mark dropped, bad bytes replaced."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        text = data.decode("utf-8", errors="replace")
        warnings.append(
            f"{path}: not valid UTF-8 (byte {error.start}); undecodable bytes were replaced"
        )
    # Editors hide the BOM, so LSP columns on the first line count without it.
    return text.removeprefix("\ufeff")


@dataclass(slots=True)
class _Meta:
    """What the front matter says; defaults when it says nothing."""

    title: str | None = None
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    archived: bool = False


def front_matter_close(lines: list[str]) -> int | None:
    """The index of the closing line of the front matter that opens ``lines`` (split at
    :data:`NEWLINE`); None when they open with none, or it is never closed."""
    if not lines or not _FRONT_MATTER_OPEN.fullmatch(lines[0]):
        return None
    return next((i for i in range(1, len(lines)) if _FRONT_MATTER_CLOSE.fullmatch(lines[i])), None)


def _front_matter(lines: list[str], path: str, warnings: list[str]) -> tuple[int, _Meta]:
    """The index of the first line after the front matter (0 without one), and its fields."""
    meta = _Meta()
    if not _FRONT_MATTER_OPEN.fullmatch(lines[0]):
        return 0, meta
    close = front_matter_close(lines)
    if close is None:
        warnings.append(f"{path}: front matter has no closing '---' line; read as text")
        return 0, meta
    try:
        data = yaml.load("\n".join(lines[1:close]), Loader=_SAFE_LOADER)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        warnings.append(f"{path}: front matter is not valid YAML{where}: {problem}")
        return close + 1, meta
    except Exception as error:
        # The safe loader can still fail outside YAMLError (a date like 2024-13-45 raises
        # ValueError, deep nesting RecursionError); one odd note must not stop a scan.
        warnings.append(f"{path}: front matter cannot be read: {error}")
        return close + 1, meta
    if data is None:
        return close + 1, meta
    if not isinstance(data, dict):
        warnings.append(f"{path}: front matter is not a mapping of keys to values")
        return close + 1, meta

    def report(message: str) -> None:
        warnings.append(f"{path}: front matter {message}")

    title = data.get("title")
    if title is not None:
        text = _scalar(title)
        if text is None:
            report(f"'title' should be a string, not {_kind(title)}")
        meta.title = text or None
    meta.aliases = _strings(data.get("aliases"), "aliases", report, split=None)
    meta.tags = tuple(
        tag
        for tag in (t.lstrip("#") for t in _strings(data.get("tags"), "tags", report, split=True))
        if tag
    )
    archived = data.get("archived")
    if isinstance(archived, bool):
        meta.archived = archived
    elif archived is not None:
        report(f"'archived' should be true or false, not {_kind(archived)}")
    return close + 1, meta


def _scalar(value: object) -> str | None:
    """A front-matter value as text: strings, and numbers and dates as written; else None."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int | float | date) and not isinstance(value, bool):
        return str(value)
    return None


def _strings(
    value: object, key: str, problem: Callable[[str], None], *, split: bool | None
) -> tuple[str, ...]:
    """A string-or-list field as a tuple of distinct non-empty strings, in order.

    With ``split`` a single string is split at commas and white space (``tags: a, b``).
    """
    if value is None:
        return ()
    items: list[str] = []
    if isinstance(value, list):
        for number, item in enumerate(value, 1):
            text = _scalar(item)
            if text is None:
                if item is not None:
                    problem(f"'{key}' item {number} should be a string, not {_kind(item)}")
                continue
            items.append(text)
    else:
        text = _scalar(value)
        if text is None:
            problem(f"'{key}' should be a string or a list of strings, not {_kind(value)}")
            return ()
        items = _TAG_SEPARATORS.split(text) if split else [text]
    return tuple(dict.fromkeys(item for item in items if item))


def _kind(value: object) -> str:
    """A YAML-ish name of a value's type, for warnings."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


# A block id ends its line: after white space, a closing `]]` or `)`, or alone on the line.
BLOCK_ID = re.compile(r"(?:^|(?<=\s)|(?<=\]\])|(?<=\)))\^([A-Za-z0-9-]+)[ \t]*$")


def _blocks(lines: list[str], first: int) -> tuple[tuple[Heading, ...], set[int], set[int]]:
    """From line ``first`` on: the ATX headings outside fenced code, the indexes of the lines
    inside fenced code blocks, and those of the fence lines themselves."""
    headings: list[Heading] = []
    code: set[int] = set()
    fences: set[int] = set()
    fence = ""  # the opening fence run while inside a fenced block
    for number in range(first, len(lines)):
        line = lines[number]
        if fence:
            stripped = line.strip()
            if (
                stripped.startswith(fence)
                and stripped.count(fence[0]) == len(stripped)
                and len(line) - len(line.lstrip(" ")) <= 3
            ):
                fence = ""
                fences.add(number)
            else:
                code.add(number)
            continue
        if line[:1] not in ("#", "`", "~", " "):
            continue
        opening = _FENCE_OPEN.fullmatch(line)
        if opening is not None:
            run, info = opening.groups()
            # A backtick fence's info string has no backticks (else it is inline code).
            if run[0] == "~" or "`" not in info:
                fence = run
                fences.add(number)
                continue
        heading = _ATX_HEADING.fullmatch(line)
        if heading is not None:
            text = _CLOSING_HASHES.sub("", heading.group(2) or "").strip()
            headings.append(Heading(text=text, level=len(heading.group(1)), line=number))
    return tuple(headings), code, fences


# Markdown to plain text (see _plain). Patterns that can only match around a given character
# run only when the text has it: most notes have no HTML, tables or escapes, and each skipped
# pass saves a scan of the whole note.
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto):[^>\s]+)>")
_HTML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
_LINK_DEFINITION = re.compile(r"^[ \t]*\[[^\]\n]+\]:[ \t]*\S.*$", re.MULTILINE)
# What starts a prose line (matched line by line as the body is built): block quote markers,
# then a thematic break or setext underline (the whole line), a heading marker, or a list
# marker with its task box.
_LINE_START = re.compile(
    r"""[ \t]*(?:>[ \t]?)*[ \t]*
    (?: (?:[-*_][ \t]*){3,}$ | =+[ \t]*$
      | (?P<heading>\#{1,6})(?=[ \t]|$)
      | (?:[-*+]|\d{1,9}[.)])(?=[ \t]|$)(?:[ \t]+\[[ xX]\](?=[ \t]|$))?
    )?[ \t]*""",
    re.VERBOSE,
)
_LINE_START_CHARS = frozenset(" \t>-*_=#+0123456789")
_IMAGE = re.compile(r"!\[[^\]\n]*\](?:\([^)\n]*\)|\[[^\]\n]*\])")
_LINK = re.compile(r"\[([^\]\n]*)\](?:\([^)\n]*\)|\[[^\]\n]*\])")
_TABLE_ROW = re.compile(r"^[ \t]*\|.*$", re.MULTILINE)
_TABLE_DELIMITER = re.compile(r"^[ \t:-]+$", re.MULTILINE)
_EMPHASIS = re.compile(r"\*{1,3}|_{1,3}|~~|==")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_BLANKS = re.compile(r"[ \t\f\v\r\xa0]{2,}|[\t\f\v\r\xa0]")
_BLANK_LINES = re.compile(r"\n{3,}")


def _body(
    text: str, links: tuple[Reference, ...], first: int, code: set[int], fences: set[int]
) -> str:
    """The plain text of the note from line ``first`` on: Markdown stripped, fenced code
    kept as is (fence lines dropped), white space folded within lines, paragraphs kept."""
    display = _link_labels(text, links)
    # Link labels never span lines, so ``display`` has the same lines as ``text``.
    lines = _NEWLINE.split(display)
    parts: list[str] = []
    prose: list[str] = []
    for number in range(first, len(lines)):
        if number in code or number in fences:
            if prose:
                parts.append(_plain("\n".join(prose)))
                prose = []
            if number in code:
                parts.append(lines[number])
        else:
            line = lines[number]
            if line[:1] in _LINE_START_CHARS and (start := _LINE_START.match(line)):
                line = line[start.end() :]
                if start.group("heading"):
                    line = _CLOSING_HASHES.sub("", line)
            prose.append(line)
    if prose:
        parts.append(_plain("\n".join(prose)))
    # After folding, a line starts or ends with one space at most: str.replace strips it.
    body = _BLANKS.sub(" ", "\n".join(parts)).replace(" \n", "\n").replace("\n ", "\n")
    return _BLANK_LINES.sub("\n\n", body).strip()


def _link_labels(text: str, links: tuple[Reference, ...]) -> str:
    """``text`` with each ``[[Target|Label]]`` replaced by its label, else its target; an
    embed (``![[...]]``) is removed."""
    if not links:
        return text
    pieces: list[str] = []
    start = 0
    for link in links:
        embed = link.offset > 0 and text[link.offset - 1] == "!"
        pieces.append(text[start : link.offset - 1 if embed else link.offset])
        pieces.append("" if embed else (link.label or link.target))
        start = link.end
    pieces.append(text[start:])
    return "".join(pieces)


def _plain(markdown: str) -> str:
    """Prose Markdown as plain text: markers of headings, quotes, lists, rules, emphasis and
    code removed, links and images reduced to their text, HTML tags and comments removed,
    entities decoded."""
    if "<" in markdown:
        markdown = _COMMENT.sub("", markdown)
        markdown = _AUTOLINK.sub(r"\1", markdown)
        markdown = _HTML_TAG.sub("", markdown)
    if "]:" in markdown:
        markdown = _LINK_DEFINITION.sub("", markdown)
    if "[" in markdown:
        if "![" in markdown:
            markdown = _IMAGE.sub("", markdown)
        markdown = _LINK.sub(r"\1", markdown)
    if "|" in markdown:
        markdown = _TABLE_ROW.sub(lambda row: row.group().replace("|", " "), markdown)
        markdown = _TABLE_DELIMITER.sub("", markdown)
    markdown = _EMPHASIS.sub(_unemphasise, markdown).replace("`", "")
    if "\\" in markdown:
        markdown = _ESCAPE.sub(r"\1", markdown)
    return html.unescape(markdown) if "&" in markdown else markdown


def _unemphasise(marker: re.Match[str]) -> str:
    """An emphasis marker run removed when it opens (after no word character, before text)
    or closes (after text, before no word character); kept inside words (``snake_case``),
    between spaces (``2 * 3``) and after a backslash."""
    text = marker.string
    start, end = marker.span()
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    if before == "\\":
        return marker.group()
    opens = not (before.isalnum() or before == "_") and not after.isspace()
    closes = not before.isspace() and not (after.isalnum() or after == "_")
    return "" if opens or closes else marker.group()
