"""The store's schema as forward migrations, one per ``PRAGMA user_version`` step.

Migration N (1-based) takes a store from version N-1 to N. Never edit a released migration:
append a new one.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable

from lsp_memory.ids import FRIENDLY_ID

V1 = """
CREATE TABLE claim_numbers (
    user TEXT PRIMARY KEY,
    last INTEGER NOT NULL CHECK (last >= 0)
) WITHOUT ROWID;

CREATE TABLE claims (
    id INTEGER PRIMARY KEY,
    claim_id TEXT NOT NULL UNIQUE,
    user TEXT NOT NULL,
    number INTEGER NOT NULL CHECK (number > 0),
    friendly_id TEXT NOT NULL,
    statement TEXT NOT NULL CHECK (statement <> ''),
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN
        ('active', 'contested', 'retracted', 'superseded', 'merged', 'deprecated')),
    confidence REAL NOT NULL DEFAULT 1.0 CHECK (confidence BETWEEN 0.0 AND 1.0),
    possible_questions TEXT NOT NULL DEFAULT '[]',
    pinned INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    valid_from TEXT,
    valid_to TEXT,
    superseded_by TEXT REFERENCES claims (claim_id) DEFERRABLE INITIALLY DEFERRED,
    merged_into TEXT REFERENCES claims (claim_id) DEFERRABLE INITIALLY DEFERRED,
    meta TEXT NOT NULL DEFAULT '{}',
    UNIQUE (user, number),
    UNIQUE (user, friendly_id)
);
CREATE INDEX claims_user_updated ON claims (user, updated_at);
CREATE INDEX claims_user_pinned ON claims (user) WHERE pinned = 1;

CREATE TABLE claim_types (
    claim INTEGER NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
    pos INTEGER NOT NULL,
    type TEXT NOT NULL,
    PRIMARY KEY (claim, pos)
) WITHOUT ROWID;
CREATE INDEX claim_types_type ON claim_types (type, claim);

CREATE TABLE claim_domains (
    claim INTEGER NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
    pos INTEGER NOT NULL,
    domain TEXT NOT NULL,
    PRIMARY KEY (claim, pos)
) WITHOUT ROWID;
CREATE INDEX claim_domains_domain ON claim_domains (domain, claim);

CREATE TABLE contexts (
    id INTEGER PRIMARY KEY,
    context_id TEXT NOT NULL UNIQUE,
    user TEXT NOT NULL,
    friendly_id TEXT NOT NULL,
    name TEXT NOT NULL CHECK (name <> ''),
    name_key TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    parent INTEGER REFERENCES contexts (id) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (user, friendly_id)
);
CREATE INDEX contexts_user_name ON contexts (user, name_key);
CREATE INDEX contexts_parent ON contexts (parent);

CREATE TABLE context_claims (
    context INTEGER NOT NULL REFERENCES contexts (id) ON DELETE CASCADE,
    claim INTEGER NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
    PRIMARY KEY (context, claim)
) WITHOUT ROWID;
CREATE INDEX context_claims_claim ON context_claims (claim, context);

CREATE TABLE tags (
    id INTEGER PRIMARY KEY,
    user TEXT NOT NULL,
    friendly_id TEXT NOT NULL,
    name TEXT NOT NULL CHECK (name <> ''),
    parent INTEGER REFERENCES tags (id) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED,
    UNIQUE (user, friendly_id)
);
CREATE INDEX tags_parent ON tags (parent);

CREATE TABLE claim_tags (
    claim INTEGER NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
    tag INTEGER NOT NULL REFERENCES tags (id) ON DELETE CASCADE,
    PRIMARY KEY (claim, tag)
) WITHOUT ROWID;
CREATE INDEX claim_tags_tag ON claim_tags (tag, claim);

CREATE TABLE entity_types (
    id INTEGER PRIMARY KEY,
    user TEXT NOT NULL,
    name TEXT NOT NULL CHECK (name <> ''),
    fields TEXT NOT NULL DEFAULT '[]',
    UNIQUE (user, name)
);

CREATE TABLE entities (
    id INTEGER PRIMARY KEY,
    entity_id TEXT NOT NULL UNIQUE,
    user TEXT NOT NULL,
    friendly_id TEXT NOT NULL,
    name TEXT NOT NULL CHECK (name <> ''),
    type INTEGER NOT NULL REFERENCES entity_types (id),
    fields TEXT NOT NULL DEFAULT '{}',
    trashed INTEGER NOT NULL DEFAULT 0 CHECK (trashed IN (0, 1)),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (user, friendly_id)
);

CREATE TABLE claim_entities (
    claim INTEGER NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
    entity INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    PRIMARY KEY (claim, entity)
) WITHOUT ROWID;
CREATE INDEX claim_entities_entity ON claim_entities (entity, claim);
"""

# Version 2: what derived indexes need to follow the store from any process. `changes` logs
# writes to searchable records as row ranges: `Store` appends one row per write (a bulk import
# one range per table; triggers cost 4 µs a row and halved the import rate). A deletion keeps
# the record's id. `store_meta` gives the store an identity so an index never follows the
# wrong store.
V2 = """
CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
INSERT INTO store_meta VALUES ('store_id', lower(hex(randomblob(16))));

CREATE TABLE changes (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('claim', 'context', 'entity')),
    row INTEGER NOT NULL,
    last_row INTEGER NOT NULL,
    record_id TEXT
);
"""

# Version 3: a claim's lineage. `derived_from` is a JSON list of the ids a claim rests on
# (episodes, merged claims), with no foreign key: the ids name episodes as well as claims.
# `evidence_count` counts the evidence behind it. Existing claims get the defaults.
V3 = """
ALTER TABLE claims ADD COLUMN derived_from TEXT NOT NULL DEFAULT '[]';
ALTER TABLE claims ADD COLUMN evidence_count INTEGER NOT NULL DEFAULT 0
    CHECK (evidence_count >= 0);
"""

# Version 4: memory that maintains itself, and conversations. `evidence_at` is the time of a
# claim's newest evidence (an episode that supports it). `episodes` are conversation messages,
# per user, never edited; `key` (a hash of conversation, time, role and text) makes ingesting the
# same message twice store nothing. Episodes join the change log (its kind check is widened by
# copying the table: SQLite cannot alter a check). `episode_refs` are the references an episode
# made (`direct`, in its text) or was given (`search`); `session_pins` a session's pinned
# claims and notes. A consolidation or a review decision is a `run`; `run_changes` holds every
# field it changed with the value before and after (JSON), so `consolidate --undo` can put
# them back. `review_items` wait for a decision; `pair` (the sorted claim ids) keeps an item
# from being raised twice. A run's marks are the last episode and claim rows it saw: the next
# run looks at what came after. Runs, items and their numbers are per user.
V4 = """
ALTER TABLE claims ADD COLUMN evidence_at TEXT;

CREATE TABLE episodes (
    id INTEGER PRIMARY KEY,
    episode_id TEXT NOT NULL UNIQUE,
    user TEXT NOT NULL,
    key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    text TEXT NOT NULL CHECK (text <> ''),
    occurred_at TEXT NOT NULL,
    created_at TEXT NOT NULL,
    source TEXT,
    channel TEXT,
    meta TEXT NOT NULL DEFAULT '{}',
    UNIQUE (user, key)
);
CREATE INDEX episodes_user ON episodes (user, id);
CREATE INDEX episodes_session ON episodes (user, session_id, occurred_at);

CREATE TABLE episode_refs (
    episode INTEGER NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
    via TEXT NOT NULL CHECK (via IN ('direct', 'search')),
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    label TEXT NOT NULL,
    PRIMARY KEY (episode, via, kind, target, label)
) WITHOUT ROWID;

CREATE TABLE session_pins (
    user TEXT NOT NULL,
    session_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    label TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (user, session_id, kind, target)
) WITHOUT ROWID;

CREATE TABLE changes_v4 (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('claim', 'context', 'entity', 'episode')),
    row INTEGER NOT NULL,
    last_row INTEGER NOT NULL,
    record_id TEXT
);
INSERT INTO changes_v4 SELECT seq, kind, row, last_row, record_id FROM changes;
DROP TABLE changes;
ALTER TABLE changes_v4 RENAME TO changes;

CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    user TEXT NOT NULL,
    number INTEGER NOT NULL CHECK (number > 0),
    kind TEXT NOT NULL CHECK (kind IN ('consolidate', 'review')),
    now TEXT NOT NULL,
    created_at TEXT NOT NULL,
    episode_mark INTEGER NOT NULL DEFAULT 0,
    claim_mark INTEGER NOT NULL DEFAULT 0,
    summary TEXT NOT NULL DEFAULT '{}',
    undone_at TEXT,
    UNIQUE (user, number)
);

CREATE TABLE run_changes (
    run INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    pos INTEGER NOT NULL,
    claim INTEGER NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
    field TEXT NOT NULL,
    before TEXT NOT NULL,
    after TEXT NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (run, pos)
) WITHOUT ROWID;

CREATE TABLE review_items (
    id INTEGER PRIMARY KEY,
    user TEXT NOT NULL,
    number INTEGER NOT NULL CHECK (number > 0),
    run INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('contradiction', 'merge')),
    claims TEXT NOT NULL,
    pair TEXT NOT NULL,
    proposal TEXT NOT NULL CHECK (proposal IN ('MERGE', 'KEEP_BOTH', 'CONTRADICTION')),
    reason TEXT NOT NULL,
    state TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'open' CHECK (status IN
        ('open', 'accepted', 'rejected', 'kept-both', 'withdrawn')),
    decided_by INTEGER REFERENCES runs (id) ON DELETE SET NULL,
    created_at TEXT NOT NULL,
    UNIQUE (user, number)
);
CREATE INDEX review_items_user ON review_items (user, status);
CREATE INDEX review_items_pair ON review_items (user, pair);
"""

# Version 5: what an assistant found with ``search_memory`` for a conversation is kept as its
# own kind of reference, ``tool`` (the block shows it apart from what the block itself
# found), and the references keep the order they were given in (a rowid table).
V5 = """
CREATE TABLE episode_refs_v5 (
    episode INTEGER NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
    via TEXT NOT NULL CHECK (via IN ('direct', 'search', 'tool')),
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    label TEXT NOT NULL,
    UNIQUE (episode, via, kind, target, label)
);
INSERT INTO episode_refs_v5 (episode, via, kind, target, label)
    SELECT episode, via, kind, target, label FROM episode_refs;
DROP TABLE episode_refs;
ALTER TABLE episode_refs_v5 RENAME TO episode_refs;
"""

# Version 6: where a claim came from, and when a merge archived it. `origin` is `stated` (the
# user wrote it) or `inferred` (extracted from a conversation): decay applies to inferred
# claims. Until now a claim's lineage at its creation told the two apart (an extracted claim
# names its episode), but consolidation adds episodes and merged claims to `derived_from`
# later; so existing claims are sorted by their lineage before the first run that changed it.
# `archived_at` is the time a consolidation merged the claim into another.
V6 = """
ALTER TABLE claims ADD COLUMN origin TEXT NOT NULL DEFAULT 'stated'
    CHECK (origin IN ('stated', 'inferred'));
ALTER TABLE claims ADD COLUMN archived_at TEXT;
UPDATE claims SET origin = 'inferred' WHERE coalesce(
    (SELECT x.before FROM run_changes x WHERE x.claim = claims.id AND x.field = 'derived_from'
     ORDER BY x.run, x.pos LIMIT 1),
    derived_from) <> '[]';
"""


# Version 7: the size of every context, tag and domain kept at write time, so a hover reads
# one row instead of loading the claims beneath it (31 000 for a root context at 100k claims).
# `line_tokens` is a claim's statement counted as a line of a list (o200k, the statement and a
# newline); NULL until a process with the tokenizer counts it (the language server does, in the
# background; a migration cannot). `group_claims` lists, once each, the claims beneath a
# context (linked to it or to a descendant at most 10 levels down, the depth readers go to),
# carrying a tag or a descendant tag, or having a domain; `group_sizes` sums its live claims:
# how many, their counted `line_tokens`, and how many are not counted yet. Triggers keep both
# right on every write, from any connection: a link added or removed recomputes that claim's
# memberships; a context or tag moved recomputes the claims beneath it; a claim's status or
# count changing moves its share in every group it is in. A claim edited loses its count.
LIVE_IN_SQL = "('active', 'contested')"
"""The live statuses as SQL (``model.LIVE_STATUSES``); a query must say ``status IN`` this
very text for SQLite to use the ``claims_live_type`` index."""
_TREES = (
    ("context", "contexts", "context_claims", "context"),
    ("tag", "tags", "claim_tags", "tag"),
)
_PAUSED = "NOT EXISTS (SELECT 1 FROM store_meta WHERE key = 'group_sizes_paused')"
"""Triggers that follow links one row at a time stand aside while a bulk write (an import)
fills the sizes of its new claims at once (``fill_group_sizes``)."""


def _wanted(kind: str, tree: str, links: str, link: str, claims: str) -> str:
    """(kind, group, claim, user) rows for ``claims`` (SQL naming claim row ids): every node
    at most 10 levels above a node the claims link to, nodes of the claim's user only (as
    readers walk them); cycle-safe by the depth."""
    return f"""
        WITH RECURSIVE up(id, claim, depth) AS (
            SELECT l.{link}, l.claim, 0 FROM {links} l
            JOIN {tree} x ON x.id = l.{link} JOIN claims c ON c.id = l.claim
            WHERE l.claim IN ({claims}) AND x.user = c.user
            UNION
            SELECT p.id, up.claim, up.depth + 1 FROM up JOIN {tree} x ON x.id = up.id
            JOIN {tree} p ON p.id = x.parent AND p.user = x.user WHERE up.depth < 10
        )
        SELECT DISTINCT '{kind}', up.id, up.claim, c.user FROM up
        JOIN claims c ON c.id = up.claim ORDER BY 2, 3"""


def _fill(first: str, last: str) -> str:
    """The memberships and sizes of the claims with rows ``first``..``last`` (SQL), none of
    them in ``group_claims`` yet: the migration's fill and a bulk write's."""
    claims = f"SELECT id FROM claims WHERE id BETWEEN {first} AND {last}"
    sql = "".join(
        f"INSERT OR IGNORE INTO group_claims (kind, grp, claim, user) {_wanted(*tree, claims)};"
        for tree in _TREES
    )
    return (
        sql
        + f"""
INSERT OR IGNORE INTO group_claims (kind, grp, claim, user)
    SELECT 'domain', d.domain, d.claim, c.user FROM claim_domains d JOIN claims c ON c.id = d.claim
    WHERE d.claim BETWEEN {first} AND {last};
INSERT INTO group_sizes (kind, grp, user, claims, tokens, uncounted)
    SELECT m.kind, m.grp, m.user, sum(c.status IN {LIVE_IN_SQL}),
        sum((c.status IN {LIVE_IN_SQL}) * coalesce(c.line_tokens, 0)),
        sum(c.status IN {LIVE_IN_SQL} AND c.line_tokens IS NULL)
    FROM group_claims m JOIN claims c ON c.id = m.claim
    WHERE m.claim BETWEEN {first} AND {last} GROUP BY m.kind, m.grp, m.user
    ON CONFLICT (kind, grp, user) DO UPDATE SET claims = claims + excluded.claims,
        tokens = tokens + excluded.tokens, uncounted = uncounted + excluded.uncounted;
"""
    )


def _v7() -> str:
    """Migration 7 (self-contained: the aggregates' tables, their first fill, triggers)."""
    live = LIVE_IN_SQL
    wanted = _wanted

    def recompute(kind: str, tree: str, links: str, link: str, claims: str) -> str:
        pairs = wanted(kind, tree, links, link, claims)
        return f"""
            DELETE FROM group_claims WHERE kind = '{kind}' AND claim IN ({claims})
                AND (kind, grp, claim, user) NOT IN ({pairs});
            INSERT OR IGNORE INTO group_claims (kind, grp, claim, user) {pairs};"""

    def below(tree: str, links: str, link: str) -> str:
        # The claims linked to NEW's node or a node at most 10 levels beneath it.
        return f"""
            WITH RECURSIVE down(id, depth) AS (
                SELECT NEW.id, 0 UNION
                SELECT x.id, down.depth + 1 FROM down JOIN {tree} x ON x.parent = down.id
                WHERE down.depth < 10
            )
            SELECT DISTINCT l.claim FROM down JOIN {links} l ON l.{link} = down.id"""

    sql = f"""
ALTER TABLE claims ADD COLUMN line_tokens INTEGER;
CREATE INDEX claims_uncounted ON claims (id) WHERE line_tokens IS NULL;
-- Newest first is by time, then number: with the number in the index, the first claims of a
-- group are read in order (sorting the ties took 200 of a root context's claims 17 ms).
DROP INDEX claims_user_updated;
CREATE INDEX claims_user_updated ON claims (user, updated_at, number);

CREATE TABLE group_claims (
    kind TEXT NOT NULL CHECK (kind IN ('context', 'tag', 'domain')),
    grp NOT NULL,
    claim INTEGER NOT NULL,
    user TEXT NOT NULL,
    PRIMARY KEY (kind, grp, claim)
) WITHOUT ROWID;
CREATE INDEX group_claims_claim ON group_claims (claim);

CREATE TABLE group_sizes (
    kind TEXT NOT NULL,
    grp NOT NULL,
    user TEXT NOT NULL,
    claims INTEGER NOT NULL DEFAULT 0,
    tokens INTEGER NOT NULL DEFAULT 0,
    uncounted INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (kind, grp, user)
) WITHOUT ROWID;

{_fill("0", "9223372036854775807")}
CREATE TRIGGER group_claims_added AFTER INSERT ON group_claims WHEN {_PAUSED} BEGIN
    -- A row even for a claim not live: its status may change, and that only updates rows.
    INSERT INTO group_sizes (kind, grp, user, claims, tokens, uncounted)
    SELECT NEW.kind, NEW.grp, NEW.user, c.status IN {live},
        (c.status IN {live}) * coalesce(c.line_tokens, 0),
        c.status IN {live} AND c.line_tokens IS NULL
    FROM claims c WHERE c.id = NEW.claim
    ON CONFLICT (kind, grp, user) DO UPDATE SET claims = claims + excluded.claims,
        tokens = tokens + excluded.tokens, uncounted = uncounted + excluded.uncounted;
END;
CREATE TRIGGER group_claims_removed AFTER DELETE ON group_claims BEGIN
    UPDATE group_sizes SET claims = claims - 1,
        tokens = tokens - (SELECT coalesce(line_tokens, 0) FROM claims WHERE id = OLD.claim),
        uncounted = uncounted - (SELECT line_tokens IS NULL FROM claims WHERE id = OLD.claim)
    WHERE kind = OLD.kind AND grp = OLD.grp AND user = OLD.user
        AND (SELECT status FROM claims WHERE id = OLD.claim) IN {live};
END;
CREATE TRIGGER claims_share AFTER UPDATE OF status, line_tokens ON claims
WHEN (OLD.status IN {live}) <> (NEW.status IN {live})
    OR (NEW.status IN {live} AND NEW.line_tokens IS NOT OLD.line_tokens) BEGIN
    UPDATE group_sizes SET
        claims = claims + (NEW.status IN {live}) - (OLD.status IN {live}),
        tokens = tokens + (NEW.status IN {live}) * coalesce(NEW.line_tokens, 0)
            - (OLD.status IN {live}) * coalesce(OLD.line_tokens, 0),
        uncounted = uncounted + (NEW.status IN {live} AND NEW.line_tokens IS NULL)
            - (OLD.status IN {live} AND OLD.line_tokens IS NULL)
    WHERE (kind, grp, user) IN (SELECT kind, grp, user FROM group_claims WHERE claim = NEW.id);
END;
CREATE TRIGGER claims_edited AFTER UPDATE OF statement ON claims
WHEN NEW.statement IS NOT OLD.statement AND NEW.line_tokens IS NOT NULL BEGIN
    UPDATE claims SET line_tokens = NULL WHERE id = NEW.id;
END;
CREATE TRIGGER claims_deleted BEFORE DELETE ON claims BEGIN
    DELETE FROM group_claims WHERE claim = OLD.id;
END;

CREATE TRIGGER claim_domains_added AFTER INSERT ON claim_domains WHEN {_PAUSED} BEGIN
    INSERT OR IGNORE INTO group_claims (kind, grp, claim, user)
    SELECT 'domain', NEW.domain, NEW.claim, c.user FROM claims c WHERE c.id = NEW.claim;
END;
CREATE TRIGGER claim_domains_removed AFTER DELETE ON claim_domains BEGIN
    DELETE FROM group_claims WHERE kind = 'domain' AND grp = OLD.domain AND claim = OLD.claim
        AND NOT EXISTS (SELECT 1 FROM claim_domains WHERE claim = OLD.claim
                        AND domain = OLD.domain);
END;
CREATE TRIGGER claim_domains_changed AFTER UPDATE ON claim_domains BEGIN
    DELETE FROM group_claims WHERE kind = 'domain' AND grp = OLD.domain AND claim = OLD.claim
        AND NOT EXISTS (SELECT 1 FROM claim_domains WHERE claim = OLD.claim
                        AND domain = OLD.domain);
    INSERT OR IGNORE INTO group_claims (kind, grp, claim, user)
    SELECT 'domain', NEW.domain, NEW.claim, c.user FROM claims c WHERE c.id = NEW.claim;
END;
"""
    for kind, tree, links, link in _TREES:
        sql += f"""
CREATE TRIGGER {links}_added AFTER INSERT ON {links} WHEN {_PAUSED} BEGIN
    {recompute(kind, tree, links, link, "NEW.claim")}
END;
CREATE TRIGGER {links}_removed AFTER DELETE ON {links} BEGIN
    {recompute(kind, tree, links, link, "OLD.claim")}
END;
CREATE TRIGGER {links}_changed AFTER UPDATE ON {links} BEGIN
    {recompute(kind, tree, links, link, "OLD.claim, NEW.claim")}
END;
CREATE TRIGGER {tree}_moved AFTER UPDATE OF parent ON {tree}
WHEN NEW.parent IS NOT OLD.parent BEGIN
    {recompute(kind, tree, links, link, below(tree, links, link))}
END;
CREATE TRIGGER {tree}_deleted AFTER DELETE ON {tree} BEGIN
    DELETE FROM group_claims WHERE kind = '{kind}' AND grp = OLD.id;
    DELETE FROM group_sizes WHERE kind = '{kind}' AND grp = OLD.id;
END;
"""
    return sql


V7 = _v7()

FILL_GROUP_SIZES = _fill(":first", ":last")
"""What a bulk write runs after inserting claims ``:first``..``:last`` with
``group_sizes_paused`` set in ``store_meta`` (and removed after, in the same transaction)."""


def write_lookups(db: sqlite3.Connection) -> None:
    """Version 8: what a single write looks up, kept on the claim so each is an index probe
    whatever the store's size. ``slot_key`` (``lsp_memory.slots.slot_key``: who the
    statement is about and which of their attributes it fills) replaces a ``LIKE`` scan over
    the type's statements (11–13 ms a write at 100 000 claims); ``claim_type``, the primary
    type (``claim_types`` at position 0, never changed after the insert), lets the live
    claims of a type be read without walking its superseded ones. Both are written with
    every new claim and filled here for the claims already stored (the slot key about
    25 µs a claim). Self-contained: its version number may change at a merge."""
    db.execute("ALTER TABLE claims ADD COLUMN slot_key TEXT")
    db.execute("ALTER TABLE claims ADD COLUMN claim_type TEXT")
    db.execute(
        "UPDATE claims SET claim_type = "
        "(SELECT type FROM claim_types WHERE claim = claims.id AND pos = 0)"
    )
    refresh_slot_keys(db)
    db.execute(
        "CREATE INDEX claims_slot ON claims (user, slot_key, status) WHERE slot_key IS NOT NULL"
    )
    # `claim_type IS NOT NULL` keeps other queries on the user's live claims (the tiers',
    # walking the date index to a LIMIT) from choosing this index.
    db.execute(
        "CREATE INDEX claims_live_type ON claims (user, claim_type) "
        f"WHERE claim_type IS NOT NULL AND status IN {LIVE_IN_SQL}"
    )


def refresh_slot_keys(db: sqlite3.Connection) -> None:
    """Every claim's ``slot_key`` read again from its statement, and the reading's version
    (``lsp_memory.slots.VERSION``) noted in ``store_meta``: at version 8, and whenever a
    store is opened by an lsp-memory that reads statements differently (``connect``)."""
    from lsp_memory.slots import VERSION, slot_key

    rows = db.execute("SELECT id, statement, slot_key FROM claims").fetchall()
    changed = [(key, row) for row, text, old in rows if (key := slot_key(text)) != old]
    db.executemany("UPDATE claims SET slot_key = ? WHERE id = ?", changed)
    db.execute("INSERT OR REPLACE INTO store_meta VALUES ('slot_keys', ?)", (str(VERSION),))


def slot_keys_stale(db: sqlite3.Connection) -> bool:
    """Whether the store's slot keys were read by another version of the slot reading."""
    from lsp_memory.slots import VERSION

    row = db.execute("SELECT value FROM store_meta WHERE key = 'slot_keys'").fetchone()
    return row is None or row[0] != str(VERSION)


# Version 9: when each claim's decay was last applied. A run decays a claim over the days since
# the later of its creation, its last evidence and `decayed_at`, and moves `decayed_at` only
# when the claim's (rounded) confidence changes, so runs every few minutes decay as one run
# would. Before, the days counted from the last run's `now`: each claim is given that moment
# (its user's latest consolidation not undone; NULL without one), so its next run decays it
# exactly as it would have. Self-contained: its version number may change at a merge.
V9 = """
ALTER TABLE claims ADD COLUMN decayed_at TEXT;
UPDATE claims SET decayed_at = (
    SELECT r.now FROM runs r WHERE r.user = claims.user AND r.kind = 'consolidate'
    AND r.undone_at IS NULL ORDER BY r.number DESC LIMIT 1);
"""


# Version 10: what a single write changed on a claim (a retract, restore, pin or unpin, a
# supersede, a context added or removed), each field with its value before and after (JSON)
# and the moment, so `claim history` and `--as-of` see changes made outside a consolidation
# run; and `run_changes` by claim, so one claim's run changes are an index probe (a run that
# decays 90 000 claims writes 180 000 rows). Self-contained: its version number may change at
# a merge.
V10 = """
CREATE TABLE claim_writes (
    id INTEGER PRIMARY KEY,
    claim INTEGER NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
    at TEXT NOT NULL,
    what TEXT NOT NULL,
    field TEXT NOT NULL,
    before TEXT NOT NULL,
    after TEXT NOT NULL
);
CREATE INDEX claim_writes_claim ON claim_writes (claim, at);
CREATE INDEX run_changes_claim ON run_changes (claim);
"""


def entity_names(fields: object) -> set[str]:
    """Every friendly id an entity's fields could name another entity by: a text value as
    written and each of its comma-separated parts stripped, a list's items stripped, those
    that are ids at all (``FRIENDLY_ID``, which every stored friendly id matches: no email,
    date or sentence is kept). A superset of what an ``entity_ref`` or ``entity_ref_list``
    field names, whatever the entity's type declares (the reader checks that), so a change
    of the type needs no re-index."""
    names: set[str] = set()
    if not isinstance(fields, dict):
        return names
    for value in fields.values():
        if isinstance(value, str):
            names.add(value)
            names.update(part.strip() for part in value.split(","))
        elif isinstance(value, list):
            names.update(str(item).strip() for item in value)
    return {name for name in names if FRIENDLY_ID.fullmatch(name)}


def index_entity_names(db: sqlite3.Connection, rows: Iterable[tuple[int, str, str]]) -> None:
    """Keep ``entity_refs`` for the entities ``(row, user, fields JSON)`` just inserted or
    whose fields were just written: every write of an entity's fields calls it, in the
    write's transaction."""
    for row, user, text in rows:
        db.execute("DELETE FROM entity_refs WHERE entity = ?", (row,))
        db.executemany(
            "INSERT INTO entity_refs (user, name, entity) VALUES (?, ?, ?)",
            [(user, name, row) for name in sorted(entity_names(json.loads(text)))],
        )


def entity_references(db: sqlite3.Connection) -> None:
    """Version 11: which entities' fields name each friendly id (``entity_names``), so an
    entity's page finds the entities referring to it by an index probe instead of searching
    every entity's fields (``instr`` over 5 000 entities: ~3 ms of a 4–8 ms page), and a
    rename rewrites only the fields that name the old id. Kept by the store's writes of
    entity fields (an import, ``set_entity_fields``, a rename), filled here.
    Self-contained: its version number may change at a merge."""
    db.execute(
        "CREATE TABLE entity_refs (user TEXT NOT NULL, name TEXT NOT NULL, "
        "entity INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE, "
        "PRIMARY KEY (user, name, entity)) WITHOUT ROWID"
    )
    db.execute("CREATE INDEX entity_refs_entity ON entity_refs (entity)")
    index_entity_names(db, db.execute("SELECT id, user, fields FROM entities").fetchall())


# Version 12: the date index holds each claim's status, so the newest live claims of a large
# group are found by walking the index alone, probing each row's membership, without reading
# the claim's row (a context of 7 000 claims: its 200 newest 6 → 1.5 ms). Self-contained: its
# version number may change at a merge.
V12 = """
DROP INDEX claims_user_updated;
CREATE INDEX claims_user_updated ON claims (user, updated_at, number, status);
"""


Migration = str | Callable[[sqlite3.Connection], None]
"""A migration: an SQL script, or a function given the connection inside the migration's
transaction (for a column filled by Python)."""

MIGRATIONS: tuple[Migration, ...] = (
    V1, V2, V3, V4, V5, V6, V7, write_lookups, V9, V10, entity_references, V12,
)  # fmt: skip
"""Each entry moves the schema one version forward; the store's version is their count."""

SCHEMA_VERSION = len(MIGRATIONS)
