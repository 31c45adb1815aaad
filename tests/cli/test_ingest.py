"""``lsp-memory ingest``, ``session`` and ``build-context --session`` as a user runs them:
episodes stored once, claims extracted and superseding, references kept per message, pins,
passive recall; and bad input — a missing field, a bad timestamp, a 10 MB message,
non-UTF-8, a failing or hanging extractor_command, another user's session — one line each,
nothing stored."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.cli.test_cli import Run, one_error_line, run, store_dir  # noqa: F401

PAIRS = [
    {
        "contentSessionId": "trip",
        "timestamp": "2026-11-20T10:00:00Z",
        "userMessage": "Hi! btw I moved to Berlin last month and I work at Acme now lol",
        "assistantResponse": "Congratulations on the move!",
        "source": "chat",
    },
    {
        "contentSessionId": "trip",
        "timestamp": "2026-11-20T10:05:00Z",
        "userMessage": "Can you check [[Plan]] and [[Missing Note]]? I'm allergic to penicillin.",
        "assistantResponse": "Sure.",
    },
    {"contentSessionId": "chat", "userMessage": "What's the weather like today?"},
]


def write(tmp_path: Path, pairs: list[Any], name: str = "pairs.jsonl") -> str:
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(p) for p in pairs) + "\n", encoding="utf-8")
    return str(path)


def vault(tmp_path: Path) -> str:
    folder = tmp_path / "vault"
    folder.mkdir(exist_ok=True)
    (folder / "plan.md").write_text("# Plan\n\nPack light.\n", encoding="utf-8")
    return str(folder)


def test_ingest_stores_episodes_once_and_extracts_claims(run: Run, tmp_path: Path) -> None:  # noqa: F811
    run("claim", "add", "I live in Lyon", "--type", "identity")
    done = run("--vault", vault(tmp_path), "ingest", write(tmp_path, PAIRS))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("line 1: 2 episodes stored; added #2 @")
    assert "[identity] I moved to Berlin last month (supersedes #1)" in lines[0]
    assert "[identity] I work at Acme now" in lines[0]
    assert "[constraint] I'm allergic to penicillin" in lines[1]
    assert lines[2] == "line 3: 1 episode stored"  # a question: no claim
    berlin = json.loads(run("claim", "show", "2", "--json").stdout)
    session = json.loads(run("session", "show", "trip", "--json").stdout)
    first = session["messages"][0]
    assert berlin["derived_from"] == [first["episode_id"]]
    assert berlin["valid_from"] == "2026-11-20T10:00:00.000000Z"
    again = run("ingest", write(tmp_path, PAIRS))
    assert again.stdout.splitlines() == [f"line {n}: already stored" for n in (1, 2, 3)]
    assert len(json.loads(run("claim", "list", "--json").stdout)) == 4
    found = run("search", "moved to Berlin", "--kind", "episode", "--json")
    hits = json.loads(found.stdout)
    assert hits[0]["kind"] == "episode" and hits[0]["reference"] is None
    assert "Berlin" in hits[0]["title"]


def test_conversations_references_pins_and_recall(run: Run, tmp_path: Path) -> None:  # noqa: F811
    notes = vault(tmp_path)
    run("--vault", notes, "ingest", write(tmp_path, PAIRS))
    listed = json.loads(run("conversation", "list", "--json").stdout)
    assert [(s["session_id"], s["messages"]) for s in listed] == [("chat", 1), ("trip", 4)]
    shown = run("--vault", notes, "conversation", "show", "trip").stdout.splitlines()
    assert shown[0] == "conversation trip"
    assert "    [[Plan]] (plan.md): Pack light. [direct]" in shown
    assert "    [[Missing Note]]: Warning - Document not found [direct]" in shown
    assert run("--vault", notes, "conversation", "pin", "trip", "#2").stdout.startswith(
        "pinned: @work_acme"
    )
    assert run("--vault", notes, "session", "pin", "trip", "[[Plan]]").returncode == 0
    again = run("--vault", notes, "session", "pin", "trip", "#2")  # the old name still works
    assert again.stdout.startswith("already pinned: @")
    block = run(
        "--vault",
        notes,
        "build-context",
        "-",
        "--conversation",
        "trip",
        stdin="What should I pack?\n",
    )
    assert block.returncode == 0, block.stderr
    assert "- [CONV PINNED] [identity] I work at Acme now" in block.stdout
    assert "[AUTO] [constraint] I'm allergic to penicillin" in block.stdout
    assert "### [[Plan]]" in block.stdout
    session = json.loads(run("--vault", notes, "session", "show", "trip", "--json").stdout)
    given = session["messages"][-1]["references"]  # the automatic memories it was given
    assert given and all((r["kind"], r["via"]) == ("claim", "search") for r in given)
    assert "@allergic_penicillin" in " ".join(r["label"] for r in given)
    assert [p["label"] for p in session["pins"]][1] == "[[Plan]]"


def test_bad_pairs_store_nothing(run: Run, tmp_path: Path) -> None:  # noqa: F811
    bad = [
        PAIRS[0],
        {"userMessage": "I like tea"},
        {"contentSessionId": "x"},
        {"contentSessionId": "x", "userMessage": "hi", "timestamp": "last Tuesday"},
        {"contentSessionId": "x", "userMessage": "a" * 10_000_000},
    ]
    failed = run("ingest", write(tmp_path, bad))
    assert failed.returncode == 1
    errors = failed.stderr.splitlines()
    assert (
        errors[0] == f"lsp-memory: error: {tmp_path / 'pairs.jsonl'}: 4 bad lines, nothing imported"
    )
    assert errors[1:] == [
        "  line 2: contentSessionId is missing or not a non-empty string",
        "  line 3: userMessage is missing or not a non-empty string",
        "  line 4: timestamp 'last Tuesday' is not an ISO 8601 date or time",
        "  line 5: userMessage has 10,000,000 characters; a message may have 100,000",
    ]
    assert run("conversation", "list").stdout.startswith("no conversations yet")
    (tmp_path / "latin1.jsonl").write_bytes(
        b'{"contentSessionId": "x", "userMessage": "caf\xe9"}\n'
    )
    assert "not valid UTF-8" in one_error_line(run("ingest", str(tmp_path / "latin1.jsonl")))
    assert run("claim", "list").stdout == ""


def test_conversations_are_per_user_and_pins_take_claims_or_notes(run: Run, tmp_path: Path) -> None:  # noqa: F811
    run("ingest", write(tmp_path, PAIRS))
    other = run("conversation", "show", "trip", LSP_MEMORY_USER="bob")
    assert "no conversation 'trip'" in one_error_line(other)
    run("context", "add", "Travel", "--id", "travel")
    refused = one_error_line(run("conversation", "pin", "trip", "@travel"))
    assert "is a context: a conversation pins a claim or a note" in refused
    assert "No memory or context found" in one_error_line(run("session", "pin", "trip", "@nope"))


def _command(tmp_path: Path, body: str) -> str:
    script = tmp_path / "extract.py"
    script.write_text("import json, sys, time\n" + body, encoding="utf-8")
    return f"{sys.executable} {script}"


def test_an_extractor_command_and_its_failures(run: Run, tmp_path: Path) -> None:  # noqa: F811
    good = _command(
        tmp_path,
        "pair = json.load(sys.stdin)\n"
        "print(json.dumps([{'statement': 'I am based in Berlin', 'category': 'identity'}]))\n",
    )
    (tmp_path / "lsp-memory.toml").write_text(f"extractor_command = {json.dumps(good)}\n")
    assert run("trust", str(tmp_path)).returncode == 0  # the user's own folder: it may run them
    done = run("ingest", write(tmp_path, PAIRS[:1]))
    assert "[identity] I am based in Berlin" in done.stdout and done.stderr == ""
    hanging = _command(tmp_path, "time.sleep(30)\n")
    (tmp_path / "lsp-memory.toml").write_text(
        f"extractor_command = {json.dumps(hanging)}\nextractor_timeout_s = 1\n"
    )
    slow = run("ingest", write(tmp_path, PAIRS[1:2]))
    assert "[constraint] I'm allergic to penicillin" in slow.stdout  # the built-in answered
    assert slow.stderr.strip() == (
        "lsp-memory: warning: extractor_command failed (no answer within 1 s); "
        "used the built-in extractor"
    )


def test_a_message_is_found_by_the_claims_extracted_from_it(run: Run, tmp_path: Path) -> None:  # noqa: F811
    """An episode is indexed with the statements of the claims extracted from it: an
    extractor that rewords ("relocated to Germany") makes the message findable by its words,
    through ``ingest`` and the index every command uses."""
    rewording = _command(
        tmp_path,
        "pair = json.load(sys.stdin)\n"
        "print(json.dumps([{'statement': 'I relocated to Germany', 'category': 'identity'}]))\n",
    )
    (tmp_path / "lsp-memory.toml").write_text(f"extractor_command = {json.dumps(rewording)}\n")
    assert run("trust", str(tmp_path)).returncode == 0
    assert run("ingest", write(tmp_path, PAIRS[:1])).returncode == 0
    found = run("search", "relocated Germany", "--kind", "episode", "--mode", "bm25", "--json")
    titles = [hit["title"] for hit in json.loads(found.stdout)]
    assert titles == [PAIRS[0]["userMessage"]]


def test_status_counts_what_the_memory_holds(run: Run, tmp_path: Path) -> None:  # noqa: F811
    notes = vault(tmp_path)
    run("claim", "add", "I live in Lyon", "--type", "identity")
    run("--vault", notes, "ingest", write(tmp_path, PAIRS))
    found = json.loads(run("--vault", notes, "status", "--json").stdout)
    assert found["claims"] == {"total": 4, "active": 3, "superseded": 1}
    assert (found["episodes"], found["sessions"], found["notes"]) == (5, 2, 1)
    assert found["paths"]["store"].endswith("memory.sqlite3")
    assert set(found["index"]) == {"embedded", "pending"}
    other = json.loads(run("status", "--json", LSP_MEMORY_USER="bob").stdout)
    assert (other["claims"]["total"], other["episodes"]) == (0, 0)


def test_a_reply_is_found_by_the_message_it_answers(run: Run, tmp_path: Path) -> None:  # noqa: F811
    """An episode is indexed with its session's previous and next messages (weighted less):
    "Yes, two" answers nothing alone, but it is found by what the question asked."""
    pairs = [
        {
            "contentSessionId": "family",
            "timestamp": "2026-11-20T10:00:00Z",
            "userMessage": "Planning the weekend.",
            "assistantResponse": "Fun! Do you have any children?",
        },
        {
            "contentSessionId": "family",
            "timestamp": "2026-11-20T10:01:00Z",
            "userMessage": "Yes, two, Mia and Noor.",
            "assistantResponse": "Lovely names.",
        },
        {
            "contentSessionId": "other",
            "timestamp": "2026-11-20T11:00:00Z",
            "userMessage": "Yes, two, the red ones.",
        },
    ]
    assert run("ingest", write(tmp_path, pairs)).returncode == 0
    found = run("search", "children", "--kind", "episode", "--mode", "bm25", "--json")
    titles = [hit["title"] for hit in json.loads(found.stdout)]
    # The question first (its own words), then the answer (its context's) and the message
    # the question replied to (its reply's), and not the other session's "Yes, two", which
    # followed nothing about children.
    assert titles[0] == "Fun! Do you have any children?"
    assert set(titles[1:]) == {"Yes, two, Mia and Noor.", "Planning the weekend."}


def test_a_nul_in_a_message_is_ingested(run: Run, tmp_path: Path) -> None:  # noqa: F811
    """A NUL inside a message (the extractor's own mark) spun ``ingest`` forever; it is
    dropped from what is extracted, and the message is stored."""
    pairs = [{"contentSessionId": "n1", "userMessage": "I live in\u0000 Rome"}]
    done = run("ingest", write(tmp_path, pairs), "--json")
    assert done.returncode == 0, done.stderr
    claims = json.loads(run("claim", "list", "--json").stdout)
    assert [c["statement"] for c in claims] == ["I live in Rome"]
    shown = json.loads(run("conversation", "show", "n1", "--json").stdout)
    assert shown["messages"][0]["text"] == "I live in\u0000 Rome"


def test_a_number_of_5000_digits_in_a_message_is_ingested(run: Run, tmp_path: Path) -> None:  # noqa: F811
    """``#`` + 5,000 digits in a message made the whole file fail; it is an unresolved
    reference of that message, and the rest is stored."""
    pairs = [
        {"contentSessionId": "d", "userMessage": "See #" + "7" * 5000},
        {"contentSessionId": "d", "userMessage": "I live in Rome"},
    ]
    done = run("ingest", write(tmp_path, pairs))
    assert done.returncode == 0, done.stderr
    shown = json.loads(run("conversation", "show", "d", "--json").stdout)
    assert len(shown["messages"]) == 2
    (reference,) = shown["messages"][0]["references"]
    assert reference["kind"] == "unresolved"


def test_a_time_beyond_the_calendar_in_utc_is_a_bad_line(run: Run, tmp_path: Path) -> None:  # noqa: F811
    """A valid ISO 8601 time that overflows once in UTC crashed ingest (exit 70)."""
    pairs = [
        {"contentSessionId": "t", "userMessage": "hi", "timestamp": "9999-12-31T23:00:00-05:00"},
        {"contentSessionId": "t", "userMessage": "hi", "timestamp": "0001-01-01T00:00:00+05:00"},
    ]
    failed = run("ingest", write(tmp_path, pairs))
    assert failed.returncode == 1, failed.stderr
    assert failed.stderr.splitlines()[1:] == [
        f"  line {n}: timestamp '{p['timestamp']}' falls outside the years 1 to 9999 in UTC"
        for n, p in enumerate(pairs, 1)
    ]


def test_raw_line_separators_inside_a_string_and_a_bom_are_read(run: Run, tmp_path: Path) -> None:  # noqa: F811
    """JSON lets U+2028, U+2029 and U+0085 stand raw inside a string; ``ingest`` cut lines
    there ("not JSON"). A UTF-8 byte-order mark refused the whole file."""
    pairs = [
        {"contentSessionId": "s", "userMessage": "I live in Rome.\u2028I work at Acme."},
        {"contentSessionId": "s", "userMessage": "Noted\u2029and\u0085done"},
    ]
    path = tmp_path / "raw.jsonl"
    text = "\r\n".join(json.dumps(p, ensure_ascii=False) for p in pairs)
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    done = run("ingest", str(path))
    assert done.returncode == 0, done.stderr
    shown = json.loads(run("conversation", "show", "s", "--json").stdout)
    assert [m["text"] for m in shown["messages"]] == [p["userMessage"] for p in pairs]


def test_a_blank_looking_message_is_a_bad_line(run: Run, tmp_path: Path) -> None:  # noqa: F811
    pairs = [{"contentSessionId": "b", "userMessage": "\u200b\u2028 \u00a0"}]
    failed = run("ingest", write(tmp_path, pairs))
    assert failed.returncode == 1
    assert failed.stderr.splitlines()[1:] == [
        "  line 1: userMessage is missing or not a non-empty string"
    ]
    assert json.loads(run("conversation", "list", "--json").stdout) == []


def test_control_characters_in_a_message_stay_out_of_its_claims(run: Run, tmp_path: Path) -> None:  # noqa: F811
    message = "I live in \x1b[31mRome\x1b[0m\x07 and I\x7f work at Acme."
    done = run("ingest", write(tmp_path, [{"contentSessionId": "c", "userMessage": message}]))
    assert done.returncode == 0, done.stderr
    statements = sorted(c["statement"] for c in json.loads(run("claim", "list", "--json").stdout))
    assert statements == ["I live in [31mRome[0m", "I work at Acme"]
    shown = json.loads(run("conversation", "show", "c", "--json").stdout)
    assert shown["messages"][0]["text"] == message  # the message itself as written


def test_an_extractor_is_bounded_in_count_and_size(run: Run, tmp_path: Path) -> None:  # noqa: F811
    """An extractor_command turned one "hello" into 501 claims of 20 KB each; more than 20
    statements, or one longer than a claim may be, is a failed answer: the built-in answers."""
    many = (
        "print(json.dumps([{'statement': f'I own car {i}', 'category': 'identity'}"
        " for i in range(501)]))\n"
    )
    huge = "print(json.dumps([{'statement': 'I am ' + 'x' * 20000, 'category': 'identity'}]))\n"
    assert run("trust", str(tmp_path)).returncode == 0
    for body, reason in [
        (many, "501 statements for one message; an extractor may give 20"),
        (
            huge,
            "a claim is one fact of at most 5,000 characters; this text has 20,005 "
            "(keep a longer text in a note)",
        ),
    ]:
        command = _command(tmp_path, body)
        pair = {"contentSessionId": "h", "userMessage": f"hello, {len(body)}"}
        (tmp_path / "lsp-memory.toml").write_text(f"extractor_command = {json.dumps(command)}\n")
        done = run("ingest", write(tmp_path, [pair]))
        assert done.returncode == 0, done.stderr
        assert done.stderr.strip() == (
            f"lsp-memory: warning: extractor_command failed ({reason}); used the built-in extractor"
        )
    assert json.loads(run("claim", "list", "--json").stdout) == []


def test_two_links_to_one_note_are_one_reference(run: Run, tmp_path: Path) -> None:  # noqa: F811
    """``[[Plan]]`` and ``[[plan]]`` name one file; the message listed it twice."""
    notes = vault(tmp_path)
    pairs = [{"contentSessionId": "d", "userMessage": "See [[Plan]], [[plan]] and [[Gone]]."}]
    assert run("--vault", notes, "ingest", write(tmp_path, pairs)).returncode == 0
    shown = json.loads(run("--vault", notes, "conversation", "show", "d", "--json").stdout)
    references = shown["messages"][0]["references"]
    assert [(r["label"], r["kind"]) for r in references] == [
        ("[[Plan]]", "note"),
        ("[[Gone]]", "unresolved"),
    ]
    # Seed 004's document reference: the note's summary, the message's words around it.
    assert references[0]["summary"] == "Pack light."
    assert references[0]["snippet"] == "See [[Plan]], [[plan]] and [[Gone]]."
    assert references[1]["warning"] == "Warning - Document not found"


def test_a_conversations_block_shows_its_last_messages_and_related_earlier_ones(
    run: Run,  # noqa: F811
    tmp_path: Path,
) -> None:
    """``build-context --conversation`` used the last two messages only as a search query:
    no message of the conversation, nor any earlier one, was in the block."""
    earlier = [
        {
            "contentSessionId": "spring",
            "timestamp": "2026-03-02T09:00:00Z",
            "userMessage": "For the Kyoto trip I booked the ryokan near Gion for three nights.",
            "assistantResponse": "Lovely, Gion is walkable to most temples.",
        },
        {
            "contentSessionId": "spring",
            "timestamp": "2026-03-03T09:00:00Z",
            "userMessage": "My bike needs new brake pads before the weekend.",
        },
    ]
    today = [
        {
            "contentSessionId": "now",
            "timestamp": "2026-11-20T10:00:00Z",
            "userMessage": f"Message {n}: we are still planning the Kyoto trip, day {n}.",
            "assistantResponse": f"Noted for day {n}.",
        }
        for n in range(1, 9)
    ]
    assert run("ingest", write(tmp_path, earlier + today)).returncode == 0
    assert run("claim", "add", "I want to see the temples of Kyoto on this trip").returncode == 0
    block = run(
        "build-context", "-", "--conversation", "now", "--format", "json",
        stdin="Where am I staying in Kyoto?\n",
    )  # fmt: skip
    assert block.returncode == 0, block.stderr
    found = json.loads(block.stdout)
    sections = {s["name"]: s["items"] for s in found["sections"]}
    recent = sections["Recent conversation"]
    assert found["markdown"].startswith("## Recent conversation\n")
    # The newest messages, oldest first, as many as 400 tokens hold: not all sixteen.
    assert recent[-1]["text"] == "Noted for day 8." and recent[-1]["role"] == "assistant"
    assert 2 <= len(recent) < 16
    assert sum(item["tokens"] for item in recent) <= 400
    times = [item["timestamp"] for item in recent]
    assert times == sorted(times)
    assert "- [user, 2026-11-20 10:00] Message 8: we are still planning" in found["markdown"]
    past = sections["Relevant past messages"]
    assert past[0]["text"].startswith("For the Kyoto trip I booked the ryokan near Gion")
    assert {item["episode_id"] for item in past}.isdisjoint(item["episode_id"] for item in recent)
    assert sum(item["tokens"] for item in past) <= 200
    # Claims recalled from the last two messages, within their share; none drawn only from a
    # message the block shows. A command line process recalls when asked.
    recalled = [i for s in found["sections"] for i in s["items"] if i.get("tier") == "conversation"]
    temples = "I want to see the temples of Kyoto on this trip"
    assert [item["statement"] for item in recalled] == [temples]
    assert sum(item["tokens"] for item in recalled) <= 200
    assert found["recall"] == "computed"
    # The shares are settings.
    (tmp_path / "lsp-memory.toml").write_text(
        "recent_tokens = 40\nepisode_tokens = 10\nfact_tokens = 1\n"
    )
    small = run("build-context", "-", "--conversation", "now", "--format", "json", stdin="Kyoto?")
    found = json.loads(small.stdout)
    sections = {s["name"]: s["items"] for s in found["sections"]}
    assert [item["text"] for item in sections["Recent conversation"]] == ["Noted for day 8."]
    assert sum(item["tokens"] for item in sections.get("Relevant past messages", [])) <= 10
    assert not [i for s in found["sections"] for i in s["items"] if i.get("tier") == "conversation"]
