"""A vault's last scan kept on disk, so that a new process does not read and parse every
note again: on 10 000 notes a first scan took 4.7 s, most of it parsing Markdown; with the
saved scan, a new process stats every file and reads only those whose size or mtime
differ from what was saved.

The file is derived data in the cache folder, one per vault folder and exclude list. It is
written whole (to a temporary file, then renamed) and read whole; a missing, truncated,
foreign or older file is ignored and the vault is read from disk as before. Nothing here
raises: a failed save is logged and skipped.

The format is :mod:`marshal` of plain tuples (10 000 notes: 28 MB). Each row keeps what a
scan and the link index read of every note (path, title, aliases, size, mtime, content hash,
…) as values, and its headings, links, body and blocks as one marshal blob of their own,
decoded when one of them is first read: a command that reads one or two notes of 10 000
(``build-context``) loads the file in ~0.1 s instead of ~0.7 s decoding every link (load ~6).
Beside the rows, the note set's link index (its keys per resolution step, ``NoteSet.keys``),
so that a new process does not compute 10 000 notes' keys again (~0.1 s of ``build-context``).

marshal is not meant for untrusted data, so the file is read only when the cache folder's
rules allow it (:mod:`lsp_memory.cachefiles`: a regular file of the user's, not writable by
others, at most ``MAX_BYTES``), and every value decoded is checked for its type: a file whose
rows fail is ignored (the vault is read from disk, and the scan saved anew) with one warning;
a note whose blob fails, found only when it is read, is parsed from its file instead (logged).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import marshal
import time
from collections.abc import Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

from lsp_memory import cachefiles
from lsp_memory.cachefiles import Distrusted, read_bytes
from lsp_memory.model import Block, Heading, Note, Position, Reference, RefKind, Span

log = logging.getLogger(__name__)

FORMAT = 5  # 2: block ids; 3: links say whether they are embeds; 4: blobs; 5: the link index
MAX_BYTES = 2 * 1024 * 1024 * 1024
"""The largest saved scan read (2 GiB; 10 000 notes take 28 MB)."""
"""Bumped whenever ``Note``, its parsing or this encoding change: an older file is ignored."""

RACY_NS = 2_000_000_000
"""A file modified less than this long before the scan was saved may have changed again
within the same mtime tick after it was read (git's "racily clean" files): it is read again
and its content hash compared, never trusted from the file."""


def _header(root: str, excludes: Sequence[str]) -> tuple[Any, ...]:
    return ("lsp-memory vault scan", FORMAT, marshal.version, root, tuple(excludes))


def _link(ref: Reference) -> tuple[Any, ...]:
    start, end = ref.span.start, ref.span.end
    return (
        ref.kind.value,
        ref.text,
        ref.target,
        start.line,
        start.character,
        end.line,
        end.character,
        ref.offset,
        ref.end,
        ref.heading,
        ref.label,
        ref.embed,
    )


def _encode(note: Note) -> tuple[Any, ...]:
    return (
        note.path,
        note.title,
        note.aliases,
        note.tags,
        note.archived,
        note.size,
        note.mtime_ns,
        note.content_hash,
        note.warnings,
        note.mentions,
        marshal.dumps(
            (
                tuple((h.text, h.level, h.line) for h in note.headings),
                tuple(_link(link) for link in note.links),
                note.body,
                tuple((b.id, b.line) for b in note.blocks),
            )
        ),
    )


class _WrongType(Exception):
    """A saved row whose values do not have the shape ``_encode`` gives."""


def _texts(value: Any) -> tuple[str, ...]:
    if type(value) is not tuple:
        raise _WrongType
    for item in value:
        if type(item) is not str:
            raise _WrongType
    return value


def _int(value: Any) -> int:
    if type(value) is not int:  # not a bool either
        raise _WrongType
    return value


def _optional(value: Any) -> str | None:
    if value is not None and type(value) is not str:
        raise _WrongType
    return value


def _text(value: Any) -> str:
    if type(value) is not str:
        raise _WrongType
    return value


def _tuple(value: Any, length: int) -> tuple[Any, ...]:
    if type(value) is not tuple or len(value) != length:
        raise _WrongType
    return value


def _decode(root: str, row: Any) -> Note:
    """The note of a saved ``row``, checked as it is read (marshal decodes anything, and a
    value of the wrong type would fail later, far from here): ``_WrongType`` otherwise. Its
    headings, links, body and blocks stay in their blob until first read (``_SavedNote``)."""
    (path, title, aliases, tags, archived, size, mtime, digest, warnings, mentions, blob) = _tuple(
        row, 11
    )
    if type(archived) is not bool or type(blob) is not bytes:
        raise _WrongType
    note = _SavedNote.__new__(_SavedNote)
    for name, value in (
        ("vault", root),
        ("path", _text(path)),
        ("title", _text(title)),
        ("aliases", _texts(aliases)),
        ("tags", _texts(tags)),
        ("archived", archived),
        ("size", _int(size)),
        ("mtime_ns", _int(mtime)),
        ("content_hash", _text(digest)),
        ("warnings", _texts(warnings)),
        ("mentions", _texts(mentions)),
        ("_blob", blob),
    ):
        object.__setattr__(note, name, value)
    return note


def _parts(blob: bytes) -> tuple[Any, ...]:
    """A note's headings, links, body and blocks from its ``blob``, checked: ``_WrongType``
    (or marshal's ValueError, EOFError) otherwise."""
    headings, links, body, blocks = _tuple(marshal.loads(blob), 4)
    if type(headings) is not tuple or type(links) is not tuple or type(blocks) is not tuple:
        raise _WrongType
    references = []
    for link in links:
        kind, text, target, sl, sc, el, ec, offset, end, heading, label, embed = _tuple(link, 12)
        if kind not in _KINDS or type(embed) is not bool:
            raise _WrongType
        span = Span(Position(_int(sl), _int(sc)), Position(_int(el), _int(ec)))
        references.append(
            Reference(
                RefKind(kind),
                _text(text),
                _text(target),
                span,
                _int(offset),
                _int(end),
                _optional(heading),
                _optional(label),
                embed,
            )
        )
    return (
        tuple(
            Heading(_text(text), _int(level), _int(line))
            for text, level, line in (_tuple(h, 3) for h in headings)
        ),
        tuple(references),
        _text(body),
        tuple(
            Block(_text(block_id), _int(line)) for block_id, line in (_tuple(b, 2) for b in blocks)
        ),
    )


def _parsed_again(note: Note) -> tuple[Any, ...]:
    """The headings, links, body and blocks of ``note`` from its file (its saved blob is
    unusable): what a scan would have read; nothing when the file cannot be read."""
    from lsp_memory.notes.parse import build_note

    try:
        data = (Path(note.vault) / note.path).read_bytes()
    except OSError:
        return (), (), "", ()
    parsed = build_note(
        note.vault,
        note.path,
        data,
        size=len(data),
        content_hash=hashlib.sha256(data).hexdigest(),
        mtime_ns=note.mtime_ns,
    )
    return parsed.headings, parsed.links, parsed.body, parsed.blocks


_LAZY = ("headings", "links", "body", "blocks")


class _SavedNote(Note):
    """A note from a saved scan: a ``Note`` in every way (equal to the one parsed from the
    same file), whose headings, links, body and blocks are decoded from ``_blob`` when one
    of them is first read; the blob is then let go (a long-lived process does not hold a
    note twice). Decoding twice on two threads at once gives equal values."""

    __slots__ = ("_blob",)

    def __getattr__(self, name: str) -> Any:
        # Called only for a field not set yet (or a name that is no attribute at all).
        if name not in _LAZY:
            raise AttributeError(name)
        try:
            blob = object.__getattribute__(self, "_blob")
        except AttributeError:  # another thread decoded it meanwhile: every field is set
            return object.__getattribute__(self, name)
        try:
            parts = _parts(blob)
        except (_WrongType, ValueError, EOFError, TypeError):
            log.warning("saved scan: %s holds values of the wrong type; read its file", self.path)
            parts = _parsed_again(self)
        for field, value in zip(_LAZY, parts, strict=True):
            object.__setattr__(self, field, value)
        with contextlib.suppress(AttributeError):  # let go by another thread already
            object.__delattr__(self, "_blob")
        return object.__getattribute__(self, name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Note):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in _FIELDS)

    __hash__ = Note.__hash__


_FIELDS = tuple(Note.__dataclass_fields__)


_KINDS = frozenset(kind.value for kind in RefKind)


Keys = tuple[dict[str, tuple[str, ...]], ...]
"""A note set's link index: per resolution step, key → paths (``NoteSet.keys``)."""


def _keys(value: Any, notes: Mapping[str, Note]) -> Keys | None:
    """The saved link index, checked: four dicts of text → paths of saved notes (so a lookup
    never names a note the set lacks); None when none was saved, ``_WrongType`` otherwise."""
    if value is None:
        return None
    steps = _tuple(value, 4)
    named: set[str] = set()
    for step in steps:
        if type(step) is not dict or not all(type(key) is str for key in step):
            raise _WrongType
        if not all(type(paths) is tuple for paths in step.values()):
            raise _WrongType
        named.update(chain.from_iterable(step.values()))
    if not named <= notes.keys():  # a path of a saved note is text: so every one is
        raise _WrongType
    return steps


class SavedScan:
    """The saved scan of one vault folder (with its excludes) at ``path``."""

    def __init__(self, path: Path, root: str, excludes: Sequence[str]) -> None:
        self.path = path
        self._header = _header(root, excludes)
        self._root = root

    def load(self, warnings: list[str]) -> tuple[dict[str, Note], set[str], Keys | None] | None:
        """The saved notes by path, the paths among them that must be read again (modified
        shortly before the save, see ``RACY_NS``) and their link index (None when it was
        not saved); None when there is no usable saved scan. A file the cache's rules
        refuse, or one whose values have the wrong types, adds a warning to ``warnings``."""
        try:
            data = read_bytes(self.path, limit=MAX_BYTES)
        except Distrusted as error:
            warnings.append(f"saved vault scan: {error}; the vault was read from disk")
            return None
        except OSError:
            return None
        try:
            header, saved_ns, rows, index = marshal.loads(data)
            if header != self._header:
                return None
            if type(saved_ns) is not int or not isinstance(rows, list | tuple):
                raise TypeError("not a scan")
            decoded = [_decode(self._root, row) for row in rows]
            notes = {note.path: note for note in decoded}
            keys = _keys(index, notes)
        except _WrongType:
            warnings.append(
                f"saved vault scan: {self.path} holds values of the wrong type; "
                "the vault was read from disk"
            )
            return None
        except (EOFError, ValueError, TypeError, IndexError):
            log.debug("saved scan %s is unusable; reading the vault", self.path)
            return None
        racy = {path for path, note in notes.items() if note.mtime_ns >= saved_ns - RACY_NS}
        return notes, racy, keys

    def save(self, notes: Mapping[str, Note], keys: Keys | None = None) -> None:
        """Keep ``notes`` (the notes as read from disk) for the next process, with ``keys``,
        their link index, when given (it must be that of exactly these notes)."""
        rows = [_encode(note) for note in notes.values()]
        try:
            data = marshal.dumps((self._header, time.time_ns(), rows, keys))
            cachefiles.write_bytes(self.path, data)
        except (OSError, ValueError) as error:
            log.warning("cannot save the scan of %s in %s: %s", self._root, self.path, error)
