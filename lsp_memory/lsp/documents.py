"""The open documents the server reads: the editor's buffers, split into lines as the
editor splits them, up to a size limit.

Lines end at ``\n``, ``\r\n`` and ``\r`` only, as LSP says. pygls splits with
``str.splitlines``, which also breaks at U+2028, U+2029, U+0085, ``\v``, ``\f`` and
``\x1c``–``\x1e``: after one of those every position on its line pointed elsewhere, and an
editor's incremental change landed in the wrong place of the server's copy. ``LspWorkspace``
makes every document an ``LspDocument``, whose lines are LSP's (and split once per text).

A document above ``max_document_bytes`` is kept by pygls (the editor's changes still apply
to it) but no request reads it: no references, diagnostics, links, hints or code lens, and
it is not handed to the vaults as a note's text. A 10 MB document full of references made
every request wait behind its parse and took ~1 GB; now the user is told once, per
document, why it gets nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from pygls.workspace import TextDocument
from pygls.workspace import Workspace as PyglsWorkspace

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
"""A line and its break, or the last line without one."""


_NOT_LSP_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
"""Where ``str.splitlines`` breaks a line and LSP does not."""


def lsp_lines(text: str) -> list[str]:
    """``text``'s lines with their breaks, at LSP's line breaks only: ``str.splitlines``
    when it splits the same (2 MB: 4 ms with the checks, the expression 12 ms)."""
    if not any(char in text for char in _NOT_LSP_BREAKS):
        return text.splitlines(True)
    return _LINE.findall(text)


class LspDocument(TextDocument):
    """A pygls document whose lines are LSP's, split once per text (pygls splits the whole
    text again for every position it converts)."""

    _split: tuple[str, tuple[str, ...]] | None = None

    @property
    def lines(self) -> Sequence[str]:
        source = self.source
        split = self._split
        if split is None or split[0] is not source:
            split = self._split = (source, tuple(lsp_lines(source)))
        return split[1]


class LspWorkspace(PyglsWorkspace):
    """pygls's workspace, its documents ``LspDocument``s."""

    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        return LspDocument(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=self._sync_kind,
            position_codec=self.position_codec,
        )

    @classmethod
    def like(cls, other: PyglsWorkspace) -> LspWorkspace:
        """A workspace made as ``other`` was (pygls makes its own at ``initialize``)."""
        given: Any = other
        return cls(
            other.root_uri,
            given._sync_kind,
            list(other.folders.values()),
            other.position_encoding,
        )


def over(text: str, limit: int) -> bool:
    """Whether ``text`` is more than ``limit`` bytes of UTF-8, encoded only when its length
    alone cannot tell (a character is 1 to 4 bytes)."""
    if len(text) > limit or len(text) * 4 <= limit:
        return len(text) > limit
    return len(text.encode("utf-8", "surrogatepass")) > limit


class Readable(Mapping[str, TextDocument]):
    """The workspace's documents no larger than ``limit`` bytes. ``too_large`` is told the
    first time a document is found above it (uri, size)."""

    def __init__(
        self,
        documents: Mapping[str, TextDocument],
        limit: int,
        warned: set[str],
        too_large: Callable[[str, int], None],
    ) -> None:
        self._documents = documents
        self._limit = limit
        self._warned = warned
        self._too_large = too_large

    def __getitem__(self, uri: str) -> TextDocument:
        doc = self._documents[uri]
        if over(doc.source, self._limit):
            if uri not in self._warned:
                self._warned.add(uri)
                self._too_large(uri, len(doc.source.encode("utf-8", "surrogatepass")))
            raise KeyError(uri)
        self._warned.discard(uri)  # back under the limit: told again if it grows
        return doc

    def __iter__(self) -> Iterator[str]:
        return (uri for uri in list(self._documents) if uri in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, uri: object) -> bool:
        if not isinstance(uri, str):
            return False
        try:
            self[uri]
        except KeyError:
            return False
        return True
