"""Supersede on write: each claim type's rule, the ``supersede`` setting, ``import`` never
superseding, restoring a superseded claim, and the lineage naming the new claim."""

from __future__ import annotations

from collections.abc import Callable, Iterator
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
from lsp_memory.services.memory.supersede import EMBED_AT_MOST
from lsp_memory.slots import USER as USER_
from lsp_memory.slots import Fact, Person, fact
from lsp_memory.store.sqlite import Store
from lsp_memory.store.vectors import content_hash

USER = "ann"


def status(store: Store, claim_id: str) -> ClaimStatus:
    found = store.claim_by_uuid(USER, claim_id)
    assert found is not None
    return found.status


# -- the rules on the text --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "found"),
    [
        ("I live in Lyon", (USER_, "residence", "lyon")),
        ("I moved to Berlin.", (USER_, "residence", "berlin")),
        ("I'm based in Oslo", (USER_, "residence", "oslo")),
        ("I work at Acme", (USER_, "employer", "acme")),
        ("I joined Globex", (USER_, "employer", "globex")),
        ("My favorite tea is Sencha", (USER_, "favourite tea", "sencha")),
        ("My budget is now £2,000", (USER_, "budget", "£2,000")),
        ("My budget for the holiday is £1,500", (USER_, "budget for holiday", "£1,500")),
        ("User lives in Leeds", (USER_, "residence", "leeds")),
        ("I am a senior backend developer", (USER_, "occupation", "senior backend developer")),
        ("Anna lives in Rome", (Person(None, "anna"), "residence", "rome")),
        ("My sister moved to Paris", (Person("sister", None), "residence", "paris")),
        ("My sister Ana is a doctor", (Person("sister", "ana"), "occupation", "doctor")),
        ("My little sister Eva is 12 years old", (Person("sister", "eva"), "age", "12")),
        ("My wife, Helen, is a vet", (Person("wife", "helen"), "occupation", "vet")),
        ("My uncle-in-law Pete is 70", (Person("uncle-in-law", "pete"), "age", "70")),
        ("Tom got married to Sue", (Person(None, "tom"), "partner", "married")),
        ("Ana's birthday is 3 May", (Person(None, "ana"), "birthday", "3 may")),
        ("My dad's job is plumber", (Person("dad", None), "occupation", "plumber")),
        ("My wife is pregnant", (Person("wife", None), "health", "pregnant")),
        ("I prefer tea", None),
        ("She lives in Rome", None),
        ("Anna is my sister", None),
        ("Ana is a vegetarian", None),
        ("My team is remote", None),
        ("My sister Ana lives in Porto and works at a hospital", None),  # two facts
    ],
)
def test_subject_slot_and_value_of_common_forms(
    statement: str, found: tuple[Person, str, str] | None
) -> None:
    assert fact(statement) == (Fact(*found) if found else None)


def test_the_same_person_by_name_or_by_relation() -> None:
    ana = Person("sister", "ana")
    assert ana.same(Person(None, "ana"))
    assert not ana.same(Person("brother", "ana"))
    assert not ana.same(Person("sister", None))  # the user may have two sisters
    assert Person("wife", None).same(Person("wife", None))
    assert not USER_.same(Person(None, "ana"))


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


def about_people(store: Store) -> tuple[Records, Callable[[str], str]]:
    """Single writes, and a function adding a relationship claim and giving its id."""
    records = Records(store, USER)
    return records, lambda text: records.add_claim(text, claim_type="relationship").claim_id


def test_one_person_s_facts_in_other_slots_accumulate(store: Store) -> None:
    records, add = about_people(store)
    porto, doctor = add("My sister Ana lives in Porto"), add("My sister Ana is a doctor")
    assert records.last_superseded == []
    add("Ana is 34")
    add("Ana loves jazz")  # no slot: no supersede
    assert records.last_superseded == []
    assert status(store, porto) is status(store, doctor) is ClaimStatus.ACTIVE


def test_the_same_slot_of_the_same_person_supersedes(store: Store) -> None:
    records, add = about_people(store)
    porto, doctor = add("My sister Ana lives in Porto"), add("My sister Ana is a doctor")
    lisbon = add("My sister Ana moved to Lisbon")
    assert [c.claim_id for c in records.last_superseded] == [porto]
    add("Ana is a nurse now")  # named, without the relation: the same Ana
    assert [c.claim_id for c in records.last_superseded] == [doctor]
    assert status(store, lisbon) is ClaimStatus.ACTIVE


def test_another_person_s_same_slot_stays(store: Store) -> None:
    records, add = about_people(store)
    tom, mine = add("My brother Tom lives in Porto"), add("I live in Porto")
    unnamed = add("My sister lives in Leeds")
    add("My sister Ana moved to Lisbon")
    assert records.last_superseded == []
    add("My brother Tom moved to Faro")
    assert [c.claim_id for c in records.last_superseded] == [tom]
    assert status(store, mine) is status(store, unnamed) is ClaimStatus.ACTIVE


def test_a_shared_entity_is_the_same_person_for_the_same_slot(store: Store) -> None:
    add_record(store, {"kind": "entity_type", "name": "Person", "fields": []}, user=USER)
    for name in ("Sam", "Ana"):
        entity = {"kind": "entity", "type": "Person", "name": name, "friendly_id": name.lower()}
        add_record(store, entity, user=USER)
    records = Records(store, USER)
    met = records.add_claim("We met in 2019", claim_type="relationship", entities=["sam"])
    doctor = records.add_claim("Ana is a doctor", claim_type="relationship", entities=["ana"])
    records.add_claim("Sam and I live together", claim_type="relationship", entities=["sam"])
    assert records.last_superseded == []  # no slot: everything about Sam accumulates
    records.add_claim("She is a nurse now", claim_type="relationship", entities=["ana"])
    assert [c.claim_id for c in records.last_superseded] == [doctor.claim_id]
    assert status(store, met.claim_id) is ClaimStatus.ACTIVE


def test_a_new_value_of_the_user_s_budget_supersedes_the_old_one(store: Store) -> None:
    records = Records(store, USER)  # no vector side: the slot alone decides
    old = records.add_claim("My budget is £1,500", claim_type="constraint")
    records.add_claim("My rent is £900", claim_type="constraint")
    records.add_claim("My budget is now £2,000", claim_type="constraint")
    assert [c.claim_id for c in records.last_superseded] == [old.claim_id]


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


def test_a_rewording_written_right_after_is_superseded_before_any_index(app: App) -> None:
    records = app.records()
    first = records.add_claim("I prefer concise responses", claim_type="preference")
    records.add_claim("I like cats more than dogs", claim_type="preference")
    records.add_claim("I prefer concise answers", claim_type="preference")
    assert [c.claim_id for c in records.last_superseded] == [first.claim_id]


def test_a_write_embeds_a_bounded_number_of_candidates_and_keeps_them(app: App) -> None:
    unembedded = Records(app.store, USER, vectors=lambda: None)
    for n in range(EMBED_AT_MOST + 4):
        unembedded.add_claim(f"I collect stamps from country {n}", claim_type="goal")
    side = app.vectors
    assert side is not None

    def cached() -> int:
        keys = [content_hash(claim.statement) for claim in app.store.claims(USER)]
        return len(side.cache.get_many(side.embedder.model_id, keys))

    assert cached() == 0
    app.records().add_claim("I want to run a marathon", claim_type="goal")
    assert cached() == EMBED_AT_MOST + 1  # the newest ones and the new statement, kept
    app.records().add_claim("I want to learn the cello", claim_type="goal")
    assert cached() == EMBED_AT_MOST + 4 + 2  # the four left out last time, from the cache


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
