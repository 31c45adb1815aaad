"""Resolution (docs/reference.md, Resolution) against the fixture knowledge base: the seven steps
in order, status
filtering, the name fallback, entities, tags, domains, and user scoping."""

from __future__ import annotations

import pytest

from lsp_memory import refs
from lsp_memory.errors import UnresolvedReference
from lsp_memory.model import ClaimStatus
from lsp_memory.services.kernel.resolver import Resolver, parse_argument
from lsp_memory.services.memory.interchange import add_record
from lsp_memory.store.sqlite import Store
from tests.conftest import USER


def numbers(store: Store, ref: str, user: str = USER) -> tuple[str | None, list[int]]:
    found = Resolver(store, user).resolve(parse_argument(ref))
    assert found.error is None, found.error
    return found.kind, [c.number for c in found.claims]


@pytest.mark.parametrize(
    ("ref", "kind", "expected"),
    [
        ("@leaf_ctx", "context", [2, 7, 1]),
        ("@leaf_context", "context", [2, 7, 1]),
        ("@mid_ctx", "context", [2, 8, 7, 1]),
        ("@mid_context", "context", [2, 8, 7, 1]),
        ("@root_ctx", "context", [10, 2, 8, 7, 1, 9]),
        ("@root_context", "context", [10, 2, 8, 7, 1, 9]),
        ("@other_ctx", "context", [10, 7]),
        ("@hgoals", "context", [12, 11, 14]),
        ("@my_health_goals", "context", [12, 11, 14]),
        ("@empty_ctx", "context", []),
        ("@health_tag", "tag", [12, 11, 14]),
        ("@sleep_tag", "tag", [12]),
        ("@work_domain", "domain", [2, 8, 7, 1, 42, 16, 15]),
        ("@health_domain", "domain", [12, 11, 14, 16]),
        ("@personal_domain", "domain", [10, 9]),
        ("@alice_ent", "entity", [8, 15]),
        ("@bob_ent", "entity", [16]),
        ("@eng_team", "entity", [8]),
        ("@carol_ent", "entity", []),
    ],
)
def test_group_references(kb: Store, ref: str, kind: str, expected: list[int]) -> None:
    assert numbers(kb, ref) == (kind, expected)


@pytest.mark.parametrize("ref", ["#4", "@claim_4", "@leaf_superseded_a004", "4"])
def test_a_direct_claim_reference_resolves_whatever_its_status(kb: Store, ref: str) -> None:
    found = Resolver(kb, USER).resolve(parse_argument(ref))
    assert found.kind == "claim" and found.id == "leaf_superseded_a004"
    assert found.claims[0].status is ClaimStatus.SUPERSEDED


def test_memory_uuid_resolves_by_uuid_only(kb: Store) -> None:
    claim = kb.claim_by_number(USER, 7)
    assert claim is not None
    for form in (f"@memory:{claim.claim_id}", f"@mem:{claim.claim_id}"):
        assert numbers(kb, form) == ("claim", [7])
    missing = Resolver(kb, USER).resolve(parse_argument("@memory:0000-dead"))
    assert missing.error == "No memory found with ID: 0000-dead"


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("#99", "No memory or context found with ID: claim_99"),
        ("@claim_99", "No memory or context found with ID: claim_99"),
        ("#43", "No memory or context found with ID: claim_43"),
        ("@mallory_only_f099", "No memory or context found with ID: mallory_only_f099"),
        ("@no_such_thing", "No memory or context found with ID: no_such_thing"),
        ("@nowhere_domain", "No memory or context found with ID: nowhere_domain"),
    ],
)
def test_unresolved_references_say_so(kb: Store, ref: str, message: str) -> None:
    found = Resolver(kb, USER).resolve(parse_argument(ref))
    assert not found.resolved and found.kind is None and found.claims == ()
    assert found.error == message


def test_claim_friendly_id_beats_context_name(kb: Store) -> None:
    # Step 2 (a claim's friendly id) comes before step 4 (a context's name).
    add_record(kb, {"kind": "context", "name": "Root Claim A009"}, user=USER)
    assert numbers(kb, "@root_claim_a009") == ("claim", [9])


def test_claim_n_falls_through_to_a_friendly_id_when_no_claim_has_that_number(
    kb: Store,
) -> None:
    """``@claim_77`` named nothing although an imported context is called claim_77; ``#77``
    still names only a number, and a claim with the number comes first."""
    add_record(kb, {"kind": "context", "name": "Claim 77", "friendly_id": "claim_77"}, user=USER)
    add_record(kb, {"kind": "context", "name": "Claim 9", "friendly_id": "claim_9"}, user=USER)
    resolver = Resolver(kb, USER)
    found = resolver.resolve(parse_argument("@claim_77"))
    assert (found.kind, found.id, found.error) == ("context", "claim_77", None)
    hashed = resolver.resolve(parse_argument("#77"))
    assert hashed.error == "No memory or context found with ID: claim_77"
    assert numbers(kb, "@claim_9") == ("claim", [9])


def test_context_friendly_id_beats_entity_and_tag(kb: Store) -> None:
    add_record(kb, {"kind": "tag", "name": "Clash", "friendly_id": "clash"}, user=USER)
    add_record(kb, {"kind": "context", "name": "Clash", "friendly_id": "clash"}, user=USER)
    assert numbers(kb, "@clash")[0] == "context"


def test_other_users_records_never_leak(kb: Store) -> None:
    assert numbers(kb, "@leaf_ctx", user="mallory") == ("context", [99, 42, 1])
    mine = [
        c.user
        for ref in ("@leaf_ctx", "@health_tag", "@work_domain", "@alice_ent", "#42")
        for c in Resolver(kb, USER).resolve(parse_argument(ref)).claims
    ]
    assert set(mine) == {USER}
    assert 99 not in numbers(kb, "@work_domain")[1]
    stranger = Resolver(kb, "nobody")
    for ref in ("@leaf_ctx", "#1", "@work_domain", "@alice_ent", "@health_tag"):
        assert stranger.resolve(parse_argument(ref)).error is not None


def test_resolving_a_document_keeps_document_order(kb: Store) -> None:
    text = "Start with #42, then @leaf_ctx and [[Project Plan]] and @nope."
    tokens = refs.parse(text, markdown=True).references
    found = Resolver(kb, USER).resolve_all(tokens)
    assert [(r.ref, r.kind, r.resolved) for r in found] == [
        ("#42", "claim", True),
        ("@leaf_ctx", "context", True),
        ("[[Project Plan]]", "note", False),
        ("@nope", None, False),
    ]
    assert found[0].reference is tokens[0]


@pytest.mark.parametrize("bad", ["", "two words", "@ab", "user@example.com", "#12a"])
def test_arguments_that_are_not_references(bad: str) -> None:
    with pytest.raises(UnresolvedReference, match="not a reference"):
        parse_argument(bad)


def test_note_links_resolve_against_the_vaults(kb: Store) -> None:
    from pathlib import Path

    from lsp_memory.notes import Vault

    vault = Vault(Path(__file__).parents[1] / "data" / "notes")
    vault.scan()
    resolver = Resolver(kb, USER, [vault])
    text = "See [[Project Plan#Milestones]], [[Nested Note]] and [[Nowhere]]."
    found = resolver.resolve_all(refs.parse(text, markdown=True).references)
    assert [(r.kind, r.id, r.error) for r in found] == [
        ("note", "project-plan.md", None),
        ("note", "sub/deep-note.md", None),
        ("note", None, "Note not found: Nowhere"),
    ]
    plan = found[0].note
    assert plan is not None and plan.heading is not None and plan.heading.text == "Milestones"
    no_vault = Resolver(kb, USER).resolve(refs.parse("[[Project Plan]]").references[0])
    assert no_vault.error is not None and "no vault" in no_vault.error


@pytest.mark.parametrize("ref", ["#99999999999999999999999", "@claim_99999999999999999999999"])
def test_a_number_too_large_for_the_store_is_unresolved(kb: Store, ref: str) -> None:
    found = Resolver(kb, USER).resolve(parse_argument(ref))
    assert found.error == "No memory or context found with ID: claim_99999999999999999999999"


@pytest.mark.parametrize(
    "ref", ["@mid_ctx", "@my_health_goals", "@health_tag", "@work_domain", "@alice_ent", "#7"]
)
def test_without_members_a_group_resolves_the_same_without_its_claims(kb: Store, ref: str) -> None:
    """What diagnostics ask (does it resolve, to what): the same answer, no claims loaded
    for a group; a claim still comes with itself."""
    resolver = Resolver(kb, USER)
    full = resolver.resolve(parse_argument(ref))
    bare = resolver.resolve(parse_argument(ref), members=False)
    assert (bare.kind, bare.id, bare.error, bare.context, bare.entity, bare.tag) == (
        full.kind,
        full.id,
        full.error,
        full.context,
        full.entity,
        full.tag,
    )
    assert full.claims
    assert bare.claims == (full.claims if full.kind == "claim" else ())


@pytest.mark.parametrize("ref", ["#" + "7" * 5000, "@claim_" + "7" * 5000, "#" + "9" * 20])
def test_a_number_too_long_for_any_claim_is_unresolved_not_a_crash(kb: Store, ref: str) -> None:
    """Python refuses to read an int of more than 4,300 digits: ``#`` + 5,000 digits made
    every request on its document fail. It names no claim, in a message of one short line;
    the document's other references still resolve."""
    resolver = Resolver(kb, USER)
    parsed = refs.parse_document(f"{ref} and #1\n").references
    found = [resolver.resolve(reference) for reference in parsed]
    assert found[0].kind is None and found[0].error is not None
    assert len(found[0].error) < 120 and found[0].error.startswith("No memory or context found")
    assert found[1].kind == "claim"
    assert kb.claims_by_number_prefix(USER, ref.removeprefix("#")) == []
