"""A vault's scan saved between processes: a new process starts from the saved notes and
reads only the files whose size or mtime changed (or were modified just before the save);
a broken, foreign or stale saved file is ignored; unsaved editor buffers are never saved."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from lsp_memory.model import Note
from lsp_memory.notes import Vault, derived
from lsp_memory.notes import saved as saved_module
from lsp_memory.notes.saved import RACY_NS, SavedScan

OLD_NS = 1_600_000_000 * 10**9  # 2020: long before any save


def write(root: Path, path: str, text: str, *, mtime_ns: int = OLD_NS) -> Path:
    file = root / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text, encoding="utf-8")
    os.utime(file, ns=(mtime_ns, mtime_ns))
    return file


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "vault"
    folder.mkdir()
    a = "---\naliases: [First]\n---\n# Alpha\n\nSee [[Beta#Two|b]], ![[Beta#^blk-1]] and @x_1.\n"
    write(folder, "a.md", a)  # an embed too
    write(folder, "sub/b.md", "# Beta\n\n## Two\n\ntext ^blk-1\n")  # a block id too
    return folder


def test_a_new_vault_starts_from_the_saved_scan_without_reading_unchanged_files(
    root: Path, tmp_path: Path
) -> None:
    saved = tmp_path / "cache" / "v.scan"
    first = Vault(root, saved=saved)
    first.scan()
    assert saved.is_file()
    # Change a file's text behind the vault's back, keeping its size and mtime: a vault that
    # reads it would see the new title; one that trusts the saved scan keeps the old note.
    a = root / "a.md"
    text = a.read_text().replace("# Alpha", "# Omega")
    write(root, "a.md", text)

    second = Vault(root, saved=saved)
    result = second.scan()
    assert (result.added, result.changed, result.removed) == ((), (), ())
    assert second.notes["a.md"].title == "Alpha"  # the file was not read again
    assert second.notes == first.notes  # every field, links and their ranges included
    assert second.resolve("First").note == first.notes["a.md"]


def test_a_saved_scan_decodes_a_notes_links_body_and_blocks_only_when_read(
    root: Path, tmp_path: Path
) -> None:
    """``build-context`` reads one or two notes of 10 000: decoding every note's links and
    body from the saved scan was ~0.35 s of each such process."""
    from lsp_memory.model import Note

    saved = tmp_path / "v.scan"
    first = Vault(root, saved=saved)
    first.scan()
    second = Vault(root, saved=saved)
    second.scan()
    assert second.resolve("First").note is second.notes["a.md"]  # by title and alias
    unread = [
        name
        for note in second.notes.values()
        for name in ("headings", "links", "body", "blocks")
        if not _is_set(Note, note, name)
    ]
    assert len(unread) == 8  # nothing of either note decoded by the scan or the lookup
    b = second.notes["sub/b.md"]
    assert b.blocks == first.notes["sub/b.md"].blocks  # read: decoded, the same values
    a = second.notes["a.md"]
    assert _is_set(Note, b, "links") and not _is_set(Note, a, "links")
    # The blob a note was decoded from is let go: a server does not hold its notes twice.
    assert not _is_set(type(b), b, "_blob") and _is_set(type(a), a, "_blob")
    assert second.notes == first.notes and hash(b) == hash(first.notes["sub/b.md"])


def _is_set(cls: type, note: object, name: str) -> bool:
    """Whether the slot ``name`` of ``note`` holds a value (read past any lazy decoding)."""
    try:
        cls.__dict__[name].__get__(note, cls)
    except AttributeError:
        return False
    return True


def test_a_note_whose_saved_parts_have_the_wrong_type_is_read_from_its_file(
    root: Path, tmp_path: Path
) -> None:
    import marshal

    saved = tmp_path / "v.scan"
    first = Vault(root, saved=saved)
    first.scan()
    header, saved_ns, rows, keys = marshal.loads(saved.read_bytes())
    rows = [(*row[:-1], marshal.dumps(((), ("not a link",), 42, ()))) for row in rows]
    saved.write_bytes(marshal.dumps((header, saved_ns, rows, keys)))
    second = Vault(root, saved=saved)
    result = second.scan()
    assert (result.added, result.changed, result.warnings) == ((), (), ())
    assert second.notes == first.notes  # links, body and blocks parsed from the files


def _sorted(keys: tuple[dict[str, tuple[str, ...]], ...]) -> list[dict[str, list[str]]]:
    return [{key: sorted(paths) for key, paths in step.items()} for step in keys]


def test_a_new_vault_takes_the_saved_link_index_without_computing_it(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The link index of 10 000 notes was ~0.1 s of every ``build-context`` process."""
    from lsp_memory.notes import noteset as noteset_module

    saved = tmp_path / "v.scan"
    first = Vault(root, saved=saved)
    first.scan()
    computed: list[str] = []
    index_keys = noteset_module.index_keys

    def counted(note: Note) -> tuple[frozenset[str], ...]:
        computed.append(note.path)
        return index_keys(note)

    monkeypatch.setattr(noteset_module, "index_keys", counted)
    second = Vault(root, saved=saved)
    assert second.scan().warnings == ()
    assert computed == []  # no note's keys computed: the saved index was taken
    assert _sorted(second.view()._noteset.keys) == _sorted(first.view()._noteset.keys)
    assert second.resolve("First").note == first.notes["a.md"]  # by alias
    assert second.resolve("sub/b").note == first.notes["sub/b.md"]  # by path


def test_a_saved_link_index_naming_a_note_not_saved_is_refused(root: Path, tmp_path: Path) -> None:
    import marshal

    saved = tmp_path / "v.scan"
    first = Vault(root, saved=saved)
    first.scan()
    header, saved_ns, rows, keys = marshal.loads(saved.read_bytes())
    keys[1]["ghost"] = ("ghost.md",)
    saved.write_bytes(marshal.dumps((header, saved_ns, rows, keys)))
    vault = Vault(root, saved=saved)
    result = vault.scan()
    assert result.added == ("a.md", "sub/b.md")  # read from disk, as without a saved scan
    assert any("holds values of the wrong type" in warning for warning in result.warnings)
    assert vault.resolve("ghost").note is None
    assert vault.notes == first.notes


def test_changed_added_and_deleted_files_are_found_against_the_saved_scan(
    root: Path, tmp_path: Path
) -> None:
    saved = tmp_path / "v.scan"
    Vault(root, saved=saved).scan()
    write(root, "a.md", "# Changed title\n", mtime_ns=OLD_NS + 10**9)
    (root / "sub" / "b.md").unlink()
    write(root, "c.md", "# Gamma\n")

    vault = Vault(root, saved=saved)
    result = vault.scan()
    assert (result.added, result.changed, result.removed) == (("c.md",), ("a.md",), ("sub/b.md",))
    assert sorted(vault.notes) == ["a.md", "c.md"]
    assert vault.notes["a.md"].title == "Changed title"
    # That scan was saved in turn: a third process finds nothing new.
    again = Vault(root, saved=saved).scan()
    assert (again.added, again.changed, again.removed) == ((), (), ())


def test_a_file_modified_just_before_the_save_is_read_again(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = tmp_path / "v.scan"
    now = time.time_ns()
    write(root, "a.md", "# Fresh\n", mtime_ns=now)
    write(root, "sub/b.md", "# Beta\n", mtime_ns=now - RACY_NS - 1)  # just outside the window
    # The save's clock reads one second after the write, however slow this machine is.
    monkeypatch.setattr(saved_module, "time", SimpleNamespace(time_ns=lambda: now + 10**9))
    Vault(root, saved=saved).scan()
    # Within the same mtime tick, the file changes again (same size, same mtime).
    write(root, "a.md", "# Frash\n", mtime_ns=now)
    loaded = SavedScan(saved, str(root.resolve()), ()).load([])
    assert loaded is not None and loaded[1] == {"a.md"}

    vault = Vault(root, saved=saved)
    assert vault.scan().changed == ("a.md",)
    assert vault.notes["a.md"].title == "Frash"


def test_a_first_scan_from_a_saved_one_repeats_every_notes_warnings(
    root: Path, tmp_path: Path
) -> None:
    saved = tmp_path / "v.scan"
    write(root, "broken.md", "---\ntitle: [unclosed\n---\n# Broken\n")
    first = Vault(root, saved=saved).scan()
    second = Vault(root, saved=saved).scan()
    found = [w for w in first.warnings if w.startswith("broken.md")]
    assert found and [w for w in second.warnings if w.startswith("broken.md")] == found


@pytest.mark.parametrize(
    "damage",
    [
        lambda path: path.write_bytes(b""),
        lambda path: path.write_bytes(path.read_bytes()[:-100]),
        lambda path: path.write_bytes(b"not marshal at all"),
        lambda path: path.write_bytes(__import__("marshal").dumps(("other", 1, 2))),
        lambda path: path.write_bytes(__import__("marshal").dumps([1, 2, 3])),
    ],
    ids=["empty", "truncated", "garbage", "foreign header", "wrong shape"],
)
def test_a_broken_saved_scan_is_ignored_and_replaced(
    root: Path, tmp_path: Path, damage: object
) -> None:
    saved = tmp_path / "v.scan"
    expected = Vault(root, saved=saved)
    expected.scan()
    damage(saved)  # type: ignore[operator]
    vault = Vault(root, saved=saved)
    result = vault.scan()
    assert result.added == ("a.md", "sub/b.md")  # read from disk, as without a saved scan
    assert vault.notes == expected.notes
    assert SavedScan(saved, str(root.resolve()), ()).load([]) is not None  # saved afresh


def test_other_excludes_or_another_folder_do_not_use_the_saved_scan(
    root: Path, tmp_path: Path
) -> None:
    saved = tmp_path / "v.scan"
    Vault(root, saved=saved).scan()
    assert SavedScan(saved, str(root.resolve()), ("sub",)).load([]) is None
    assert SavedScan(saved, str(tmp_path), ()).load([]) is None
    excluded = Vault(root, excludes=("sub",), saved=saved)
    assert excluded.scan().added == ("a.md",)


def test_unsaved_editor_buffers_are_not_saved(root: Path, tmp_path: Path) -> None:
    saved = tmp_path / "v.scan"
    vault = Vault(root, saved=saved)
    vault.scan()
    vault.update_text(root / "a.md", "# Typed, not saved\n")
    write(root, "c.md", "# Gamma\n")  # so that the next scan saves
    vault.scan()
    # Nor their link index (it held the buffer's keys): the next process computes it.
    loaded = SavedScan(saved, str(root.resolve()), ()).load([])
    assert loaded is not None and loaded[2] is None
    later = Vault(root, saved=saved)
    later.scan()
    assert later.notes["a.md"].title == "Alpha"
    assert "c.md" in later.notes
    assert later.resolve("Typed, not saved").note is None
    assert later.resolve("Alpha").note == later.notes["a.md"]


def test_an_unwritable_cache_folder_only_costs_the_saving(root: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    vault = Vault(root, saved=blocker / "v.scan")
    result = vault.scan()
    assert result.added == ("a.md", "sub/b.md")


@pytest.mark.parametrize("preload", [False, True], ids=["scan", "preload then scan"])
def test_a_first_scan_s_notes_are_left_out_of_the_cycle_collector_s_passes(
    root: Path, tmp_path: Path, preload: bool
) -> None:
    """The notes of a first scan live as long as the process: they are frozen out of the
    cycle collector's reach (its next passes examined them all again, ~0.2 s of CPU after
    10 000 notes); later scans freeze nothing, and the collector runs again after each. A
    language server's preload decodes the saved scan the same way (outside the pause, the
    collector's passes made the first `[[` after a start ~2 s later at load 10)."""
    import gc

    saved = tmp_path / "scan"
    Vault(root, saved=saved).scan()
    gc.unfreeze()
    vault = Vault(root, saved=saved)
    try:
        if preload:
            vault.preload()
        vault.scan()
        frozen = gc.get_freeze_count()
        assert frozen > 0 and gc.isenabled()
        note = vault.notes["a.md"]
        assert not any(found is note for found in gc.get_objects())  # frozen ones are not
        write(root, "c.md", "# Gamma\n")
        vault.scan()
        assert gc.get_freeze_count() <= frozen and gc.isenabled()  # some freed since
    finally:
        gc.unfreeze()


def test_preload_publishes_the_saved_scan_and_the_first_scan_goes_on_from_it(
    root: Path, tmp_path: Path
) -> None:
    """A language server publishes the saved scan before the first scan walks the folder
    (``[[`` completes from it at once), with its name index built; the first scan after it
    still finds what changed since the save and repeats every note's warnings, as a first
    scan without the preload does."""
    saved = tmp_path / "v.scan"
    write(root, "broken.md", "---\ntitle: [unclosed\n---\n# Broken\n")
    Vault(root, saved=saved).scan()
    write(root, "a.md", "# Changed title\n", mtime_ns=OLD_NS + 10**9)
    write(root, "c.md", "# Gamma\n")
    copy = tmp_path / "copy.scan"
    copy.write_bytes(saved.read_bytes())
    plain = Vault(root, saved=copy).scan()

    vault = Vault(root, saved=saved)
    vault.preload()
    early = vault.view()
    assert any(key is early._noteset.notes for key, _, _ in derived._KEPT)  # names built
    assert sorted(early.notes) == ["a.md", "broken.md", "sub/b.md"]  # as saved, not yet read
    assert early.notes["a.md"].title == "Alpha"
    assert [path for _, path in early.names().matches("bet", 5)] == ["sub/b.md"]
    result = vault.scan()
    assert (result.added, result.changed) == (plain.added, plain.changed) == (("c.md",), ("a.md",))
    assert result.warnings == plain.warnings
    assert vault.notes["a.md"].title == "Changed title"


def test_the_preloaded_name_index_serves_the_first_scan_s_note_set(
    root: Path, tmp_path: Path
) -> None:
    """A first scan that finds no note changed publishes the preloaded notes again with the
    vault's other files: the name index built by the preload is the one ``[[`` then reads,
    not built again on the first request."""
    saved = tmp_path / "v.scan"
    (root / "picture.png").write_bytes(b"png")
    Vault(root, saved=saved).scan()
    vault = Vault(root, saved=saved)
    vault.preload()
    early = vault.view()
    assert not vault.scan().changed
    later = vault.view()
    assert later._noteset is not early._noteset  # the other files were added
    assert later._noteset.notes is early._noteset.notes
    assert later.names() is early.names()


def test_preload_without_a_saved_scan_or_after_a_scan_does_nothing(
    root: Path, tmp_path: Path
) -> None:
    vault = Vault(root, saved=tmp_path / "none.scan")
    vault.preload()
    assert not vault.view().notes
    assert vault.scan().added == ("a.md", "sub/b.md")
    vault.preload()
    assert sorted(vault.notes) == ["a.md", "sub/b.md"]
