"""Which entities' fields name each friendly id, kept at write time (``entity_refs``, schema
version 11): after every write of entity fields — an import, ``set_entity_fields``, a rename
— the table equals a recount from every entity's fields; a store migrated from version 10 gets
it filled; and an entity page's "Referenced by" is what searching every entity's fields
finds."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from lsp_memory.model import Entity
from lsp_memory.services.editor.describe import Describer
from lsp_memory.services.memory.interchange import import_records
from lsp_memory.store.schema import MIGRATIONS, entity_names, entity_references
from lsp_memory.store.sqlite import STORE_FILE, Store, open_store
from tests.conftest import KB, USER


def kept(store: Store) -> set[tuple[str, str, int]]:
    return set(store._db.execute("SELECT user, name, entity FROM entity_refs").fetchall())


def recount(store: Store) -> set[tuple[str, str, int]]:
    """What ``entity_refs`` must hold, from every entity's fields as stored now."""
    rows = store._db.execute("SELECT id, user, fields FROM entities").fetchall()
    return {
        (user, name, row) for row, user, text in rows for name in entity_names(json.loads(text))
    }


def test_names_a_field_may_give() -> None:
    fields = {
        "team": "eng_team",
        "members": " alice_ent, bob_ent ,carol_ent",
        "reports": [" dave_ent", 7, "", "x_7"],
        "email": "eve@example.com",
        "role": "Engineering Manager",
        "level": "manager",
        "meta": {"nested": "xyz"},
        "count": 3,
    }
    assert entity_names(fields) == {
        "eng_team",
        "alice_ent",
        "bob_ent",
        "carol_ent",
        "dave_ent",
        "x_7",
        "manager",  # a word can be an id: the reader decides by the field's type
    }
    assert entity_names(["not", "a", "mapping"]) == set()


def test_kept_through_every_write_of_entity_fields(kb: Store) -> None:
    assert kept(kb) == recount(kb)
    assert ("ann", "alice_ent", 3) in kept(kb)  # eng_team's lead
    kb.set_entity_fields(USER, {"bob_ent": {"team": "ops_team", "reports": "carol_ent,eve"}})
    assert kept(kb) == recount(kb)
    kb.rename(USER, "entity", "alice_ent", "alice_smith")
    assert kept(kb) == recount(kb)
    assert not [r for r in kept(kb) if r[0] == USER and r[1] == "alice_ent"]
    kb.rename(USER, "entity", "carol_ent", "carol_old")
    assert kept(kb) == recount(kb)


def test_filled_by_the_migration(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    with open_store(folder) as new:
        import_records(new, KB.read_bytes(), user=USER, source=str(KB))
    # The same store as version 10 had it: without the table.
    db = sqlite3.connect(folder / STORE_FILE)
    db.execute("DROP TABLE entity_refs")
    db.execute(f"PRAGMA user_version = {MIGRATIONS.index(entity_references)}")
    db.commit()
    db.close()
    with open_store(folder) as upgraded:
        assert upgraded.schema_version == len(MIGRATIONS)
        assert kept(upgraded) == recount(upgraded)
        assert len(kept(upgraded)) > 5


def referrers(describer: Describer, friendly_id: str) -> list[str]:
    """The page's "Referenced by" lines, each as the referring id and its fields."""
    entity = describer.store.entity_by_friendly_id(USER, friendly_id)
    assert entity is not None
    return [f"{e.friendly_id} {names}" for e, names in describer._referrers(entity)]


def test_referenced_by_as_a_search_of_every_entity_finds(
    kb: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(3)
    ids = [f"ent_{i}" for i in range(40)]
    types = {"kind": "entity_type", "name": "Unit"}
    fields = [
        {"name": "head", "type": "entity_ref"},
        {"name": "crew", "type": "entity_ref_list"},
        {"name": "note", "type": "text"},
    ]
    lines = [json.dumps({**types, "fields": fields})]
    for friendly_id in ids:
        crew: object = rng.sample(ids, 3)
        if rng.random() < 0.5:
            crew = " , ".join(rng.sample(ids, 3))
        values = {"head": rng.choice(ids), "crew": crew, "note": rng.choice(ids)}
        lines.append(
            json.dumps(
                {
                    "kind": "entity",
                    "friendly_id": friendly_id,
                    "name": friendly_id.title(),
                    "type": "Unit",
                    "fields": values,
                }
            )
        )
    import_records(kb, "\n".join(lines).encode(), user=USER, source="units.jsonl")
    kb.set_entity_fields(USER, {"ent_3": {"head": "ent_1", "crew": "ent_1,ent_2"}})
    describer = Describer(kb, USER)
    every = [*ids, "alice_ent", "bob_ent", "eng_team"]
    indexed = {friendly_id: referrers(describer, friendly_id) for friendly_id in every}
    assert indexed["eng_team"] == ["alice_ent ['team']", "bob_ent ['team']", "carol_ent ['team']"]
    # The same pages when every entity's fields are searched for the id's text.
    everyone = kb.entities(USER)

    def searched(_user: str, named: str) -> list[Entity]:
        return [e for e in everyone if named in json.dumps(e.fields, ensure_ascii=False)]

    monkeypatch.setattr(kb, "entities_naming", searched)
    assert {friendly_id: referrers(describer, friendly_id) for friendly_id in every} == indexed
