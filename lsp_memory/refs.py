"""The reference grammar of docs/reference.md, Reference grammar: text in, reference tokens and
clean text out.

Pure and stdlib only. Tokens are ``@memory:<uuid>`` / ``@mem:<uuid>``, ``@<id>``, ``#<N>`` and
``[[Target#Heading|Label]]`` (an embed ``![[…]]`` is the same token, marked ``embed``;
``\\|`` is its ``|`` too, as Obsidian users write it inside a
table). In Markdown, fenced code blocks, inline code spans and Obsidian comments (``%% … %%``;
one left open runs to the end) hide references. Every token carries its string offsets and
its LSP range (UTF-16 columns).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache

from lsp_memory.model import ParsedDocument, Position, Reference, RefKind, Span

__all__ = [
    "hidden",
    "in_code",
    "is_markdown",
    "parse",
    "parse_document",
    "reference_at",
    "utf16_len",
]

_MARKDOWN_SUFFIXES = (".md", ".markdown")

# Besides white space and the start of the text, an `@` or `#` may follow one of these.
_OPENERS = r"""(\[{"'"""

# Every branch starts with a literal character, and the "what precedes" check comes *after*
# the `@`/`#` as a two-character look-behind: the regex engine then jumps from candidate to
# candidate instead of evaluating a look-behind at every position of the document.
# Trailing `-` is left out of a token by ending the captured part in a non-hyphen and
# swallowing hyphens possessively after it; with `(?!\w)` this also keeps backtracking from
# cutting a token short before a word character (`@abcé`, `@memory:abc_def` are not tokens).
_TOKEN = re.compile(
    rf"""
      @(?<![^\s{_OPENERS}]@)
      (?:
          (?:memory|mem):(?P<uuid>[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)-*+(?!\w)
        | (?!(?:memory|mem)-*+(?!\w))
          (?P<id>[A-Za-z][A-Za-z0-9_-]+[A-Za-z0-9_])-*+(?!\w)
      )
    | \#(?<![^\s{_OPENERS}]\#)(?P<number>[0-9]++)(?!\w)
    | \[\[
      (?P<target>[^\[\]|\#\r\n]++)
      (?:\#(?P<heading>[^\[\]|\r\n]*+))?
      (?:\|(?P<label>[^\[\]\r\n]*+))?
      \]\]
    """,
    re.VERBOSE,
)

_FENCE_CLOSE_TAIL = re.compile(r"[ \t]*(?![^\r\n])")
_NEWLINE = re.compile(r"\r\n|\r|\n")
_BACKTICK_RUN = re.compile("``*")  # not "`+": a literal first character makes the scan fast
# The line break in front of a blank line (spaces or tabs only), i.e. a paragraph boundary,
# which an inline code span cannot cross. The "\r\n" branches keep one CRLF from counting as
# two breaks.
_BLANK_LINE = re.compile(r"\r\n[ \t]*[\r\n]|\r[ \t]*\r|\r[ \t]+\n|\n[ \t]*[\r\n]")
_BLANK_LINE_LF = re.compile(r"\n[ \t]*\n")  # the same without "\r": scans ten times faster

# White space as str.isspace() sees it: the ASCII part (but " ") and the rest.
_ASCII_SPACE_TO_SPACE = bytes.maketrans(b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f", b" " * 9)
_NON_ASCII_SPACE = re.compile("[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_SPACES = re.compile(b"  +")


def is_markdown(language_id: str | None = None, path: str | None = None) -> bool:
    """Whether a document is Markdown: language id ``markdown`` or a ``.md``/``.markdown`` name.

    ``path`` may be a file path or a URI; the suffix is compared case-insensitively.
    """
    # Not a string: a client's malformed value (a number as languageId) is no Markdown id.
    if isinstance(language_id, str) and language_id.lower() == "markdown":
        return True
    return isinstance(path, str) and path.lower().endswith(_MARKDOWN_SUFFIXES)


def utf16_len(s: str) -> int:
    """The number of UTF-16 code units in ``s`` (astral characters count 2)."""
    if s.isascii():
        return len(s)
    # surrogatepass: a lone surrogate (JSON text may carry one) is one code unit, not an error.
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def parse_document(
    text: str, language_id: str | None = None, path: str | None = None
) -> ParsedDocument:
    """Parse a document, as Markdown when :func:`is_markdown` says it is. The last few texts'
    parses are kept: after a keystroke the editor asks for the diagnostics, semantic tokens,
    hints, links and lenses of the same text (a 1 000-line note: 3-6 ms a parse)."""
    return _parsed(text, is_markdown(language_id, path))


@lru_cache(maxsize=8)
def _parsed(text: str, markdown: bool) -> ParsedDocument:
    return parse(text, markdown=markdown)


def parse(text: str, *, markdown: bool = False) -> ParsedDocument:
    """All reference tokens of ``text`` in document order, and its clean text.

    With ``markdown=True`` tokens inside fenced code blocks and inline code spans are skipped.
    """
    references = _references(text, _code_regions(text) if markdown else [])
    return ParsedDocument(references=references, clean_text=_clean_text(text, references))


def in_code(text: str, offset: int) -> bool:
    """Whether ``offset`` of Markdown ``text`` falls inside a fenced block or a code span (where
    nothing is a reference, so nothing is completed)."""
    size = len(text)
    # A block left open runs to the end of the text: a cursor there is still inside it.
    return any(
        start <= offset < end or (end == size and start <= offset)
        for start, end in _code_regions(text)
    )


def hidden(text: str) -> list[tuple[int, int]]:
    """The sorted, disjoint ``(start, end)`` ranges of Markdown ``text`` where nothing is a
    reference: fenced code blocks, inline code spans and Obsidian comments."""
    return _code_regions(text)


def reference_at(
    text: str, offset: int, language_id: str | None = None, path: str | None = None
) -> Reference | None:
    """The reference whose ``[offset, end]`` holds ``offset`` (a Python index of ``text``):
    the one starting at or before it, so that between two adjacent tokens the second wins.
    None in code (Markdown) and on plain text."""
    found = parse_document(text, language_id, path).references
    index = bisect_right([reference.offset for reference in found], offset)
    if index == 0:
        return None
    reference = found[index - 1]
    return reference if offset <= reference.end else None


def _references(text: str, code: list[tuple[int, int]]) -> tuple[Reference, ...]:
    """The tokens of ``text`` outside the ``code`` ranges, with their LSP ranges."""
    ascii_text = text.isascii()
    has_cr = "\r" in text
    references: list[Reference] = []
    # Lines and columns come from walking forward from the previous token with str.count and
    # str.rfind (C speed), so one pass stays O(len(text)), even for one huge line of tokens.
    line = 0
    line_start = 0
    cursor = 0  # an offset on ``line`` whose UTF-16 column is ``cursor_column``
    cursor_column = 0
    for segment_start, segment_end in _segments(text, code):
        for match in _TOKEN.finditer(text, segment_start, segment_end):
            token = _token(match)
            if token is None:
                continue
            kind, written, target, heading, label = token
            offset = match.start()
            # cursor..offset never splits a "\r\n": no token starts or ends inside one.
            breaks = text.count("\n", cursor, offset)
            if has_cr:
                breaks += text.count("\r", cursor, offset) - text.count("\r\n", cursor, offset)
            if breaks:
                line += breaks
                line_start = text.rfind("\n", cursor, offset) + 1
                if has_cr:
                    line_start = max(line_start, text.rfind("\r", cursor, offset) + 1)
                cursor = line_start
                cursor_column = 0
            if ascii_text:
                column = offset - line_start
                end_column = column + len(written)
            else:
                cursor_column += utf16_len(text[cursor:offset])
                column = cursor_column
                end_column = column + utf16_len(written)
            cursor = offset
            span = Span(Position(line, column), Position(line, end_column))
            end = offset + len(written)
            embed = kind is RefKind.NOTE and offset > 0 and text[offset - 1] == "!"
            references.append(
                Reference(kind, written, target, span, offset, end, heading, label, embed)
            )
    return tuple(references)


def _segments(text: str, code: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The ``(start, end)`` ranges of ``text`` around the ``code`` ranges (sorted, disjoint)."""
    segments: list[tuple[int, int]] = []
    start = 0
    for code_start, code_end in code:
        segments.append((start, code_start))
        start = code_end
    segments.append((start, len(text)))
    return segments


def _token(match: re.Match[str]) -> tuple[RefKind, str, str, str | None, str | None] | None:
    """Kind, text, target, heading and label of a match; None for a note without a target."""
    group = match.lastgroup
    # A token is shorter than its match only by the trailing hyphens left out of it.
    if group == "id":
        ident = match.group("id")
        return RefKind.ID, "@" + ident, ident, None, None
    if group == "uuid":
        return RefKind.UUID, match.group().rstrip("-"), match.group("uuid"), None, None
    if group == "number":
        number = match.group("number")
        return RefKind.NUMBER, "#" + number, number, None, None
    target = match.group("target").strip()
    if not target:
        return None
    heading, label = match.group("heading", "label")
    if label is not None:  # `[[a\\|b]]`: the backslash escapes the pipe in a table row
        if heading is not None and heading.endswith("\\"):
            heading = heading[:-1]
        elif heading is None and target.endswith("\\"):
            target = target[:-1].strip()
            if not target:
                return None
    # An empty heading or label (`[[a#]]`, `[[a|]]`) is the same as none.
    heading = (heading.strip() or None) if heading is not None else None
    label = (label.strip() or None) if label is not None else None
    return RefKind.NOTE, match.group(), target, heading, label


def _clean_text(text: str, references: tuple[Reference, ...]) -> str:
    """``text`` without its tokens, white space runs folded to one space, stripped."""
    pieces: list[str] = []
    start = 0
    for reference in references:
        pieces.append(text[start : reference.offset])
        start = reference.end
    pieces.append(text[start:])
    rest = "".join(pieces)
    if not rest.isascii() and _NON_ASCII_SPACE.search(rest):
        return " ".join(rest.split())
    # Folding the UTF-8 bytes gives the same result as split/join when all white space is
    # ASCII (no UTF-8 multi-byte sequence contains an ASCII byte), at a third of the cost.
    folded = rest.encode("utf-8", "surrogatepass").translate(_ASCII_SPACE_TO_SPACE)
    return _SPACES.sub(b" ", folded).strip(b" ").decode("utf-8", "surrogatepass")


def _code_regions(text: str) -> list[tuple[int, int]]:
    """Sorted, disjoint ``(start, end)`` ranges of fenced code blocks, inline code spans and
    Obsidian comments."""
    fences = _fenced_blocks(text) if ("```" in text or "~~~" in text) else []
    if "`" not in text:
        regions = fences
    else:
        blank_line = _BLANK_LINE if "\r" in text else _BLANK_LINE_LF
        regions = []
        start = 0
        for fence in fences:
            regions.extend(_code_spans(text, start, fence[0], blank_line))
            regions.append(fence)
            start = fence[1]
        regions.extend(_code_spans(text, start, len(text), blank_line))
    return _with_comments(text, regions) if "%%" in text else regions


def _with_comments(text: str, code: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``code`` and the Obsidian comments around it, sorted and disjoint: from a ``%%`` outside
    code to the next ``%%`` outside code (inclusive), or to the end of the text."""
    regions: list[tuple[int, int]] = []
    pos = 0
    index = 0  # the first code region not behind ``pos``
    while (opening := text.find("%%", pos)) >= 0:
        while index < len(code) and code[index][1] <= opening:
            regions.append(code[index])
            index += 1
        if index < len(code) and code[index][0] <= opening:  # inside code: not a comment
            pos = opening + 2
            continue
        closing = opening + 2
        while (closing := text.find("%%", closing)) >= 0:
            inside = next((r for r in code[index:] if r[0] <= closing < r[1]), None)
            if inside is None:
                break
            closing = inside[1]
        end = len(text) if closing < 0 else closing + 2
        while index < len(code) and code[index][0] < end:
            index += 1  # code inside the comment: the comment covers it
        regions.append((opening, end))
        pos = end
    regions.extend(code[index:])
    return regions


def _fenced_blocks(text: str) -> list[tuple[int, int]]:
    """Fenced code blocks per CommonMark (outside containers such as lists and quotes): from
    the start of the opening line to the end of the closing one, or to the end of the text."""
    blocks: list[tuple[int, int]] = []
    pos = 0
    next_backticks = text.find("```")
    next_tildes = text.find("~~~")
    while next_backticks >= 0 or next_tildes >= 0:
        if next_tildes < 0 or 0 <= next_backticks < next_tildes:
            run_start, fence_char = next_backticks, "`"
        else:
            run_start, fence_char = next_tildes, "~"
        run_end = _run_end(text, run_start)
        pos = run_end  # unless this run opens a fence: then it is ordinary text
        block_start = _fence_line_start(text, run_start)
        if block_start is not None:
            info_end = _line_end(text, run_end)
            # A backtick fence's info string has no backticks (else this is inline code).
            if fence_char == "~" or "`" not in text[run_end:info_end]:
                pos = _closing_fence(text, info_end, fence_char, run_end - run_start)
                blocks.append((block_start, pos))
        # Search again only for a candidate now behind us: "not found" (-1) stays not found.
        if 0 <= next_backticks < pos:
            next_backticks = text.find("```", pos)
        if 0 <= next_tildes < pos:
            next_tildes = text.find("~~~", pos)
    return blocks


def _fence_line_start(text: str, run_start: int) -> int | None:
    """The start of the line if at most 3 spaces precede ``run_start`` on it, else None."""
    line_start = run_start
    while line_start > 0 and run_start - line_start < 4 and text[line_start - 1] == " ":
        line_start -= 1
    if run_start - line_start > 3 or (line_start > 0 and text[line_start - 1] not in "\r\n"):
        return None
    return line_start


def _run_end(text: str, start: int) -> int:
    """The end of the run of equal characters that starts at ``start``."""
    end = start + 1
    while end < len(text) and text[end] == text[start]:
        end += 1
    return end


def _line_end(text: str, pos: int) -> int:
    """The index of the first line break at or after ``pos``, or ``len(text)``."""
    match = _NEWLINE.search(text, pos)
    return match.start() if match else len(text)


def _closing_fence(text: str, pos: int, fence_char: str, length: int) -> int:
    """The end of the first closing fence line at or after ``pos``, or ``len(text)``."""
    while (run_start := text.find(fence_char * length, pos)) >= 0:
        pos = _run_end(text, run_start)
        if _fence_line_start(text, run_start) is not None:
            tail = _FENCE_CLOSE_TAIL.match(text, pos)
            if tail is not None:
                return tail.end()
    return len(text)


def _code_spans(
    text: str, start: int, end: int, blank_line: re.Pattern[str]
) -> list[tuple[int, int]]:
    """Inline code spans in ``text[start:end]``: a run of N backticks up to the next run of
    exactly N in the same paragraph; a run without such a partner is literal text."""
    runs = [match.span() for match in _BACKTICK_RUN.finditer(text, start, end)]
    if len(runs) < 2:
        return []
    breaks = [match.start() for match in blank_line.finditer(text, start, end)]
    # For each run, the index of the next run of the same length in the same paragraph.
    partner = [-1] * len(runs)
    latest: dict[tuple[int, int], int] = {}
    for index in range(len(runs) - 1, -1, -1):
        run_start, run_end = runs[index]
        key = (bisect_right(breaks, run_start), run_end - run_start)
        partner[index] = latest.get(key, -1)
        latest[key] = index
    spans: list[tuple[int, int]] = []
    index = 0
    while index < len(runs):
        closer = partner[index]
        if closer < 0:
            index += 1
        else:
            spans.append((runs[index][0], runs[closer][1]))
            index = closer + 1
    return spans
