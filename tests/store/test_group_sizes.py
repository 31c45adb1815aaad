"""The sizes of contexts, tags and domains kept at write time (schema version 7): after every
write — through the store, through a second connection's plain SQL, through the command
line — each one equals a recount from scratch by the readers that list the claims; a store
migrated from version 6 gets them filled; a hover's token figure is the joined text's."""

from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_memory.app import App
from lsp_memory.config import Config
from lsp_memory.model import Claim, ClaimStatus
from lsp_memory.services.editor.describe import Describer
from lsp_memory.services.kernel import tokens
from lsp_memory.services.memory.interchange import add_record, import_records
from lsp_memory.store.schema import MIGRATIONS
from lsp_memory.store.sqlite import STORE_FILE, GroupSize, Store, open_store
from tests.conftest import KB, USER

ROOT = Path(__file__).parents[2]
USERS = ("ann", "bob")
WORDS = "coffee tea morning plan budget trip Lisbon meeting code review sleep run book".split()
FIRST = 3


def listing(store: Store, user: str, kind: str, key: str) -> list[Claim]:
    """The group's live claims, newest first, by the readers that list them."""
    if kind == "context":
        context = store.context_by_friendly_id(user, key)
        assert context is not None
        return store.claims_in_context(user, context.context_id)
    if kind == "tag":
        return store.claims_with_tag(user, key)
    return store.claims_in_domain(user, key)


def recount(store: Store, user: str, kind: str, key: str) -> list[Any]:
    """What the kept size must say, recounted from scratch by the listing readers."""
    listed = listing(store, user, kind, key)
    counts = dict(
        store._db.execute(
            "SELECT claim_id, line_tokens FROM claims WHERE user = ?", (user,)
        ).fetchall()
    )
    counted = sum(counts[c.claim_id] or 0 for c in listed)
    uncounted = sorted(c.statement for c in listed if counts[c.claim_id] is None)
    ids = [c.claim_id for c in listed[:FIRST]]
    last = listed[-1].claim_id if listed else None
    return [len(listed), counted, uncounted, ids, last]


def kept(size: GroupSize) -> list[Any]:
    last = size.last.claim_id if size.last else None
    return [
        size.claims,
        size.line_tokens,
        sorted(size.uncounted),
        [c.claim_id for c in size.first],
        last,
    ]


def groups(store: Store, user: str) -> Iterator[tuple[str, str]]:
    for context in store.contexts(user):
        yield "context", context.friendly_id
    for tag in store.tags(user):
        yield "tag", tag.friendly_id
    domains = store._db.execute("SELECT DISTINCT domain FROM claim_domains").fetchall()
    for (domain,) in domains:
        yield "domain", domain


def check_all(store: Store, step: str) -> None:
    paused = store._db.execute("SELECT * FROM store_meta WHERE key = 'group_sizes_paused'")
    assert paused.fetchall() == [], step  # a bulk write puts its triggers back
    counted = store._db.execute(
        "SELECT statement, line_tokens FROM claims WHERE line_tokens IS NOT NULL"
    ).fetchall()
    for statement, count in counted:  # an edited claim's count is of its new text
        assert count == tokens.count(tokens.line_text(statement)), (step, statement)
    for user in USERS:
        for kind, key in groups(store, user):
            expected = recount(store, user, kind, key)
            assert kept(store.group_size(user, kind, key, FIRST)) == expected, (step, kind, key)


def second_connection(store: Store) -> sqlite3.Connection:
    """A plain connection to the same file, as another process (the CLI) would open it."""
    db = sqlite3.connect(store.path, isolation_level=None)
    db.execute("PRAGMA foreign_keys = ON")
    return db


class Writer:
    """Random writes of every kind a store sees, by the store's methods and by SQL."""

    def __init__(self, store: Store, seed: int) -> None:
        self.store = store
        self.rng = random.Random(seed)
        self.n = 0
        self.sql = second_connection(store)

    def pick(self, sql: str, *params: Any) -> Any:
        rows = self.sql.execute(sql, params).fetchall()
        return self.rng.choice(rows) if rows else None

    def statement(self) -> str:
        words = self.rng.sample(WORDS, self.rng.randint(1, 6))
        return " ".join(words).capitalize() + self.rng.choice(["", ".", "!", " 42", " (x)"])

    def node(self, kind: str, user: str) -> str:
        """A new context or tag, under a random one of the user's most of the time."""
        self.n += 1
        table = {"context": "contexts", "tag": "tags"}[kind]
        parent = self.pick(f"SELECT friendly_id FROM {table} WHERE user = ?", user)
        key = f"{kind[:3]}{self.n}"
        record = {"kind": kind, "friendly_id": key, "name": f"{kind} {self.n}"}
        if parent and self.rng.random() < 0.8:
            record["parent"] = parent[0]
        add_record(self.store, record, user=user)
        return f"{kind} {key}"

    def context(self, user: str) -> str:
        return self.node("context", user)

    def tag(self, user: str) -> str:
        return self.node("tag", user)

    def claim(self, user: str) -> str:
        contexts = [
            r[0]
            for r in self.sql.execute("SELECT friendly_id FROM contexts WHERE user = ?", (user,))
        ]
        tags = [
            r[0] for r in self.sql.execute("SELECT friendly_id FROM tags WHERE user = ?", (user,))
        ]
        record: dict[str, Any] = {
            "kind": "claim",
            "statement": self.statement(),
            "contexts": self.rng.sample(contexts, min(len(contexts), self.rng.randint(0, 3))),
            "tags": self.rng.sample(tags, min(len(tags), self.rng.randint(0, 2))),
            "context_domains": self.rng.sample(["work", "home", "health"], self.rng.randint(0, 2)),
            "status": self.rng.choice(["active", "active", "contested", "retracted"]),
        }
        add_record(self.store, record, user=user)
        return "claim add"

    def status(self, user: str) -> str:
        found = self.pick("SELECT claim_id FROM claims WHERE user = ?", user)
        if found is None:
            return "none"
        status = self.rng.choice(
            [
                ClaimStatus.ACTIVE,
                ClaimStatus.RETRACTED,
                ClaimStatus.DEPRECATED,
                ClaimStatus.CONTESTED,
            ]
        )
        self.store.set_status(user, found[0], status, "2026-01-01T00:00:00Z")
        return f"status {status}"

    def supersede(self, user: str) -> str:
        old, new = (
            self.pick("SELECT claim_id FROM claims WHERE user = ?", user),
            self.pick("SELECT claim_id FROM claims WHERE user = ?", user),
        )
        if old is None or new is None or old == new:
            return "none"
        self.store.supersede(user, [old[0]], new[0], f"2026-02-0{self.rng.randint(1, 9)}T00:00:00Z")
        return "supersede"

    def restore(self, user: str) -> str:
        found = self.pick("SELECT claim_id FROM claims WHERE user = ? AND status <> 'active'", user)
        if found is not None:
            self.store.restore(user, found[0], "2026-03-01T00:00:00Z")
        return "restore"

    def link(self, user: str) -> str:
        claim = self.pick("SELECT claim_id FROM claims WHERE user = ?", user)
        context = self.pick("SELECT context_id FROM contexts WHERE user = ?", user)
        if claim is None or context is None:
            return "none"
        linked = self.rng.random() < 0.6
        self.store.link_context(user, claim[0], context[0], linked, "2026-04-01T00:00:00Z")
        return f"link {linked}"

    def count(self, user: str) -> str:
        tokens.count_claims(self.store, batch=7, limit=self.rng.randint(1, 30))
        return "count"

    # -- plain SQL through the second connection --------------------------------------------

    def move(self, user: str) -> str:
        table = self.rng.choice(["contexts", "tags"])
        node = self.pick(f"SELECT id FROM {table} WHERE user = ?", user)
        parent = self.pick(f"SELECT id FROM {table} WHERE user = ?", user)
        if node is None:
            return "none"
        # Any parent, a cycle included: readers stop at depth 10 and so must the sizes.
        to = None if parent is None or self.rng.random() < 0.2 else parent[0]
        self.sql.execute(f"UPDATE {table} SET parent = ? WHERE id = ?", (to, node[0]))
        return f"move {table}"

    def delete(self, user: str) -> str:
        table = self.rng.choice(["contexts", "tags", "claims", "claim_tags", "claim_domains"])
        if table in ("claim_tags", "claim_domains"):
            column = "tag" if table == "claim_tags" else "pos"
            row = self.pick(
                f"SELECT l.claim, l.{column} FROM {table} l JOIN claims c ON c.id = l.claim "
                "WHERE c.user = ?",
                user,
            )
            if row is None:
                return "none"
            self.sql.execute(f"DELETE FROM {table} WHERE claim = ? AND {column} = ?", row)
            return f"delete {table}"
        row = self.pick(f"SELECT id FROM {table} WHERE user = ?", user)
        if row is None:
            return "none"
        self.sql.execute("BEGIN")
        if table == "claims":  # what points at it first, as a deletion would
            self.sql.execute(
                "UPDATE claims SET superseded_by = NULL, merged_into = NULL "
                "WHERE superseded_by = (SELECT claim_id FROM claims WHERE id = ?) "
                "OR merged_into = (SELECT claim_id FROM claims WHERE id = ?)",
                (row[0], row[0]),
            )
        self.sql.execute(f"DELETE FROM {table} WHERE id = ?", row)
        self.sql.execute("COMMIT")
        return f"delete {table}"

    def edit(self, user: str) -> str:
        found = self.pick("SELECT id FROM claims WHERE user = ?", user)
        if found is not None:
            self.sql.execute(
                "UPDATE claims SET statement = ? WHERE id = ?", (self.statement(), found[0])
            )
        return "edit"

    def relink_domain(self, user: str) -> str:
        found = self.pick(
            "SELECT d.claim, d.pos FROM claim_domains d JOIN claims c ON c.id = d.claim "
            "WHERE c.user = ?",
            user,
        )
        if found is not None:
            self.sql.execute(
                "UPDATE claim_domains SET domain = ? WHERE claim = ? AND pos = ?",
                (self.rng.choice(["work", "home", "travel"]), *found),
            )
        return "relink domain"

    def step(self) -> str:
        user = self.rng.choice(USERS)
        action = self.rng.choices(
            [
                self.context,
                self.tag,
                self.claim,
                self.status,
                self.supersede,
                self.restore,
                self.link,
                self.count,
                self.move,
                self.delete,
                self.edit,
                self.relink_domain,
            ],
            weights=[3, 2, 8, 2, 1, 1, 2, 2, 2, 1, 1, 1],
        )[0]
        return f"{user}: {action(user)}"


@pytest.mark.parametrize("seed", range(4))
def test_random_writes_keep_every_size_equal_to_a_recount(store: Store, seed: int) -> None:
    writer = Writer(store, seed)
    for user in USERS:
        writer.context(user)
        writer.tag(user)
    for number in range(120):
        done = writer.step()
        check_all(store, f"step {number}: {done}")
    writer.sql.close()


def test_depth_and_cycles_match_the_readers(store: Store) -> None:
    """A chain deeper than the readers go (10 levels), then made a cycle."""
    add_record(store, {"kind": "context", "friendly_id": "lvl0", "name": "C 0"}, user=USER)
    for level in range(1, 14):
        record = {
            "kind": "context",
            "friendly_id": f"lvl{level}",
            "name": f"C {level}",
            "parent": f"lvl{level - 1}",
        }
        add_record(store, record, user=USER)
    for level in (0, 5, 10, 11, 13):
        add_record(
            store,
            {"kind": "claim", "statement": f"At level {level}", "contexts": [f"lvl{level}"]},
            user=USER,
        )
    check_all(store, "chain")
    assert store.group_size(USER, "context", "lvl0", FIRST).claims == 3  # levels 0, 5, 10
    sql = second_connection(store)
    sql.execute(
        "UPDATE contexts SET parent = (SELECT id FROM contexts WHERE friendly_id = 'lvl13')"
        " WHERE friendly_id = 'lvl0'"
    )
    check_all(store, "cycle")
    sql.close()


def test_a_claim_added_by_the_command_line_is_counted(store: Store, tmp_path: Path) -> None:
    add_record(store, {"kind": "context", "friendly_id": "work", "name": "Work"}, user=USER)
    add_record(
        store,
        {"kind": "context", "friendly_id": "proj", "name": "Proj", "parent": "work"},
        user=USER,
    )
    before = store.group_size(USER, "context", "work", FIRST).claims
    env = {
        "LSP_MEMORY_STORE": str(store.path.parent),
        "LSP_MEMORY_USER": USER,
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PYTHONPATH": str(ROOT),
    }
    for text in ("Ship the beta on Friday", "Book the review room"):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "lsp_memory",
                "claim",
                "add",
                text,
                "--context",
                "@proj",
                "--domain",
                "work",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    assert store.group_size(USER, "context", "work", FIRST).claims == before + 2
    check_all(store, "cli")


def copy_rows(old: sqlite3.Connection, newer: Path) -> None:
    """Every row of a newer store's tables into an older store's, in the older columns."""
    old.execute("ATTACH DATABASE ? AS newer", (str(newer),))
    old.execute("BEGIN")
    tables = old.execute(
        "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name <> 'store_meta'"
    ).fetchall()
    for (table,) in tables:
        columns = ", ".join(row[1] for row in old.execute(f"PRAGMA main.table_info({table})"))
        old.execute(f"INSERT INTO main.{table} ({columns}) SELECT {columns} FROM newer.{table}")
    old.execute("COMMIT")
    old.execute("DETACH DATABASE newer")


def test_migration_from_version_6_fills_the_sizes(tmp_path: Path) -> None:
    folder = tmp_path / "old"
    with open_store(tmp_path / "new") as new:  # today's writer writes version 7's tables (and 8's)
        import_records(new, KB.read_bytes(), user=USER, source=str(KB))
    with open_store(folder, migrations=MIGRATIONS[:6]) as old:
        assert old.schema_version == 6
        copy_rows(old._db, tmp_path / "new" / STORE_FILE)
    with open_store(folder) as store:
        assert store.schema_version == len(MIGRATIONS)
        sizes = {key: store.group_size(USER, kind, key, FIRST) for kind, key in groups(store, USER)}
        assert sizes["root_ctx"].claims > 0
        assert all(s.line_tokens == 0 and len(s.uncounted) == s.claims for s in sizes.values())
        check_all(store, "migrated")
        tokens.count_claims(store)
        check_all(store, "counted")
        assert all(
            not store.group_size(USER, k, key, FIRST).uncounted for k, key in groups(store, USER)
        )


@pytest.mark.parametrize("kind", ["context", "tag", "domain"])
def test_the_kept_tokens_give_the_joined_texts_count(kb: Store, kind: str) -> None:
    """Counted or not, the figure is what counting the listed statements joined gives."""
    for counted in (False, True):
        if counted:
            tokens.count_claims(kb)
        for found, key in groups(kb, USER):
            if found != kind:
                continue
            size = kb.group_size(USER, kind, key, FIRST)
            if size.last is None:
                continue
            listed = listing(kb, USER, kind, key)
            joined = tokens.count("\n".join(c.statement for c in listed))
            assert tokens.listed(size.uncounted, size.line_tokens, size.last.statement) == joined


def test_an_unknown_group_is_empty(store: Store) -> None:
    assert store.group_size(USER, "context", "missing", FIRST) == GroupSize(0, 0, (), (), None)
    with pytest.raises(ValueError, match="not a group kind"):
        store.group_size(USER, "entity", "x", FIRST)


@pytest.mark.parametrize(
    ("ref", "kind", "key"),
    [
        ("@root_ctx", "context", "root_ctx"),
        ("@health_tag", "tag", "health_tag"),
        ("@work_domain", "domain", "work"),
    ],
)
def test_hover_and_page_show_the_kept_sizes(
    kb: Store, tmp_path: Path, ref: str, kind: str, key: str
) -> None:
    """The count and the tokens shown are the kept ones, not a count of loaded claims."""
    describer = Describer(kb, USER)
    size = kb.group_size(USER, kind, key, FIRST)
    assert size.claims > 0
    hover = describer.hover_at(ref, 1)
    assert hover is not None
    assert f"{size.claims} claim" in hover.markdown
    grp = key
    if kind != "domain":
        table = {"context": "contexts", "tag": "tags"}[kind]
        grp = kb._db.execute(f"SELECT id FROM {table} WHERE friendly_id = ?", (key,)).fetchone()[0]
    kb._db.execute(
        "UPDATE group_sizes SET claims = claims + 1000, uncounted = 0, tokens = 5000 "
        "WHERE kind = ? AND grp = ?",
        (kind, grp),
    )
    last = kb.group_size(USER, kind, key, FIRST).last
    assert last is not None
    shown = 5000 - tokens.count(tokens.line_text(last.statement)) + tokens.count(last.statement)
    hover = describer.hover_at(ref, 1)
    assert hover is not None
    assert f"{size.claims + 1000} claims" in hover.markdown
    assert f"· {shown} tokens" in hover.markdown
    assert f"… {size.claims + 1000 - 5} more" in hover.markdown
    page = describer.definition_at(ref, 1, tmp_path / "pages")
    assert page is not None
    assert f"- Claims: {size.claims + 1000}, active and contested" in page.path.read_text()


def test_the_app_counts_what_was_written_without_a_count(tmp_path: Path) -> None:
    """What the language server runs after each store change it follows."""
    app = App(Config(store=tmp_path / "store", user=USER, cache=tmp_path / "cache"))
    try:
        import_records(app.store, KB.read_bytes(), user=USER, source=str(KB))
        size = app.store.group_size(USER, "context", "root_ctx", FIRST)
        assert size.uncounted and size.line_tokens == 0
        everyone = app.store._db.execute("SELECT count(*) FROM claims").fetchone()[0]
        assert app.count_claim_tokens() == everyone  # every user's
        counted = app.store.group_size(USER, "context", "root_ctx", FIRST)
        assert counted.uncounted == () and counted.line_tokens > 0
        assert app.count_claim_tokens() == 0
    finally:
        app.close()
