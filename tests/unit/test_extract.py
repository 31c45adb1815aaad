"""The offline claim extractor: what a message states about its user, in its own words."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_memory.services.conversations.extract import Extracted, answers_to_extracted, extract
from lsp_memory.services.kernel.command import CommandFailed

DATA = Path(__file__).parents[1] / "data" / "extraction.jsonl"


def statements(message: str) -> list[tuple[str, str]]:
    return [(found.statement, found.category) for found in extract(message)]


def said(message: str) -> list[str]:
    return [found.statement for found in extract(message)]


@pytest.mark.parametrize(
    "message",
    [
        "Hi there! How are you today?",
        "Thanks, that was really helpful.",
        "lol that's hilarious",
        "I see what you mean.",
        "I'll try that tonight and let you know.",
        "Yeah I've tried that already, didn't help.",
        "I'm fine, thanks.",
        "I was wondering about the weather.",
    ],
)
def test_small_talk_gives_nothing(message: str) -> None:
    assert extract(message) == []


@pytest.mark.parametrize(
    "message",
    [
        "Should I tell my boss I'm quitting?",
        "Do you remember what I told you about my sister?",
        "how do I centre a div",
        "Can you write me a poem about cats?",
        "I'd like a vegetarian lasagne recipe that serves six.",
        "I need help writing a wedding toast for my best friend.",
        "I want you to act as a Linux terminal.",
        "If I had a garden I would grow tomatoes.",
        "Imagine I had a million dollars, what would be the smartest investment?",
        "I think I might be coming down with something.",
        "My coworker said the new iPhone is overpriced.",
        "My code throws a KeyError on line 12, here's the traceback:",
        "Can you proofread this? 'Dear Sir or Madam, I am writing to apply for the job.'",
    ],
)
def test_questions_requests_hypotheticals_and_hearsay_give_nothing(message: str) -> None:
    assert extract(message) == []


def test_two_facts_in_one_message_fillers_and_requests_stripped() -> None:
    assert statements("Hi! btw I moved to Berlin last month and I work at Acme now lol") == [
        ("I moved to Berlin last month", "identity"),
        ("I work at Acme now", "identity"),
    ]
    assert statements("I'm allergic to shellfish, so please keep that in mind 🙂") == [
        ("I'm allergic to shellfish", "constraint")
    ]
    assert said("omg I passed my driving test!!!") == ["I passed my driving test"]
    assert said("I use Arch btw") == ["I use Arch"]
    assert said("Remember that my wife's birthday is on 14 August.") == [
        "My wife's birthday is on 14 August"
    ]


def test_a_statement_before_a_question_is_kept_and_the_question_dropped() -> None:
    assert statements("I'm on blood thinners, is ibuprofen ok?") == [
        ("I'm on blood thinners", "constraint")
    ]
    assert said("I'm quitting my job in June. Should I tell my boss before my bonus?") == [
        "I'm quitting my job in June"
    ]


def test_clauses_cut_at_commas_and_dashes_comments_dropped_appositions_kept() -> None:
    assert said("I no longer work at Spotify — I joined a climate startup in January.") == [
        "I no longer work at Spotify",
        "I joined a climate startup in January",
    ]
    assert said("I'm a backend engineer, mostly Java and Kotlin, and I've been there 6 years") == [
        "I'm a backend engineer, mostly Java and Kotlin",
        "I've been there 6 years",
    ]
    assert said("I'm left-handed, which makes calligraphy tricky.") == ["I'm left-handed"]
    assert said("My girlfriend and I broke up last week.") == [
        "My girlfriend and I broke up last week"
    ]
    assert said("Me and my friend Tomás are starting a podcast.") == [
        "Me and my friend Tomás are starting a podcast"
    ]


def test_a_negation_stays_a_negation_and_people_are_relationships() -> None:
    assert said("I no longer eat red meat.") == ["I no longer eat red meat"]
    assert said("We don't own a car, so anything we do has to be reachable by train.") == [
        "We don't own a car"
    ]
    assert statements("My sister Clara is a nurse in Leeds.") == [
        ("My sister Clara is a nurse in Leeds", "relationship")
    ]
    assert statements("My dog Pixel needs a walk every two hours.") == [
        ("My dog Pixel needs a walk every two hours", "relationship")
    ]


def test_statements_whose_subject_is_not_the_user() -> None:
    assert said("Crowded trains really stress me out.") == ["Crowded trains really stress me out"]
    assert said("My therapist thinks I should set firmer boundaries.") == [
        "My therapist thinks I should set firmer boundaries"
    ]
    assert said("Vegetarian here, any good curry recipes?") == ["Vegetarian here"]


def test_a_standing_instruction_is_a_preference() -> None:
    assert statements("Please always answer in British English, I'm based in Manchester.") == [
        ("Always answer in British English", "preference"),
        ("I'm based in Manchester", "identity"),
    ]
    assert statements("From now on, please don't use emojis in your answers.") == [
        ("Don't use emojis in your answers", "preference")
    ]


def test_each_statement_once() -> None:
    assert said("I'm vegan. I'm vegan!") == ["I'm vegan"]


def test_the_assistant_is_never_a_source() -> None:
    assert extract("Sounds good.", "I live in Paris and I love jazz.") == []


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Abby and I are planning a Japan trip in April 2026.",
         ["Abby and I are planning a Japan trip in April 2026"]),
        ("So Mary Jane and I got married in June", ["Mary Jane and I got married in June"]),
        ("I live in Lyon and I work at Acme.", ["I live in Lyon", "I work at Acme"]),
        ("Sure and I work at Acme", ["I work at Acme"]),
    ],
)  # fmt: skip
def test_a_pair_of_subjects_stays_whole(message: str, expected: list[str]) -> None:
    assert said(message) == expected


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [
        ("Do you have kids?", "yes, two kids", ["I have two kids"]),
        ("Lovely. Do you have any pets?", "yes, two", ["I have two pets"]),
        ("Do you have any pets?", "Yes, a dog and a cat!", ["I have a dog and a cat"]),
        ("Do you have your own car?", "yeah I do", ["I have my own car"]),
        ("Do you have kids?", "no, not yet", ["I don't have kids"]),
        ("Do you eat meat?", "nope", ["I don't eat meat"]),
        ("Do you speak Spanish?", "yes", ["I speak Spanish"]),
        ("Are you vegetarian?", "no", ["I'm not vegetarian"]),
        ("Do you have kids?", "Yes, two kids. I live in Lyon.",
         ["I have two kids", "I live in Lyon"]),
        # Not a yes/no question about the user, or more than yes/no and a thing one has.
        ("Do you want me to draft it?", "yes please", []),
        ("Are you sure?", "yes", []),
        ("Do you like it?", "yes", []),
        ("Do you prefer tea or coffee?", "yes", []),
        ("What do you do?", "yes", []),
        ("Do you speak Spanish?", "yes, a little", []),
        ("Do you have kids?", "yes, but they live with their mum", []),
        ("Do you have kids?", "Thanks, that helps.", []),
    ],
)  # fmt: skip
def test_a_short_answer_is_read_with_the_question(
    question: str, answer: str, expected: list[str]
) -> None:
    assert [found.statement for found in extract(answer, question=question)] == expected


def test_an_extractor_commands_answer() -> None:
    answer = [{"statement": " I live  in Lyon ", "category": "identity"}]
    assert answers_to_extracted(answer) == [Extracted("I live in Lyon", "identity")]
    assert answers_to_extracted([]) == []
    for bad, reason in [
        ({"statement": "x"}, "not a JSON list"),
        ([{"category": "identity"}], "without a statement"),
        ([{"statement": "I live in Lyon", "category": "mood"}], "unknown category 'mood'"),
    ]:
        with pytest.raises(CommandFailed, match=reason):
            answers_to_extracted(bad)


def test_the_dev_set_stays_above_its_floor() -> None:
    """The labelled set scored as benchmarks/extract.py does: a regression in the rules
    shows here (floors a little under what docs/benchmarks.md records: precision 0.940,
    recall 0.979, category accuracy 0.759)."""
    from benchmarks.extract import score

    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    dev = score([row for row in rows if row["split"] == "dev"])
    assert dev["precision"] >= 0.92
    assert dev["recall"] >= 0.95
    assert dev["category_accuracy"] >= 0.73


@pytest.mark.parametrize(
    "message", ["I live in\u0000 Rome", "\u00007\u0000", "I'm (\u00001\u0000) allergic to nuts"]
)
def test_a_nul_in_a_message_is_dropped_not_a_hang(message: str) -> None:
    """A NUL is the extractor's own mark: one in a message spun forever, or raised
    IndexError. In a child process, so a hang fails the test instead of holding the run."""
    script = (
        "import json, sys\n"
        "from lsp_memory.services.conversations.extract import extract\n"
        "print(json.dumps([e.statement for e in extract(json.loads(sys.argv[1]))]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(message)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert all("\u0000" not in statement for statement in found)
    if "Rome" in message:
        assert found == ["I live in Rome"]
