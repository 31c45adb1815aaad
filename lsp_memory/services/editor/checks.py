"""Checks of the references in a document: what is wrong with each and how to fix it.

Pure over a resolver (the store and the vaults): document text in, ``Finding``s out, each with
a kind, a severity, a message, the reference and its suggested fixes. The language server turns
them into diagnostics and quick fixes. Kinds and their default severities are
``lsp_memory.config.DIAGNOSTIC_SEVERITIES``:

- ``unresolved``: an ``@id``, ``#N`` or ``@memory:`` reference that names nothing; an
  ``@id`` close to one that exists says which ("did you mean @leaf_ctx?"), with a fix;
- ``unknown-mention`` (a hint): an ``@word`` that names nothing and has no memory-id shape
  (no ``_``) nor a close existing id — a person's handle in a note, say — or a ``#N`` above
  every claim number ever given (an issue number, a year);
- ``inactive-claim``: a direct reference to a retracted, superseded, merged or deprecated claim,
  with a fix to its live successor when there is one;
- ``broken-link``: a ``[[link]]`` (or embed ``![[…]]``) to no note (fix: create it), outside
  the vault, or to a heading or ``^block`` id the note lacks;
- ``ambiguous-link``: a ``[[link]]`` that several notes match (a fix per candidate);
- ``archived-note``: a ``[[link]]`` to an archived note.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lsp_memory import refs
from lsp_memory.config import DIAGNOSTIC_SEVERITIES
from lsp_memory.errors import UserError
from lsp_memory.model import LIVE_STATUSES, Claim, ClaimStatus, Note, Reference, RefKind
from lsp_memory.notes import VaultView
from lsp_memory.notes.walk import NOTE_SUFFIXES
from lsp_memory.services.kernel import lineage
from lsp_memory.services.kernel.resolver import Resolution, Resolver

UNRESOLVED = "unresolved"
UNKNOWN_MENTION = "unknown-mention"
INACTIVE_CLAIM = "inactive-claim"
BROKEN_LINK = "broken-link"
AMBIGUOUS_LINK = "ambiguous-link"
ARCHIVED_NOTE = "archived-note"

_NOT_FOUND = "Note not found: "
# Characters that some file system refuses in a name, and control characters.
_UNSAFE = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')
_NOTE_SUFFIX = re.compile(r"\.(?:md|markdown)$", re.IGNORECASE)

OnError = Callable[[Reference, Exception], None]


@dataclass(frozen=True, slots=True)
class Replace:
    """A fix that replaces ``text[start:end]`` of the document (Python string offsets, on the
    reference's line) with ``new_text``."""

    title: str
    start: int
    end: int
    new_text: str
    preferred: bool = False


@dataclass(frozen=True, slots=True)
class CreateNote:
    """A fix that creates the note file ``path`` (absolute, not existing yet) with ``content``."""

    title: str
    path: Path
    content: str


Fix = Replace | CreateNote


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem with one reference."""

    kind: str  # one of the keys of DIAGNOSTIC_SEVERITIES
    message: str
    reference: Reference
    fixes: tuple[Fix, ...] = ()
    deprecated: bool = False  # names something no longer current (an inactive claim)
    severity: str = "warning"  # error, warning, information or hint


def check(
    text: str,
    resolver: Resolver,
    *,
    language_id: str | None = None,
    path: str | None = None,
    severities: Mapping[str, str] = DIAGNOSTIC_SEVERITIES,
    on_error: OnError | None = None,
) -> list[Finding]:
    """The findings of every reference in ``text``, in document order.

    ``language_id`` and ``path`` (a path or URI) decide whether the text is Markdown, whose
    code is left out. A kind whose severity is ``off`` is not reported. An exception while
    checking one reference goes to ``on_error`` and the other references are still checked;
    without ``on_error`` it propagates.
    """
    parsed = refs.parse_document(text, language_id, path)
    found: list[Finding] = []
    # The same reference written twice resolves the same; resolve it once.
    done: dict[tuple[RefKind, str], list[Finding]] = {}
    for reference in parsed.references:
        key = (reference.kind, reference.text)
        if key not in done:
            try:
                done[key] = _check(reference, resolver)
            except Exception as error:
                if on_error is None:
                    raise
                on_error(reference, error)
                done[key] = []
        for finding in done[key]:
            severity = severities.get(finding.kind, DIAGNOSTIC_SEVERITIES[finding.kind])
            if severity != "off":
                found.append(_placed(finding, reference, severity))
    return found


def _placed(finding: Finding, reference: Reference, severity: str) -> Finding:
    """``finding`` with its severity, moved to ``reference`` (an identical token, possibly
    elsewhere)."""
    shift = reference.offset - finding.reference.offset
    fixes = tuple(
        replace(fix, start=fix.start + shift, end=fix.end + shift)
        if isinstance(fix, Replace)
        else fix
        for fix in finding.fixes
    )
    return replace(finding, severity=severity, reference=reference, fixes=fixes)


def _check(reference: Reference, resolver: Resolver) -> list[Finding]:
    """The findings of one reference, their severity not set yet."""
    resolution = resolver.resolve(reference, members=False)
    if reference.kind is RefKind.NOTE:
        return _note(reference, resolution, resolver)
    if resolution.error is not None:
        return [_unresolved(reference, resolution.error, resolver)]
    if resolution.kind == "claim" and resolution.claims:
        return _claim(reference, resolution.claims[0], resolver)
    return []


def _unresolved(reference: Reference, error: str, resolver: Resolver) -> Finding:
    """A reference that names nothing: a near miss says what it may have meant; a word or a
    number that could not be a memory reference is only a mention."""
    if reference.kind is RefKind.ID:
        near = _near(reference.target, resolver)
        if near is not None:
            title, written = f"Replace with @{near}", f"@{near}"
            fix = Replace(title, reference.offset, reference.end, written, preferred=True)
            return Finding(UNRESOLVED, f"{error}; did you mean @{near}?", reference, (fix,))
        if "_" not in reference.target:
            return Finding(UNKNOWN_MENTION, f"{error} (not a memory id: a mention?)", reference)
    if reference.kind is RefKind.NUMBER:
        number = reference.claim_number
        last = resolver.store.last_claim_number(resolver.user)
        if number is not None and number > last:
            return Finding(UNKNOWN_MENTION, f"{error} (yours end at #{last})", reference)
    return Finding(UNRESOLVED, error, reference)


NEAR_CUTOFF = 0.8
"""How alike (difflib's ratio, 0–1) a written id and an existing one must be for a near miss:
one letter wrong or missing in an id of eight."""


def _near(target: str, resolver: Resolver) -> str | None:
    """The existing context, entity, tag or domain id most like ``target``, if one is close
    (claims are left out: there are too many, and they are completed, not typed)."""
    store, user = resolver.store, resolver.user

    def ids() -> list[str]:
        return [
            *(c.friendly_id for c in store.contexts(user)),
            *(e.friendly_id for e in store.entities(user)),
            *(t.friendly_id for t in store.tags(user)),
            *(f"{d}_domain" for d in store.domains(user)),
        ]

    known: KnownIds = store.remembered(("near ids", user), lambda: KnownIds.of(ids()))
    return known.closest(target.casefold(), NEAR_CUTOFF)


@dataclass(frozen=True, slots=True)
class KnownIds:
    """Ids to find a near miss among, with each one's letter counts, so that difflib's
    ``quick_ratio`` — an upper bound of its ratio — is had for all of them in one array
    operation and only the few that could reach the cutoff are compared in full. The answer
    is ``difflib.get_close_matches``'s; over 7 200 ids it took ~10 ms per unresolved
    reference, and a 1 000-line note with 50 of them 300 ms to check."""

    names: tuple[str, ...]
    alphabet: Mapping[str, int]
    counts: Any  # numpy int32 array: a row per name, a column per letter of ``alphabet``
    lengths: Any

    @classmethod
    def of(cls, names: Sequence[str]) -> KnownIds:
        import numpy as np

        alphabet: dict[str, int] = {}
        for name in names:
            for letter in name:
                alphabet.setdefault(letter, len(alphabet))
        counts = np.zeros((len(names), len(alphabet)), dtype=np.int32)
        for row, name in enumerate(names):
            for letter in name:
                counts[row, alphabet[letter]] += 1
        lengths = np.array([len(name) for name in names], dtype=np.int64)
        return cls(tuple(names), alphabet, counts, lengths)

    def closest(self, word: str, cutoff: float) -> str | None:
        """The name ``difflib.get_close_matches(word, names, n=1, cutoff=cutoff)`` gives."""
        import numpy as np

        if not self.names:
            return None
        wanted = np.zeros(len(self.alphabet), dtype=np.int32)
        for letter in word:
            column = self.alphabet.get(letter)
            if column is not None:
                wanted[column] += 1
        shared = np.minimum(self.counts, wanted).sum(axis=1)
        # As difflib computes it (2.0 * matches / total), so the comparison is the same.
        quick = 2.0 * shared / (self.lengths + len(word))
        possible = [self.names[row] for row in np.flatnonzero(quick >= cutoff)]
        found = difflib.get_close_matches(word, possible, n=1, cutoff=cutoff)
        return found[0] if found else None


# Claims --------------------------------------------------------------------------------------


def _claim(reference: Reference, claim: Claim, resolver: Resolver) -> list[Finding]:
    if claim.status in LIVE_STATUSES:
        return []
    successor = lineage.successor(resolver.store, resolver.user, claim)
    message = f"Claim #{claim.number} (@{claim.friendly_id}) is {claim.status}"
    if successor is not None:
        how = "into" if claim.status is ClaimStatus.MERGED else "by"
        message += f" {how} #{successor.number} (@{successor.friendly_id})"
    elif claim.superseded_by or claim.merged_into:
        message += "; its successor is missing or no longer current"
    fixes: tuple[Fix, ...] = ()
    if successor is not None:
        new_text = _same_form(reference, successor)
        fixes = (
            Replace(
                f"Replace with {new_text}",
                reference.offset,
                reference.end,
                new_text,
                preferred=True,
            ),
        )
    return [Finding(INACTIVE_CLAIM, message, reference, fixes, deprecated=True)]


def _same_form(reference: Reference, claim: Claim) -> str:
    """A reference to ``claim`` written as ``reference`` is: ``#N``, ``@claim_N``,
    ``@memory:<uuid>``/``@mem:<uuid>`` or ``@friendly_id``."""
    if reference.kind is RefKind.NUMBER:
        return f"#{claim.number}"
    if reference.kind is RefKind.UUID:
        return f"{reference.text.partition(':')[0]}:{claim.claim_id}"
    if reference.claim_number is not None:
        return f"@claim_{claim.number}"
    return f"@{claim.friendly_id}"


# Notes ---------------------------------------------------------------------------------------


def _note(reference: Reference, resolution: Resolution, resolver: Resolver) -> list[Finding]:
    target = resolution.note
    if target is not None and target.file is not None:
        return []  # an attachment of the vault: there
    note = target.note if target is not None else None
    if note is None or target is None:
        message = resolution.error or f"{_NOT_FOUND}{reference.target}"
        fixes: tuple[Fix, ...] = ()
        if message.startswith(_NOT_FOUND):
            create = _create(reference, resolver)
            fixes = (create,) if create is not None else ()
        return [Finding(BROKEN_LINK, message, reference, fixes)]
    found: list[Finding] = []
    if target.error is not None:  # the note is there, the heading is not
        found.append(Finding(BROKEN_LINK, target.error, reference))
    if len(target.candidates) > 1:
        paths = ", ".join(c.path for c in target.candidates)
        message = (
            f"[[{reference.target}]] matches {len(target.candidates)} notes: {paths}; "
            f"it links to {note.path}"
        )
        fixes = tuple(_pick(reference, candidate, resolver) for candidate in target.candidates)
        found.append(Finding(AMBIGUOUS_LINK, message, reference, fixes))
    if note.archived:
        found.append(Finding(ARCHIVED_NOTE, f"{note.title} ({note.path}) is archived", reference))
    return found


def _create(reference: Reference, resolver: Resolver) -> CreateNote | None:
    """Creating the missing note ``[[X]]`` as ``<first vault>/X.md`` with the heading ``# X``;
    None when there is no vault, no usable file name, or that file exists already (it is then
    on disk but not scanned yet: creating it again would fail)."""
    if not resolver.vaults:
        return None
    parts = [_safe(part) for part in reference.target.split("/")]
    parts = [part for part in parts if part]
    if not parts:
        return None
    # The heading is the target as written, so that [[X]] finds the new note by its title.
    written = reference.target.rsplit("/", 1)[-1].strip()
    title = _NOTE_SUFFIX.sub("", written).strip() or written
    if not _NOTE_SUFFIX.search(parts[-1]):
        parts[-1] += ".md"
    path = resolver.vaults[0].root.joinpath(*parts)
    if path.exists():
        return None
    return CreateNote(f"Create note '{reference.target}'", path, f"# {title}\n")


def _safe(name: str) -> str:
    """``name`` with the characters file systems refuse replaced by ``-``, and no leading or
    trailing dots or spaces (hidden files are not notes; Windows drops trailing dots)."""
    return _UNSAFE.sub("-", name).strip(" .")


def _pick(reference: Reference, candidate: Note, resolver: Resolver) -> Replace:
    """A fix that points an ambiguous ``[[target]]`` at ``candidate`` by its vault-relative
    path, keeping any ``#heading`` and ``|label``.

    The path without extension is preferred; when that still resolves elsewhere (a top-level
    file named like another note's title), the path with its extension is used.
    """
    raw = reference.text[2:]
    raw = raw[: min(i for i in (raw.find("#"), raw.find("|"), raw.find("]]")) if i >= 0)]
    start = reference.offset + 2 + len(raw) - len(raw.lstrip())
    end = start + len(reference.target)
    stem = _NOTE_SUFFIX.sub("", candidate.path)
    new_target = candidate.path
    for option in (stem, candidate.path):
        if _links_to(option, candidate, resolver):
            new_target = option
            break
    return Replace(f"Link to '{new_target}' ({candidate.title})", start, end, new_target)


def _links_to(target: str, note: Note, resolver: Resolver) -> bool:
    """Whether ``[[target]]`` resolves to ``note`` alone."""
    parsed = refs.parse(f"[[{target}]]").references
    if len(parsed) != 1:
        return False
    found = resolver.resolve(parsed[0]).note
    return (
        found is not None
        and found.note is not None
        and found.note.key == note.key
        and len(found.candidates) == 1
    )


def note_warnings(path: Path, vaults: Sequence[VaultView]) -> tuple[str, ...]:
    """What went wrong reading the note at ``path`` as the vault last saw it (broken front
    matter, bytes that are not UTF-8): the note is still indexed, and the editor says why it
    may not look as its author meant."""
    for vault in vaults:
        try:
            relative = path.resolve().relative_to(vault.root)
        except ValueError:
            continue
        note = vault.notes.get(relative.as_posix())
        return note.warnings if note is not None else ()
    return ()


def create_note_file(path: Path, content: str, vaults: Sequence[Path]) -> Path:
    """Create the note ``path`` with ``content`` (the "Create note" fix, run as a command):
    a Markdown file inside one of ``vaults`` that does not exist yet; its resolved path.
    Anything else is a ``UserError`` saying why."""
    if path.suffix.lower() not in NOTE_SUFFIXES:
        raise UserError(f"{path}: a note is a .md or .markdown file")
    resolved = path.parent.resolve() / path.name
    if not any(resolved.is_relative_to(vault.resolve()) for vault in vaults):
        raise UserError(f"{path} is outside the notes folders")
    try:
        resolved.parent.mkdir(parents=True, exist_ok=True)
        with resolved.open("x", encoding="utf-8") as file:
            file.write(content)
    except FileExistsError:
        raise UserError(f"{path} already exists") from None
    except OSError as error:
        raise UserError(f"cannot create {path}: {error.strerror or error}") from None
    return resolved
