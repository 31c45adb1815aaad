"""What an editor shows beside references without being asked: the file each ``[[link]]``
opens (document links: a note at its heading or block, or an attachment) and the statement
after each ``#N`` / ``@claim_N`` (inlay hints)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lsp_memory import refs
from lsp_memory.model import Reference, RefKind
from lsp_memory.services.kernel.resolver import Resolver
from lsp_memory.text import one_line

HINT_CHARS = 40


@dataclass(frozen=True, slots=True)
class Link:
    """A ``[[link]]`` that resolves: where it points."""

    reference: Reference
    path: Path
    line: int | None  # 0-based: the heading's or block's line, or 0; None for an attachment
    title: str


@dataclass(frozen=True, slots=True)
class Hint:
    """A short text to show right after a claim-number reference."""

    reference: Reference
    label: str
    tooltip: str


def _short(text: str) -> str:
    return one_line(text, HINT_CHARS)


class Annotator:
    """Links and hints of one document's references."""

    def __init__(self, resolver: Resolver) -> None:
        self.resolver = resolver

    def links(self, text: str, language_id: str | None, path: str | None) -> list[Link]:
        found = []
        for reference in refs.parse_document(text, language_id, path).references:
            if reference.kind is not RefKind.NOTE:
                continue
            target = self.resolver.resolve(reference).note
            if target is not None and target.file is not None:  # an attachment: the file
                file = Path(target.file)
                found.append(Link(reference, file, None, file.name))
                continue
            if target is None or target.note is None:
                continue
            note = target.note
            line = target.heading.line if target.heading is not None else 0
            if target.block is not None:
                line = target.block.line
            found.append(Link(reference, Path(note.vault) / note.path, line, note.title))
        return found

    def hints(
        self, text: str, language_id: str | None, path: str | None, lines: tuple[int, int]
    ) -> list[Hint]:
        """Hints for the number references on lines ``lines[0]`` to ``lines[1]``."""
        found = []
        for reference in refs.parse_document(text, language_id, path).references:
            if not lines[0] <= reference.span.start.line <= lines[1]:
                continue
            if reference.claim_number is None:
                continue
            resolution = self.resolver.resolve(reference)
            if not resolution.claims:
                continue
            claim = resolution.claims[0]
            status = "" if claim.status.value == "active" else f" ({claim.status.value})"
            found.append(Hint(reference, f"{_short(claim.statement)}{status}", claim.statement))
        return found
