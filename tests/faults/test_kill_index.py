"""SIGKILL during ``lsp-memory index`` of a store of 12 000 claims (300 different statements,
so that the embedding stage is a few seconds long), from an empty cache folder: in the text
stage (its progress line ``claim k/N`` on a terminal), just after the full-text index
committed, once the embedding queue is written, a third through the embedding stage (the
queue's own counts), and after the summary line.

After each kill the store and the cache's SQLite files pass ``PRAGMA integrity_check``, and
running ``index`` again — no manual step, no stale lock — ends where an uninterrupted run
ends: every document embedded, none waiting, and text and meaning searches that give what
they gave then."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.faults.harness import (
    Cli,
    KillPoint,
    Running,
    cache_files,
    copy_store,
    integrity,
    log,
    query,
    statement,
    stdout_has,
    store_file,
    write_claims,
)

CLAIMS = 12_000
DISTINCT = 300
PROBE = DISTINCT - 1  # a statement whose copies lie all along the queue
COPIES = CLAIMS // DISTINCT


def _index_folder(cache: Path) -> Path | None:
    found = sorted((cache / "indexes").glob("*/"))
    return found[0] if found else None


def text_committed(cache: Path) -> bool:
    """Whether the full-text index recorded how far it follows the store: its commit."""
    folder = _index_folder(cache)
    if folder is None:
        return False
    try:
        meta = json.loads((folder / "fulltext" / "lsp-memory-index.json").read_text("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and "seq" in meta


def queue_counts(cache: Path) -> tuple[int, int]:
    """(embedded, total) in the embedding queue; (0, 0) while it does not exist."""
    folder = _index_folder(cache)
    if folder is None:
        return 0, 0
    rows = query(folder / "queue.sqlite3", "SELECT count(*) - count(text), count(*) FROM docs")
    return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)


def stage(cache: Path) -> str:
    """Where a killed ``index`` stopped, read from the cache folder."""
    if not text_committed(cache):
        return "before the full-text commit"
    embedded, total = queue_counts(cache)
    if total == 0:
        return "text committed, embedding queue not written"
    if embedded == 0:
        return f"queue written ({total}), nothing embedded"
    if embedded < total:
        return f"embedding stage ({embedded}/{total} embedded)"
    return "every document embedded"


_PROGRESS = re.compile(r"^claim\b.*?\b(\d+)/(\d+)\b", re.MULTILINE)


def in_text_stage(running: Running) -> bool:
    """The progress bar shows claims written to the full-text index, not all of them."""
    return any(int(done) < int(total) for done, total in _PROGRESS.findall(running.stderr))


POINTS: dict[str, Any] = {
    "text": lambda cli: KillPoint("text stage, progress line 'claim k/N'", in_text_stage),
    "text-committed": lambda cli: KillPoint(
        "full-text index committed", lambda _: text_committed(cli.cache)
    ),
    "queued": lambda cli: KillPoint(
        "embedding queue written", lambda _: queue_counts(cli.cache)[1] >= CLAIMS
    ),
    "embedding-third": lambda cli: KillPoint(
        "a third embedded", lambda _: queue_counts(cli.cache)[0] >= CLAIMS // 3
    ),
    "reported": lambda cli: KillPoint(
        "summary printed", stdout_has("rebuilt the search index"), may_finish=True
    ),
}


@dataclass(frozen=True, slots=True)
class Reference:
    pristine: Path  # the store, never indexed
    status: dict[str, Any]  # ``status --json``'s index counts after an uninterrupted index
    found: dict[str, list[str]]  # mode → titles of the probe's hits


def searches(cli: Cli) -> dict[str, list[str]]:
    """The probe statement searched by words and by meaning: titles of the first hits."""
    found = {}
    for mode in ("bm25", "dense"):
        hits = cli.json("search", statement(PROBE), "--mode", mode, "-k", str(COPIES))
        found[mode] = [hit["title"] for hit in hits]
    return found


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    root = tmp_path_factory.mktemp("index")
    cli = Cli(root / "reference")
    cli.ok("import", str(write_claims(root / "claims.jsonl", CLAIMS, distinct=DISTINCT)))
    pristine = root / "pristine"
    copy_store(cli.store, pristine)
    done = cli.ok("index")
    assert done.stdout.startswith(f"rebuilt the search index: {CLAIMS} written"), done.stdout
    assert "0 waiting to be embedded" in done.stdout
    status = cli.json("status")["index"]
    assert status == {"embedded": CLAIMS, "pending": 0}
    found = searches(cli)
    assert found == {"bm25": [statement(PROBE)] * COPIES, "dense": [statement(PROBE)] * COPIES}
    return Reference(pristine, status, found)


@pytest.mark.parametrize("point", list(POINTS))
def test_index_killed_recovers_by_running_it_again(
    point: str, reference: Reference, tmp_path: Path
) -> None:
    cli = Cli(tmp_path)
    copy_store(reference.pristine, cli.store)
    where: KillPoint = POINTS[point](cli)
    running = cli.start("index", tty=True)
    reached = running.wait_for(where.when)
    killed = running.kill()
    landed = f"kill point {where.name!r} at {running.seconds:.3f} s, killed={killed}"
    assert reached or where.may_finish, f"{landed}: the command ended before the point"
    assert killed or where.may_finish, landed
    landed += f": {stage(cli.cache)}"
    log.info("index: %s", landed)

    for path in [store_file(cli.store), *cache_files(cli.cache)]:
        assert integrity(path) == "ok", f"{landed}: {path}"

    again = cli.ok("index")
    assert "0 waiting to be embedded" in again.stdout, (landed, again.stdout)
    assert cli.json("status")["index"] == reference.status, landed
    assert searches(cli) == reference.found, landed
