"""Supersede on write: each claim type's rule, the ``supersede`` setting, ``import`` never
superseding, restoring a superseded claim, and the lineage naming the new claim."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from lsp_memory.app import App
from lsp_memory.config import Config, apply_settings
from lsp_memory.errors import UserError
from lsp_memory.model import ClaimStatus
from lsp_memory.services.kernel.lineage import successor
from lsp_memory.services.memory.interchange import add_record, import_records
from lsp_memory.services.memory.records import Records
from lsp_memory.services.memory.supersede import person, subject_predicate
from lsp_memory.store.sqlite import Store

USER = "ann"


def status(store: Store, claim_id: str) -> ClaimStatus:
    found = store.claim_by_uuid(USER, claim_id)
    assert found is not None
    return found.status


# -- the rules on the text --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "fact"),
    [
        ("I live in Lyon", ("user", "residence", "lyon")),
        ("I moved to Berlin.", ("user", "residence", "berlin")),
        ("I'm based in Oslo", ("user", "residence", "oslo")),
        ("I work at Acme", ("user", "employer", "acme")),
        ("I joined Globex", ("user", "employer", "globex")),
        ("My favorite tea is Sencha", ("user", "favourite tea", "sencha")),
        ("Anna lives in Rome", ("anna", "residence", "rome")),
        ("My sister moved to Paris", ("my sister", "residence", "paris")),
        ("I prefer tea", None),
        ("She lives in Rome", None),
    ],
)
def test_subject_and_predicate_of_common_forms(
    statement: str, fact: tuple[str, str, str] | None
) -> None:
    assert subject_predicate(statement) == fact


def test_the_person_a_statement_starts_with() -> None:
    assert person("Anna is my sister") == "anna"
    assert person("My wife loves jazz") == "my wife"
    assert person("The team is friendly") is None


def test_another_value_for_the_same_subject_and_predicate(store: Store) -> None:
    records = Records(store, USER)
    lyon = records.add_claim("I live in Lyon", claim_type="identity")
    acme = records.add_claim("I work at Acme", claim_type="identity")
    berlin = records.add_claim("I moved to Berlin", claim_type="identity")
    assert [c.claim_id for c in records.last_superseded] == [lyon.claim_id]
    old = store.claim_by_uuid(USER, lyon.claim_id)
    assert old is not None
    assert old.status is ClaimStatus.SUPERSEDED
    assert old.superseded_by == berlin.claim_id
    assert old.valid_to is not None
    assert status(store, acme.claim_id) is ClaimStatus.ACTIVE
    successor_of_old = successor(store, USER, old)
    assert successor_of_old is not None
    assert successor_of_old.claim_id == berlin.claim_id


def test_relationship_by_shared_entity_or_named_person(store: Store) -> None:
    add_record(store, {"kind": "entity_type", "name": "Person", "fields": []}, user=USER)
    add_record(
        store, {"kind": "entity", "type": "Person", "name": "Sam", "friendly_id": "sam"}, user=USER
    )
    records = Records(store, USER)
    partner = records.add_claim("We met in 2019", claim_type="relationship", entities=["sam"])
    anna = records.add_claim("Anna is my sister", claim_type="relationship")
    records.add_claim("Sam and I live together", claim_type="relationship", entities=["sam"])
    assert [c.claim_id for c in records.last_superseded] == [partner.claim_id]
    records.add_claim("Anna lives in Rome now", claim_type="relationship")
    assert [c.claim_id for c in records.last_superseded] == [anna.claim_id]


def test_emotional_all_and_technical_none(store: Store) -> None:
    records = Records(store, USER)
    first = records.add_claim("I hate flying", claim_type="emotional")
    second = records.add_claim("I'm anxious about the move", claim_type="emotional")
    assert [c.claim_id for c in records.last_superseded] == [first.claim_id]
    records.add_claim("I feel calm today", claim_type="emotional", supersede=False)
    records.add_claim("I'm happy with the new job", claim_type="emotional")
    assert len(records.last_superseded) == 2  # every live one: the newest feeling wins
    assert second.claim_id in {c.claim_id for c in records.last_superseded}
    grpc = records.add_claim("The API uses gRPC", claim_type="technical")
    records.add_claim("The API uses gRPC", claim_type="technical")
    assert records.last_superseded == []
    assert status(store, grpc.claim_id) is ClaimStatus.ACTIVE


def test_no_supersede_and_import_leave_older_claims_alone(store: Store) -> None:
    records = Records(store, USER)
    lyon = records.add_claim("I live in Lyon", claim_type="identity")
    records.add_claim("I moved to Berlin", claim_type="identity", supersede=False)
    assert records.last_superseded == []
    line = '{"kind": "claim", "statement": "I moved to Oslo", "claim_type": "identity"}\n'
    import_records(store, line.encode(), user=USER, source="test")
    assert status(store, lyon.claim_id) is ClaimStatus.ACTIVE


def test_the_setting_overrides_a_type_s_rule(store: Store, tmp_path: Path) -> None:
    config, warnings = apply_settings(
        Config(), {"supersede": {"identity": "none"}}, base=tmp_path, origin="test"
    )
    assert warnings == []
    records = Records(store, USER, supersede=config.supersede)
    lyon = records.add_claim("I live in Lyon", claim_type="identity")
    records.add_claim("I moved to Berlin", claim_type="identity")
    assert status(store, lyon.claim_id) is ClaimStatus.ACTIVE
    technical = Records(store, USER, supersede={"technical": "all"})
    grpc = technical.add_claim("The API uses gRPC", claim_type="technical")
    technical.add_claim("The API uses REST", claim_type="technical")
    assert status(store, grpc.claim_id) is ClaimStatus.SUPERSEDED


def test_a_bad_setting_warns_and_keeps_the_default(tmp_path: Path) -> None:
    config, warnings = apply_settings(
        Config(), {"supersede": {"preference": "newest"}}, base=tmp_path, origin="test"
    )
    assert config.supersede == {}
    assert len(warnings) == 1
    assert "supersede" in warnings[0]
    assert "newest" in warnings[0]


def test_restore_makes_a_superseded_claim_active_and_clears_its_pointer(store: Store) -> None:
    records = Records(store, USER)
    lyon = records.add_claim("I live in Lyon", claim_type="identity")
    records.add_claim("I moved to Berlin", claim_type="identity")
    old = store.claim_by_uuid(USER, lyon.claim_id)
    assert old is not None
    assert records.restore(old)
    back = store.claim_by_uuid(USER, lyon.claim_id)
    assert back is not None
    assert back.status is ClaimStatus.ACTIVE
    assert back.superseded_by is None
    assert back.valid_to is None
    assert not records.restore(back)


# -- the cosine rule, with the real model -----------------------------------------------------


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    config = replace(Config(), store=tmp_path / "store", cache=tmp_path / "cache", user=USER)
    opened = App(config)
    yield opened
    opened.close()


def test_a_preference_paraphrase_is_superseded_once_embedded(app: App) -> None:
    records = app.records()
    tea = records.add_claim("I prefer green tea in the morning", claim_type="preference")
    cats = records.add_claim("I like cats more than dogs", claim_type="preference")
    app.keeper.index()  # embeds both
    records.add_claim("In the morning I prefer to drink green tea", claim_type="preference")
    assert [c.claim_id for c in records.last_superseded] == [tea.claim_id]
    assert status(app.store, cats.claim_id) is ClaimStatus.ACTIVE


def test_without_the_vector_side_only_the_text_rules_apply(store: Store) -> None:
    records = Records(store, USER, vectors=lambda: None)
    records.add_claim("I prefer green tea in the morning", claim_type="preference")
    records.add_claim("In the morning I prefer to drink green tea", claim_type="preference")
    assert records.last_superseded == []


def test_a_contested_claim_is_not_restored(store: Store) -> None:
    records = Records(store, USER)
    claim = records.add_claim("I live in Lyon", claim_type="identity")
    store.set_status(USER, claim.claim_id, ClaimStatus.CONTESTED, "2026-01-01T00:00:00Z")
    contested = store.claim_by_uuid(USER, claim.claim_id)
    assert contested is not None
    with pytest.raises(UserError, match="contested"):
        records.restore(contested)
    assert status(store, claim.claim_id) is ClaimStatus.CONTESTED
