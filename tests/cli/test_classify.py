"""``lsp-memory classify`` and the ``classifier_command`` setting: decisions as text and JSON,
one-line errors, and the built-in classifier answering (with one warning) whenever the
command fails."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from lsp_memory.services.memory.classify import Classifier, builtin_model
from tests.cli.test_cli import Run, one_error_line, run, store_dir  # noqa: F401

ANSWERS = {
    "good": "print(json.dumps([{'category': 'goal'} for _ in batch]))",
    "sure": "print(json.dumps([{'category': 'goal', 'confidence': 0.75} for _ in batch]))",
    "crash": "sys.exit('the model is not loaded')",
    "hang": "time.sleep(30)",
    "garbage": "print('certainly! here are your categories')",
    "short": "print(json.dumps([{'category': 'goal'}]))",
    "unknown": "print(json.dumps([{'category': 'hobby'} for _ in batch]))",
}


def command(tmp_path: Path, kind: str) -> str:
    """A small Python program that reads the batch and answers as ``kind`` says."""
    script = tmp_path / f"{kind}.py"
    script.write_text(
        f"import json, sys, time\nbatch = json.load(sys.stdin)\n{ANSWERS[kind]}\n", "utf-8"
    )
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def test_text_form_is_one_line_per_statement(run: Run) -> None:  # noqa: F811
    result = run("classify", "I hate flying", "Flying makes me anxious", "My aunt lives in Rome")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["preference", "emotional", "relationship"]
    assert lines[0].endswith("I hate flying")
    assert result.stderr == ""


def test_json_from_standard_input_skips_empty_lines(run: Run) -> None:  # noqa: F811
    result = run("classify", "-", "--json", stdin="I want to run a marathon\n\n  \nI'm vegan\n")
    assert result.returncode == 0, result.stderr
    decisions = json.loads(result.stdout)
    assert [d["text"] for d in decisions] == ["I want to run a marathon", "I'm vegan"]
    assert [d["category"] for d in decisions] == ["goal", "constraint"]
    for decision in decisions:
        assert set(decision) == {"text", "category", "confidence", "runner_up"}
        assert 0 <= decision["confidence"] <= 1
        assert decision["runner_up"] != decision["category"]


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        ((), None, "nothing to classify: give one or more statements"),
        (("-",), "\n  \n", "nothing to classify: standard input has no non-empty line"),
        (("fine", " "), None, "nothing to classify in statement 2: the text is empty"),
    ],
)
def test_empty_input_is_one_error_line(
    run: Run,  # noqa: F811
    args: tuple[str, ...],
    stdin: str | None,
    message: str,
) -> None:
    line = one_error_line(run("classify", *args, stdin=stdin))
    assert message in line


def test_claim_add_without_a_type_stores_the_classified_type(run: Run) -> None:  # noqa: F811
    added = run("claim", "add", "I'm allergic to cats")
    assert added.returncode == 0, added.stderr
    assert "[constraint] I'm allergic to cats" in added.stdout
    explicit = run("claim", "add", "I'm allergic to dogs", "--type", "fact")
    assert "[fact]" in explicit.stdout
    shown = json.loads(run("claim", "list", "--json").stdout)
    assert [c["claim_type"] for c in shown] == ["constraint", "fact"]


def test_the_command_answers_when_it_works(run: Run, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "lsp-memory.toml").write_text(
        f"classifier_command = {json.dumps(command(tmp_path, 'good'))}\n", "utf-8"
    )
    assert run("trust", str(tmp_path)).returncode == 0  # the user's own folder: it may run them
    result = run("classify", "--json", "I hate flying", "The API uses gRPC")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert [d["category"] for d in json.loads(result.stdout)] == ["goal", "goal"]
    added = run("claim", "add", "I hate flying")
    assert "[goal]" in added.stdout


def test_a_failing_command_warns_once_and_the_built_in_answers(
    run: Run,  # noqa: F811
    tmp_path: Path,
) -> None:
    (tmp_path / "lsp-memory.toml").write_text(
        f"classifier_command = {json.dumps(command(tmp_path, 'crash'))}\n", "utf-8"
    )
    assert run("trust", str(tmp_path)).returncode == 0  # the user's own folder: it may run them
    result = run("classify", "I hate flying", "Flying makes me anxious")
    assert result.returncode == 0
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["preference", "emotional"]
    warnings = result.stderr.strip().splitlines()
    assert len(warnings) == 1
    assert warnings[0].startswith("lsp-memory: warning: classifier_command failed (exit status 1")
    assert "the model is not loaded" in warnings[0]
    added = run("claim", "add", "I hate flying")
    assert "[preference]" in added.stdout and "classifier_command failed" in added.stderr


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("crash", "exit status 1: the model is not loaded"),
        ("hang", "no answer within 0.5 s"),
        ("garbage", "output is not JSON: 'certainly! here are your categories'"),
        ("short", "1 answers for 2 statements"),
        ("unknown", "unknown category 'hobby'"),
    ],
)
def test_each_failure_says_why(tmp_path: Path, kind: str, reason: str) -> None:
    warnings: list[str] = []
    classifier = Classifier(command(tmp_path, kind), timeout_s=0.5, warn=warnings.append)
    texts = ["I hate flying", "My brother is a pilot"]
    assert classifier.classify_all(texts) == [builtin_model().decide(t) for t in texts]
    assert warnings == [f"classifier_command failed ({reason}); used the built-in classifier"]


def test_a_missing_program_says_so(tmp_path: Path) -> None:
    warnings: list[str] = []
    Classifier(str(tmp_path / "nowhere"), warn=warnings.append).classify_all(["x"])
    assert len(warnings) == 1 and "cannot run" in warnings[0]


def test_the_command_s_confidence_is_kept_when_given(tmp_path: Path) -> None:
    decision = Classifier(command(tmp_path, "sure")).classify("I hate flying")
    assert decision.category == "goal" and decision.confidence == 0.75
    assert decision.runner_up != "goal"
