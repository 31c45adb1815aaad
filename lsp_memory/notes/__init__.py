"""Notes: Markdown files in vaults (docs/reference.md, Notes). Scanning, front matter, ``[[link]]``
resolution.

Pure over files: depends on :mod:`lsp_memory.model` and :mod:`lsp_memory.refs` only (and
PyYAML for front matter). :func:`parse_note` turns one file's bytes into a
:class:`~lsp_memory.model.Note`; a :class:`Vault` keeps the notes of one folder current and
resolves links among them; a :class:`VaultView` is one note set of it, what a request reads.
"""

from lsp_memory.notes.parse import MAX_NOTE_BYTES, parse_note
from lsp_memory.notes.resolve import link_form, names_file
from lsp_memory.notes.vault import ScanResult, Vault, VaultView

__all__ = [
    "MAX_NOTE_BYTES",
    "ScanResult",
    "Vault",
    "VaultView",
    "link_form",
    "names_file",
    "parse_note",
]
