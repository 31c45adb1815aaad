"""SIGKILL during ``lsp-memory import`` of 6 000 claims into a store that already holds
kb.jsonl: before the store opens, while the file is checked, as the write begins, halfway
through it, at its commit, and after the summary line. Wherever the kill lands the store is
whole and holds all of the file or none of it, and importing the file again ends where an
uninterrupted import ends (or, when everything was in, refuses it and changes nothing)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.faults.harness import (
    KB,
    KB_CLAIMS,
    Cli,
    KillPoint,
    Running,
    after,
    copy_store,
    count,
    dump,
    integrity,
    log,
    size,
    stderr_matches,
    store_file,
    write_claims,
)

RECORDS = 6_000


@dataclass(frozen=True, slots=True)
class Reference:
    pristine: Path  # a store holding kb.jsonl
    records: Path  # the file to import
    before: str  # the pristine store's rows
    exported: str  # ``export`` after an uninterrupted import
    wal: int  # the largest the write-ahead log grew during it


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    root = tmp_path_factory.mktemp("import")
    cli = Cli(root / "reference")
    cli.ok("import", str(KB))
    pristine = root / "pristine"
    copy_store(cli.store, pristine)
    records = write_claims(root / "records.jsonl", RECORDS)
    running = cli.start("import", str(records))
    wal = store_file(cli.store).with_name(store_file(cli.store).name + "-wal")
    largest = 0
    while running.process.poll() is None:
        largest = max(largest, size(wal))
        time.sleep(0.001)
    assert running.finish() == 0, running.stderr
    assert f"imported {RECORDS} claims" in running.stderr
    assert largest > 100_000, largest
    return Reference(pristine, records, dump(pristine), cli.ok("export").stdout, largest)


def _wal_at_least(store: Path, fraction: float, reference_size: int) -> KillPoint:
    wal = store_file(store).with_name(store_file(store).name + "-wal")
    return KillPoint(
        f"write-ahead log at {fraction:.0%} of its final size",
        lambda _: size(wal) >= fraction * reference_size,
    )


POINTS = ["starting", "checking", "writing", "mid-write", "committing", "reported"]


def kill_point(name: str, store: Path, reference: Reference) -> KillPoint:
    wal = store_file(store).with_name(store_file(store).name + "-wal")
    if name == "starting":  # the interpreter starting: before the store is opened
        return KillPoint(name, after(0.03))
    if name == "checking":  # the store is open (its log exists); the file is being checked
        return KillPoint(name, lambda _: size(wal) >= 0)
    if name == "writing":  # the first page of the write reached the log
        return KillPoint(name, lambda _: size(wal) > 32)
    if name == "mid-write":
        return _wal_at_least(store, 0.5, reference.wal)
    if name == "committing":
        return _wal_at_least(store, 0.95, reference.wal)
    assert name == "reported"  # the summary line is printed: committed, closing
    return KillPoint(name, stderr_matches(r"^imported "), may_finish=True)


@pytest.mark.parametrize("point", POINTS)
def test_import_killed_is_all_or_nothing_and_recovers(
    point: str, reference: Reference, tmp_path: Path
) -> None:
    cli = Cli(tmp_path)
    copy_store(reference.pristine, cli.store)
    where = kill_point(point, cli.store, reference)
    running: Running = cli.start("import", str(reference.records))
    reached = running.wait_for(where.when)
    killed = running.kill()
    landed = f"kill point {where.name!r} at {running.seconds:.3f} s, killed={killed}"
    assert reached or where.may_finish, f"{landed}: the command ended before the point"
    assert killed or where.may_finish, landed

    assert integrity(store_file(cli.store)) == "ok", landed
    claims = count(cli.store, "claims", "user = 'ann'")
    assert claims in (KB_CLAIMS, KB_CLAIMS + RECORDS), f"{landed}: {claims} claims: partial"
    applied = claims == KB_CLAIMS + RECORDS
    landed += f", the import {'applied whole' if applied else 'left out whole'}"
    log.info("import: %s", landed)
    if not applied:
        assert dump(cli.store) == reference.before, f"{landed}: the store changed"

    again = cli.run("import", str(reference.records))
    if applied:
        assert again.returncode == 1, (landed, again.stderr[-2000:])
        first = again.stderr.splitlines()[0]
        assert first.startswith("lsp-memory: error: ") and first.endswith("nothing imported")
        assert "is already in the store" in again.stderr, landed
    else:
        assert again.returncode == 0, (landed, again.stderr)
        assert f"imported {RECORDS} claims" in again.stderr, landed
    assert cli.ok("export").stdout == reference.exported, f"{landed}: differs after recovery"
