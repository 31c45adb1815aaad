"""The open documents the server reads: the editor's buffers up to a size limit.

A document above ``max_document_bytes`` is kept by pygls (the editor's changes still apply
to it) but no request reads it: no references, diagnostics, links, hints or code lens, and
it is not handed to the vaults as a note's text. A 10 MB document full of references made
every request wait behind its parse and took ~1 GB; now the user is told once, per
document, why it gets nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from pygls.workspace import TextDocument


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
