"""The store of record on disk: pragmas, migrations, refusal of newer stores, locking,
claim numbers, user scoping and hand-made cycles."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from lsp_memory.errors import StoreError
from lsp_memory.model import ClaimStatus, Context
from lsp_memory.services.memory.interchange import add_record
from lsp_memory.store.schema import MIGRATIONS, SCHEMA_VERSION
from lsp_memory.store.sqlite import STORE_FILE, EpisodeRef, Store, migrate, open_store
from lsp_memory.store.sqlite.connection import REMEMBERED
from tests.conftest import USER, snapshot


def test_new_store_has_the_current_schema_wal_and_foreign_keys(store: Store) -> None:
    assert store.schema_version == SCHEMA_VERSION
    db = sqlite3.connect(store.path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store._db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store._db.execute("PRAGMA busy_timeout").fetchone()[0] == 5000


def test_lookup_indexes_exist(store: Store) -> None:
    plans = {
        "number": "SELECT id FROM claims WHERE user = 'a' AND number = 1",
        "friendly id": "SELECT id FROM claims WHERE user = 'a' AND friendly_id = 'x'",
        "context name": "SELECT id FROM contexts WHERE user = 'a' AND name_key = 'x'",
    }
    for what, sql in plans.items():
        plan = " ".join(row[3] for row in store._db.execute("EXPLAIN QUERY PLAN " + sql))
        assert "USING" in plan and "INDEX" in plan, (what, plan)


def test_migrations_move_forward_one_version_at_a_time(tmp_path: Path) -> None:
    with open_store(tmp_path) as first:
        add_record(first, {"kind": "claim", "statement": "kept"}, user=USER)
    later = (*MIGRATIONS, "CREATE TABLE added_later (x INTEGER);")
    with open_store(tmp_path, migrations=later) as upgraded:
        assert upgraded.schema_version == len(later)
        assert [c.statement for c in upgraded.claims(USER)] == ["kept"]
        upgraded._db.execute("SELECT x FROM added_later").fetchall()


def test_a_failing_migration_leaves_the_last_good_version(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "m.sqlite3", isolation_level=None)
    broken = ("CREATE TABLE one (x);", "CREATE TABLE two (x); CREATE TABLE one (y);")
    with pytest.raises(sqlite3.OperationalError):
        migrate(db, broken)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 1
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    assert tables == {"one"}  # `two` was rolled back with its failing migration


def test_store_from_a_newer_version_is_refused_and_not_modified(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        add_record(store, {"kind": "claim", "statement": "precious"}, user=USER)
    db = sqlite3.connect(tmp_path / STORE_FILE)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    before = (tmp_path / STORE_FILE).read_bytes()
    with pytest.raises(StoreError, match="newer lsp-memory"):
        open_store(tmp_path)
    assert (tmp_path / STORE_FILE).read_bytes() == before


def test_a_file_that_is_not_a_store_is_refused(tmp_path: Path) -> None:
    (tmp_path / STORE_FILE).write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match="not a readable lsp-memory store"):
        open_store(tmp_path)


def test_store_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(StoreError, match=r"cannot create store folder|is a file"):
        open_store(target)


def test_a_locked_store_gives_one_line_and_changes_nothing(tmp_path: Path) -> None:
    with open_store(tmp_path) as setup:
        add_record(setup, {"kind": "claim", "statement": "before"}, user=USER)
    before = snapshot(tmp_path)
    holder = sqlite3.connect(tmp_path / STORE_FILE, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with (
            open_store(tmp_path, busy_timeout_ms=100) as store,
            pytest.raises(StoreError, match="locked by another process") as caught,
        ):
            add_record(store, {"kind": "claim", "statement": "blocked"}, user=USER)
        assert "\n" not in str(caught.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert snapshot(tmp_path) == before


def test_claim_numbers_are_per_user_and_never_reused(store: Store) -> None:
    first = add_record(store, {"kind": "claim", "statement": "one"}, user="ann").claims[0]
    second = add_record(store, {"kind": "claim", "statement": "two"}, user="ann").claims[0]
    other = add_record(store, {"kind": "claim", "statement": "b one"}, user="bob").claims[0]
    assert (first.number, second.number, other.number) == (1, 2, 1)
    store._db.execute("DELETE FROM claims WHERE claim_id = ?", (second.claim_id,))
    third = add_record(store, {"kind": "claim", "statement": "three"}, user="ann").claims[0]
    assert third.number == 3


def test_explicit_numbers_raise_the_counter(store: Store) -> None:
    add_record(store, {"kind": "claim", "statement": "x", "claim_number": 40}, user=USER)
    nxt = add_record(store, {"kind": "claim", "statement": "y"}, user=USER).claims[0]
    assert nxt.number == 41


def test_records_are_scoped_by_user(kb: Store) -> None:
    assert {c.user for c in kb.claims(USER)} == {USER}
    assert len(kb.claims(USER)) == 18
    assert [c.number for c in kb.claims("mallory")] == [1, 42, 99]
    mine = kb.claim_by_number(USER, 42)
    theirs = kb.claim_by_number("mallory", 42)
    assert mine is not None and theirs is not None
    assert mine.claim_id != theirs.claim_id
    assert kb.claim_by_number(USER, 99) is None
    assert kb.claim_by_friendly_id(USER, "mallory_only_f099") is None
    assert kb.claim_by_uuid(USER, theirs.claim_id) is None


def test_context_claims_gather_descendants_once_newest_first(kb: Store) -> None:
    root = kb.context_by_friendly_id(USER, "root_ctx")
    assert root is not None
    assert [c.number for c in kb.claims_in_context(USER, root.context_id)] == [10, 2, 8, 7, 1, 9]


def test_contexts_return_only_active_and_contested_claims(kb: Store) -> None:
    leaf = kb.context_by_friendly_id(USER, "leaf_ctx")
    assert leaf is not None
    claims = kb.claims_in_context(USER, leaf.context_id)
    assert {c.status for c in claims} == {ClaimStatus.ACTIVE, ClaimStatus.CONTESTED}
    every_status = {c.status for c in kb.claims(USER) if "leaf_ctx" in (c.contexts or ())}
    assert every_status == set(ClaimStatus)


def test_a_hand_made_cycle_neither_hangs_nor_repeats_claims(kb: Store) -> None:
    db = kb._db
    root_id = db.execute("SELECT id FROM contexts WHERE friendly_id = 'root_ctx'").fetchone()[0]
    db.execute(
        "UPDATE contexts SET parent = (SELECT id FROM contexts WHERE "
        "friendly_id = 'leaf_ctx' AND user = ?) WHERE id = ?",
        (USER, root_id),
    )
    root = kb.context_by_friendly_id(USER, "root_ctx")
    assert root is not None and root.parent == "leaf_ctx"
    numbers = [c.number for c in kb.claims_in_context(USER, root.context_id)]
    assert sorted(numbers) == [1, 2, 7, 8, 9, 10]
    roots, stranded = kb.context_tree(USER)
    assert {c.friendly_id for c in stranded} == {"root_ctx", "mid_ctx", "leaf_ctx", "other_ctx"}
    assert {n.context.friendly_id for n in roots} == {"hgoals", "empty_ctx"}


def test_depth_limit_of_ten(store: Store) -> None:
    parent = None
    for level in range(13):
        record = {"kind": "context", "name": f"Level {level}", "friendly_id": f"lvl{level}"}
        if parent:
            record["parent"] = parent
        add_record(store, record, user=USER)
        parent = f"lvl{level}"
    for level in (10, 11):
        add_record(
            store,
            {"kind": "claim", "statement": f"at {level}", "contexts": [f"lvl{level}"]},
            user=USER,
        )
    top = store.context_by_friendly_id(USER, "lvl0")
    assert isinstance(top, Context)
    assert [c.statement for c in store.claims_in_context(USER, top.context_id)] == ["at 10"]


def test_context_tree_counts_live_claims(kb: Store) -> None:
    roots, stranded = kb.context_tree(USER)
    assert stranded == []
    by_id = {n.context.friendly_id: n for n in roots}
    root = by_id["root_ctx"]
    assert root.claim_count == 1
    assert [c.context.friendly_id for c in root.children] == ["mid_ctx", "other_ctx"]
    leaf = root.children[0].children[0]
    assert (leaf.context.friendly_id, leaf.claim_count) == ("leaf_ctx", 3)


def test_single_lookups_carry_links_and_group_results_leave_them_out(kb: Store) -> None:
    one = kb.claim_by_number(USER, 8)
    assert one is not None
    assert (one.contexts, one.entities, one.tags) == (("mid_ctx",), ("alice_ent", "eng_team"), ())
    assert one.claim_types == ("relationship",) and one.domains == ("work",)
    mid = kb.context_by_friendly_id(USER, "mid_ctx")
    assert mid is not None
    grouped = {c.number: c for c in kb.claims_in_context(USER, mid.context_id)}
    assert grouped[8].contexts is None and grouped[8].entities is None
    assert grouped[8].claim_types == ("relationship",) and grouped[8].domains == ("work",)


def test_group_queries_start_from_their_hits(kb: Store) -> None:
    """A context, tag or entity with few claims must not scan all the user's claims."""
    leaf = kb.context_by_friendly_id(USER, "leaf_ctx")
    assert leaf is not None
    kb._db.execute("ANALYZE")  # even with statistics that favour the (user, updated_at) index
    traced: list[str] = []
    kb._db.set_trace_callback(traced.append)
    kb.claims_in_context(USER, leaf.context_id)
    kb._db.set_trace_callback(None)
    # The trace holds the statement with its values filled in.
    plan = [row[3] for row in kb._db.execute("EXPLAIN QUERY PLAN " + traced[0])]
    assert not any("claims_user_updated" in step for step in plan), plan
    assert any(step.startswith("SCAN hits") for step in plan), plan


def test_domains_of_live_claims_per_user(kb: Store) -> None:
    add_record(
        kb,
        {"kind": "claim", "statement": "hidden", "context_domain": "secret", "status": "retracted"},
        user=USER,
    )
    assert kb.domains(USER) == ["health", "personal", "work"]
    assert kb.domains("mallory") == ["health", "work"]
    assert kb.domains("nobody") == []


def test_the_assemblers_tier_queries_use_their_indexes(kb: Store) -> None:
    """Pinned claims come through the partial index (not a walk of every claim in date
    order); typed tiers walk the date index and stop at LIMIT (not sort every claim of the
    types)."""

    def plan(run: Callable[[], object]) -> list[str]:
        traced: list[str] = []
        kb._db.set_trace_callback(traced.append)
        run()
        kb._db.set_trace_callback(None)
        return [row[3] for row in kb._db.execute("EXPLAIN QUERY PLAN " + traced[0])]

    pinned = plan(lambda: kb.pinned_claims(USER))
    assert any("claims_user_pinned" in step for step in pinned), pinned
    typed = plan(lambda: kb.claims_of_types(USER, ["fact", "goal"], limit=5))
    assert any("claims_user_updated" in step for step in typed), typed
    assert not any("DISTINCT" in step for step in typed), typed
    assert [c.number for c in kb.pinned_claims(USER)] == [42]


def test_lineage_fields_are_stored_and_read_back(store: Store) -> None:
    derived = ["episode-2", "episode-1", "00000000-0000-4000-a000-00000000000b"]
    record = {"kind": "claim", "statement": "Prefers tea", "derived_from": derived}
    written = add_record(store, {**record, "evidence_count": 3}, user=USER).claims[0]
    assert written.derived_from == tuple(derived)  # in the order given
    [read] = store.claims(USER)
    assert read.derived_from == tuple(derived)
    assert read.evidence_count == 3
    plain = add_record(store, {"kind": "claim", "statement": "Plain"}, user=USER).claims[0]
    found = store.claim_by_uuid(USER, plain.claim_id)
    assert found is not None and (found.derived_from, found.evidence_count) == ((), 0)
    columns = store._db.execute(
        "SELECT derived_from, evidence_count FROM claims WHERE claim_id = ?", (plain.claim_id,)
    ).fetchone()
    assert columns == ("[]", 0)


def test_a_store_of_the_previous_version_gains_the_lineage_columns(tmp_path: Path) -> None:
    previous = MIGRATIONS[:2]  # before claims had derived_from and evidence_count
    with open_store(tmp_path, migrations=previous) as old:
        assert old.schema_version == 2
        old._db.execute(
            "INSERT INTO claims (claim_id, user, number, friendly_id, statement, created_at, "
            "updated_at) VALUES ('c-1', ?, 1, 'kept_a001', 'kept', '2024-01-01T00:00:00Z', "
            "'2024-01-01T00:00:00Z')",
            (USER,),
        )
    with open_store(tmp_path) as upgraded:
        assert upgraded.schema_version == SCHEMA_VERSION
        [claim] = upgraded.claims(USER)
        assert (claim.statement, claim.derived_from, claim.evidence_count) == ("kept", (), 0)
        added = add_record(
            upgraded, {"kind": "claim", "statement": "new", "evidence_count": 2}, user=USER
        ).claims[0]
        assert added.number == 2
        assert upgraded.claim_by_number(USER, 2).evidence_count == 2  # type: ignore[union-attr]


def test_a_store_of_version_4_keeps_its_message_references_and_takes_tool_ones(
    tmp_path: Path,
) -> None:
    """Version 5 copies ``episode_refs`` to a table whose check allows ``tool`` (what
    ``search_memory`` gave a conversation): nothing is lost, and the new kind is accepted and
    read back in the order given."""
    with open_store(tmp_path, migrations=MIGRATIONS[:4]) as old:
        old._db.execute(
            "INSERT INTO episodes (episode_id, user, key, session_id, role, text, occurred_at, "
            "created_at) VALUES ('e-1', ?, 'k', 's', 'user', 'hi', '2026-01-01T00:00:00Z', "
            "'2026-01-01T00:00:00Z')",
            (USER,),
        )
        old._db.execute(
            "INSERT INTO episode_refs VALUES (1, 'search', 'claim', 'c-1', '@kept_a001')"
        )
        with pytest.raises(sqlite3.IntegrityError):
            old._db.execute("INSERT INTO episode_refs VALUES (1, 'tool', 'claim', 'c-2', '@b')")
    with open_store(tmp_path) as upgraded:
        assert upgraded.schema_version == SCHEMA_VERSION
        assert upgraded.episode_refs([1]) == [EpisodeRef(1, "search", "claim", "c-1", "@kept_a001")]
        given = [EpisodeRef(1, "tool", "note", f"v::n{n}.md", f"[[N{n}]]") for n in (3, 1, 2)]
        upgraded.add_episode_refs(given)
        assert upgraded.tool_refs([1]) == given


def test_a_version_4_store_learns_where_each_claim_came_from(tmp_path: Path) -> None:
    """Before version 6 a claim's lineage at its creation told an extracted claim from one the
    user wrote; a consolidation may have added episodes to it since, so the lineage before
    the first run that changed it decides."""
    with open_store(tmp_path, migrations=MIGRATIONS[:4]) as old:
        db = old._db
        for number, derived in ((1, "[]"), (2, '["ep-1"]'), (3, '["ep-2"]')):
            db.execute(
                "INSERT INTO claims (claim_id, user, number, friendly_id, statement, created_at, "
                "updated_at, derived_from) VALUES (?, ?, ?, ?, 'said', '2024-01-01T00:00:00Z', "
                "'2024-01-01T00:00:00Z', ?)",
                (f"c-{number}", USER, number, f"said_{number:04}", derived),
            )
        db.execute(
            "INSERT INTO runs (user, number, kind, now, created_at) "
            "VALUES (?, 1, 'consolidate', 'x', 'x')",
            (USER,),
        )
        # Claim 3 was written by the user; run 1 gave it evidence (episode ep-2).
        db.execute(
            "INSERT INTO run_changes VALUES (1, 0, 3, 'derived_from', '[]', '[\"ep-2\"]', 'e')"
        )
    with open_store(tmp_path) as upgraded:
        origins = {c.number: c.origin for c in upgraded.claims(USER)}
        assert origins == {1: "stated", 2: "inferred", 3: "stated"}


def test_remembered_values_are_bounded_least_recently_computed_first(store: Store) -> None:
    """``remembered`` keeps a value per key until the store changes, and at most
    ``REMEMBERED`` of them per connection (a record page is one: a session that opens
    thousands of pages does not keep them all)."""
    computed: list[int] = []

    def compute(key: int) -> int:
        computed.append(key)
        return key * 2

    for key in range(REMEMBERED + 1):
        assert store.remembered(("n", key), partial(compute, key)) == key * 2
    assert store.remembered(("n", REMEMBERED), lambda: compute(-1)) == REMEMBERED * 2
    assert store.remembered(("n", 1), lambda: compute(-1)) == 2  # kept
    assert store.remembered(("n", 0), lambda: compute(0)) == 0  # dropped: computed again
    assert computed == [*range(REMEMBERED + 1), 0]
