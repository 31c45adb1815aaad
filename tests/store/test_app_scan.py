"""A command's vaults are walked once: ``refresh_indexes`` scans them to sync the index, and
the snapshot the command reads next starts from that scan (a second walk of 10 000 notes
was ~0.1 s of every ``build-context`` and ``search`` process)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from lsp_memory.app import App
from lsp_memory.config import Config
from lsp_memory.notes import Vault
from tests.conftest import DATA, USER


def test_a_snapshot_after_refresh_indexes_does_not_scan_the_vault_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scans: list[Path] = []
    scan = Vault.scan

    def counted(vault: Vault):  # type: ignore[no-untyped-def]
        scans.append(vault.root)
        return scan(vault)

    monkeypatch.setattr(Vault, "scan", counted)
    config = replace(
        Config(),
        store=tmp_path / "store",
        cache=tmp_path / "cache",
        user=USER,
        vaults=(DATA / "notes",),
        model=tmp_path / "no-model",  # the text side is enough here
    )
    app = App(config)
    try:
        app.refresh_indexes()
        snapshot = app.snapshot()
        assert scans == [(DATA / "notes").resolve()]
        note = snapshot.vaults[0].resolve("Project Plan").note
        assert note is not None and note.path == "project-plan.md"
    finally:
        app.close()
