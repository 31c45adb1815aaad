"""``[[`` completion before a vault's notes are first known: a server answers a ``[[``
typed in its first second from an empty vault view, and that empty list must say it is
incomplete, or the editor keeps it while the user types on and never shows a note."""

from __future__ import annotations

from pathlib import Path

from lsp_memory.notes.vault import Vault
from lsp_memory.services.editor.completion import Completer, typed_at
from lsp_memory.store.sqlite import Store
from tests.conftest import USER


def _complete(kb: Store, vault: Vault, line: str) -> tuple[list[str], bool]:
    typed = typed_at(line, len(line))
    assert typed is not None and typed.kind == "note"
    found, incomplete = Completer(kb, None, [vault.view()], USER).complete(typed)
    return [c.label for c in found], incomplete


def test_an_empty_answer_before_the_first_scan_is_incomplete_and_complete_after(
    kb: Store, tmp_path: Path
) -> None:
    (tmp_path / "Reading List.md").write_text("# Reading List\n", encoding="utf-8")
    vault = Vault(tmp_path)
    assert _complete(kb, vault, "see [[Rea") == ([], True)
    vault.scan()
    assert _complete(kb, vault, "see [[Rea") == (["Reading List"], False)


def test_an_empty_vault_once_scanned_answers_complete(kb: Store, tmp_path: Path) -> None:
    vault = Vault(tmp_path)
    vault.scan()
    assert _complete(kb, vault, "see [[Rea") == ([], False)


def test_the_saved_scan_published_early_counts_as_known(kb: Store, tmp_path: Path) -> None:
    (tmp_path / "Reading List.md").write_text("# Reading List\n", encoding="utf-8")
    saved = tmp_path.parent / f"{tmp_path.name}.scan"
    Vault(tmp_path, saved=saved).scan()  # writes the saved scan
    vault = Vault(tmp_path, saved=saved)
    assert _complete(kb, vault, "see [[Rea") == ([], True)
    vault.preload()
    assert _complete(kb, vault, "see [[Rea") == (["Reading List"], False)
