"""``@`` completion's contexts, tags and domains: found by bisection in keys read once per
store change, against the rule they implement (a context by friendly id or name key, a tag by
friendly id or name, ``<domain>_domain``), and read again after any write — through this
connection or another process's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lsp_memory.ids import name_key
from lsp_memory.services.editor.completion import LIMIT, Completer, typed_at
from lsp_memory.services.memory.interchange import import_records
from lsp_memory.services.memory.records import Records
from lsp_memory.store.sqlite import Store, open_store
from tests.conftest import USER


def groups_by_rule(store: Store, user: str, low: str) -> set[str]:
    """The labels the rule gives, computed the plain way over everything."""
    labels = {
        f"@{friendly_id}"
        for _, friendly_id, name in store.context_names(user)
        if friendly_id.lower().startswith(low) or name_key(name).startswith(low)
    }
    labels |= {
        f"@{tag.friendly_id}"
        for tag in store.tags(user)
        if tag.friendly_id.lower().startswith(low) or tag.name.lower().startswith(low)
    }
    labels |= {f"@{d}_domain" for d in store.domains(user) if f"{d}_domain".startswith(low)}
    return labels


def groups_completed(store: Store, user: str, typed: str) -> set[str]:
    completer = Completer(store, None, (), user)
    found = completer._memories(typed)
    return {c.label for c in found if c.kind in {"context", "tag", "domain"}}


@pytest.fixture
def grouped(kb: Store) -> Store:
    lines: list[dict[str, object]] = [
        {"kind": "context", "name": f"Area {n} of {word}", "friendly_id": f"{word}_{n}"}
        for n, word in enumerate(["health", "Hobby", "house", "work", "world", "w"] * 5)
    ]
    lines += [{"kind": "tag", "friendly_id": f"t{n}_tag", "name": f"Topic {n}"} for n in range(3)]
    lines += [
        {
            "kind": "claim",
            "statement": f"fact {n}",
            "tags": [f"t{n % 3}_tag"],
            "context_domain": ["wellbeing", "work2", "home"][n % 3],
        }
        for n in range(9)
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    import_records(kb, data, user=USER, source="groups")
    import_records(kb, data, user="mallory", source="groups")
    return kb


@pytest.mark.parametrize(
    "typed",
    [
        "",
        "h",
        "ho",
        "hobby",
        "HOBBY",
        "w",
        "wo",
        "wor",
        "work2_d",
        "area_1",
        "t",
        "t1",
        "topic",
        "x",
        "_",
    ],
)
def test_contexts_tags_and_domains_by_the_rule(grouped: Store, typed: str) -> None:
    expected = groups_by_rule(grouped, USER, typed.lower())
    assert groups_completed(grouped, USER, typed) == expected
    assert expected or typed in {"x", "_"}  # the cases hold matches


def test_a_write_through_another_connection_is_seen(grouped: Store, tmp_path: Path) -> None:
    before = groups_completed(grouped, USER, "zebra")
    assert before == set()
    with open_store(tmp_path / "store") as other:
        Records(other, USER).add_context("Zebra crossing", friendly_id="zebra_crossing")
    assert groups_completed(grouped, USER, "zebra") == {"@zebra_crossing"}


def test_a_write_through_the_same_connection_is_seen(grouped: Store) -> None:
    assert groups_completed(grouped, USER, "yak") == set()
    Records(grouped, USER).add_context("Yak shaving", friendly_id="yak_shaving")
    assert groups_completed(grouped, USER, "yak") == {"@yak_shaving"}


def test_another_users_groups_are_never_given(grouped: Store) -> None:
    import_records(
        grouped,
        json.dumps({"kind": "context", "name": "Secret", "friendly_id": "secret_x"}).encode(),
        user="mallory",
        source="m",
    )
    assert groups_completed(grouped, "mallory", "secret") == {"@secret_x"}
    assert groups_completed(grouped, USER, "secret") == set()
    assert typed_at("@secret", 7) is not None


def test_only_the_contexts_that_can_be_listed_are_read(kb: Store) -> None:
    """120 contexts match ``@p``: the items are the first LIMIT of them in the items' order
    (an id starting with the input first, then by id) — as when every match was read — but
    only LIMIT + 1 contexts are read and made into items (`@` alone read all 2 000 contexts
    of the benchmark's store per keystroke)."""
    lines = [
        {"kind": "context", "name": f"Plan {n:03d}", "friendly_id": f"{prefix}_{n:03d}"}
        for n in range(60)
        for prefix in ("proj", "area")  # "area_…" matches by its name's key ("plan_…")
    ]
    import_records(kb, "\n".join(json.dumps(x) for x in lines).encode(), user=USER, source="p")
    expected = sorted(
        (
            f"@{friendly_id}"
            for _, friendly_id, name in kb.context_names(USER)
            if name.startswith("Plan")
        ),
        key=lambda label: (not label.startswith("@p"), label),
    )[:LIMIT]
    typed = typed_at("@p", 2)
    assert typed is not None
    statements: list[str] = []
    kb._db.set_trace_callback(statements.append)
    try:
        found, incomplete = Completer(kb, None, (), USER).complete(typed)
    finally:
        kb._db.set_trace_callback(None)
    assert [c.label for c in found if c.kind == "context"] == expected and incomplete
    read = [s for s in statements if "FROM contexts x" in s and "json_each" in s]
    assert len(read) == 1
    assert len(json.loads(read[0].split("json_each('", 1)[1].split("')", 1)[0])) == LIMIT + 1
