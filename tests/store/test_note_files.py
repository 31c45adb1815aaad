"""``notes/files.py`` on a vault in ``tmp_path``: sections by heading (levels, fenced code,
the last section), permissions kept, a write through a symlink or into a folder linked out
refused, a failed write leaving the note and no temporary file; and ``ids.since``'s forms."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_memory.errors import UserError
from lsp_memory.ids import since
from lsp_memory.notes import Vault
from lsp_memory.notes.files import NoteFiles

NOTE = """# Trip

Intro.

## Days

Day one.

```
## Days
not a heading: fenced code
```

### Morning

Coffee.

## Food

Ramen.
"""


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "trip.md").write_text(NOTE, encoding="utf-8")
    found = Vault(root)
    found.scan()
    return found


def test_a_section_runs_to_the_next_heading_of_its_level(vault: Vault) -> None:
    files = NoteFiles([vault])
    note = files.locate("trip.md")
    files.replace_section(note, "Days", "Kyoto.")  # the fenced "## Days" is not a heading
    text = files.read(note)
    assert text.startswith("# Trip\n\nIntro.\n\n## Days\nKyoto.\n\n## Food\n\nRamen.\n")
    files.replace_section(note, "## Food", "Soba.\n")  # the last section: to the end
    assert files.read(note).endswith("## Food\nSoba.\n")
    files.replace_section(note, "# Trip", "All new.")
    assert files.read(note) == "# Trip\nAll new.\n"


def test_a_write_keeps_the_permissions_and_leaves_no_temporary_file(vault: Vault) -> None:
    files = NoteFiles([vault])
    path = vault.root / "trip.md"
    path.chmod(0o600)
    files.append(files.locate("trip.md"), "More.")
    assert path.stat().st_mode & 0o777 == 0o600
    files.write(files.locate("new/one.md"), "# One\n")
    assert (vault.root / "new" / "one.md").stat().st_mode & 0o777 == 0o644
    assert [p.name for p in vault.root.rglob("*.tmp")] == []
    assert "new/one.md" in vault.view().notes  # read again by the vault


def test_writes_through_links_are_refused(vault: Vault, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (vault.root / "inner.md").symlink_to(vault.root / "trip.md")
    files = NoteFiles([vault])
    with pytest.raises(UserError, match="is a symlink"):
        files.append(files.locate("inner.md"), "x")  # inside, but a rename would break it
    assert files.read(files.locate("inner.md")) == NOTE  # reading through it is fine
    (vault.root / "out").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UserError, match="leads outside the vault"):
        files.locate("out/new/deeper.md")
    assert list(outside.iterdir()) == []


def test_a_note_too_large_is_not_written(vault: Vault) -> None:
    files = NoteFiles([vault])
    note = files.locate("trip.md")
    with pytest.raises(UserError, match="bytes, over"):
        files.write(note, "x" * (10 * 1024 * 1024 + 1), overwrite=True)
    assert files.read(note) == NOTE
    assert [p.name for p in vault.root.rglob("*.tmp")] == []


def test_since_takes_a_timeframe_or_a_date() -> None:
    assert since("7d", "2026-03-08T00:00:00Z") == "2026-03-01T00:00:00.000000Z"
    assert since("24h", "2026-03-08T00:00:00Z") == "2026-03-07T00:00:00.000000Z"
    assert since("30m", "2026-03-08T00:00:00Z") == "2026-03-07T23:30:00.000000Z"
    assert since("2w", "2026-03-15T00:00:00Z") == "2026-03-01T00:00:00.000000Z"
    assert since("2026-03-01") == "2026-03-01T00:00:00.000000Z"
    with pytest.raises(ValueError, match="before the year 1"):
        since("999999w")
    for bad in ("soon", "", "-1d", "7 days"):
        with pytest.raises(ValueError, match="neither a timeframe"):
            since(bad)
