"""SIGKILL during ``lsp-memory consolidate`` with the embedding model (so a run holds merges,
contradictions and review items as well as decay and deprecation), over 406 claims already
embedded: while the interpreter starts, while it brings the indexes up to date, while it
plans (twice), as its one transaction writes, and after its report. Wherever the kill lands the
store is whole and holds the run entirely — its row, every change, its review items and
the claims as they end — or nothing of it, and running it again at the same ``--now``
ends with the claims and review items of an uninterrupted run."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.faults.harness import (
    Cli,
    KillPoint,
    Running,
    after,
    copy_store,
    integrity,
    later,
    log,
    query,
    size,
    statement,
    stdout_has,
    store_file,
)

NOW = "2026-01-20"
MEMORY = [
    ("I like dark roast coffee", "preference", 0.9),
    ("I really love dark roast coffee", "preference", 0.8),
    ("I live in Lyon", "identity", 0.9),
    ("I no longer live in Lyon", "identity", 0.9),
    ("I once tried skydiving", "identity", 0.302),
    ("I am learning the cello", "goal", 0.45),
]
FILLER = 400


def write_memory(path: Path) -> Path:
    rows = MEMORY + [(statement(n), "goal", 0.3 + (n % 60) / 100) for n in range(FILLER)]
    lines = [
        json.dumps(
            {
                "kind": "claim",
                "statement": text,
                "claim_type": kind,
                "confidence": confidence,
                "created_at": "2026-01-01T00:00:00Z",
                "derived_from": [f"message-{n}"],  # inferred from a conversation: it decays
            }
        )
        for n, (text, kind, confidence) in enumerate(rows)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@dataclass(frozen=True, slots=True)
class Outcome:
    """A store's consolidation record and the claims as they stand."""

    claims: list[tuple[Any, ...]]
    runs: list[tuple[Any, ...]]
    changes: int
    items: list[tuple[Any, ...]]


def outcome(store: Path) -> Outcome:
    path = store_file(store)
    return Outcome(
        query(path, "SELECT * FROM claims ORDER BY id"),
        query(path, "SELECT number, kind, now, summary, undone_at FROM runs ORDER BY id"),
        int(query(path, "SELECT count(*) FROM run_changes")[0][0]),
        query(
            path,
            "SELECT number, kind, claims, pair, proposal, reason, state, status "
            "FROM review_items ORDER BY id",
        ),
    )


@dataclass(frozen=True, slots=True)
class Reference:
    seed: Path  # a working folder whose store is imported and indexed (and its cache)
    before: Outcome
    after: Outcome


def plant(seed: Path, work: Path) -> Cli:
    """A copy of the seed's store in ``work``, with its vector cache (vectors by content, so
    nothing is embedded again) but not its indexes: the run's own refresh builds them."""
    cli = Cli(work)
    copy_store(seed / "store", cli.store)
    cli.cache.mkdir()
    shutil.copy(seed / "cache" / "vectors.sqlite3", cli.cache)
    return cli


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    root = tmp_path_factory.mktemp("consolidate")
    seed = Cli(root / "seed")
    seed.ok("import", str(write_memory(root / "memory.jsonl")))
    seed.ok("index")
    cli = plant(seed.work, root / "reference")
    before = outcome(cli.store)
    report = cli.json("consolidate", "--now", NOW)
    after = outcome(cli.store)
    assert report["run_id"] == 1 and after.changes == len(report["changes"]) > FILLER
    assert report["merged"] and report["contradictions"] and report["deprecated"], report
    assert report["review"] and len(after.items) == len(report["review"])
    assert before.runs == [] and before.claims != after.claims
    return Reference(seed.work, before, after)


def points(cli: Cli) -> dict[str, KillPoint]:
    wal = store_file(cli.store).with_name(store_file(cli.store).name + "-wal")
    meta = "indexes/*/fulltext/lsp-memory-index.json"

    def planning(_: Running) -> bool:  # the indexes are up to date: the run is planned
        return _any(cli.cache, meta, '"seq"')

    return {
        "starting": KillPoint("starting", after(0.05)),
        "refreshing": KillPoint(
            "bringing the indexes up to date", lambda _: size(wal) >= 0 and _any(cli.cache, meta)
        ),
        "planning": KillPoint("planning", planning),
        # Planning 406 claims takes 0.1–0.5 s by the machine's load: the run may be over.
        "planning-later": KillPoint("planning, 0.1 s on", later(planning, 0.1), may_finish=True),
        "writing": KillPoint("writing the run", lambda _: size(wal) > 32),
        "reported": KillPoint("report printed", stdout_has("run 1:"), may_finish=True),
    }


def _any(cache: Path, pattern: str, text: str = "") -> bool:
    for path in cache.glob(pattern):
        try:
            if text in path.read_text("utf-8"):
                return True
        except OSError:
            pass
    return False


@pytest.mark.parametrize(
    "point", ["starting", "refreshing", "planning", "planning-later", "writing", "reported"]
)
def test_consolidate_killed_is_all_or_nothing_and_recovers(
    point: str, reference: Reference, tmp_path: Path
) -> None:
    cli = plant(reference.seed, tmp_path)
    where = points(cli)[point]
    running = cli.start("consolidate", "--now", NOW)
    reached = running.wait_for(where.when)
    killed = running.kill()
    landed = f"kill point {where.name!r} at {running.seconds:.3f} s, killed={killed}"
    assert reached or where.may_finish, f"{landed}: the command ended before the point"
    assert killed or where.may_finish, landed
    assert integrity(store_file(cli.store)) == "ok", landed

    left = outcome(cli.store)
    applied = left == reference.after
    landed += f": the run {'applied whole' if applied else 'left out whole'}"
    log.info("consolidate: %s", landed)
    assert applied or left == reference.before, f"{landed}: partial run {left.runs}"

    again = cli.json("consolidate", "--now", NOW)
    assert (again["changes"] == []) is applied, (landed, again["run_id"])
    recovered = outcome(cli.store)
    assert recovered.claims == reference.after.claims, landed
    assert recovered.items == reference.after.items, landed
    assert recovered.changes == reference.after.changes, landed
