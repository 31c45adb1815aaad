"""The VS Code extension inside a real VS Code: code-server 4.139 (VS Code 1.139) with the
packaged ``.vsix`` installed, on a copy of the demo vault and store, driven through Debian's
Chromium as a user drives it (``workbench.py``). The tests run in order in one window:

completion for ``@``, ``#`` and ``[[`` (the text the accepted item leaves in the editor, and
where the next typed word lands), hover, go to definition (the record page, the note), a broken
``[[link]]`` in the Problems panel and its "Create note" fix, the code lens, the commands from
the palette (Build context, Search memory, Remember selection, Restart server), a file renamed
in the Explorer, "Link to [[Title]]" on an unlinked mention, a superseded claim struck
through, a related claim offered for a paragraph, the language status item, a folder that is
not a notes folder, the errors a user meets (the server program missing, a server that keeps
crashing, one that cannot start: one message each), and an untrusted folder, served once
trusted.

``LSP_MEMORY_SCREENSHOTS=<folder>`` (``make screenshots``: docs/images) writes the README's
pictures. Needs tests/vscode/install.sh's code-server and Node 24, Debian's chromium,
playwright and ``make vscode``'s .vsix; skipped without them unless
``LSP_MEMORY_REQUIRE_VSCODE=1`` (CI).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from lsp_memory.services.memory.interchange import import_records
from lsp_memory.store.sqlite import open_store
from tests.vscode.workbench import (
    ROOT,
    STEP_S,
    Workbench,
    chromium_or_skip,
    code_server,
    code_server_or_skip,
    playwright_or_skip,
    until,
    vsix_or_skip,
)

DEMO = ROOT / "examples" / "demo"
USER = "priya"
CLAIMS = 32
"""The claims of examples/demo/memory.jsonl."""

# The note the tests type into; they find their places by these line numbers (1-based).
SCRATCH = """\
# Scratch

Claim:
Number:
Note:
Broken: [[Nowhere Note]] here
Search:
I cycle to work on Mondays
"""
CLAIM_LINE, NUMBER_LINE, NOTE_LINE, BROKEN_LINE, SEARCH_LINE, REMEMBER_LINE = 3, 4, 5, 6, 7, 8

# A language server that answers `initialize`, then dies: the crash loop a user would meet.
CRASHING_SERVER = """\
import json, sys

def read():
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        if not line.strip():
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))

while True:
    message = read()
    if message.get("method") == "initialize":
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {}}})
        sys.stdout.buffer.write(b"Content-Length: %d\\r\\n\\r\\n%s" % (len(body), body.encode()))
        sys.stdout.buffer.flush()
    elif message.get("method") == "initialized":
        sys.stderr.write("RuntimeError: the test server crashed on purpose\\n")
        sys.exit(1)
"""


def server_program() -> str:
    """The language server as the README tells users to set it: this environment's
    ``lsp-memory`` (else its Python, which the extension runs with ``-m lsp_memory serve``)."""
    program = Path(sys.executable).with_name("lsp-memory")
    return str(program) if program.exists() else sys.executable


def executable(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return str(path)


class Window:
    """The test's VS Code window and its folders."""

    def __init__(self, bench: Workbench, notes: Path, plain: Path, store: Path, work: Path):
        self.bench = bench
        self.notes = notes
        self.plain = plain
        self.store = store
        self.work = work

    def line(self, number: int, name: str = "scratch.md") -> str:
        return (self.notes / name).read_text(encoding="utf-8").splitlines()[number - 1]

    def ready(self, claims: int | None = CLAIMS, timeout: float = STEP_S) -> str:
        """Waits for the language status to count ``claims`` (any number: ``None``): the
        server runs and has indexed."""
        counted = re.compile(rf"lsp-memory: {claims if claims is not None else '[0-9,]+'} claims")

        def said() -> str | None:
            text = self.bench.status()
            return text if counted.search(text) else None

        return until(said, f"the language status to say {counted.pattern}", timeout=timeout)


@pytest.fixture(scope="module")
def window(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Window]:
    browser_path = chromium_or_skip()
    code_server_or_skip()
    playwright_or_skip()
    vsix = vsix_or_skip()
    from playwright.sync_api import sync_playwright

    work = tmp_path_factory.mktemp("vscode")
    notes, store, plain = work / "notes", work / "store", work / "plain"
    shutil.copytree(DEMO / "vault", notes)
    shutil.copy(DEMO / "prompt.md", notes / "prompt.md")
    (notes / "scratch.md").write_text(SCRATCH, encoding="utf-8")
    (notes / "lsp-memory.toml").write_text(
        f'store = "../store"\nuser = "{USER}"\ncache = "../cache"\n', encoding="utf-8"
    )
    with open_store(store) as opened:
        import_records(
            opened, (DEMO / "memory.jsonl").read_bytes(), user=USER, source="memory.jsonl"
        )
    plain.mkdir()
    (plain / "README.md").write_text("# Not notes\n\nSee @prefer_morning_a3f2.\n", "utf-8")
    # The server program is a setting of machine scope: a remote window (code-server is one)
    # reads it from the remote settings, and ignores changes to it in the user settings.
    remote = {"lspMemory.serverPath": server_program()}
    settings: dict[str, Any] = {
        "security.workspace.trust.enabled": False,
        "workbench.startupEditor": "none",
        "workbench.colorTheme": "Light Modern",  # an older name is migrated: a rewrite
        "workbench.secondarySideBar.defaultVisibility": "hidden",
        "workbench.tips.enabled": False,
        "workbench.editor.useModal": "off",  # the README preview in a tab, not an overlay
        "chat.disableAIFeatures": True,
        "editor.minimap.enabled": False,
        "extensions.ignoreRecommendations": True,
        "telemetry.telemetryLevel": "off",
        "update.mode": "none",
        "git.enabled": False,
        "files.autoSave": "off",
    }
    shots = os.environ.get("LSP_MEMORY_SCREENSHOTS")
    with (
        code_server(work, notes, vsix, settings, remote) as server,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=browser_path, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 600})
            page.set_default_timeout(STEP_S * 1000)
            bench = Workbench(page, server, ROOT / shots if shots else None)
            bench.open_folder(notes)
            bench.palette("View: Close Primary Side Bar")  # room for the pictures
            yield Window(bench, notes, plain, store, work)
        finally:
            browser.close()


@pytest.fixture
def bench(window: Window) -> Workbench:
    return window.bench


def test_language_status_counts_the_memory(window: Window, bench: Workbench) -> None:
    bench.open_file("prompt.md")
    # The first start indexes the demo (embeddings included): the one long wait.
    text = window.ready(timeout=120)
    # The counts come when the first sync ends; embedding goes on after it (no progress for
    # that), so "pending" may still be above 0 here.
    assert re.search(r"lsp-memory: 32 claims,? 8 notes · \d+ embedded, \d+ pending", text), text


def test_code_lens_shows_the_context_size(bench: Workbench) -> None:
    """prompt.md was opened while the first index sync ran (no lens then): the server asks
    VS Code for the lenses again once it has indexed, without an edit."""

    def lenses() -> list[str]:
        return [lens for lens in bench.code_lenses() if lens.startswith("context:")]

    shown = until(lenses, "the code lens on prompt.md", timeout=10)
    assert re.fullmatch(r"context: \d+ / 1500 tokens", shown[0]), shown


def test_claim_completion_inserts_the_reference(window: Window, bench: Workbench) -> None:
    bench.open_file("scratch.md")
    bench.go_to(CLAIM_LINE)
    bench.type(" @pre")
    rows = bench.suggestions("@prefer_morning_a3f2")
    assert rows[0].startswith("@prefer_morning_a3f2"), rows
    # Ctrl+Space beside the list: the chosen item's documentation (the claim).
    bench.page.keyboard.press("Control+Space")
    details = bench.page.locator(".suggest-details-container .suggest-details")
    until(lambda: "I prefer to do deep work" in details.inner_text(), "the item's details")
    bench.shot(
        "vscode-completion",
        bench.page.locator(".editor-group-container.active .title"),
        bench.page.locator(".suggest-widget.visible"),
        details,
    )
    label = bench.accept_suggestion("@prefer_morning_a3f2")
    # The item's kind ends its label: a claim is a Value, not a plain "abc" word (Text).
    assert label.rsplit(", ", 1)[-1] == "Value", label
    bench.type(" ok")
    bench.save()
    assert window.line(CLAIM_LINE) == "Claim: @prefer_morning_a3f2 ok"


def test_number_completion_inserts_the_number(window: Window, bench: Workbench) -> None:
    bench.go_to(NUMBER_LINE)
    bench.type(" #1")
    rows = bench.suggestions("#1")
    label = bench.accept_suggestion("#1").split(",")[0]
    assert re.fullmatch(r"#1\d*", label), rows
    bench.type(" ok")
    bench.save()
    assert window.line(NUMBER_LINE) == f"Number: {label} ok"


def test_note_completion_closes_the_link(window: Window, bench: Workbench) -> None:
    bench.go_to(NOTE_LINE)
    # VS Code closes the brackets as they are typed: the line reads "Note: [[Proj]]".
    bench.type(" [[Proj")
    bench.suggestions("Project Alpha Kickoff")
    bench.accept_suggestion("Project Alpha Kickoff")
    bench.type(" ok")
    bench.save()
    typed = window.line(NOTE_LINE)
    bench.page.keyboard.press("Control+Z")  # take back " ok" for the tests that follow
    bench.save()
    assert window.line(NOTE_LINE) == "Note: [[Project Alpha Kickoff]]"
    # The edit covers the "]]" VS Code closed: the next word lands after the link.
    assert typed == "Note: [[Project Alpha Kickoff]] ok"


def test_hover_shows_the_claim(bench: Workbench) -> None:
    bench.go_to(CLAIM_LINE, 12)
    hover = bench.hover()
    text = hover.inner_text()
    assert re.search(r"Claim #\d+ · @prefer_morning_a3f2 · preference · active", text), text
    assert "I prefer to do deep work in the morning" in text
    bench.shot("vscode-hover", bench.page.locator(".editor-group-container.active .title"), hover)
    bench.page.keyboard.press("Escape")


def test_definition_opens_the_record_page(bench: Workbench) -> None:
    bench.go_to(CLAIM_LINE, 12)
    bench.page.keyboard.press("F12")
    bench.active_tab("prefer_morning_a3f2.md")
    text = until(bench.editor_lines, "the record page's text")
    assert re.match(r"# Claim #\d+ · @prefer_morning_a3f2 I prefer to do deep work", text), text
    bench.page.keyboard.press("Control+W")
    bench.active_tab("scratch.md")


def test_definition_opens_the_note(bench: Workbench) -> None:
    bench.go_to(NOTE_LINE, 12)
    bench.page.keyboard.press("F12")
    bench.active_tab("alpha-kickoff.md")
    text = until(bench.editor_lines, "the note's text")
    assert "Project Alpha Kickoff" in text, text
    bench.page.keyboard.press("Control+W")
    bench.active_tab("scratch.md")


def test_broken_link_is_a_problem_with_a_create_note_fix(window: Window, bench: Workbench) -> None:
    bench.page.keyboard.press("Control+Shift+M")
    row = bench.page.locator(".markers-panel .monaco-list-row[aria-label*='Nowhere Note']")
    row.wait_for()
    assert (row.get_attribute("aria-label") or "").startswith(
        "Warning: Note not found: Nowhere Note at line 6"
    )
    row.click()
    # The click reveals the link in the editor; the row keeps the focus.
    until(lambda: bench.cursor()[0] == BROKEN_LINE, "the link revealed")
    fix = bench.page.locator(
        ".context-view .action-label, .action-widget .monaco-list-row",
        has_text="Create note 'Nowhere Note'",
    ).first
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    # Ctrl+. on the row now and then opens no menu within 20 s (3 runs in 6 on 2026-11-25,
    # with the server of before issue 21's changes as with the one after; 1 full run in 4 on
    # 2026-11-26 after three tries): ask again.
    for _ in range(6):
        row.focus()
        bench.page.keyboard.press("Control+.")
        with suppress(PlaywrightTimeout):
            fix.wait_for(timeout=5000)
            break
        bench.page.keyboard.press("Escape")  # a menu that opened without the fix
    fix.wait_for()
    bench.shot(
        "vscode-diagnostics",
        bench.page.locator(".editor-group-container.active .title"),
        bench.page.locator(".markers-panel"),
        fix,
    )
    # The keyboard, as the shortcut's user goes on: the menu opens on its first item.
    fix.hover()
    bench.page.keyboard.press("Enter")
    note = window.notes / "Nowhere Note.md"
    until(
        lambda: note.exists() and note.read_text(encoding="utf-8").startswith("# Nowhere Note"),
        "the fix to write Nowhere Note.md",
    )
    # The server sees the new note and checks the open documents again: no edit needed.
    until(lambda: row.count() == 0, "the warning to go", timeout=10)
    assert not any("Nowhere Note" in problem for problem in bench.problems())


def test_build_context_opens_the_block_beside_the_note(bench: Workbench) -> None:
    bench.page.keyboard.press("Control+1")
    bench.hide_panel()
    bench.clear_notifications()
    bench.palette("lsp-memory: Build context")
    group = bench.page.locator(
        ".editor-group-container",
        has=bench.page.locator(".tab.active[aria-label^='scratch (context).md']"),
    )
    group.wait_for()
    text = until(lambda: bench.editor_lines(group), "the context block")
    assert text.startswith("## User memory"), text
    assert "[REFERENCED @prefer_morning_a3f2] [preference] I prefer to do deep work" in text
    message = until(
        lambda: [m for m in bench.notifications() if "context block of" in m],
        "the context block's message",
    )
    size = re.search(r"lsp-memory: context block of (\d+) / 1500 tokens", message[0])
    assert size is not None, message
    # The note's code lens gives the same figure: it follows the memory as it changes
    # (the note made by the quick fix, the embeddings that went on after the first sync).
    lens = f"context: {size[1]} / 1500 tokens"
    until(lambda: lens in bench.code_lenses(), f"the code lens to say {lens!r}", timeout=10)
    assert bench.notification_button("context block of", "Copy to clipboard").is_visible()
    bench.shot(
        "vscode-context",
        bench.page.locator(".editor-group-container .title").first,
        group,
        bench.page.locator(".notifications-toasts .notification-toast").first,
    )
    # Read-only and never served: not dirty, no code lens or hints of its own.
    assert group.locator(".tab.active.dirty").count() == 0
    assert group.locator(".codelens-decoration").count() == 0
    assert group.locator("[class*='inlay']").count() == 0
    # Building again shows the new block in the same document.
    bench.clear_notifications()
    bench.palette("lsp-memory: Build context")
    until(lambda: [m for m in bench.notifications() if "context block of" in m], "the message")
    assert sum("(context).md" in tab for tab in bench.tabs()) == 1, bench.tabs()


def test_code_lens_builds_the_context(bench: Workbench) -> None:
    bench.page.keyboard.press("Control+1")
    bench.open_file("prompt.md")
    lens = bench.page.locator(".editor-group-container.active .codelens-decoration a").first
    lens.click()
    until(
        lambda: any(tab.startswith("prompt (context).md") for tab in bench.tabs()),
        "the prompt's context block",
    )
    bench.clear_notifications()


def server_search(window: Window, query: str) -> list[str]:
    """The references the server's hybrid search ranks first, as the CLI prints them."""
    found = subprocess.run(
        [server_program(), "--vault", ".", "search", query, "--json", "-k", "20"],
        cwd=window.notes,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("LSP_MEMORY_")},
    )
    return [hit["reference"] for hit in json.loads(found.stdout)]


def test_search_memory_keeps_the_ranking_and_inserts_the_choice(
    window: Window, bench: Workbench
) -> None:
    bench.page.keyboard.press("Control+1")
    bench.open_file("scratch.md")
    bench.go_to(SEARCH_LINE)
    bench.type(" ")
    bench.palette("lsp-memory: Search memory", closes=False)
    box = bench.page.locator(".quick-input-widget input")
    bench.page.locator(
        ".quick-input-widget .quick-input-title", has_text="Search memory"
    ).wait_for()
    # "launch" is in a context's reference (@alpha_launch), but the server ranks a claim
    # first: VS Code would sort the label match to the top. (A word, not a prefix like
    # "postgres": behind the relevance floor that finds one claim only.)
    box.fill("launch")
    descriptions = bench.page.locator(".quick-input-list .monaco-list-row .label-description")
    expected = server_search(window, "launch")

    def hits() -> list[str] | None:
        found = descriptions.all_inner_texts()
        return found if len(found) >= 3 else None

    shown = until(hits, "the search hits")
    assert [text.split(" · ")[0] for text in shown[:3]] == expected[:3], shown
    details = bench.page.locator(".quick-input-list .monaco-list-row .quick-input-list-label-meta")
    assert not any("⏎" in text for text in details.all_inner_texts())
    bench.page.keyboard.press("Enter")
    box.wait_for(state="hidden")
    bench.save()
    assert window.line(SEARCH_LINE) == f"Search: {expected[0]}"


def test_remember_selection_replaces_it_with_the_new_claim(
    window: Window, bench: Workbench
) -> None:
    bench.go_to(REMEMBER_LINE, 1)
    bench.page.keyboard.press("Shift+End")
    bench.palette("lsp-memory: Remember selection", closes=False)
    bench.page.locator(
        ".quick-input-list .monaco-list-row", has_text="replace it with its reference"
    ).click()
    message = until(
        lambda: [m for m in bench.notifications() if "remembered as" in m], "the message"
    )
    found = re.search(
        r"lsp-memory: remembered as (@\w+); the selection now references it\.", message[0]
    )
    assert found, message
    bench.save()
    assert window.line(REMEMBER_LINE) == found.group(1)
    window.ready(claims=CLAIMS + 1)
    bench.clear_notifications()


def test_renaming_a_note_in_the_explorer_rewrites_the_links_to_it(
    window: Window, bench: Workbench
) -> None:
    """F2 on the note in the Explorer: VS Code asks the server (willRenameFiles) for the
    edits that keep the links to it, asks the user (OK) and applies them to the open editor;
    then tells the server the file moved (didRenameFiles): no "Note not found" follows."""
    linker = window.notes / "linker.md"
    linker.write_text("# Linker\n\nSee [[Rename Me]] and [[Rename Me#Part|its part]].\n", "utf-8")
    bench.open_file("linker.md")
    window.ready(claims=None, timeout=120)  # at once when the tests before have run
    bench.page.keyboard.press("Control+Shift+M")
    broken = bench.page.locator(".markers-panel .monaco-list-row[aria-label*='Rename Me']")
    broken.first.wait_for()  # checked by the server before the note exists
    (window.notes / "Rename Me.md").write_text("Text.\n\n## Part\n\nMore.\n", "utf-8")
    until(lambda: broken.count() == 0, "the server to see Rename Me.md", timeout=10)
    bench.hide_panel()
    bench.palette("View: Show Explorer")
    row = bench.page.locator(".explorer-folders-view .monaco-list-row", has_text="Rename Me.md")
    row.click()
    bench.page.keyboard.press("F2")
    box = bench.page.locator(".explorer-folders-view .monaco-inputbox input")
    box.wait_for()
    box.fill("Renamed Note.md")
    bench.page.keyboard.press("Enter")
    # VS Code asks before applying an extension's edits to a file move.
    dialog = bench.page.locator(".monaco-dialog-box", has_text="wants to make refactoring changes")
    dialog.wait_for()
    dialog.locator(".monaco-button", has_text="OK").click()
    until((window.notes / "Renamed Note.md").exists, "the file renamed")
    # The edits go to linker.md's open editor, unsaved (files.autoSave is off here).
    bench.page.locator(".tab", has_text="linker.md").click()
    bench.active_tab("linker.md")
    until(
        lambda: "See [[Renamed Note]] and [[Renamed Note#Part|its part]]." in bench.editor_lines(),
        "linker.md's links rewritten",
    )
    bench.save()
    assert linker.read_text(encoding="utf-8") == (
        "# Linker\n\nSee [[Renamed Note]] and [[Renamed Note#Part|its part]].\n"
    )
    bench.page.keyboard.press("Control+Shift+M")
    time.sleep(2)  # a stale "Note not found: Renamed Note" would show by now
    assert not any("Renamed Note" in problem for problem in bench.problems())
    bench.hide_panel()
    bench.palette("View: Close Primary Side Bar")


def test_a_mention_is_linked_and_a_superseded_claim_struck_through(
    window: Window, bench: Workbench
) -> None:
    """A note's title written in the text gets the code action "Link to [[Title]]" (an
    unlinked mention), whose edit links it; a reference to a superseded claim is drawn
    struck through (semantic tokens: its ``deprecated`` modifier)."""
    page = window.notes / "mentions.md"
    page.write_text(
        "# Mentions\n\nLedgers: @alpha_postgres_old_0d3e\nRead the Reading List this winter.\n",
        "utf-8",
    )
    bench.open_file("mentions.md")
    window.ready(claims=None, timeout=120)
    # Monaco draws a token whose style strikes it through with the class mtks.
    struck = bench.page.locator(
        ".editor-group-container.active .view-line span.mtks", has_text="alpha_postgres_old"
    )
    struck.first.wait_for()
    bench.go_to(4, 12)  # in "Reading List"
    action = bench.page.locator(
        ".action-widget .monaco-list-row", has_text="Link to [[Reading List]]"
    ).first
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _ in range(3):  # the menu now and then opens before the server's answer: ask again
        bench.page.keyboard.press("Control+.")
        with suppress(PlaywrightTimeout):
            action.wait_for(timeout=5000)
            break
        bench.page.keyboard.press("Escape")
    action.wait_for()
    bench.shot(
        "vscode-mentions",
        bench.page.locator(".editor-group-container.active div.title"),
        bench.page.locator(".editor-group-container.active .view-line", has_text="Ledgers"),
        action,
    )
    action.hover()
    bench.page.keyboard.press("Enter")
    until(
        lambda: "Read the [[Reading List]] this winter." in bench.editor_lines(),
        "the mention linked",
    )
    bench.save()
    assert page.read_text(encoding="utf-8").splitlines()[3] == (
        "Read the [[Reading List]] this winter."
    )
    assert struck.count() >= 1  # still struck through after the edit


def test_a_paragraph_is_offered_the_claim_it_is_about(window: Window, bench: Workbench) -> None:
    """Related notes and claims: a paragraph close in meaning to a claim it does not
    reference gets "Reference @id: …" among its code actions, whose edit appends it."""
    page = window.notes / "related.md"
    paragraph = "I like doing my deep focused work early in the morning, before any meetings start."
    page.write_text(f"# Related\n\n{paragraph}\n", "utf-8")
    bench.open_file("related.md")
    window.ready(claims=None, timeout=120)
    bench.go_to(3, 5)
    action = bench.page.locator(
        ".action-widget .monaco-list-row", has_text="Reference @prefer_morning_a3f2"
    ).first
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    # The paragraph's first request may answer before its embedding is ready: ask again.
    for _ in range(4):
        bench.page.keyboard.press("Control+.")
        with suppress(PlaywrightTimeout):
            action.wait_for(timeout=5000)
            break
        bench.page.keyboard.press("Escape")
    action.wait_for()
    action.hover()
    bench.page.keyboard.press("Enter")
    until(lambda: "start. @prefer_morning_a3f2" in bench.editor_lines(), "the reference added")
    bench.save()
    assert page.read_text(encoding="utf-8").splitlines()[2] == f"{paragraph} @prefer_morning_a3f2"


def output_text(bench: Workbench) -> str:
    bench.palette("lsp-memory: Show server output")
    panel = bench.page.locator(".part.panel")
    panel.locator(".monaco-editor .view-lines").wait_for()
    # Wrapped lines are one: the output is read as one squashed text.
    return bench.editor_lines(panel)


def test_restart_server_starts_it_again(window: Window, bench: Workbench) -> None:
    bench.palette("lsp-memory: Restart server")
    until(
        lambda: output_text(bench).count("starting the language server") >= 2,
        "a second start in the output",
    )
    window.ready(claims=CLAIMS + 1)
    assert not bench.notifications()


def test_a_folder_without_lsp_memory_toml_is_not_served(window: Window, bench: Workbench) -> None:
    bench.open_folder(window.plain)
    bench.open_file("README.md")
    until(lambda: "Markdown" in bench.status() or not bench.status(), "the language status")
    time.sleep(2)  # an extension that would start a server has done so by now
    assert "lsp-memory" not in bench.status()
    bench.palette("lsp-memory: Build context")
    message = until(
        lambda: [m for m in bench.notifications() if "this document is not served" in m],
        "the not-served message",
    )
    assert bench.notification_button("not served", "Open Settings").is_visible(), message
    output = output_text(bench)
    assert "no workspace folder has an lsp-memory.toml at its root" in output, output
    assert "starting the language server" not in output, output
    bench.clear_notifications()
    bench.open_folder(window.notes)
    bench.open_file("prompt.md")
    window.ready(claims=CLAIMS + 1, timeout=60)


def one_error(bench: Workbench, text: str) -> str:
    """Waits for the error message with ``text``; checks it stays the only one."""
    until(lambda: [m for m in bench.notifications() if text in m], f"the message {text!r}")
    time.sleep(3)  # a loop would show more by now
    shown = bench.notifications()
    assert len(shown) == 1, shown
    return shown[0]


def restore_server(window: Window, bench: Workbench) -> None:
    bench.configure(remote=True, **{"lspMemory.serverPath": server_program()})
    bench.clear_notifications()
    window.ready(claims=None, timeout=60)


def test_missing_server_program_says_how_to_install(window: Window, bench: Workbench) -> None:
    missing = window.work / "nowhere" / "lsp-memory"
    bench.configure(remote=True, **{"lspMemory.serverPath": str(missing)})
    message = one_error(bench, "the language server was not found")
    assert f'"{missing}" does not exist or is not executable' in message, message
    for action in ("How to install", "Open Settings", "Retry"):
        assert bench.notification_button("not found", action).is_visible(), message
    until(lambda: "lsp-memory: stopped" in bench.status(), "the status item to say stopped")
    bench.notification_button("not found", "How to install").click()
    until(lambda: any(tab.startswith("Preview readme.md") for tab in bench.tabs()), "the README")
    # The preview is a web view that keeps the keys: back to the note with the mouse.
    bench.page.locator(".tab[aria-label^='prompt.md']").click()
    bench.active_tab("prompt.md")
    restore_server(window, bench)


def test_a_crashing_server_is_stopped_with_one_message(window: Window, bench: Workbench) -> None:
    stub = window.work / "crashing_server.py"
    stub.write_text(CRASHING_SERVER, encoding="utf-8")
    wrapper = executable(
        window.work / "crashing-server", f'#!/bin/sh\nexec "{sys.executable}" "{stub}" "$@"\n'
    )
    bench.configure(remote=True, **{"lspMemory.serverPath": wrapper})
    message = one_error(bench, "it is not restarted again")
    assert "stopped 4 times within 3 minutes" in message, message
    assert "RuntimeError: the test server crashed on purpose" in message, message
    restore_server(window, bench)


def test_a_server_that_cannot_start_says_why_once(window: Window, bench: Workbench) -> None:
    wrapper = executable(
        window.work / "broken-server",
        "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'lsp_memory'\" >&2\nexit 1\n",
    )
    bench.configure(remote=True, **{"lspMemory.serverPath": wrapper})
    message = one_error(bench, "failed to start")
    assert "ModuleNotFoundError: No module named 'lsp_memory'" in message, message
    restore_server(window, bench)


def test_an_untrusted_folder_is_served_once_trusted(window: Window, bench: Workbench) -> None:
    bench.configure(**{"security.workspace.trust.enabled": True})
    bench.open_folder(window.notes)  # a new window: the setting applies there
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    # VS Code asks whether to trust the folder, or opens it in Restricted Mode at once.
    with suppress(PlaywrightTimeout):
        bench.page.get_by_role("button", name="No, I don't trust the authors").click(timeout=3000)
    bench.page.locator(".statusbar-item", has_text="Restricted Mode").wait_for()
    bench.open_file("prompt.md")
    time.sleep(2)  # an extension that would start a server has done so by now
    assert "lsp-memory" not in bench.status()
    output = output_text(bench)
    assert "its lsp-memory.toml is not used in an untrusted workspace" in output, output
    assert "starting the language server" not in output, output
    bench.palette("Workspaces: Manage Workspace Trust")
    bench.page.get_by_role("button", name="Trust", exact=True).first.click()
    bench.page.get_by_text("You trust this folder").wait_for()
    bench.page.locator(".tab[aria-label^='prompt.md']").click()
    window.ready(claims=None, timeout=60)
    output = output_text(bench)
    assert output.count("starting the language server") == 1, output
