"""What commands read: a FILE argument (or ``-``, standard input) and a command-line REF."""

from __future__ import annotations

import sys
from pathlib import Path

from lsp_memory import refs
from lsp_memory.app import App
from lsp_memory.errors import UserError
from lsp_memory.model import Claim, Reference
from lsp_memory.services.kernel.resolver import claim_named


def read_input(name: str) -> bytes:
    """The bytes of FILE, or of standard input for ``-``."""
    if name == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(name).read_bytes()
    except OSError as error:
        raise UserError(f"cannot read {name}: {error.strerror or error}") from None


def read_text(name: str) -> str:
    data = read_input(name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UserError(
            f"{name}: not valid UTF-8 (byte {data[error.start]:#04x} at offset {error.start})"
        ) from None


def source_name(name: str) -> str:
    """How a FILE argument is named in messages."""
    return "standard input" if name == "-" else name


def parse_file(name: str, language_id: str | None) -> tuple[Reference, ...]:
    """The references in FILE."""
    text = read_text(name)
    path = None if name == "-" else name
    return refs.parse_document(text, language_id=language_id, path=path).references


def strip_at(value: str) -> str:
    return value[1:] if value.startswith("@") else value


def claim_for(app: App, ref: str) -> Claim:
    """The claim a command-line REF names; one-line error when it names none or not a claim."""
    return claim_named(app.snapshot().resolver(), ref)
