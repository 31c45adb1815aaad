"""``--as-of`` and ``claim history`` from the command line, over one memory written across
dates: claims imported on 1 January 2026, a consolidation on 1 February that decays one and
merges another into it, messages of January and June, then (today) a claim that supersedes
one and a retraction, and a consolidation in 2030 that deprecates the decayed claim. Asked as
of each date, ``claim list``, ``claim show`` and ``search`` give the memory as it was then; a
bad date is one line, exit 2."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.cli.test_cli import Run, one_error_line, run, store_dir  # noqa: F401
from tests.cli.test_consolidate import DAY1, claims_file

CLAIMS = [
    # (statement, type, confidence, inferred from a message: decays)
    ("I like dark roast coffee", "preference", 0.9, True),
    ("I really love dark roast coffee", "preference", 0.8, True),
    ("I live in Lyon", "identity", 0.9, False),
    ("I play chess on Sundays", "fact", 1.0, False),
]
MESSAGES = [
    ("Booked the train tickets for the weekend", "2026-01-10T10:00:00Z"),
    ("The train leaves at nine tomorrow", "2026-06-01T10:00:00Z"),
]


@dataclass(frozen=True)
class Memory:
    """The dates between the writes: before the supersede and retraction, and after."""

    before: str
    after: str


def write_memory(run: Run, tmp_path: Path) -> Memory:  # noqa: F811
    """The memory of the module's docstring, written through the command line."""
    for inferred in (True, False):  # #1 and #2 decay, #3 and #4 do not
        mine = [claim[:3] for claim in CLAIMS if claim[3] is inferred]
        assert run("import", str(claims_file(tmp_path, mine, inferred=inferred))).returncode == 0
    pairs = [
        json.dumps(
            {
                "contentSessionId": "trip",
                "userMessage": text,
                "assistantResponse": "Noted.",
                "timestamp": when,
            }
        )
        for text, when in MESSAGES
    ]
    (tmp_path / "pairs.jsonl").write_text("\n".join(pairs) + "\n", encoding="utf-8")
    assert run("ingest", str(tmp_path / "pairs.jsonl")).returncode == 0
    first = run("consolidate", "--now", "2026-02-01", "--json")
    assert json.loads(first.stdout)["merged"] == 1, first.stdout
    assert run("context", "add", "Home", "--id", "home").returncode == 0
    assert run("claim", "context", "add", "#3", "home").returncode == 0
    before = datetime.now(UTC).isoformat(timespec="microseconds")
    added = run("claim", "add", "I moved to Berlin", "--type", "identity", "--context", "home")
    assert added.stdout.rstrip().endswith("(supersedes #3)"), added.stdout
    assert run("claim", "retract", "#4").returncode == 0
    after = datetime.now(UTC).isoformat(timespec="microseconds")
    assert run("consolidate", "--now", "2030-01-01").returncode == 0
    return Memory(before, after)


def listed(run: Run, moment: str) -> dict[int, tuple[str, float]]:  # noqa: F811
    """``claim list --as-of moment``: number → (status, confidence)."""
    result = run("claim", "list", "--as-of", moment, "--json")
    assert result.returncode == 0, result.stderr
    return {c["claim_number"]: (c["status"], c["confidence"]) for c in json.loads(result.stdout)}


def found(run: Run, query: str, moment: str | None, kind: str = "claim") -> list[str]:  # noqa: F811
    """The titles ``search`` finds (as of ``moment``), each with its status then."""
    args = ["search", query, "--kind", kind, "--json"]
    result = run(*args, *(["--as-of", moment] if moment else []))
    assert result.returncode == 0, result.stderr
    return [f"{hit['title']} ({hit['status']})" for hit in json.loads(result.stdout)]


def test_the_memory_as_of_each_date(run: Run, tmp_path: Path) -> None:  # noqa: F811
    memory = write_memory(run, tmp_path)

    assert listed(run, "2025-12-31") == {}
    january = listed(run, "2026-01-15")
    assert january == {
        1: ("active", 0.9),
        2: ("active", 0.8),
        3: ("active", 0.9),
        4: ("active", 1.0),
    }
    # The first run decayed #1 and merged #2 into it.
    march = listed(run, "2026-03-01")
    assert march[2][0] == "merged"
    assert march[1][0] == "active" and march[1][1] < 0.9
    assert (march[3], march[4]) == ((("active", 0.9)), ("active", 1.0))
    assert listed(run, memory.before) == march
    # Today: Berlin superseded Lyon, chess was retracted.
    today = listed(run, memory.after)
    assert (today[3][0], today[4][0], today[5][0]) == ("superseded", "retracted", "active")
    assert today[1] == march[1]
    # 2030: the decayed claim fell below the floor.
    assert listed(run, "2030-02-01")[1][0] == "deprecated"

    assert found(run, "Lyon", memory.before) == ["I live in Lyon (active)"]
    assert found(run, "Lyon", memory.after) == []
    assert found(run, "Lyon", None) == []
    assert "I moved to Berlin (active)" not in found(run, "Berlin", memory.before)
    assert "I moved to Berlin (active)" in found(run, "Berlin", memory.after)
    assert found(run, "chess on Sundays", memory.before) == ["I play chess on Sundays (active)"]
    assert found(run, "coffee", "2025-12-31") == []
    # Messages up to then.
    trains = found(run, "train", "2026-03-01", kind="episode")
    assert "Booked the train tickets for the weekend (active)" in trains
    assert not any("nine tomorrow" in title for title in trains)
    assert any("nine tomorrow" in title for title in found(run, "train", None, kind="episode"))

    shown = run("claim", "show", "3", "--as-of", memory.before)
    assert shown.returncode == 0, shown.stderr
    assert "  status:        active" in shown.stdout
    assert "superseded by" not in shown.stdout
    as_json = json.loads(run("claim", "show", "3", "--as-of", memory.before, "--json").stdout)
    assert (as_json["status"], as_json.get("superseded_by"), as_json.get("valid_to")) == (
        "active",
        None,
        None,
    )
    assert "did not exist yet" in one_error_line(run("claim", "show", "5", "--as-of", "2026-03-01"))
    # Its updated_at then: when it was added to @home (a single write), not its creation.
    assert as_json["created_at"] < as_json["updated_at"] <= memory.before

    # resolve: a context's claims live then, each as it was; a claim or context not yet made.
    def members(*args: str) -> list[tuple[int, str]]:
        (found,) = json.loads(run("resolve", "@home", "--json", *args).stdout)
        return [(c["claim_number"], c["status"]) for c in found["claims"]]

    assert members("--as-of", memory.before) == [(3, "active")]
    assert members("--as-of", memory.after) == members() == [(5, "active")]
    later = run("resolve", "#5", "@home", "--as-of", "2026-03-01")
    assert later.returncode == 1
    assert later.stderr.splitlines() == [
        "lsp-memory: error: #5: #5 did not exist yet on 2026-03-01T23:59:59.999999Z",
        "lsp-memory: error: @home: @home did not exist yet on 2026-03-01T23:59:59.999999Z",
    ]


def test_claim_history(run: Run, tmp_path: Path) -> None:  # noqa: F811
    write_memory(run, tmp_path)
    lyon = run("claim", "history", "3")
    assert lyon.returncode == 0, lyon.stderr
    lines = lyon.stdout.splitlines()
    assert lines[0].endswith("(superseded) I live in Lyon")
    assert lines[1] == f"{DAY1[:19]}.000000Z  created"
    at = next(n for n, line in enumerate(lines) if line.endswith("Z  superseded"))
    assert lines[at + 1].startswith("    by #5 @") and lines[at + 1].endswith(": I moved to Berlin")
    assert "    status: active → superseded" in lines[at:]

    berlin = run("claim", "history", "5").stdout.splitlines()
    at = next(n for n, line in enumerate(berlin) if line.endswith("Z  supersedes"))
    assert berlin[at + 1].startswith("    replaces #3 @")
    assert berlin[at + 1].endswith(": I live in Lyon")

    coffee = json.loads(run("claim", "history", "1", "--json").stdout)
    assert coffee["claim_number"] == 1
    history = coffee["history"]
    assert history[0]["what"] == "created"
    assert history[0]["changes"]["confidence"]["after"] == 0.9
    runs = [(h["run"], h["run_kind"], h["at"][:10]) for h in history if h["run"]]
    assert (1, "consolidate", "2026-02-01") in runs
    assert (2, "consolidate", "2030-01-01") in runs
    merge = next(h for h in history if h["claim"] and h["claim"]["relation"] == "replaces")
    assert merge["claim"]["number"] == 2 and merge["what"].startswith("merge")
    deprecated = next(h for h in history if "status" in h["changes"] and h["run"] == 2)
    assert deprecated["changes"]["status"] == {"before": "active", "after": "deprecated"}

    merged = json.loads(run("claim", "history", "2", "--json").stdout)["history"]
    into = next(h for h in merged if "merged_into" in h["changes"])
    assert into["claim"]["relation"] == "into" and into["claim"]["number"] == 1

    chess = run("claim", "history", "4").stdout.splitlines()
    assert any(line.endswith("  retracted") for line in chess)
    assert "    status: active → retracted" in chess


@pytest.mark.parametrize(
    "args",
    [
        ("claim", "list"),
        ("claim", "show", "1"),
        ("search", "coffee"),
        ("resolve", "#1"),
        ("build-context", "-"),
    ],
)
def test_a_bad_date_is_one_line_exit_2(run: Run, args: tuple[str, ...]) -> None:  # noqa: F811
    result = run(*args, "--as-of", "last March")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "argument --as-of: not a date: 'last March' (give an ISO 8601 date or date-time, "
            "e.g. 2026-03-01 or 2026-03-01T09:30:00Z)"
        )
    )


def block(run: Run, tmp_path: Path, text: str, moment: str | None) -> str:  # noqa: F811
    """The Markdown ``build-context`` prints for ``text`` (as of ``moment``)."""
    (tmp_path / "prompt.md").write_text(text, encoding="utf-8")
    args = ["build-context", str(tmp_path / "prompt.md")]
    result = run(*args, *(["--as-of", moment] if moment else []))
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_build_context_as_of_each_date(run: Run, tmp_path: Path) -> None:  # noqa: F811
    memory = write_memory(run, tmp_path)
    prompt = "Where do I live, #3 or #5? Any coffee or chess?\n"
    lyon, berlin = "- [REFERENCED #3] [identity] I live in Lyon\n", "I moved to Berlin"
    chess, coffee = "- [AUTO] [fact] I play chess on Sundays\n", "I like dark roast coffee"

    empty = block(run, tmp_path, prompt, "2025-12-31")
    assert "- [NOT FOUND #3] #3 did not exist yet on 2025-12-31T23:59:59.999999Z\n" in empty
    assert "[AUTO]" not in empty
    for moment in ("2026-03-01", memory.before):
        then = block(run, tmp_path, prompt, moment)
        assert lyon in then  # active then: no status
        assert f"- [NOT FOUND #5] #5 did not exist yet on {moment[:10]}" in then
        assert berlin not in then
        assert chess in then and f"- [AUTO] [preference] {coffee}\n" in then
    today = block(run, tmp_path, prompt, memory.after)
    assert "- [REFERENCED #3] [identity] [superseded] I live in Lyon\n" in today
    assert f"- [REFERENCED #5] [identity] {berlin}\n" in today
    assert "chess" not in today  # retracted
    assert coffee in today
    # The 2030 consolidation deprecated the coffee claim.
    assert coffee not in block(run, tmp_path, prompt, "2030-02-01")
    assert block(run, tmp_path, prompt, None) == block(run, tmp_path, prompt, "2030-02-01")

    # A claim given outside the document that did not exist then: a warning, not an error.
    (tmp_path / "prompt.md").write_text(prompt, encoding="utf-8")
    args = ("build-context", str(tmp_path / "prompt.md"), "--attach", "#5")
    attached = run(*args, "--as-of", "2026-03-01", "--format", "json")
    assert attached.returncode == 0, attached.stderr
    warnings = json.loads(attached.stdout)["warnings"]
    assert "--attach #5: #5 did not exist yet on 2026-03-01T23:59:59.999999Z" in warnings
    refused = run(*args, "--as-of", "2026-03-01", "--conversation", "trip")
    assert "cannot serve a conversation" in one_error_line(refused)


def tiers(run: Run, tmp_path: Path, moment: str) -> dict[str, tuple[str, str]]:  # noqa: F811
    """The automatic memories of a block without references as of ``moment``: statement →
    (tier, status)."""
    (tmp_path / "plain.md").write_text("Where do I live? What do I drink and play?\n")
    args = ("build-context", str(tmp_path / "plain.md"), "--as-of", moment, "--format", "json")
    result = run(*args)
    assert result.returncode == 0, result.stderr
    (section,) = json.loads(result.stdout)["sections"]
    return {c["statement"]: (c["tier"], c["status"]) for c in section["items"]}


def test_a_block_as_of_a_date_takes_its_tiers_from_the_claims_as_they_were(
    run: Run,  # noqa: F811
    tmp_path: Path,
) -> None:
    """A claim superseded or retracted after the date is in its tier as it was; one made
    after it is not; one deprecated after it is."""
    memory = write_memory(run, tmp_path)
    before = tiers(run, tmp_path, memory.before)
    assert before["I live in Lyon"] == ("core", "active")  # superseded since
    assert before["I play chess on Sundays"] == ("recent", "active")  # retracted since
    assert "I moved to Berlin" not in before  # made since
    after = tiers(run, tmp_path, memory.after)
    assert after["I like dark roast coffee"] == ("core", "active")  # deprecated in 2030
    assert after["I moved to Berlin"][1] == "active"
    assert "I live in Lyon" not in after and "I play chess on Sundays" not in after
    assert "I like dark roast coffee" not in tiers(run, tmp_path, "2030-02-01")


def test_a_block_as_of_a_date_names_the_successor_then(run: Run, tmp_path: Path) -> None:  # noqa: F811
    """Lyon was superseded by Paris, and Paris later by Berlin: as of a date between the two,
    the warning about Lyon names Paris; today, Berlin."""
    assert run("context", "add", "Home", "--id", "home").returncode == 0
    moments = []
    for city in ("Lyon", "Paris"):
        added = run("claim", "add", f"I live in {city}", "--type", "identity", "--context", "home")
        assert added.returncode == 0, added.stderr
        moments.append(datetime.now(UTC).isoformat(timespec="microseconds"))
    first, between = moments
    added = run("claim", "add", "I live in Berlin", "--type", "identity", "--context", "home")
    assert added.stdout.rstrip().endswith("(supersedes #2)"), added.stdout

    def warnings(*args: str) -> list[str]:
        (tmp_path / "prompt.md").write_text("Where did I live? #1\n", encoding="utf-8")
        result = run("build-context", str(tmp_path / "prompt.md"), "--format", "json", *args)
        assert result.returncode == 0, result.stderr
        return [w for w in json.loads(result.stdout)["warnings"] if w.startswith("#1:")]

    (then,) = warnings("--as-of", between)
    assert then.startswith("#1: claim #1 is superseded by #2 @"), then
    (today,) = warnings()
    assert today.startswith("#1: claim #1 is superseded by #3 @"), today
    assert warnings("--as-of", first) == []  # Lyon was live then


def test_resolve_a_context_as_of_a_date_uses_its_links_then(run: Run) -> None:  # noqa: F811
    """A claim taken out of a context since was in it then; one put in since was not."""
    for text in ("I water the plants on Mondays", "I take the bins out on Tuesdays"):
        assert run("claim", "add", text, "--type", "fact", "--no-supersede").returncode == 0
    assert run("context", "add", "Home", "--id", "home").returncode == 0
    assert run("context", "add", "Garden", "--id", "garden", "--parent", "home").returncode == 0
    assert run("claim", "context", "add", "#1", "garden").returncode == 0
    first = datetime.now(UTC).isoformat(timespec="microseconds")
    assert run("claim", "context", "remove", "#1", "garden").returncode == 0
    assert run("claim", "context", "add", "#2", "home").returncode == 0
    second = datetime.now(UTC).isoformat(timespec="microseconds")

    def members(*args: str) -> list[int]:
        result = run("resolve", "@home", "--json", *args)
        assert result.returncode == 0, result.stderr
        (found,) = json.loads(result.stdout)
        return [c["claim_number"] for c in found["claims"]]

    assert members("--as-of", first) == [1]  # beneath it, in its child context
    assert members("--as-of", second) == members() == [2]
