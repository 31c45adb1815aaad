"""Reference checks (``lsp_memory.services.editor.checks``) on the fixture store and a vault in
``tmp_path``: every kind, the fixes applied to the text, Markdown code, failures isolated per
reference, and the ``severities`` setting (``off``, bad values)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest

from lsp_memory.config import DIAGNOSTIC_SEVERITIES, Config, apply_settings, load_config
from lsp_memory.model import Reference
from lsp_memory.notes import Vault
from lsp_memory.services.block import Assembler
from lsp_memory.services.editor.checks import CreateNote, Finding, Replace, check
from lsp_memory.services.editor.describe import Describer
from lsp_memory.services.kernel.resolver import Resolver
from lsp_memory.services.memory.interchange import import_records
from lsp_memory.store.sqlite import Store
from tests.conftest import DATA, USER


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    root = tmp_path / "vault"
    shutil.copytree(DATA / "notes", root)
    # Two notes titled "Twin": [[Twin]] is ambiguous. A top-level file's path without its
    # extension ("twin") is itself ambiguous, so its fix must keep the extension.
    (root / "twin.md").write_text("# Twin\n\n## Plan\n", encoding="utf-8")
    (root / "sub" / "twin-two.md").write_text("---\ntitle: Twin\n---\n## Plan\n", encoding="utf-8")
    opened = Vault(root)
    opened.scan()
    return opened


@pytest.fixture
def resolver(kb: Store, vault: Vault) -> Resolver:
    return Resolver(kb, USER, [vault])


def run(text: str, resolver: Resolver, **options: object) -> list[Finding]:
    return check(text, resolver, path="doc.md", **options)  # type: ignore[arg-type]


def one(findings: list[Finding], written: str) -> Finding:
    found = [f for f in findings if f.reference.text == written]
    assert len(found) == 1, findings
    return found[0]


def applied(text: str, fix: Replace) -> str:
    return text[: fix.start] + fix.new_text + text[fix.end :]


def test_an_unresolved_reference_is_a_warning_with_the_resolver_message(
    resolver: Resolver,
) -> None:
    finding = one(run("see @no_such_thing and #99 and @claim_43", resolver), "@no_such_thing")
    assert (finding.kind, finding.severity) == ("unresolved", "warning")
    assert finding.message == "No memory or context found with ID: no_such_thing"
    assert finding.fixes == ()
    kinds = [f.kind for f in run("#42 @claim_43 @mallory_only_f099", resolver)]
    assert kinds == ["unresolved"] * 2  # #42 is ann's


def test_a_word_or_a_number_that_is_no_memory_reference_is_only_a_hint(
    resolver: Resolver,
) -> None:
    """A vault's notes hold people's handles (``@octocat``) and numbers (``#1984``): they name
    nothing, and could not be a memory reference typed wrong. Before, each was a warning:
    644 on opening 1,500 notes of a public vault."""
    findings = run("thanks @octocat for #1984 and @leafctx and #43", resolver)
    assert [(f.reference.text, f.kind, f.severity) for f in findings] == [
        ("@octocat", "unknown-mention", "hint"),
        ("#1984", "unknown-mention", "hint"),  # ann's claims go up to #42
        ("@leafctx", "unresolved", "warning"),  # a near miss: below
        ("#43", "unknown-mention", "hint"),
    ]
    assert one(findings, "#1984").message.endswith("(yours end at #42)")
    # A setting makes them warnings again.
    loud = run(
        "@octocat", resolver, severities={**DIAGNOSTIC_SEVERITIES, "unknown-mention": "warning"}
    )
    assert [(f.kind, f.severity) for f in loud] == [("unknown-mention", "warning")]


def test_a_near_miss_says_what_it_may_have_meant_and_fixes_it(resolver: Resolver) -> None:
    text = "ask @leafctx and @alice_nt, not @zzz_qqq"
    findings = run(text, resolver)
    near = one(findings, "@leafctx")
    assert near.message == "No memory or context found with ID: leafctx; did you mean @leaf_ctx?"
    (fix,) = near.fixes
    assert isinstance(fix, Replace) and fix.preferred
    assert applied(text, fix) == "ask @leaf_ctx and @alice_nt, not @zzz_qqq"
    assert one(findings, "@alice_nt").message.endswith("did you mean @alice_ent?")
    far = one(findings, "@zzz_qqq")  # memory-id shaped, nothing close: a plain warning
    assert (far.kind, far.severity, far.fixes) == ("unresolved", "warning", ())


def test_live_references_give_nothing(resolver: Resolver) -> None:
    text = (
        "#1 #2 @claim_42 @prefer_morning_a3f2 @leaf_ctx @my_health_goals @alice_ent @carol_ent "
        "@health_tag @work_domain [[Project Plan]] [[Alice Notes#Working Style|style]] "
        "[[sub/deep-note]] user@domain.com"
    )
    assert run(text, resolver) == []


@pytest.mark.parametrize(
    ("written", "status", "fixed"),
    [
        ("#4", "superseded", "#1"),
        ("@claim_4", "superseded", "@claim_1"),
        ("@leaf_superseded_a004", "superseded", "@leaf_active_a001"),
        ("#5", "merged", "#7"),
        ("@memory:00000000-0000-4000-a000-000000000005", "merged", None),
        ("@mem:00000000-0000-4000-a000-000000000004", "superseded", None),
        ("#3", "retracted", None),
        ("#6", "deprecated", None),
    ],
)
def test_inactive_claims_warn_and_fix_to_the_successor_in_the_same_form(
    resolver: Resolver, written: str, status: str, fixed: str | None
) -> None:
    text = f"Remember ({written}), please."
    finding = one(run(text, resolver), written)
    assert (finding.kind, finding.severity, finding.deprecated) == (
        "inactive-claim",
        "warning",
        True,
    )
    assert f" is {status}" in finding.message
    if written.startswith("@mem"):
        successor = "1" if status == "superseded" else "7"
        fixed = written.rsplit("-", 1)[0] + f"-00000000000{successor}"
    if fixed is None:
        assert finding.fixes == ()
        return
    (fix,) = finding.fixes
    assert isinstance(fix, Replace) and fix.preferred
    assert fix.title == f"Replace with {fixed}"
    assert applied(text, fix) == f"Remember ({fixed}), please."


def test_messages_name_the_successor(resolver: Resolver) -> None:
    found = run("#4 #5 #3", resolver)
    assert [f.message for f in found] == [
        "Claim #4 (@leaf_superseded_a004) is superseded by #1 (@leaf_active_a001)",
        "Claim #5 (@leaf_merged_a005) is merged into #7 (@shared_claim_a007)",
        "Claim #3 (@leaf_retracted_a003) is retracted",
    ]


def test_a_successor_chain_is_followed_to_a_live_claim_and_cycles_end(
    kb: Store, vault: Vault
) -> None:
    def claim(number: int, status: str, after: int | None, how: str = "superseded_by") -> str:
        record: dict[str, object] = {
            "kind": "claim",
            "claim_id": f"00000000-0000-4000-a000-0000000000{number}",
            "claim_number": number,
            "friendly_id": f"chain_claim_{number}",
            "statement": f"Chain link {number}",
            "status": status,
        }
        if after is not None:
            record[how] = f"00000000-0000-4000-a000-0000000000{after}"
        return json.dumps(record)

    lines = [
        claim(50, "superseded", 51),
        claim(51, "merged", 52, "merged_into"),
        claim(52, "active", None),
        claim(60, "superseded", 61),
        claim(61, "superseded", 60),
        claim(70, "superseded", 71),
        claim(71, "retracted", None),
    ]
    import_records(kb, "\n".join(lines).encode(), user=USER, source="chain")
    resolver = Resolver(kb, USER, [vault])
    chained = one(run("#50", resolver), "#50")
    assert [fix.new_text for fix in chained.fixes if isinstance(fix, Replace)] == ["#52"]
    assert "superseded by #52" in chained.message
    # The hover, the context block's warning and `claim show` name the same claim as the fix
    # (they once went one step, to #51, which is merged too).
    hover = Describer(kb, USER, [vault]).hover_at("#50", 0)
    assert hover is not None and "**Superseded** by #52 @chain_claim_52" in hover.markdown
    block = Assembler(kb, resolver, user=USER).build("#50")
    assert block.warnings == ("#50: claim #50 is superseded by #52 @chain_claim_52",)
    for dead_end in ("#60", "#70"):
        finding = one(run(dead_end, resolver), dead_end)
        assert finding.fixes == ()
        assert "its successor is missing or no longer current" in finding.message
        dead = Describer(kb, USER, [vault]).hover_at(dead_end, 0)
        assert dead is not None and "successor missing or no longer current" in dead.markdown


def test_a_broken_link_offers_to_create_the_note_in_the_first_vault(
    resolver: Resolver, vault: Vault
) -> None:
    finding = one(run("Read [[Missing Target]].", resolver), "[[Missing Target]]")
    assert (finding.kind, finding.severity) == ("broken-link", "warning")
    assert finding.message == "Note not found: Missing Target"
    (fix,) = finding.fixes
    assert fix == CreateNote(
        "Create note 'Missing Target'", vault.root / "Missing Target.md", "# Missing Target\n"
    )
    # A note created that way resolves the link (once the vault sees it).
    fix.path.write_text(fix.content, encoding="utf-8")
    vault.scan()
    assert run("[[Missing Target]]", resolver) == []


def test_created_file_names_are_safe_and_paths_stay_in_the_vault(
    resolver: Resolver, vault: Vault
) -> None:
    odd = one(run('[[What? "A:B" *now*]]', resolver), '[[What? "A:B" *now*]]')
    (fix,) = odd.fixes
    assert isinstance(fix, CreateNote)
    assert fix.path == vault.root / "What- -A-B- -now-.md"
    assert fix.content == '# What? "A:B" *now*\n'
    nested = one(run("[[projects/new plan.md]]", resolver), "[[projects/new plan.md]]")
    (fix,) = nested.fixes
    assert isinstance(fix, CreateNote)
    assert (fix.path, fix.content) == (vault.root / "projects" / "new plan.md", "# new plan\n")
    outside = one(run("[[../secrets]]", resolver), "[[../secrets]]")
    assert outside.kind == "broken-link" and outside.fixes == ()
    assert outside.message == "Outside the vault: ../secrets"


def test_no_create_fix_for_a_file_on_disk_but_not_scanned_or_without_a_vault(
    kb: Store, resolver: Resolver, vault: Vault
) -> None:
    (vault.root / "Fresh.md").write_text("# Fresh\n", encoding="utf-8")
    fresh = one(run("[[Fresh]]", resolver), "[[Fresh]]")
    assert fresh.kind == "broken-link" and fresh.fixes == ()
    lonely = one(run("[[Project Plan]]", Resolver(kb, USER)), "[[Project Plan]]")
    assert lonely.kind == "broken-link" and lonely.fixes == ()
    assert lonely.message.startswith("no vault to look in")


def test_a_missing_heading_is_a_broken_link_without_a_fix(resolver: Resolver) -> None:
    finding = one(run("[[Project Plan#Nope]]", resolver), "[[Project Plan#Nope]]")
    assert (finding.kind, finding.fixes) == ("broken-link", ())
    assert finding.message == "Heading not found in project-plan.md: Nope"


def test_an_archived_note_is_a_hint(resolver: Resolver) -> None:
    finding = one(run("Was [[Old Plan]]", resolver), "[[Old Plan]]")
    assert (finding.kind, finding.severity) == ("archived-note", "hint")
    assert finding.message == "Old Plan (old-plan.md) is archived"


def test_an_ambiguous_link_offers_each_candidate_keeping_heading_and_label(
    resolver: Resolver,
) -> None:
    text = "See [[ Twin #Plan|the twin]] today."
    finding = one(run(text, resolver), "[[ Twin #Plan|the twin]]")
    assert (finding.kind, finding.severity) == ("ambiguous-link", "information")
    assert finding.message == (
        "[[Twin]] matches 2 notes: twin.md, sub/twin-two.md; it links to twin.md"
    )
    fixes = [fix for fix in finding.fixes if isinstance(fix, Replace)]
    assert [applied(text, fix) for fix in fixes] == [
        "See [[ twin.md #Plan|the twin]] today.",
        "See [[ sub/twin-two #Plan|the twin]] today.",
    ]
    assert [fix.title for fix in fixes] == [
        "Link to 'twin.md' (Twin)",
        "Link to 'sub/twin-two' (Twin)",
    ]
    for fix in fixes:
        assert run(applied(text, fix), resolver) == []  # each fix resolves to one note


def test_fixes_of_a_repeated_reference_point_at_each_occurrence(resolver: Resolver) -> None:
    text = "#4 then 😀 #4"
    first, second = run(text, resolver)
    assert (first.reference.offset, second.reference.offset) == (0, text.rindex("#4"))
    for finding in (first, second):
        (fix,) = finding.fixes
        assert isinstance(fix, Replace)
        assert text[fix.start : fix.end] == "#4"


def test_nothing_inside_markdown_code_but_everything_elsewhere(resolver: Resolver) -> None:
    text = "`see #4` and\n```\n@no_such_thing [[Missing Target]]\n```\n"
    assert check(text, resolver, language_id="markdown") == []
    assert check(text, resolver, path="file:///x/notes.MD") == []
    everywhere = check(text, resolver, language_id="python", path="x.py")
    assert [f.reference.text for f in everywhere] == ["#4", "@no_such_thing", "[[Missing Target]]"]


def test_a_failing_reference_is_reported_and_the_others_still_checked(
    kb: Store, vault: Vault
) -> None:
    resolver = Resolver(kb, USER, [vault])
    kb.close()  # every store lookup now fails
    failed: list[tuple[Reference, Exception]] = []
    found = run(
        "#4 [[Old Plan]] @leaf_ctx #4",
        resolver,
        on_error=lambda ref, error: failed.append((ref, error)),
    )
    assert [f.kind for f in found] == ["archived-note"]
    assert [ref.text for ref, _ in failed] == ["#4", "@leaf_ctx"]  # each text checked once
    with pytest.raises(Exception, match="closed"):
        run("#4", resolver)


# Severities ----------------------------------------------------------------------------------


def kinds_and_severities(findings: list[Finding]) -> list[tuple[str, str]]:
    return [(f.kind, f.severity) for f in findings]


def test_severities_change_and_off_drops_a_kind(resolver: Resolver) -> None:
    text = "@no_such_thing #4 [[Missing Target]] [[Old Plan]] [[Twin]]"
    assert kinds_and_severities(run(text, resolver)) == [
        ("unresolved", "warning"),
        ("inactive-claim", "warning"),
        ("broken-link", "warning"),
        ("archived-note", "hint"),
        ("ambiguous-link", "information"),
    ]
    config, warnings = apply_settings(
        Config(),
        {"severities": {"unresolved": "Error", "archived-note": "off", "ambiguous-link": "off"}},
        base=Path(),
        origin="test",
    )
    assert warnings == []
    assert config.severities == {
        **DIAGNOSTIC_SEVERITIES,
        "unresolved": "error",
        "archived-note": "off",
        "ambiguous-link": "off",
    }
    assert kinds_and_severities(run(text, resolver, severities=config.severities)) == [
        ("unresolved", "error"),
        ("inactive-claim", "warning"),
        ("broken-link", "warning"),
    ]


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ({"unresolved": "loud"}, "unresolved: expected one of error, warning, information"),
        ({"unresolved": 2}, "unresolved: expected one of"),
        ({"typos": "off"}, "unknown diagnostic kind 'typos'"),
        ("off", "expected a table of diagnostic kind = severity"),
    ],
)
def test_a_bad_severities_setting_warns_and_keeps_the_default(
    value: object, complaint: str
) -> None:
    config, warnings = apply_settings(Config(), {"severities": value}, base=Path(), origin="test")
    assert config.severities == DIAGNOSTIC_SEVERITIES
    (warning,) = warnings
    assert warning.startswith("test: setting 'severities': ")
    assert complaint in warning and warning.endswith("; using the default")


def test_severities_from_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "lsp-memory.toml").write_text(
        '[severities]\n"archived-note" = "off"\nunresolved = "information"\n', encoding="utf-8"
    )
    config, warnings = load_config(cwd=tmp_path, environ={})
    assert warnings == []
    expected: Mapping[str, str] = {
        **DIAGNOSTIC_SEVERITIES,
        "archived-note": "off",
        "unresolved": "information",
    }
    assert config.severities == expected
