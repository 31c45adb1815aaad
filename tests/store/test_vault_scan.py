"""Scanning a vault on disk (docs/reference.md, Notes): which files are notes (hidden folders,
node_modules,
excludes, symlinks and their loops), bad files (binary, huge, non-UTF-8, unreadable, deleted
mid-scan), incremental rescans, single-file updates and unsaved editor buffers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import pytest

from lsp_memory.notes import MAX_NOTE_BYTES, Vault


def write(root: Path, path: str, text: str = "") -> Path:
    file = root / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text, encoding="utf-8")
    return file


def paths(vault: Vault) -> list[str]:
    return sorted(vault.notes)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "vault"
    folder.mkdir()
    return folder


# Which files are notes ------------------------------------------------------------------------


def test_markdown_files_only_any_case_of_suffix(root: Path) -> None:
    for path in ["a.md", "b.MD", "c.markdown", "d.Markdown", "e.txt", "f.mdx", "g.md.bak"]:
        write(root, path, "text")
    vault = Vault(root)
    result = vault.scan()
    assert result.added == ("a.md", "b.MD", "c.markdown", "d.Markdown")
    assert paths(vault) == list(result.added)


def test_hidden_files_and_folders_and_node_modules_are_skipped(root: Path) -> None:
    for path in [
        "kept.md",
        "sub/kept.md",
        ".hidden.md",
        ".obsidian/workspace.md",
        "sub/.trash/old.md",
        "node_modules/pkg/README.md",
        "sub/node_modules/x.md",
    ]:
        write(root, path)
    vault = Vault(root)
    vault.scan()
    assert paths(vault) == ["kept.md", "sub/kept.md"]


def test_excludes_are_globs_over_the_relative_path(root: Path) -> None:
    for path in [
        "kept.md",
        "drafts/a.md",
        "drafts/deep/b.md",
        "notes/x.tmp.md",
        "x.tmp.md",
        "archive/old.md",
        "notes/archive/old.md",
        "notes/archived.md",
    ]:
        write(root, path)
    vault = Vault(root, excludes=["drafts", "*.tmp.md", "**/archive/*"])
    vault.scan()
    assert paths(vault) == ["kept.md", "notes/archived.md"]


def test_the_root_is_resolved_and_paths_are_posix(root: Path, tmp_path: Path) -> None:
    write(root, "sub/deeper/n.md")
    vault = Vault(tmp_path / "vault" / ".." / "vault")
    vault.scan()
    assert vault.root == root.resolve()
    (note,) = vault.notes.values()
    assert note.path == "sub/deeper/n.md"
    assert note.vault == str(root.resolve())


def test_symlinks_leaving_the_vault_are_not_followed(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "secret.md", "# Secret")
    write(outside, "folder/more.md", "# More")
    write(root, "inside.md", "# Inside")
    (root / "link-to-file.md").symlink_to(outside / "secret.md")
    (root / "link-to-folder").symlink_to(outside / "folder")
    (root / "link-to-outside-root").symlink_to(outside)
    vault = Vault(root)
    result = vault.scan()
    assert paths(vault) == ["inside.md"]
    assert vault.resolve("Secret").note is None
    assert result.warnings == ()


def test_symlinks_inside_the_vault_are_followed(root: Path) -> None:
    write(root, "real.md", "# Real")
    write(root, ".hidden/shown.md", "# Shown Through A Link")
    (root / "alias.md").symlink_to(root / "real.md")
    (root / "visible").symlink_to(root / ".hidden")
    vault = Vault(root)
    vault.scan()
    assert paths(vault) == ["alias.md", "real.md", "visible/shown.md"]


def test_a_folder_reached_directly_and_through_a_symlink_is_indexed_once(root: Path) -> None:
    write(root, "zeta/n.md", "# N")
    (root / "alpha").symlink_to(root / "zeta")  # sorts first, yet the real path wins
    vault = Vault(root)
    vault.scan()
    assert paths(vault) == ["zeta/n.md"]


def test_symlink_loops_terminate(root: Path) -> None:
    write(root, "a/n.md", "# N")
    (root / "a" / "up").symlink_to(root)
    (root / "a" / "self").symlink_to(root / "a")
    (root / "loop.md").symlink_to(root / "loop.md")  # a link to itself: ELOOP
    (root / "ping").symlink_to(root / "pong")
    (root / "pong").symlink_to(root / "ping")
    vault = Vault(root)
    result = vault.scan()
    assert paths(vault) == ["a/n.md"]
    assert result.warnings == ()


def test_a_missing_root_is_a_warning_not_an_error(tmp_path: Path) -> None:
    vault = Vault(tmp_path / "nowhere")
    result = vault.scan()
    assert len(result.warnings) == 1 and "cannot be read" in result.warnings[0]
    assert vault.notes == {}


# Bad files ----------------------------------------------------------------------------------------


def test_a_binary_file_is_skipped_with_a_warning(root: Path) -> None:
    (root / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    write(root, "ok.md", "# Ok")
    vault = Vault(root)
    result = vault.scan()
    assert paths(vault) == ["ok.md"]
    assert result.warnings == ("image.md: a binary file (a NUL byte), not indexed",)
    assert vault.scan().warnings == ()  # not read again while unchanged


def test_a_binary_file_that_becomes_text_is_indexed(root: Path) -> None:
    file = root / "n.md"
    file.write_bytes(b"\x00")
    vault = Vault(root)
    vault.scan()
    file.write_text("# Now Text")
    os.utime(file, ns=(1, 10**18))
    assert vault.scan().added == ("n.md",)


def test_a_50_mb_note_is_cut_with_a_warning(root: Path) -> None:
    line = b"A long note with a [[Link]] on every line, and some *emphasis* too.\n"
    with (root / "huge.md").open("wb") as file:
        file.write(b"# Huge\n")
        for _ in range(50 * 2**20 // (len(line) * 1024)):
            file.write(line * 1024)
    vault = Vault(root)
    result = vault.scan()
    size = (root / "huge.md").stat().st_size
    assert result.warnings == ("huge.md: 50 MB, only the first 10 MB are indexed",)
    assert result.seconds < 30  # a few seconds; generous for slow CI machines
    note = vault.notes["huge.md"]
    assert note.size == size and note.title == "Huge"
    assert len(note.body.encode()) <= MAX_NOTE_BYTES
    assert vault.scan().changed == ()


def test_non_utf8_notes_are_indexed_with_a_warning(root: Path) -> None:
    (root / "latin.md").write_bytes(b"# Caf\xe9\n")
    vault = Vault(root)
    result = vault.scan()
    assert result.warnings == (
        "latin.md: not valid UTF-8 (byte 5); undecodable bytes were replaced",
    )
    assert vault.notes["latin.md"].title == "Caf\ufffd"


def test_broken_front_matter_warns_once_and_the_note_is_indexed(root: Path) -> None:
    write(root, "broken.md", "---\ntitle: [oops\n---\n# Fallback\n")
    vault = Vault(root)
    first = vault.scan()
    assert len(first.warnings) == 1 and first.warnings[0].startswith("broken.md: front matter")
    assert vault.notes["broken.md"].title == "Fallback"
    assert vault.notes["broken.md"].warnings == first.warnings
    assert vault.scan().warnings == ()


_SCAN_AS_NOBODY = """
import json, sys
from pathlib import Path
from lsp_memory.notes import Vault
vault = Vault(Path(sys.argv[1]))
result = vault.scan()
print(json.dumps({"paths": sorted(vault.notes), "warnings": list(result.warnings)}))
"""


def test_an_unreadable_file_is_a_warning() -> None:
    # Outside pytest's private (0700) folders, so an unprivileged user can reach it.
    shared = Path(tempfile.mkdtemp(prefix="lsp-memory-vault-"))
    try:
        shared.chmod(0o755)
        file = write(shared, "locked.md", "# Locked")
        write(shared, "ok.md")
        file.chmod(0)
        if os.geteuid() == 0:
            # root reads files whatever their mode: scan as an unprivileged user instead.
            done = subprocess.run(
                [
                    "setpriv",
                    "--reuid=65534",
                    "--regid=65534",
                    "--clear-groups",
                    sys.executable,
                    "-c",
                    _SCAN_AS_NOBODY,
                    str(shared),
                ],
                capture_output=True,
                text=True,
                check=True,
                timeout=60,
                cwd="/",
                env={"PATH": os.environ["PATH"], "PYTHONPATH": str(Path(__file__).parents[2])},
            )
            found = json.loads(done.stdout)
        else:
            vault = Vault(shared)
            result = vault.scan()
            found = {"paths": paths(vault), "warnings": list(result.warnings)}
        assert found == {
            "paths": ["ok.md"],
            "warnings": ["locked.md: cannot be read (Permission denied)"],
        }
    finally:
        shutil.rmtree(shared)


def test_a_fifo_named_like_a_note_is_ignored(root: Path) -> None:
    os.mkfifo(root / "pipe.md")
    vault = Vault(root)
    result = vault.scan()  # must not block reading the pipe
    assert vault.notes == {} and result.warnings == ()


class _Listing:
    """What ``os.scandir`` returns, over entries listed beforehand."""

    def __init__(self, entries: list[os.DirEntry[str]]) -> None:
        self._entries = entries

    def __enter__(self) -> Iterator[os.DirEntry[str]]:
        return iter(self._entries)

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        return None


@pytest.mark.parametrize("stat_before_delete", [False, True], ids=["at-stat", "at-read"])
def test_a_file_deleted_mid_scan_is_removed_silently(
    root: Path, monkeypatch: pytest.MonkeyPatch, stat_before_delete: bool
) -> None:
    victim = write(root, "victim.md", "# Victim")
    write(root, "stays.md", "# Stays")
    vault = Vault(root)
    vault.scan()
    victim.write_text("# Victim, changed")  # so the next scan wants to read it
    os.utime(victim, ns=(1, 10**18))
    scandir = os.scandir

    def list_then_delete(path: str) -> _Listing:
        with scandir(path) as listing:
            entries = list(listing)
        if stat_before_delete:
            for entry in entries:
                entry.stat()  # cached: the scan sees the file, then fails to open it
        victim.unlink(missing_ok=True)
        return _Listing(entries)

    monkeypatch.setattr(os, "scandir", list_then_delete)
    result = vault.scan()
    assert result.removed == ("victim.md",)
    assert result.warnings == ()
    assert paths(vault) == ["stays.md"]


# Incremental rescans ------------------------------------------------------------------------------


def test_a_rescan_without_changes_keeps_every_note_object(root: Path) -> None:
    for n in range(5):
        write(root, f"n{n}.md", f"# Note {n}")
    vault = Vault(root)
    vault.scan()
    before = dict(vault.notes)
    result = vault.scan()
    assert (result.added, result.changed, result.removed) == ((), (), ())
    assert all(vault.notes[path] is note for path, note in before.items())


def test_a_file_with_unchanged_size_and_mtime_is_not_read(root: Path) -> None:
    file = write(root, "n.md", "# Original")
    vault = Vault(root)
    vault.scan()
    mtime = file.stat().st_mtime_ns
    file.write_text("# Sneakily")  # same size
    os.utime(file, ns=(mtime, mtime))
    result = vault.scan()
    assert result.changed == ()
    assert vault.notes["n.md"].title == "Original"  # the new text was never read


def test_a_touched_file_with_the_same_content_is_not_reparsed(root: Path) -> None:
    file = write(root, "n.md", "# Same [[Link]]")
    vault = Vault(root)
    vault.scan()
    before = vault.notes["n.md"]
    os.utime(file, ns=(1, before.mtime_ns + 10**9))
    result = vault.scan()
    assert result.changed == () and result.added == ()
    after = vault.notes["n.md"]
    assert after.mtime_ns == before.mtime_ns + 10**9
    assert after.links is before.links  # the same parse, only the mtime replaced
    assert vault.scan().changed == ()


def test_a_modified_file_is_reparsed(root: Path) -> None:
    file = write(root, "n.md", "---\naliases: [Old]\n---\n# Before")
    write(root, "other.md", "# Other")
    vault = Vault(root)
    vault.scan()
    other = vault.notes["other.md"]
    file.write_text("---\naliases: [New]\n---\n# After, longer")
    result = vault.scan()
    assert result.changed == ("n.md",)
    assert vault.notes["n.md"].title == "After, longer"
    assert vault.notes["other.md"] is other
    # The index follows: old title and alias are gone, new ones resolve.
    assert vault.resolve("Before").note is None
    assert vault.resolve("Old").note is None
    found = vault.resolve("New").note
    assert found is not None and found.path == "n.md"


def test_added_and_deleted_files(root: Path) -> None:
    gone = write(root, "gone.md", "# Gone")
    vault = Vault(root)
    vault.scan()
    gone.unlink()
    write(root, "sub/new.md", "# New")
    result = vault.scan()
    assert result.added == ("sub/new.md",)
    assert result.removed == ("gone.md",)
    assert paths(vault) == ["sub/new.md"]
    assert vault.resolve("Gone").note is None


def test_a_deleted_folder_removes_its_notes(root: Path) -> None:
    write(root, "sub/a.md")
    write(root, "sub/b.md")
    write(root, "top.md")
    vault = Vault(root)
    vault.scan()
    for file in (root / "sub").iterdir():
        file.unlink()
    (root / "sub").rmdir()
    assert vault.update(root / "sub").removed == ("sub/a.md", "sub/b.md")
    assert paths(vault) == ["top.md"]


def test_a_snapshot_taken_before_a_rescan_does_not_change(root: Path) -> None:
    write(root, "a.md")
    vault = Vault(root)
    vault.scan()
    snapshot = vault.notes
    write(root, "b.md")
    vault.scan()
    assert list(snapshot) == ["a.md"]
    assert paths(vault) == ["a.md", "b.md"]


# Single-file updates ----------------------------------------------------------------------------


def test_update_a_changed_created_and_deleted_file(root: Path) -> None:
    file = write(root, "n.md", "# One")
    vault = Vault(root)
    vault.scan()
    file.write_text("# Two, changed")
    assert vault.update(file).changed == ("n.md",)
    assert vault.notes["n.md"].title == "Two, changed"
    created = write(root, "sub/created.md", "# Created")
    assert vault.update(Path("sub/created.md")).added == ("sub/created.md",)
    created.unlink()
    assert vault.update(created).removed == ("sub/created.md",)
    assert paths(vault) == ["n.md"]


def test_update_ignores_files_that_are_not_notes(root: Path) -> None:
    vault = Vault(root, excludes=["drafts"])
    vault.scan()
    for path in ["x.txt", ".hidden.md", "drafts/d.md", "node_modules/m.md"]:
        result = vault.update(write(root, path, "# X"))
        assert (result.added, result.warnings) == ((), ())
    assert vault.notes == {}


def test_update_outside_the_vault_is_a_warning(root: Path, tmp_path: Path) -> None:
    vault = Vault(root)
    result = vault.update(write(tmp_path, "elsewhere.md"))
    assert result.added == ()
    assert len(result.warnings) == 1 and "not in the vault" in result.warnings[0]
    assert vault.update(Path("../escape.md")).warnings != ()


def test_update_through_a_symlink_leaving_the_vault_is_ignored(root: Path, tmp_path: Path) -> None:
    write(tmp_path, "outside/secret.md", "# Secret")
    (root / "leak.md").symlink_to(tmp_path / "outside" / "secret.md")
    (root / "folder").symlink_to(tmp_path / "outside")
    vault = Vault(root)
    assert vault.update(root / "leak.md").added == ()
    assert vault.update(root / "folder" / "secret.md").added == ()
    assert vault.notes == {}


# Editor buffers ---------------------------------------------------------------------------------


def test_update_text_overrides_the_disk_until_update(root: Path) -> None:
    file = write(root, "n.md", "# On Disk")
    vault = Vault(root)
    vault.scan()
    note = vault.update_text(file, "# In The Editor\n[[Somewhere]]")
    assert note.title == "In The Editor"
    assert vault.notes["n.md"] is note
    assert note.mtime_ns == file.stat().st_mtime_ns
    found = vault.resolve("in the editor").note
    assert found is not None and found.path == "n.md"
    assert vault.resolve("On Disk").note is None
    file.write_text("# Saved Elsewhere")
    vault.scan()
    assert vault.notes["n.md"] is note  # the buffer still wins
    result = vault.update(file)  # saved or closed: the disk is the truth again
    assert result.changed == ("n.md",)
    assert vault.notes["n.md"].title == "Saved Elsewhere"


def test_closing_an_unchanged_buffer_restores_the_disk_note(root: Path) -> None:
    file = write(root, "n.md", "# On Disk")
    vault = Vault(root)
    vault.scan()
    vault.update_text(file, "# Typed, never saved")
    result = vault.update(file)
    assert result.changed == ("n.md",)
    assert vault.notes["n.md"].title == "On Disk"


def test_update_text_for_a_new_unsaved_file(root: Path) -> None:
    vault = Vault(root)
    vault.scan()
    note = vault.update_text(root / "draft.md", "# Draft")
    assert note.mtime_ns == 0 and paths(vault) == ["draft.md"]
    assert vault.scan().removed == ()  # not on disk, but open in the editor
    assert vault.update(root / "draft.md").removed == ("draft.md",)


def test_update_text_for_a_path_that_is_no_note_is_parsed_not_indexed(root: Path) -> None:
    vault = Vault(root)
    note = vault.update_text(root / ".hidden" / "x.md", "# Hidden\n[[Link]]")
    assert note.title == "Hidden" and [link.target for link in note.links] == ["Link"]
    assert vault.notes == {}


def test_update_text_outside_the_vault_raises(root: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not in the vault"):
        Vault(root).update_text(tmp_path / "elsewhere.md", "# X")


def test_a_view_keeps_the_snapshot_it_was_taken_from(root: Path) -> None:
    """A request reads one view from start to end, while the indexing thread rescans."""
    write(root, "old.md", "# Old Note\n\nSee [[New Note]].\n")
    vault = Vault(root)
    vault.scan()
    view = vault.view()
    write(root, "new.md", "# New Note\n")
    (root / "old.md").unlink()
    vault.scan()
    assert sorted(view.notes) == ["old.md"] and sorted(vault.notes) == ["new.md"]
    assert view.resolve("New Note").note is None
    assert view.resolve("Old Note").note is not None
    assert view.note_at(root / "old.md") is not None and vault.note_at(root / "old.md") is None
    assert vault.view().resolve("New Note").note is not None


def test_a_plain_name_is_judged_without_the_character_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A walk judges every name (10 000 notes: the per-character checks were ~0.1-0.27 s of
    each command's first scan); a printable ASCII name cannot fail them."""
    from lsp_memory.notes import walk
    from lsp_memory.text import first_control

    checked: list[str] = []

    def counted(text: str) -> int | None:
        checked.append(text)
        return first_control(text)

    monkeypatch.setattr(walk, "first_control", counted)
    assert walk.unusable_name("Project plan (2026) #3 ~ draft.md") is None
    assert checked == []
    assert walk.unusable_name("café.md") is None
    assert walk.unusable_name("tab\there.md") is None  # a tab is no control character here
    assert walk.unusable_name("bell\x07.md") == "holds a line break or a control character"
    assert walk.unusable_name("del\x7f.md") == "holds a line break or a control character"
    assert walk.unusable_name("two\nlines.md") == "holds a line break or a control character"
    assert walk.unusable_name("bad\udcff.md") == "is not valid UTF-8"
