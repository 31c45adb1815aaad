"""Emacs eglot as the README configures it: Debian's Emacs 28 with eglot 1.9 and markdown-mode,
in batch, takes the README's eglot snippets as its init file, visits a note in a vault that is
its own git repository and uses the server through eglot's commands (``driver.el``):
completion at ``@``, ``#`` and ``[[``, hover, go to definition, flymake diagnostics, rename,
the context block and shutdown. A second run follows the README for notes inside a larger
repository: the folder with ``lsp-memory.toml`` is the project, and the user comes from the
folder's ``.dir-locals.el``, above the server's command line.

The driver records what Emacs showed; the assertions are here. Without ``emacs`` with eglot
and markdown-mode the tests are skipped, unless ``LSP_MEMORY_REQUIRE_EMACS=1`` (CI)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

from tests.conftest import DATA, USER
from tests.nvim.test_headless import prepare, text

ROOT = Path(__file__).parents[2]
README = ROOT / "README.md"
DRIVER = Path(__file__).with_name("driver.el")
TIMEOUT_S = 180
"""For one Emacs run; driver.el's own watchdog (150 s) writes what it saw before this."""

STATEMENT_1 = "The Leaf service uses PostgreSQL 16"  # claim #1, @leaf_active_a001
STATEMENT_42 = "I prefer to do deep work in the morning"  # claim #42, @prefer_morning_a3f2

# The note driver.el visits; it finds its positions by these texts, so change both together.
# The emojis make UTF-16 positions differ from Emacs's character columns.
NOTE = """\
# Headless check

Database: @leaf_active_a001 and #42 here
Plan 🚀 see [[Project Plan]] soon
Broken 🚀 @no_such_thing_xyz here
Missing 🚀 [[No Such Note]] here

Complete a claim: @pre
Complete a number: #4
Complete a note: [[Proj
Remember me: I cycle to work on Mondays 🚲
"""

# The README's elisp snippets, by their first line, and the example values put in them.
INIT = ";; Emacs eglot: in your init file"
DIR_LOCALS = ";; .dir-locals.el in the notes folder"
PROJECT = ";; Notes inside a larger git repository"
EXAMPLE_STORE = '"/home/priya/memory"'
EXAMPLE_USER = '"priya"'

# Started the way a user's Emacs starts, minus the init file: the site's start-up files
# (Debian's set the package directories), then `package-activate-all'.
PROBE = (
    "(progn (package-activate-all)"
    ' (princ (mapconcat (lambda (f) (if (locate-library f) f "-"))'
    ' \'("eglot" "markdown-mode") " ")))'
)


@dataclass(frozen=True)
class Run:
    """What one Emacs run recorded (``driver.el``'s JSON) and where it ran."""

    observed: dict[str, Any]
    log: list[str]
    output: str
    events: Path
    vault: Path
    doc: Path

    def seen(self, name: str) -> Any:
        """What the driver recorded for the check ``name``; a failure when it failed."""
        if name not in self.observed:
            pytest.fail(f"driver.el did not get to {name!r}\n{self.context()}")
        value = self.observed[name]
        if isinstance(value, dict) and set(value) == {"error"}:
            pytest.fail(f"{name}: {value['error']}\n{self.context()}")
        return value

    def context(self) -> str:
        stopped = {k: v for k, v in self.observed.items() if k in {"driver", "watchdog"}}
        return (
            f"server messages: {self.log}\nchecks recorded: {list(self.observed)} {stopped}\n"
            f"Emacs output:\n{self.output}\neglot's events log: {self.events}"
        )


def snippet(first_line: str) -> str:
    """The README's elisp block that starts with ``first_line``."""
    readme = README.read_text(encoding="utf-8")
    blocks = re.findall(r"^```elisp\n(.*?)^```$", readme, flags=re.MULTILINE | re.DOTALL)
    found = [block for block in blocks if block.startswith(first_line)]
    if len(found) != 1:
        pytest.fail(
            f"README.md has {len(found)} elisp blocks starting {first_line!r}, not one: "
            "tests/emacs runs Emacs with exactly that snippet"
        )
    return str(found[0])


def elisp_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def example(block: str, replacements: dict[str, str]) -> str:
    """The README's ``block`` with its example values replaced."""
    for old, new in replacements.items():
        if old not in block:
            pytest.fail(
                f"the README's snippet no longer has the example value {old}, which "
                f"tests/emacs replaces:\n{block}"
            )
        block = block.replace(old, new)
    return block


def environment(work: Path) -> dict[str, str]:
    """A fresh HOME in ``work``; the README's `lsp-memory` command is the one installed
    beside this Python."""
    scripts = Path(sys.executable).parent
    if not (scripts / "lsp-memory").exists():
        pytest.fail(f"no lsp-memory command beside {sys.executable} (pip install -e .)")
    return {
        "PATH": f"{scripts}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(work / "home"),
        "XDG_CONFIG_HOME": str(work / "config"),
        "XDG_DATA_HOME": str(work / "data"),
        "XDG_STATE_HOME": str(work / "state"),
        "XDG_CACHE_HOME": str(work / "cache"),
        "LANG": "C.UTF-8",
    }


def emacs_or_skip(env: dict[str, str]) -> str:
    found = shutil.which("emacs", path=env["PATH"])
    install = "Debian: apt-get install emacs-nox elpa-eglot elpa-markdown-mode"
    if found is None:
        reason = f"emacs is not on PATH ({install})"
    else:
        probe = subprocess.run(
            [found, "--batch", "--eval", PROBE],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        if probe.stdout.strip() == "eglot markdown-mode":
            return found
        reason = f"{found} lacks eglot or markdown-mode ({install}): {probe.stdout}{probe.stderr}"
    if os.environ.get("LSP_MEMORY_REQUIRE_EMACS") == "1":
        pytest.fail(f"{reason}, and LSP_MEMORY_REQUIRE_EMACS=1 requires it")
    pytest.skip(reason)


def git_init(folder: Path) -> None:
    subprocess.run(["git", "init", "-q", str(folder)], check=True, timeout=60)


def run_emacs(
    emacs: str,
    env: dict[str, str],
    *,
    work: Path,
    init: str,
    doc: Path,
    checks: str,
    vault: Path,
) -> Run:
    """Run driver.el with ``init`` as the init file on ``doc``; what it recorded."""
    (work / "init.el").write_text(init, encoding="utf-8")
    out = work / f"{checks}.json"
    env = {
        **env,
        "LSP_MEMORY_EMACS_INIT": str(work / "init.el"),
        "LSP_MEMORY_EMACS_DOC": str(doc),
        "LSP_MEMORY_EMACS_OUT": str(out),
        "LSP_MEMORY_EMACS_CHECKS": checks,
    }
    try:
        result = subprocess.run(
            [emacs, "--batch", "-l", str(DRIVER)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            cwd=doc.parent,
            env=env,
            timeout=TIMEOUT_S,
            check=False,
        )
        output = f"exit {result.returncode}\n{result.stdout}{result.stderr}"
    except subprocess.TimeoutExpired as error:
        output = f"timed out after {error.timeout} s\n{text(error.stdout)}{text(error.stderr)}"
    if not out.exists():
        pytest.fail(f"driver.el wrote no results\n{output}")
    recorded = json.loads(out.read_text(encoding="utf-8"))
    observed = dict(recorded.get("observed") or {})
    log = list(recorded.get("log") or [])
    return Run(observed, log, output, out.with_name(out.name + ".events"), vault, doc)


@pytest.fixture(scope="module")
def emacs_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The README's init snippet with the fixture's store and user, on a note in a vault
    that is a git repository of its own."""
    work = tmp_path_factory.mktemp("eglot")
    env = environment(work)
    emacs = emacs_or_skip(env)
    store, vault = prepare(work)
    git_init(vault)
    doc = vault / "headless.md"
    doc.write_text(NOTE, encoding="utf-8")
    values = {EXAMPLE_STORE: elisp_string(str(store)), EXAMPLE_USER: elisp_string(USER)}
    init = example(snippet(INIT), values)
    return run_emacs(emacs, env, work=work, init=init, doc=doc, checks="all", vault=vault)


@pytest.fixture(scope="module")
def nested_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """Notes inside a larger git repository, with the README's project snippet and an
    ``lsp-memory.toml``; the command line names another user than the folder's
    ``.dir-locals.el``, which wins."""
    work = tmp_path_factory.mktemp("eglot-nested")
    env = environment(work)
    emacs = emacs_or_skip(env)
    store, vault = prepare(work)
    repo = work / "repo"
    repo.mkdir()
    git_init(repo)
    notes = vault.rename(repo / "notes")
    (notes / "lsp-memory.toml").write_text("# the notes folder: eglot's root\n", "utf-8")
    dir_locals = example(snippet(DIR_LOCALS), {EXAMPLE_USER: elisp_string(USER)})
    (notes / ".dir-locals.el").write_text(dir_locals, encoding="utf-8")
    doc = notes / "headless.md"
    doc.write_text(NOTE, encoding="utf-8")
    values = {EXAMPLE_STORE: elisp_string(str(store)), EXAMPLE_USER: elisp_string("mallory")}
    init = example(snippet(INIT), values) + snippet(PROJECT)
    return run_emacs(emacs, env, work=work, init=init, doc=doc, checks="settings", vault=notes)


def position(needle: str, delta: int = 0, note: str = NOTE) -> tuple[int, int]:
    """Line and character column (what Emacs counts: code points) of ``needle`` in
    ``note``, plus ``delta``."""
    for number, line in enumerate(note.splitlines()):
        if needle in line:
            return number, line.index(needle) + delta
    raise AssertionError(f"not in the note: {needle}")


def diagnostics_on(run: Run, needle: str, name: str = "diagnostics") -> list[dict[str, Any]]:
    line, column = position(needle)
    found: list[dict[str, Any]] = run.seen(name)
    return [d for d in found if d["line"] == line and d["column"] == column]


def path_of(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path)).resolve()


def test_eglot_ensure_starts_the_server_on_the_git_repository(emacs_run: Run) -> None:
    start = emacs_run.seen("start")
    assert start["mode"] == "markdown-mode", start
    assert start["language"] == "markdown", start
    assert Path(start["root"]).resolve() == emacs_run.vault.resolve(), start
    assert [path_of(uri) for uri in start["folders"]] == [emacs_run.vault.resolve()], start


def test_flymake_warns_of_an_unresolved_reference(emacs_run: Run) -> None:
    found = diagnostics_on(emacs_run, "@no_such_thing_xyz")
    assert len(found) == 1, emacs_run.seen("diagnostics")
    assert found[0]["type"] == "eglot-warning", found
    assert "no_such_thing_xyz" in found[0]["text"], found
    # The range's end too is in characters, after an emoji (UTF-16: two units).
    assert found[0]["end"] == position("@no_such_thing_xyz", len("@no_such_thing_xyz"))[1], found


def test_flymake_warns_of_a_broken_link(emacs_run: Run) -> None:
    found = diagnostics_on(emacs_run, "[[No Such Note]]")
    assert len(found) == 1, emacs_run.seen("diagnostics")
    assert found[0]["type"] == "eglot-warning", found
    assert "broken-link" in found[0]["text"] and "No Such Note" in found[0]["text"], found


@pytest.mark.parametrize("needle", ["@leaf_active_a001", "#42", "[[Project Plan]]"])
def test_no_diagnostic_on_what_resolves(emacs_run: Run, needle: str) -> None:
    assert diagnostics_on(emacs_run, needle) == [], emacs_run.seen("diagnostics")


@pytest.mark.parametrize(
    ("needle", "shown"),
    [
        ("@leaf_active_a001", STATEMENT_1),
        ("#42", STATEMENT_42),
        ("[[Project Plan]]", "Project Plan"),
    ],
)
def test_eldoc_shows_the_hover(emacs_run: Run, needle: str, shown: str) -> None:
    hover = emacs_run.seen(f"hover {needle}")
    assert shown in hover["text"], hover


def test_eldoc_highlights_the_reference(emacs_run: Run) -> None:
    # eglot asks for documentHighlight along with each eldoc hover: #42 is there once.
    assert emacs_run.seen("hover #42")["highlights"] == 1, emacs_run.seen("hover #42")


def test_go_to_definition_of_a_link_visits_the_note(emacs_run: Run) -> None:
    found = emacs_run.seen("definition [[Project Plan]]")
    assert Path(found["file"]).resolve() == (emacs_run.vault / "project-plan.md").resolve(), found
    assert found["line"] == "# Project Plan", found


def test_go_to_definition_of_a_claim_visits_its_page(emacs_run: Run) -> None:
    found = emacs_run.seen("definition @leaf_active_a001")
    page = Path(found["file"])
    assert page.suffix == ".md" and emacs_run.vault not in page.parents, found
    assert STATEMENT_1 in page.read_text(encoding="utf-8"), found
    # eglot-extend-to-xref (README): the page outside the vault is served by the same server.
    assert found["managed"] is True and found["servers"] == 1, found


@pytest.mark.parametrize(
    ("check", "line", "listed"),
    [
        ("complete @pre", "Complete a claim: @prefer_morning_a3f2", None),
        ("complete #4", "Complete a number: #42", ["#4", "#42"]),
        ("complete [[Proj", "Complete a note: [[Project Plan]]", None),
        # Typed in Emacs first: the server completes on the text eglot sent it.
        ("complete typed @leaf_c", "Typed: @leaf_ctx", ["@leaf_ctx", "@leaf_contested_a002"]),
    ],
)
def test_completion_inserts_the_chosen_reference(
    emacs_run: Run, check: str, line: str, listed: list[str] | None
) -> None:
    """``listed``: ``None`` when the only candidate was completed in place, else some of
    what *Completions* listed, where RET chose the reference."""
    found = emacs_run.seen(check)
    assert found["line"] == line, found
    assert found["after_cursor"] == "", found
    if listed is None:
        assert found["listed"] is None, found
    else:
        assert set(listed) <= set(found["listed"] or ()), found


def test_diagnostics_follow_the_completed_text(emacs_run: Run) -> None:
    # @pre and #4 (superseded) were warned of; completed, they resolve to active claims.
    diagnostics = emacs_run.seen("diagnostics after completing")
    assert any("no_such_thing_xyz" in d["text"] for d in diagnostics), diagnostics


def test_build_context_command_shows_the_block(emacs_run: Run) -> None:
    block = emacs_run.seen("build context")
    assert STATEMENT_1 in block and STATEMENT_42 in block, block
    # Typed and completed in Emacs: the server builds on the buffer's text, not the file's.
    assert "[REFERENCED @leaf_ctx]" in block, block


def test_rename_a_note_rewrites_its_title_and_links(emacs_run: Run) -> None:
    renamed = emacs_run.seen("rename [[Project Plan]]")
    assert renamed["line"] == "Plan 🚀 see [[Project Roadmap]] soon", renamed
    assert len(renamed["asked"]) == 1, renamed  # eglot asks before editing unvisited files
    vault = emacs_run.vault
    assert (vault / "project-plan.md").read_text("utf-8").startswith("# Project Roadmap\n")
    assert "[[Project Roadmap#Milestones]]" in (vault / "alice.md").read_text("utf-8")
    assert "[[Project Roadmap]]" in (vault / "old-plan.md").read_text("utf-8")
    saved = emacs_run.doc.read_text("utf-8")
    assert "Complete a note: [[Project Roadmap]]" in saved and "[[Project Plan]]" not in saved
    # Linked by file name, which eglot cannot rename: unchanged.
    meeting = (DATA / "notes" / "meeting.md").read_text("utf-8")
    assert (vault / "meeting.md").read_text("utf-8") == meeting


def test_rename_a_claim_rewrites_its_references(emacs_run: Run) -> None:
    renamed = emacs_run.seen("rename @leaf_active_a001")
    assert renamed["line"] == "Database: @leaf_postgres and #42 here", renamed
    saved = emacs_run.doc.read_text("utf-8")
    assert "@leaf_postgres" in saved and "@leaf_active_a001" not in saved, saved


def test_shutdown_is_answered_without_a_traceback(emacs_run: Run) -> None:
    # eglot-shutdown fails when the shutdown request gets no answer; then eglot 1.9 sends
    # exit and kills the process at once, so its exit status says nothing about the server.
    ended = emacs_run.seen("shutdown")
    assert "Traceback" not in ended["stderr"], ended["stderr"]


def test_nested_notes_folder_is_the_project_and_dir_locals_set_the_user(
    nested_run: Run,
) -> None:
    start = nested_run.seen("start")
    notes = nested_run.vault.resolve()
    assert Path(start["root"]).resolve() == notes, start
    assert [path_of(uri) for uri in start["folders"]] == [notes], start
    # The command line says mallory; .dir-locals.el says ann, whose claim this is.
    assert STATEMENT_1 in nested_run.seen("hover @leaf_active_a001")["text"]


def test_nested_notes_get_diagnostics_after_the_settings_apply(nested_run: Run) -> None:
    diagnostics = nested_run.seen("diagnostics")
    assert diagnostics_on(nested_run, "@no_such_thing_xyz"), diagnostics
    assert not diagnostics_on(nested_run, "@leaf_active_a001"), diagnostics
