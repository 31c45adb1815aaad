"""Pins and context links of existing claims from the command line: ``claim pin|unpin``,
``claim context add|remove`` and ``conversation unpin`` say what happened in one line, a
wrong reference is one error line and exit 1; a pin shows in the context block, is kept by
``consolidate --undo`` (it is recorded outside any run) and spares the claim decay."""

from __future__ import annotations

import json

from tests.cli.test_cli import Run, run, store_dir  # noqa: F401


def shown(run: Run, ref: str) -> dict[str, object]:  # noqa: F811
    result: dict[str, object] = json.loads(run("claim", "show", ref, "--json").stdout)
    return result


def said(run: Run, *args: str) -> str:  # noqa: F811
    done = run(*args)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    return lines[0]


def test_pin_and_unpin_an_existing_claim(run: Run) -> None:  # noqa: F811
    run("claim", "add", "I like green tea", "--type", "preference")
    name = "#1 @" + str(shown(run, "1")["friendly_id"])
    assert said(run, "claim", "pin", "#1") == f"pinned: {name}"
    assert shown(run, "1")["pinned"] is True
    assert (
        "[GLOBAL PINNED] [preference] I like green tea"
        in run("build-context", "-", stdin="hi").stdout
    )
    assert said(run, "claim", "pin", "1") == f"already pinned: {name}"
    assert said(run, "claim", "unpin", name.split()[1]) == f"unpinned: {name}"
    assert shown(run, "1")["pinned"] is False
    assert "GLOBAL PINNED" not in run("build-context", "-", stdin="hi").stdout
    assert said(run, "claim", "unpin", "#1") == f"not pinned: {name}"


def test_add_a_claim_to_a_context_and_remove_it(run: Run) -> None:  # noqa: F811
    run("context", "add", "Work", "--id", "work")
    run("claim", "add", "I work at Acme", "--type", "identity")
    name = "#1 @" + str(shown(run, "1")["friendly_id"])
    assert said(run, "claim", "context", "add", "#1", "@work") == f"added to @work: {name}"
    assert shown(run, "1")["contexts"] == ["work"]
    assert "Work  @work  (1 claim)" in run("context", "tree").stdout
    assert said(run, "claim", "context", "add", "1", "work") == f"already in @work: {name}"
    assert said(run, "claim", "context", "remove", "#1", "work") == f"removed from @work: {name}"
    assert not shown(run, "1").get("contexts")
    assert said(run, "claim", "context", "remove", "#1", "work") == f"not in @work: {name}"


def test_wrong_references_are_one_line_and_exit_1(run: Run) -> None:  # noqa: F811
    run("context", "add", "Work", "--id", "work")
    run("claim", "add", "I work at Acme", "--type", "identity")
    for args in (
        ("claim", "pin", "#7"),
        ("claim", "unpin", "@nothing_here"),
        ("claim", "pin", "@work"),
        ("claim", "context", "add", "#1", "@play"),
        ("claim", "context", "remove", "#9", "@work"),
        ("conversation", "unpin", "no-such-chat", "#1"),
    ):
        done = run(*args)
        assert done.returncode == 1, args
        assert done.stdout == ""
        assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("lsp-memory: error: ")
    assert shown(run, "1")["pinned"] is False and not shown(run, "1").get("contexts")


def test_unpin_from_a_conversation(run: Run) -> None:  # noqa: F811
    pair = {"contentSessionId": "chat", "userMessage": "Which tea should I buy?"}
    run("ingest", "-", stdin=json.dumps(pair))
    run("claim", "add", "I like green tea", "--type", "preference")
    label = "@" + str(shown(run, "1")["friendly_id"])
    assert said(run, "conversation", "pin", "chat", "#1") == f"pinned: {label} to conversation chat"
    assert json.loads(run("conversation", "show", "chat", "--json").stdout)["pins"]
    assert (
        said(run, "session", "unpin", "chat", "#1") == f"unpinned: {label} from conversation chat"
    )
    assert json.loads(run("conversation", "show", "chat", "--json").stdout)["pins"] == []
    assert said(run, "conversation", "unpin", "chat", label) == (
        f"not pinned: {label} to conversation chat"
    )
    recalled = run("build-context", "-", "--conversation", "chat", stdin="tea?").stdout
    assert "CONV PINNED" not in recalled


def test_a_pin_is_kept_by_undo_and_spares_decay(run: Run) -> None:  # noqa: F811
    pair = {
        "contentSessionId": "chat",
        "userMessage": "I live in Lyon.",
        "timestamp": "2026-01-01T00:00:00Z",
    }
    assert run("ingest", "-", stdin=json.dumps(pair)).returncode == 0
    assert shown(run, "1")["statement"] == "I live in Lyon"
    assert run("consolidate", "--now", "2027-06-01T00:00:00Z").returncode == 0
    assert shown(run, "1")["status"] == "deprecated"  # a year and a half without evidence
    pinned = said(run, "claim", "pin", "#1")
    assert pinned.startswith("pinned: #1 @") and pinned.endswith(
        "(deprecated: shown once it is live again)"
    )
    # The pin was written outside any run: undoing the run that deprecated the claim is not
    # refused, puts its status back and leaves the pin alone.
    assert run("consolidate", "--undo", "1").returncode == 0
    claim = shown(run, "1")
    assert (claim["status"], claim["pinned"]) == ("active", True)
    confidence = claim["confidence"]
    assert run("consolidate", "--now", "2028-06-01T00:00:00Z").returncode == 0
    claim = shown(run, "1")
    assert (claim["status"], claim["confidence"]) == ("active", confidence)  # no decay
    said(run, "claim", "unpin", "#1")
    assert run("consolidate", "--now", "2029-06-01T00:00:00Z").returncode == 0
    assert shown(run, "1")["status"] == "deprecated"
