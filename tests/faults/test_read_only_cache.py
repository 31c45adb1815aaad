"""A cache folder that cannot be written (file modes 0555/0444 for an ordinary user; for root,
who ignores file modes, a read-only bind mount of the folder on itself; skipped where neither
is possible), holding the indexes of a store and vault that ``index`` built before: the
commands that read still answer, from the store and whatever of the indexes can be read,
with one warning line about the cache, exit 0 and no traceback; the store is unchanged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.faults.harness import (
    KB,
    KB_CLAIMS,
    NOTES,
    Cli,
    Result,
    copy_store,
    dump,
    log,
    read_only,
)


@dataclass(frozen=True, slots=True)
class Indexed:
    cli: Cli
    prompt: Path


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    root = tmp_path_factory.mktemp("ro-cache")
    cli = Cli(root, vaults=[NOTES])
    cli.ok("import", str(KB))
    assert "0 waiting to be embedded" in cli.ok("index").stdout
    prompt = root / "prompt.md"
    prompt.write_text("What does @leaf_active_a001 mean for [[Project Plan]]?\n", "utf-8")
    return Indexed(cli, prompt)


@pytest.fixture
def frozen(indexed: Indexed) -> Iterator[Cli]:
    """The cache folder read-only while the test runs."""
    with read_only(indexed.cli.cache) as how:
        log.info("read-only cache: %s", how)
        yield indexed.cli


def warned_about_cache(result: Result, cli: Cli, before: str | None = None) -> None:
    """Exit 0, and at most one line on stderr: a warning that names the cache folder; the
    store as ``before`` (its rows), when given."""
    if before is not None:
        assert dump(cli.store) == before
    assert result.returncode == 0, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) <= 1, result.stderr
    for line in lines:
        assert line.startswith("lsp-memory: warning: "), line
        assert str(cli.cache) in line, line


_SEARCH = (
    "with a read-only cache folder `search` exits 1 with 'cannot open the search index in "
    "<cache>/indexes/<key>: [Errno 30] Read-only file system: <a file of the index>' instead "
    "of answering from the index it could read (or the store)"
)
_BUILD = (
    "with a read-only cache folder `build-context` exits 1 with the same 'cannot open the "
    "search index' line: not even the claims and notes the document references are given"
)
_STATUS = (
    "with a read-only cache folder `status` exits 70 with 'internal error: OSError: [Errno "
    "30] Read-only file system: <cache>/indexes/<key>/queue.sqlite3': opening the embedding "
    "queue fails on its write (journal mode, schema), is taken for a corrupt file and the "
    "queue is unlinked"
)


def test_search_answers(frozen: Cli) -> None:
    before = dump(frozen.store)
    result = frozen.run("search", "PostgreSQL", "--kind", "claim", "-k", "3")
    warned_about_cache(result, frozen, before)
    assert "#1 @leaf_active_a001" in result.stdout


def test_build_context_answers(frozen: Cli, indexed: Indexed) -> None:
    before = dump(frozen.store)
    result = frozen.run("build-context", str(indexed.prompt))
    warned_about_cache(result, frozen, before)
    assert "[REFERENCED @leaf_active_a001] [fact] The Leaf service uses PostgreSQL 16" in (
        result.stdout
    )
    assert "### [[Project Plan]]" in result.stdout


def test_status_answers(frozen: Cli) -> None:
    before = dump(frozen.store)
    result = frozen.run("status", "--json")
    warned_about_cache(result, frozen, before)
    found = json.loads(result.stdout)
    assert found["claims"]["total"] == KB_CLAIMS
    assert found["notes"] == 5


def test_resolve_answers(frozen: Cli, indexed: Indexed) -> None:
    before = dump(frozen.store)
    resolved = frozen.run("resolve", "--file", str(indexed.prompt), "--json")
    warned_about_cache(resolved, frozen, before)
    found = {r["ref"]: r for r in json.loads(resolved.stdout)}
    assert found["[[Project Plan]]"]["note"]["path"] == "project-plan.md"
    assert found["@leaf_active_a001"]["claims"][0]["claim_number"] == 1


def test_claim_add_writes_the_store(frozen: Cli, tmp_path: Path) -> None:
    """A write to the store needs nothing from the cache (a store of its own, so that the
    others keep theirs as it was)."""
    cli = Cli(tmp_path, store=tmp_path / "store", cache=frozen.cache)
    copy_store(frozen.store, cli.store)
    added = cli.run("claim", "add", "I brew kombucha on Sundays", "--type", "preference")
    warned_about_cache(added, cli)
    assert added.stdout.startswith("added #43 @"), added.stdout
    shown = cli.json("claim", "show", "43")
    assert shown["statement"] == "I brew kombucha on Sundays"
