"""``lsp-memory build-context`` as a user runs it: a subprocess over the fixture knowledge
base and vault, both formats, standard input, the options, the demo, and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import DATA, KB

ROOT = Path(__file__).parents[2]
DEMO = ROOT / "examples" / "demo"
Run = Callable[..., subprocess.CompletedProcess[str]]
PROMPT = "Leaf: #1 and @leaf_ctx, [[Project Plan]], @alice_ent. Also @nope and [[Missing Note]].\n"


@pytest.fixture
def run(tmp_path: Path) -> Run:
    """``python -m lsp_memory ARGS`` with a private store, cache, home and working folder."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "LSP_MEMORY_STORE": str(tmp_path / "store"),
        "LSP_MEMORY_USER": "ann",
        "PYTHONPATH": str(ROOT),
    }

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "lsp_memory", *args],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=120,
            check=False,
        )
        assert "Traceback" not in result.stderr, result.stderr
        return result

    return run


@pytest.fixture
def kb(run: Run, tmp_path: Path) -> Path:
    """The fixture knowledge base imported; returns a prompt file."""
    assert run("import", str(KB)).returncode == 0
    prompt = tmp_path / "prompt.md"
    prompt.write_text(PROMPT, encoding="utf-8")
    return prompt


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert len(errors) == 1, result.stderr
    return errors[0]


def test_markdown_and_json_agree_and_repeat_byte_for_byte(run: Run, kb: Path) -> None:
    vault = ("--vault", str(DATA / "notes"))
    markdown = run("build-context", str(kb), *vault)
    assert markdown.returncode == 0, markdown.stderr
    out = markdown.stdout
    assert out.startswith(
        "## User memory\n**User's explicitly referenced memories (ground truth):**\n"
        "- [REFERENCED #1] [fact] The Leaf service uses PostgreSQL 16 "
        "(answers: Which database does Leaf use?)\n"
    )
    for heading in ("## Notes pinned by user", "## Entity context", "## Referenced documents"):
        assert f"\n{heading}\n" in out
    assert "- [[Missing Note]]: Warning - Document not found\n" in out
    assert markdown.stdout == run("build-context", str(kb), *vault).stdout
    block = json.loads(run("build-context", str(kb), *vault, "--format", "json").stdout)
    assert list(block) == [
        "budget",
        "tokens",
        "tokenizer",
        "over_budget",
        "sections",
        "dropped",
        "warnings",
        "markdown",
    ]
    assert block["markdown"] == out
    assert block["budget"] == 1500 and block["tokenizer"] == "o200k_base"
    assert block["tokens"] <= 1500 and block["over_budget"] is False
    assert "@nope: No memory or context found with ID: nope" in block["warnings"]
    assert block["sections"][0]["name"] == "User memory"


def test_standard_input_options_and_referenced_only(run: Run, kb: Path) -> None:
    result = run(
        "build-context",
        "-",
        "--budget",
        "200",
        "--attach",
        "#9",
        "--pin",
        "@other_claim_a010",
        "--query",
        "",
        "--format",
        "json",
        stdin="Only #42 here.",
    )
    assert result.returncode == 0, result.stderr
    block = json.loads(result.stdout)
    labels = [(i["number"], i["label"]) for i in block["sections"][0]["items"]]
    assert labels[:3] == [(42, "REFERENCED #42"), (9, "ATTACHED"), (10, "CONV PINNED")]
    assert block["budget"] == 200 and block["tokens"] <= 200
    only = run("build-context", "-", "--referenced-only", stdin="#42 and\n@leaf_ctx")
    assert only.returncode == 0, only.stderr
    assert only.stdout.splitlines() == [
        "- [REFERENCED #42] [preference] I prefer to do deep work in the morning "
        "(answers: What time do I prefer for deep work?; When should meetings be scheduled?)",
        "- [REFERENCED @leaf_ctx] [decision] [contested] The Leaf service launches in March",
        "- [REFERENCED @leaf_ctx] [fact] Leaf deploys happen every Tuesday and Thursday",
        "- [REFERENCED @leaf_ctx] [fact] The Leaf service uses PostgreSQL 16 "
        "(answers: Which database does Leaf use?)",
    ]


def test_a_budget_below_the_referenced_claims_warns_on_stderr_in_json(run: Run, kb: Path) -> None:
    result = run("build-context", str(kb), "--budget", "10", "--format", "json")
    assert result.returncode == 0, result.stderr
    block = json.loads(result.stdout)
    assert block["over_budget"] is True and block["tokens"] > 10
    assert block["warnings"][-1].startswith("the referenced claims alone take")


def test_errors_are_one_line(run: Run, kb: Path, tmp_path: Path) -> None:
    assert "cannot read" in one_error_line(run("build-context", str(tmp_path / "missing.md")))
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"\xff\xfe @x")
    assert "not valid UTF-8" in one_error_line(run("build-context", str(bad)))
    line = one_error_line(run("build-context", str(kb), "--attach", "@nope"))
    assert "--attach @nope: No memory or context found with ID: nope" in line
    line = one_error_line(run("build-context", str(kb), "--pin", "[[Project Plan]]"))
    assert "a note" in line


@pytest.mark.parametrize(
    "args",
    [
        ("--budget", "0"),
        ("--budget", "many"),
        ("--format", "xml"),
    ],
)
def test_usage_errors_exit_2(run: Run, kb: Path, args: tuple[str, ...]) -> None:
    result = run("build-context", str(kb), *args)
    assert result.returncode == 2 and result.stdout == ""


def test_the_demo_prints_its_context_block(run: Run) -> None:
    assert run("import", str(DEMO / "memory.jsonl")).returncode == 0
    result = run("--vault", str(DEMO / "vault"), "build-context", str(DEMO / "prompt.md"))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("## User memory\n**User's explicitly referenced memories")
    assert "- [REFERENCED @prefer_morning_a3f2] [preference] I prefer to do deep work" in out
    assert "### [[Project Alpha Kickoff]] [id:projects/alpha-kickoff.md]\n" in out
    assert "### @Alice (Person) [id:alice_person_entity]  ← directly mentioned\n" in out
    assert "@not_a_ref" not in out and "lumen.dev" not in out.split("## Entity context")[0]
    # Both of the prompt's broken references, on stderr and in the block the LLM reads.
    assert result.stderr.splitlines() == [
        "lsp-memory: warning: @no_such_thing: No memory or context found with ID: no_such_thing",
        "lsp-memory: warning: [[Missing Note]]: Note not found: Missing Note",
    ]
    assert "- [NOT FOUND @no_such_thing] No memory or context found with ID: no_such_thing\n" in out
    assert "- [[Missing Note]]: Warning - Document not found\n" in out


def test_markdown_mode_writes_each_warning_on_stderr(run: Run, kb: Path) -> None:
    """The warnings existed only in --json: a user of the Markdown block never saw them."""
    result = run("build-context", "-", "--budget", "10", stdin="#4, @nope and [[Nowhere]]")
    assert result.returncode == 0, result.stderr
    warned = result.stderr.splitlines()
    assert all(line.startswith("lsp-memory: warning: ") for line in warned)
    assert [line for line in warned if "relevance floor" not in line] == [
        "lsp-memory: warning: @nope: No memory or context found with ID: nope",
        "lsp-memory: warning: [[Nowhere]]: no vault to look in (set `vaults` in "
        "lsp-memory.toml or pass --vault DIR)",
        "lsp-memory: warning: #4: claim #4 is superseded by #1 @leaf_active_a001",
        "lsp-memory: warning: the referenced claims alone take 40 tokens, over the budget of "
        "10; nothing else was added",
    ]
    referenced = run("build-context", "-", "--referenced-only", stdin="#42 and @nope")
    assert [line for line in referenced.stderr.splitlines() if "floor" not in line] == [
        "lsp-memory: warning: @nope: No memory or context found with ID: nope"
    ]
    as_json = run("build-context", "-", "--format", "json", stdin="#42 and @nope")
    assert as_json.stderr == ""
    warnings = json.loads(as_json.stdout)["warnings"]
    assert "@nope: No memory or context found with ID: nope" in warnings


def test_an_embedded_attachment_is_listed_as_there_not_as_missing(run: Run) -> None:
    """``![[diagram.png]]`` names a file of the vault: the block says it is an attachment it
    does not include. Before, the LLM read "Warning - Document not found"."""
    vault = ("--vault", str(DATA / "notes"))
    result = run("build-context", "-", *vault, stdin="See ![[diagram.png]] and [[Nowhere]].\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert (
        "- [[diagram.png]] (images/diagram.png): an attached file (not a note), not included"
        in lines
    )
    assert "- [[Nowhere]]: Warning - Document not found" in lines
    assert "diagram.png" not in result.stderr
