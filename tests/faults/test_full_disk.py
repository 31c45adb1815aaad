"""A full disk under the store folder or the cache folder: a tmpfs of a few hundred kilobytes
or megabytes (skipped where mounting is not permitted), filled by the command itself or to
the last byte by a ballast file. A write that does not fit is one error line, no traceback,
and the store is whole and unchanged; reads still answer; and once space is freed the next
command works and nothing written before is lost — the store's records, and the vectors of
what was embedded before."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.faults.harness import (
    KB,
    KB_CLAIMS,
    NOTES,
    Cli,
    Result,
    cache_files,
    copy_store,
    dump,
    fill,
    integrity,
    one_line,
    resize,
    store_file,
    tmpfs,
    write_claims,
)

FULL = ("disk is full", "No space left on device")

# -- the store's disk ---------------------------------------------------------------------------


def test_an_import_larger_than_the_store_disk_changes_nothing(tmp_path: Path) -> None:
    """1 MB holds kb.jsonl but not 10 000 more claims: the import is refused whole, and the
    space its rolled-back write took is given back to the next commands."""
    with tmpfs(tmp_path / "disk", "1m") as disk:
        cli = Cli(tmp_path / "work", store=disk / "store")
        cli.ok("import", str(KB))
        before, exported = dump(cli.store), cli.ok("export").stdout
        result = cli.run("import", str(write_claims(tmp_path / "big.jsonl", 10_000)))
        assert result.returncode == 1, result.stderr
        assert one_line(result).startswith(f"lsp-memory: error: store {store_file(cli.store)}")
        assert integrity(store_file(cli.store)) == "ok"
        assert dump(cli.store) == before
        assert cli.ok("export").stdout == exported

        added = cli.ok("claim", "add", "I like green tea", "--type", "preference")
        assert added.stdout.startswith("added #43 @"), added.stdout
        small = write_claims(tmp_path / "small.jsonl", 300)
        assert "imported 300 claims" in cli.ok("import", str(small)).stderr
        assert cli.json("status")["claims"]["total"] == KB_CLAIMS + 1 + 300
        assert integrity(store_file(cli.store)) == "ok"


def test_an_import_larger_than_the_store_disk_says_the_disk_is_full(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "1m") as disk:
        cli = Cli(tmp_path / "work", store=disk / "store")
        cli.ok("import", str(KB))
        result = cli.run("import", str(write_claims(tmp_path / "big.jsonl", 10_000)))
        assert one_line(result) == (
            f"lsp-memory: error: store {store_file(cli.store)}: the disk is full; "
            "nothing was written"
        )


@contextmanager
def full_store_disk(tmp_path: Path) -> Iterator[tuple[Cli, Path, str]]:
    """A store holding kb.jsonl on a tmpfs filled to the last byte: (cli, ballast, rows)."""
    with tmpfs(tmp_path / "disk", "1m") as disk:
        cli = Cli(tmp_path / "work", store=disk / "store")
        cli.ok("import", str(KB))
        before = dump(cli.store)
        yield cli, fill(disk), before


def test_a_store_disk_without_a_byte_left_is_named(tmp_path: Path) -> None:
    with full_store_disk(tmp_path) as (cli, _ballast, _before):
        for args in (("claim", "add", "I like green tea"), ("claim", "list")):
            result = cli.run(*args)
            assert result.returncode == 1, result.stderr
            assert any(words in one_line(result) for words in FULL), result.stderr


def test_a_full_store_disk_recovers_once_space_is_freed(tmp_path: Path) -> None:
    with full_store_disk(tmp_path) as (cli, ballast, before):
        refused = cli.run("claim", "add", "I like green tea", "--type", "preference")
        assert refused.returncode == 1, refused.stdout
        one_line(refused)
        ballast.unlink()
        assert integrity(store_file(cli.store)) == "ok"
        assert dump(cli.store) == before
        added = cli.ok("claim", "add", "I like green tea", "--type", "preference")
        assert added.stdout.startswith("added #43 @"), added.stdout


# -- the cache's disk ---------------------------------------------------------------------------

MORE = 10  # claims added after the last index: the commands below have them to index


@dataclass(frozen=True, slots=True)
class Seed:
    """A store (kb.jsonl and the notes vault) and its indexed cache folder, kept aside."""

    root: Path
    store: Path
    cache: Path
    embedded: int  # documents embedded


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    root = tmp_path_factory.mktemp("full-cache")
    cli = _cli(root)
    cli.ok("import", str(KB))
    assert "0 waiting to be embedded" in cli.ok("index").stdout
    embedded = cli.json("status")["index"]["embedded"]
    assert embedded > KB_CLAIMS
    seed = Seed(root, root / "seed-store", root / "seed-cache", embedded)
    copy_store(cli.store, seed.store)
    shutil.move(cli.cache, seed.cache)
    return seed


def _cli(root: Path) -> Cli:
    """The command line of the seed: the same store path, so that the cache's index folder
    (named after the store's path) belongs to it."""
    return Cli(root / "work", cache=root / "disk" / "cache", vaults=[NOTES])


@dataclass(frozen=True, slots=True)
class FullCache:
    cli: Cli
    ballast: Path
    before: str  # the store's rows


@contextmanager
def full_cache_disk(seed: Seed, tmp_path: Path) -> Iterator[FullCache]:
    """The seed's store (on the ordinary disk) and its cache on a 4 MB tmpfs, 10 more claims
    in the store, then the tmpfs filled to the last byte."""
    cli = _cli(seed.root)
    copy_store(seed.store, cli.store)
    with tmpfs(cli.cache.parent, "4m"):
        shutil.copytree(seed.cache, cli.cache)
        cli.ok("import", str(write_claims(tmp_path / "more.jsonl", MORE)))
        before = dump(cli.store)
        yield FullCache(cli, fill(cli.cache.parent), before)


def answered(result: Result, cli: Cli) -> None:
    """Exit 0, and at most one line on stderr: a warning that names the cache folder."""
    assert result.returncode == 0, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) <= 1, result.stderr
    for line in lines:
        assert line.startswith("lsp-memory: warning: ") and str(cli.cache) in line, line


def refused_for_the_cache(result: Result, cli: Cli) -> None:
    assert result.returncode == 1, result.stderr
    line = one_line(result)
    assert str(cli.cache) in line and any(words in line for words in FULL), line


def check_index(result: Result, cli: Cli) -> None:
    refused_for_the_cache(result, cli)


def check_search(result: Result, cli: Cli) -> None:
    answered(result, cli)
    assert "#1 @leaf_active_a001" in result.stdout


def check_build_context(result: Result, cli: Cli) -> None:
    answered(result, cli)
    assert "[REFERENCED @leaf_active_a001]" in result.stdout


def check_status(result: Result, cli: Cli) -> None:
    answered(result, cli)
    assert json.loads(result.stdout)["claims"]["total"] == KB_CLAIMS + MORE


def check_claim_add(result: Result, cli: Cli) -> None:
    answered(result, cli)
    assert result.stdout.startswith(f"added #{1000 + MORE} @"), result.stdout


_QUEUE_LOST = (
    "a full cache disk makes the embedding queue's open fail with SQLITE_FULL, which "
    "VectorCatalog takes for a corrupt file: it unlinks queue.sqlite3, so once space is freed "
    "everything embedded before is forgotten (status: 0 embedded; `index` embeds only what "
    "changed since)"
)
_TANTIVY = (
    "exits 70 with 'internal error: ValueError: … No space left on device' (tantivy's "
    "error from writing the full-text index), at times followed by a traceback from "
    "FullTextIndex.close (tantivy's wait_merging_threads: 'Worker thread failed')"
)
COMMANDS = {
    "index": (["index"], check_index, "`index` on a full cache disk " + _TANTIVY),
    "search": (
        ["search", "PostgreSQL", "--kind", "claim", "-k", "3"],
        check_search,
        "`search` on a full cache disk " + _TANTIVY + " instead of answering",
    ),
    "build-context": (
        ["build-context", "-"],
        check_build_context,
        "`build-context` on a full cache disk " + _TANTIVY + " instead of answering",
    ),
    "status": (
        ["status", "--json"],
        check_status,
        "`status` on a full cache disk: exit 70, 'internal error: OperationalError: database "
        "or disk is full'; and " + _QUEUE_LOST,
    ),
    "claim-add": (
        ["claim", "add", "I like green tea", "--type", "preference"],
        check_claim_add,
        "`claim add` on a full cache disk answers with one warning, but " + _QUEUE_LOST,
    ),
}


@pytest.mark.parametrize(
    "command",
    [pytest.param(name) for name in COMMANDS],
)
def test_a_full_cache_disk(command: str, seed: Seed, tmp_path: Path) -> None:
    """The command on the full cache disk; then, space freed, ``index`` completes and every
    document is embedded — those embedded before the disk filled up included."""
    args, check, _ = COMMANDS[command]
    with full_cache_disk(seed, tmp_path) as full:
        cli = full.cli
        result = cli.run(*args, stdin="What about @leaf_active_a001?\n")
        check(result, cli)
        if command != "claim-add":
            assert dump(cli.store) == full.before
        full.ballast.unlink()
        for path in [store_file(cli.store), *cache_files(cli.cache)]:
            assert integrity(path) == "ok", path
        assert "0 waiting to be embedded" in cli.ok("index").stdout
        added = 1 if command == "claim-add" else 0
        expected = {"embedded": seed.embedded + MORE + added, "pending": 0}
        assert cli.json("status")["index"] == expected


def test_embedding_that_runs_out_of_cache_disk_resumes_once_space_is_freed(
    tmp_path: Path,
) -> None:
    """A 1 MB cache holds the text index and the queue of 300 claims but not their vectors:
    ``index`` stops partway; the cache's files stay whole; once the tmpfs is grown, ``index``
    embeds the rest and everything is found by meaning."""
    with tmpfs(tmp_path / "disk", "1m") as disk:
        cli = Cli(tmp_path / "work", cache=disk / "cache")
        cli.ok("import", str(write_claims(tmp_path / "claims.jsonl", 300)))
        stopped = cli.run("index")
        assert stopped.returncode != 0, stopped.stdout
        for path in cache_files(cli.cache):
            assert integrity(path) == "ok", path
        partway = cli.json("status")["index"]
        assert partway["embedded"] < 300, partway
        resize(disk, "32m")
        assert "0 waiting to be embedded" in cli.ok("index").stdout
        assert cli.json("status")["index"] == {"embedded": 300, "pending": 0}
        hits = cli.json("search", "I plan to tidy the attic in week 3", "--mode", "dense")
        assert hits[0]["title"] == "I plan to tidy the attic in week 3"


def test_embedding_that_runs_out_of_cache_disk_is_one_line(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "1m") as disk:
        cli = Cli(tmp_path / "work", cache=disk / "cache")
        cli.ok("import", str(write_claims(tmp_path / "claims.jsonl", 300)))
        refused_for_the_cache(cli.run("index"), cli)
