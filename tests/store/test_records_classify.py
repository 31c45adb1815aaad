"""Single-record writes classify a claim written without a type; ``import`` never does."""

from __future__ import annotations

from lsp_memory.services.memory.classify import Classifier, Model
from lsp_memory.services.memory.interchange import add_record
from lsp_memory.services.memory.records import Records
from lsp_memory.store.sqlite import Store


def test_a_claim_without_a_type_gets_the_classified_one(store: Store) -> None:
    records = Records(store, "ann")
    claim = records.add_claim("My partner Sam works in Glasgow")
    assert claim.claim_type == "relationship"
    assert store.claims("ann", statuses=None, limit=None)[0].claim_type == "relationship"


def test_a_given_type_is_kept_without_asking_the_classifier(store: Store) -> None:
    never = Model(("goal",), [0.0], {})  # would fail if asked: one category, no runner-up
    claim = Records(store, "ann", Classifier(model=never)).add_claim(
        "I hate flying", claim_type="fact"
    )
    assert claim.claim_type == "fact"


def test_import_keeps_its_default_type(store: Store) -> None:
    claim = add_record(store, {"kind": "claim", "statement": "I hate flying"}, user="ann")
    assert claim.claims[0].claim_type == "fact"
