"""``[[link]]`` resolution over one note set (docs/reference.md, Notes): which note a target
names,
which heading of it, and which rule makes a target name a note.
"""

from __future__ import annotations

import re
from pathlib import Path

from lsp_memory.model import Heading, Note, NoteTarget
from lsp_memory.notes.derived import derived
from lsp_memory.notes.noteset import ALIAS, NAME, PATH, TITLE, NoteSet, fold, index_keys
from lsp_memory.notes.parse import loose_key

__all__ = ["heading_named", "link_form", "names_file", "resolve_link", "target_keys"]

# An absolute target: "/x", "\\x" or a Windows drive ("C:/x", "c:\\x").
_ABSOLUTE = re.compile(r"[/\\]|[A-Za-z]:[/\\]")
_SEGMENT_SEPARATORS = re.compile(r"[/\\]")


def link_form(note: Note, target: str) -> str | None:
    """Which rule of docs/reference.md, Notes makes the link target ``target`` name ``note``:
    ``path``,
    ``title``, ``alias`` or ``name`` (its file name), the first that holds, in the order
    resolution tries them; None when none does."""
    wanted = target.strip()
    keys = index_keys(note)
    if "/" in wanted and _path_key(wanted) in keys[PATH]:
        return "path"
    folded = fold(wanted)
    for step, form in ((TITLE, "title"), (ALIAS, "alias"), (NAME, "name")):
        if folded in keys[step]:
            return form
    return None


def names_file(note: Note, target: str) -> bool:
    """Whether the link target ``target`` names ``note`` by its file — its vault path or
    its file name, with or without the extension — and not also by one of its aliases."""
    wanted = target.strip()
    keys = index_keys(note)
    folded = fold(wanted)
    if folded in keys[ALIAS]:
        return False
    if "/" in wanted and _path_key(wanted) in keys[PATH]:
        return True
    return folded in keys[NAME]


def target_keys(target: str) -> frozenset[str]:
    """Every key ``[[target]]`` is looked up by, whatever the step: a note none of whose
    :func:`~lsp_memory.notes.noteset.index_keys` is among them cannot be what it names."""
    wanted = target.strip()
    keys = {fold(wanted)}
    if "/" in wanted:
        keys.add(_path_key(wanted))
    return frozenset(keys)


def _path_key(wanted: str) -> str:
    """The path step's key of a target holding ``/``: ``.`` and empty segments dropped."""
    segments = _SEGMENT_SEPARATORS.split(wanted)
    return "/".join(s for s in segments if s not in ("", ".")).casefold()


def resolve_link(noteset: NoteSet, target: str, heading: str | None, root: str = "") -> NoteTarget:
    """:meth:`~lsp_memory.notes.vault.Vault.resolve` over one note set, whose vault is at
    ``root``."""
    wanted = target.strip()
    segments = _SEGMENT_SEPARATORS.split(wanted)
    if _ABSOLUTE.match(wanted) or ".." in segments:
        return NoteTarget(note=None, error=f"Outside the vault: {target}")
    lookups: list[tuple[int, str]] = []
    if "/" in wanted:
        lookups.append((PATH, _path_key(wanted)))
    folded = fold(wanted)
    lookups += [(TITLE, folded), (ALIAS, folded), (NAME, folded)]
    for step, key in lookups:
        paths = noteset.keys[step].get(key)
        if paths:
            ranked = sorted(paths, key=lambda p: (len(p), p))
            candidates = tuple(noteset.notes[p] for p in ranked)
            return _with_heading(candidates, heading)
    found = _file(noteset, wanted)
    if found is not None:
        return NoteTarget(note=None, file=str(Path(root, found)))
    return NoteTarget(note=None, error=f"Note not found: {target}")


def _file(noteset: NoteSet, target: str) -> str | None:
    """The vault-relative path of the file (not a note) that ``target`` names: by its path
    in the vault, else by its name (the shortest path first), ignoring case — as Obsidian
    resolves ``![[picture.png]]``."""
    if not noteset.files:
        return None
    index = derived(noteset, _files_by_key)
    segments = [s for s in _SEGMENT_SEPARATORS.split(target) if s not in ("", ".")]
    wanted = "/".join(segments).casefold()
    found = index.get(wanted) if "/" in wanted else None
    return found or index.get(wanted.rpartition("/")[2])


def _files_by_key(noteset: NoteSet) -> dict[str, str]:
    """Each other file by its casefolded path and by its casefolded name (the shortest path,
    then the first alphabetically, for a name several files have)."""
    index: dict[str, str] = {}
    for path in sorted(noteset.files, key=lambda p: (len(p), p), reverse=True):
        folded = path.casefold()
        index[folded] = path
        index[folded.rpartition("/")[2]] = path
    return index


def _with_heading(candidates: tuple[Note, ...], heading: str | None) -> NoteTarget:
    """The first candidate, with ``heading`` found in it (or an error saying it is not)."""
    note = candidates[0]
    if heading is None or not heading.strip():
        return NoteTarget(note=note, candidates=candidates)
    if heading.startswith("^"):  # a block reference: [[Note#^id]]
        block = next((b for b in note.blocks if b.id == heading[1:].strip()), None)
        if block is None:
            error = f"Block not found in {note.path}: {heading}"
            return NoteTarget(note=note, candidates=candidates, error=error)
        return NoteTarget(note=note, candidates=candidates, block=block)
    found = _find_heading(note, heading)
    if found is None:
        return NoteTarget(
            note=note,
            candidates=candidates,
            error=f"Heading not found in {note.path}: {heading}",
        )
    return NoteTarget(note=note, heading=found, candidates=candidates)


def _find_heading(note: Note, heading: str) -> Heading | None:
    """The first heading of ``note`` whose text is ``heading`` ignoring case, else ignoring
    punctuation and white space too (``working-style``); for ``A#B`` (a sub-heading path,
    as Obsidian writes it) the last part."""
    wanted = fold(heading)
    for candidate in note.headings:
        if fold(candidate.text) == wanted:
            return candidate
    loose = loose_key(heading)
    if loose:
        for candidate in note.headings:
            if loose_key(candidate.text) == loose:
                return candidate
    if "#" in heading:
        return _find_heading(note, heading.rsplit("#", 1)[1])
    return None


def heading_named(note: Note, heading: str) -> Heading | None:
    """The heading of ``note`` that ``[[note#heading]]`` names, as resolution finds it."""
    return _find_heading(note, heading)
