"""File renames: the link rewrites that keep every ``[[link]]`` naming the note it named when
notes are renamed or moved by the editor — one file, several, or a whole folder — planned
before the files move (LSP's ``workspace/willRenameFiles``).

The rule is one: a link is rewritten when, after the move, it would no longer name the note
it names now, or would name it by a file name or path it no longer has. So:

- ``[[Old]]``, ``[[old.md]]`` (by file name) become the new name — the bare name while it
  names that one note alone in the vaults (Obsidian's shortest form), else its path
  (``[[folder/New]]``); ``[[folder/Old]]`` (by path) gets the new path; the extension is
  kept or left out as it was written; ``#Heading``, ``#^block``, ``|label`` and the ``!`` of
  an embed are kept (only the target is replaced).
- A link by alias, or by a title the note writes itself (front-matter ``title`` or first
  ``# `` heading), still names it: it is left as it is.
- A folder rename moves every note under it: links by path follow; links by name still
  hold, unless the move makes another note win the name (then they get the path form).
- Links are vault-relative, so the renamed note's own links keep resolving; those naming a
  moved note are rewritten as any other.

A note moved out of every vault, into another vault or to a path that is no note (hidden,
excluded) leaves its links as they are. Only ``[[…]]`` links are rewritten: Markdown links
``[text](file.md)`` are not references here (docs/reference.md, Notes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath

from lsp_memory.model import Note, RefKind
from lsp_memory.notes import VaultView, names_file
from lsp_memory.notes.noteset import index_keys
from lsp_memory.notes.parse import title_spot
from lsp_memory.notes.resolve import target_keys
from lsp_memory.notes.walk import NOTE_SUFFIXES
from lsp_memory.services.editor.references import (
    Document,
    Place,
    ReferenceFinder,
    link_target_span,
)
from lsp_memory.services.editor.rename import (
    Edit,
    Move,
    Plan,
    note_stem,
    without_overlaps,
    writable,
)
from lsp_memory.services.kernel.resolver import Resolver

__all__ = ["MovePlanner", "rewritten"]

# Where a link target lands: (vault index, note path), and whether no other note shares
# the name it was found by.
_Found = tuple[tuple[int, str] | None, bool]


class MovePlanner:
    """Link rewrites for file renames, for one user over the vaults."""

    def __init__(self, resolver: Resolver) -> None:
        self.resolver = resolver
        self.finder = ReferenceFinder(resolver)

    def plan(self, moves: Sequence[Move], documents: Sequence[Document]) -> Plan | None:
        """The edits that keep the links of the vaults' notes and of ``documents`` (the open
        ones, whose text wins over their files) naming what they name once the files or
        folders of ``moves`` have moved; edits address the files where they are now. None
        when no move is of a note in a vault."""
        before = list(self.resolver.vaults)
        after: list[VaultView] = []
        moved: dict[tuple[int, str], tuple[int, str] | None] = {}
        for index, vault in enumerate(before):
            put: dict[str, Note] = {}
            gone: list[str] = []
            for move in moves:
                source = vault.relative(move.source)
                if source is None:
                    continue
                destination = vault.relative(move.destination)
                for path in _under(vault, source):
                    gone.append(path)
                    new = None if destination is None else destination + path[len(source) :]
                    if new is None or not vault.admits(new):
                        moved[(index, path)] = None  # out of the vault: nothing to follow
                        continue
                    put[new] = self._renamed(vault.notes[path], new, documents)
                    moved[(index, path)] = (index, new)
            after.append(vault.moved(put, gone) if gone else vault)
        if not moved:
            return None
        # Only a target that names a moved note by one of its names, before or after the
        # move, can change what it names: the others are not resolved at all (resolving
        # every distinct target of 10 000 notes twice took 0.3 s).
        names: set[str] = set()
        for (index, path), lands in moved.items():
            names.update(*index_keys(before[index].notes[path]))
            if lands is not None:
                names.update(*index_keys(after[lands[0]].notes[lands[1]]))
        rewrites: dict[str, str] = {}
        for target in _targets(before, documents):
            if names.isdisjoint(target_keys(target)):
                continue
            old, _ = _find(before, target)
            if old is None:
                continue  # unresolved before: not this rename's to mend
            expected = moved.get(old, old)
            if expected is None:
                continue
            now, _ = _find(after, target)
            stale = old in moved and _names_by_file(before, old, target, after, expected)
            if now != expected or stale:
                rewrites[target] = _best_form(target, after, expected)
        edits = [
            Edit(Place(place.document, start, end, link), rewrites[link.target])
            for place in self.finder.links_to(rewrites, documents)
            if (link := place.reference) is not None and writable(place.document)
            for start, end in [link_target_span(link)]
        ]
        return Plan(without_overlaps(edits))

    def _renamed(self, note: Note, path: str, documents: Sequence[Document]) -> Note:
        """``note`` at its new ``path``, retitled when its title is its file name."""
        title = note.title
        if title == PurePosixPath(note.path).stem:
            own = self.finder.text_of(note, documents)
            if own is not None and title_spot(own.text).source == "file":
                title = PurePosixPath(path).stem
        return replace(note, path=path, title=title)


def _under(vault: VaultView, source: str) -> list[str]:
    """The notes of ``vault`` at ``source`` or, for a folder, under it."""
    notes = vault.notes
    if source in notes:
        return [source]
    prefix = source.rstrip("/") + "/"
    return sorted(path for path in notes if path.startswith(prefix))


def _targets(vaults: Sequence[VaultView], documents: Sequence[Document]) -> set[str]:
    """Every distinct ``[[link]]`` target in the vaults' notes and the open documents."""
    found = {
        link.target for vault in vaults for note in vault.notes.values() for link in note.links
    }
    for document in documents:
        found.update(r.target for r in document.references() if r.kind is RefKind.NOTE)
    return found


def _find(vaults: Sequence[VaultView], target: str) -> _Found:
    """The note ``[[target]]`` names over ``vaults`` (the first vault that has it), and
    whether it is the only one by that name."""
    for index, vault in enumerate(vaults):
        found = vault.resolve(target)
        if found.note is not None:
            return (index, found.note.path), len(found.candidates) <= 1
        if found.file is not None:
            return None, False  # an attachment: file renames of notes do not move it
    return None, False


def _names_by_file(
    before: Sequence[VaultView],
    old: tuple[int, str],
    target: str,
    after: Sequence[VaultView],
    new: tuple[int, str],
) -> bool:
    """Whether ``target`` names the moved note by a file name or path it loses in the move
    (``[[Old]]`` still resolving by the title heading ``# Old`` of ``New.md``)."""
    was = before[old[0]].notes[old[1]]
    return names_file(was, target) and not names_file(after[new[0]].notes[new[1]], target)


def _best_form(target: str, after: Sequence[VaultView], note: tuple[int, str]) -> str:
    """The shortest text naming ``note`` after the move in the style ``target`` was
    written: its bare name when no other note has it (a path-styled link keeps a path),
    else its path; with the extension when ``target`` had one."""
    path = note[1]
    with_extension = target.lower().endswith(NOTE_SUFFIXES)
    written = path if with_extension else note_stem(path)
    name = written.rpartition("/")[2]
    candidates = [written] if "/" in written else [name, f"./{written}"]
    if "/" not in target and "/" in written:
        candidates.insert(0, name)
    candidates.append(path if "/" in path else f"./{path}")
    for candidate in candidates:
        found, alone = _find(after, candidate)
        if found == note and (alone or "/" in candidate):
            return candidate
    return candidates[-1]


def rewritten(plan: Plan | None) -> dict[Path, str]:
    """The new text of each note file ``plan``'s edits change, by the file's path before the
    move: what a move made outside an editor (MCP ``move_note``) writes, there being no
    editor to apply the edits."""
    edits: dict[int, list[Edit]] = {}
    for each in plan.edits if plan is not None else ():
        if each.place.document.path is not None:
            edits.setdefault(id(each.place.document), []).append(each)
    texts: dict[Path, str] = {}
    for group in edits.values():
        document = group[0].place.document
        text = document.text
        for each in sorted(group, key=lambda e: e.place.start, reverse=True):
            text = text[: each.place.start] + each.new_text + text[each.place.end :]
        assert document.path is not None
        texts[document.path] = text
    return texts
