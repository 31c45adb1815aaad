"""Reading and writing a vault's note files for an agent (the MCP server's note tools): one
note by its vault-relative path, never a file outside a vault, every write atomic.

What is refused, each with one line: an absolute path, a ``..`` part, a path that is not a
note's (Markdown, no hidden part, not excluded), a path whose real location is outside the
vault (a symlinked folder or file leading out), writing through a symlink (the atomic replace
would turn the link into a file), a note over ``MAX_NOTE_BYTES``, and an edit whose anchor
(a heading, a text to replace) is not found exactly once. A write replaces the file in one
``os.replace`` of a temporary file beside it, flushed to disk first, so a reader sees the old
note or the new one, never half of it; the vault then reads the file again (``Vault.update``).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from lsp_memory.errors import UserError
from lsp_memory.notes.parse import MAX_NOTE_BYTES
from lsp_memory.notes.vault import Vault

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True, slots=True)
class NoteFile:
    """One note file: which vault, its vault-relative path, its real location."""

    vault: Vault
    path: str
    full: Path

    def record(self, text: str | None = None) -> dict[str, object]:
        """The note as JSON: its vault, path and, when given, its text."""
        found: dict[str, object] = {"vault": str(self.vault.root), "path": self.path}
        if text is not None:
            found["text"] = text
        return found


class NoteFiles:
    """The note files of the vaults, for reading and writing one at a time."""

    def __init__(self, vaults: Sequence[Vault]) -> None:
        self._vaults = list(vaults)

    def locate(self, path: str, vault: str | None = None) -> NoteFile:
        """The note ``path`` names in ``vault`` (a vault's folder name or path; the first
        vault when None); ``UserError`` when the path may not be a note of that vault."""
        chosen = self._vault(vault)
        given = PurePosixPath(path.replace("\\", "/"))
        if not path.strip() or "\x00" in path:
            raise UserError("a note's path is empty")
        if given.is_absolute() or re.match(r"^[A-Za-z]:", path):
            raise UserError(f"{path!r}: give the note's path inside the vault, not an absolute one")
        if ".." in given.parts:
            raise UserError(f"{path!r}: '..' may not be part of a note's path")
        relative = given.as_posix().removeprefix("./")
        if not chosen.is_note(relative):
            raise UserError(
                f"{relative!r} is not a note's path: a Markdown file (.md), no hidden or "
                "excluded folder"
            )
        full = chosen.root / relative
        real = Path(os.path.realpath(full))
        if real != chosen.root and chosen.root not in real.parents:
            raise UserError(f"{relative!r} leads outside the vault (a symlink): refused")
        return NoteFile(chosen, relative, full)

    def read(self, note: NoteFile) -> str:
        """The note's text; ``UserError`` when there is none or it is too large."""
        try:
            size = note.full.stat().st_size
            if size > MAX_NOTE_BYTES:
                raise UserError(f"{note.path}: {size:,} bytes, over {MAX_NOTE_BYTES:,}")
            return note.full.read_bytes().decode("utf-8", errors="replace")
        except FileNotFoundError:
            raise UserError(f"no note {note.path!r} in {note.vault.root}") from None
        except IsADirectoryError:
            raise UserError(f"{note.path!r} is a folder, not a note") from None
        except OSError as error:
            raise UserError(f"{note.path}: {error.strerror or error}") from None

    def write(self, note: NoteFile, text: str, *, overwrite: bool = False) -> bool:
        """Write ``text`` as the whole note, its folders made; an existing note only when
        ``overwrite``. True when the note was created."""
        exists = note.full.exists()
        if exists and not overwrite:
            raise UserError(f"{note.path!r} exists: pass overwrite to replace it, or edit it")
        self._replace(note, text)
        return not exists

    def append(self, note: NoteFile, text: str) -> None:
        """Add ``text`` at the end of an existing note, on a line of its own."""
        old = self.read(note)
        joint = "" if not old or old.endswith("\n") else "\n"
        self._replace(note, old + joint + text + ("" if text.endswith("\n") else "\n"))

    def replace_section(self, note: NoteFile, heading: str, text: str) -> None:
        """Put ``text`` in place of the body of the section under ``heading`` (its text, the
        ``#`` marks optional), up to the next heading of its level or above; refused unless
        exactly one heading has that text."""
        old = self.read(note)
        lines = old.splitlines(keepends=True)
        wanted = heading.strip().lstrip("#").strip()
        found = [(i, level) for i, level, title in _headings(lines) if title == wanted]
        if len(found) != 1:
            raise UserError(_not_once(f"the heading {wanted!r}", len(found), note.path))
        start, level = found[0]
        end = next(
            (i for i, other, _ in _headings(lines) if i > start and other <= level), len(lines)
        )
        body = text if not text or text.endswith("\n") else text + "\n"
        head = lines[start] if lines[start].endswith("\n") else lines[start] + "\n"
        tail = lines[end:]
        if tail and body and not body.endswith("\n\n"):
            body += "\n"  # a blank line before the next heading
        self._replace(note, "".join([*lines[:start], head, body, *tail]))

    def replace_text(self, note: NoteFile, find: str, replace: str) -> None:
        """Replace the one occurrence of ``find`` with ``replace``; refused unless ``find``
        occurs exactly once."""
        if not find:
            raise UserError("the text to find is empty")
        old = self.read(note)
        count = old.count(find)
        if count != 1:
            raise UserError(_not_once(f"the text {_quoted(find)}", count, note.path))
        self._replace(note, old.replace(find, replace, 1))

    def move(self, source: NoteFile, destination: NoteFile, texts: Mapping[Path, str]) -> None:
        """Move the note ``source`` to ``destination`` (its folders made), refused when
        something is there already, then write ``texts`` — the new text of each note file,
        by where it was before the move (the links that named the note) — each atomically.
        Each file is read again by its vault."""
        self._file(source)
        taken = UserError(f"{destination.path!r} exists: a move never replaces a note")
        if os.path.lexists(destination.full):
            raise taken
        try:
            destination.full.parent.mkdir(parents=True, exist_ok=True)
            self._inside(destination)
            try:  # a hard link fails when the destination appeared meanwhile: no overwrite
                os.link(source.full, destination.full, follow_symlinks=False)
            except FileExistsError:
                raise taken from None
            except OSError:  # a file system without hard links
                if os.path.lexists(destination.full):
                    raise taken from None
                source.full.rename(destination.full)
            else:
                source.full.unlink()
        except OSError as error:
            raise UserError(f"{source.path}: {error.strerror or error}") from None
        source.vault.update(source.full)
        destination.vault.update(destination.full)
        for path, text in texts.items():
            self._replace(destination if path == source.full else self._at(path), text)

    def delete(self, note: NoteFile) -> None:
        """Delete the note's file (a symlink inside the vault: the link, not what it names)."""
        self._file(note)
        try:
            note.full.unlink()
        except OSError as error:
            raise UserError(f"{note.path}: {error.strerror or error}") from None
        note.vault.update(note.full)

    def path_of(self, full: Path, source: NoteFile, destination: NoteFile) -> str:
        """The vault-relative path of the note file that was at ``full`` before ``source``
        moved to ``destination``."""
        return destination.path if full == source.full else self._at(full).path

    def _file(self, note: NoteFile) -> None:
        """``UserError`` unless the note's file is there (a file, not a folder)."""
        if not os.path.lexists(note.full):
            raise UserError(f"no note {note.path!r} in {note.vault.root}")
        if note.full.is_dir():
            raise UserError(f"{note.path!r} is a folder, not a note")

    def _at(self, full: Path) -> NoteFile:
        """The note file at ``full``, a path in one of the vaults."""
        for vault in self._vaults:
            if vault.root in full.parents:
                return NoteFile(vault, full.relative_to(vault.root).as_posix(), full)
        raise UserError(f"{full}: not in a vault")

    def _inside(self, note: NoteFile) -> None:
        """``UserError`` when the note's folder really is outside its vault (a symlink)."""
        real = Path(os.path.realpath(note.full.parent))
        if real != note.vault.root and note.vault.root not in real.parents:
            raise UserError(f"{note.path!r} leads outside the vault (a symlink): refused")

    def _vault(self, name: str | None) -> Vault:
        if not self._vaults:
            raise UserError("no vault: set `vaults` (or pass --vault) to read and write notes")
        if name is None:
            return self._vaults[0]
        for vault in self._vaults:
            if name in (vault.root.name, str(vault.root)):
                return vault
        known = ", ".join(v.root.name for v in self._vaults)
        raise UserError(f"no vault {name!r}: yours are {known}")

    def _replace(self, note: NoteFile, text: str) -> None:
        """Write ``text`` as the note in one atomic replace, then let the vault read it."""
        data = text.encode("utf-8")
        if len(data) > MAX_NOTE_BYTES:
            raise UserError(f"{note.path}: {len(data):,} bytes, over {MAX_NOTE_BYTES:,}")
        if note.full.is_symlink():
            raise UserError(f"{note.path!r} is a symlink: edit the note it points to")
        folder = note.full.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
            # Checked again once the folders exist: one made on the way may be a link out.
            self._inside(note)
            mode = note.full.stat().st_mode & 0o777 if note.full.exists() else None
            handle, temporary = tempfile.mkstemp(
                dir=folder, prefix=f".{note.full.name}.", suffix=".tmp"
            )
            try:
                with os.fdopen(handle, "wb") as out:
                    out.write(data)
                    out.flush()
                    os.fsync(out.fileno())
                # mkstemp makes it 0600; a new note gets a note's usual 0644.
                Path(temporary).chmod(0o644 if mode is None else mode)
                Path(temporary).replace(note.full)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as error:
            raise UserError(f"{note.path}: {error.strerror or error}") from None
        note.vault.update(note.full)


def _headings(lines: Sequence[str]) -> list[tuple[int, int, str]]:
    """``(line index, level, text)`` of the ATX headings outside fenced code."""
    found, fence = [], ""
    for index, line in enumerate(lines):
        opened = _FENCE.match(line)
        if opened:
            mark = opened.group(1)
            if not fence:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence):
                fence = ""
            continue
        if fence:
            continue
        match = _HEADING.match(line.rstrip("\r\n"))
        if match:
            found.append((index, len(match.group(1)), match.group(2)))
    return found


def _not_once(what: str, count: int, path: str) -> str:
    if count == 0:
        return f"{what} is not in {path}: nothing changed"
    return f"{what} is in {path} {count} times, not once: nothing changed (make it unique)"


def _quoted(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:59] + "…")
