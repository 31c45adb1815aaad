"""A real VS Code for the tests: code-server (VS Code 1.139 served to a browser) with the
extension's packaged ``.vsix`` installed, and Debian's Chromium driven through Playwright.

``Workbench`` drives it as a user does — keys, the command palette, clicks — and reads what the
window shows: the suggest widget, hovers, tabs, the Problems panel, notifications, the status
bar. Every wait is bounded. What is missing (code-server, Chromium, Playwright, the ``.vsix``)
is a skip with the reason, or a failure when ``LSP_MEMORY_REQUIRE_VSCODE=1`` (CI).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

try:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
except ImportError:  # the tests skip, saying why
    PlaywrightTimeout = TimeoutError  # type: ignore[misc,assignment]

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

ROOT = Path(__file__).parents[2]
INSTALLED = Path(
    os.environ.get("LSP_MEMORY_VSCODE_HOME")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "lsp-memory"
    / "vscode-real"
)
"""Where tests/vscode/install.sh puts Node 24 and code-server: a cache of the machine, kept
across clones (rebuilt by the script when missing or of another version)."""
FAILURES = ROOT / "build" / "vscode-real-failures"
"""A picture of the window and code-server's log for each failed test."""
NODE_BIN = INSTALLED / "node" / "bin"
CODE_SERVER = INSTALLED / "code-server" / "node_modules" / ".bin" / "code-server"
EXTENSION = ROOT / "editors" / "vscode"
STEP_S = 20.0
"""The longest a single step waits for what it expects (the first indexing waits longer)."""

T = TypeVar("T")


def require_or_skip(reason: str) -> None:
    """Skip the VS Code tests for ``reason``, or fail when CI requires them."""
    if os.environ.get("LSP_MEMORY_REQUIRE_VSCODE") == "1":
        pytest.fail(f"{reason}, and LSP_MEMORY_REQUIRE_VSCODE=1 requires it", pytrace=False)
    pytest.skip(reason)


def chromium_or_skip() -> str:
    found = os.environ.get("LSP_MEMORY_CHROMIUM") or shutil.which("chromium")
    if found is None:
        require_or_skip("chromium is not on PATH (Debian: apt-get install chromium)")
    assert found is not None
    return found


def code_server_or_skip() -> Path:
    if not CODE_SERVER.exists() or not (NODE_BIN / "node").exists():
        require_or_skip(
            f"code-server and Node 24 are not in {INSTALLED} (run tests/vscode/install.sh)"
        )
    return CODE_SERVER


def vsix_or_skip() -> Path:
    """The newest packaged extension; it must be newer than the extension's sources."""
    found = sorted(EXTENSION.glob("lsp-memory-*.vsix"), key=lambda path: path.stat().st_mtime)
    if not found:
        require_or_skip(f"no .vsix in {EXTENSION} (run `make vscode`)")
    vsix = found[-1]
    sources = [*EXTENSION.joinpath("src").glob("*.ts"), EXTENSION / "package.json"]
    newer = [path.name for path in sources if path.stat().st_mtime > vsix.stat().st_mtime]
    if newer:
        require_or_skip(f"{vsix.name} is older than {', '.join(newer)} (run `make vscode`)")
    return vsix


def playwright_or_skip() -> None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        require_or_skip("playwright is not installed (pip install -e '.[test]')")


def until(check: Callable[[], T | None], what: str, timeout: float = STEP_S) -> T:
    """Polls ``check`` until it returns something truthy; fails saying ``what`` was awaited
    and the last value seen."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what}; last seen: {last!r}")
        time.sleep(0.2)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class CodeServer:
    """A running code-server, its folders and its log."""

    url: str
    user_dir: Path
    log: Path
    process: subprocess.Popen[bytes]

    def settings_file(self, remote: bool) -> Path:
        """User settings, or the remote ones (code-server's machine: where a remote window
        reads settings of machine scope, such as lspMemory.serverPath)."""
        return self.user_dir / ("Machine" if remote else "User") / "settings.json"

    def settings(self, remote: bool = False) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.settings_file(remote).read_text(encoding="utf-8"))
        return loaded

    def changed(self, remote: bool, **changes: Any) -> str:
        """The settings with ``changes`` (``None`` removes one), as JSON text."""
        settings = self.settings(remote)
        for key, value in changes.items():
            if value is None:
                settings.pop(key, None)
            else:
                settings[key] = value
        return json.dumps(settings)  # one line: the editor indents and closes nothing

    def log_tail(self, lines: int = 40) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])


@contextmanager
def code_server(
    work: Path, folder: Path, vsix: Path, settings: dict[str, Any], remote: dict[str, Any]
) -> Iterator[CodeServer]:
    """Installs ``vsix`` into a fresh code-server with these user and ``remote`` settings,
    serves ``folder``; stops it afterwards with the language servers it started (its
    process group)."""
    home, user, extensions = work / "home", work / "user", work / "extensions"
    for path in (home, user / "User", user / "Machine", extensions):
        path.mkdir(parents=True, exist_ok=True)
    (user / "User" / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
    (user / "Machine" / "settings.json").write_text(json.dumps(remote, indent=2), "utf-8")
    env = {key: value for key, value in os.environ.items() if not key.startswith("LSP_MEMORY_")}
    env |= {
        "PATH": f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
    }
    dirs = ["--extensions-dir", str(extensions), "--user-data-dir", str(user)]
    installed = subprocess.run(
        [str(CODE_SERVER), *dirs, "--install-extension", str(vsix)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    port = free_port()
    log = work / "code-server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                str(CODE_SERVER),
                "--auth",
                "none",
                "--bind-addr",
                f"127.0.0.1:{port}",
                *dirs,
                "--disable-telemetry",
                "--disable-update-check",
                "--disable-getting-started-override",
                str(folder),
            ],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = CodeServer(f"http://127.0.0.1:{port}", user, log, process)
    try:

        def healthy() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"code-server exited:\n{server.log_tail()}")
            try:
                with urllib.request.urlopen(f"{server.url}/healthz", timeout=2) as answer:
                    return bool(answer.status == 200)
            except OSError:
                return False

        until(healthy, "code-server to listen", timeout=60)
        yield server
    finally:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\xa0", " ")).strip()


class Workbench:
    """The VS Code window in the browser page, driven by keys and clicks."""

    def __init__(self, page: Page, server: CodeServer, shots: Path | None) -> None:
        self.page = page
        self.server = server
        self.shots = shots

    # -- windows, files, commands ---------------------------------------------------------

    def open_folder(self, folder: Path) -> None:
        self.page.goto(f"{self.server.url}/?folder={folder}")
        self.page.wait_for_selector(".monaco-workbench", timeout=60_000)
        # The workbench restores its editors and views after it appears.
        self.page.wait_for_selector(".part.statusbar", timeout=STEP_S * 1000)

    def palette(self, command: str, *, closes: bool = True) -> None:
        """Runs a command by its title from the command palette (``closes``: the command
        shows no quick pick of its own, so the palette is gone when it returns)."""
        self.page.keyboard.press("Control+Shift+P")
        box = self.page.locator(".quick-input-widget input")
        box.wait_for(state="visible", timeout=STEP_S * 1000)
        box.fill(f">{command}")
        row = self.page.locator(".quick-input-list .monaco-list-row", has_text=command).first
        row.click(timeout=STEP_S * 1000)
        if closes:
            box.wait_for(state="hidden", timeout=STEP_S * 1000)

    def open_file(self, name: str) -> None:
        """Opens a file of the folder by name with Go to File (Ctrl+P)."""
        box = self.page.locator(".quick-input-widget input")
        tab = self.page.locator(f".editor-group-container.active .tab.active[aria-label^='{name}']")
        for _attempt in range(5):
            self.page.keyboard.press("Control+P")
            box.wait_for(state="visible", timeout=STEP_S * 1000)
            box.fill(name)
            # The list fills in steps (recently opened, then the file search): the row
            # chosen is the one there when it is clicked. A file just written may not be in
            # the file search yet (VS Code learns of it from its file watcher): ask again.
            with suppress(PlaywrightTimeout):
                self.page.locator(
                    f".quick-input-list .monaco-list-row[aria-label^='{name}']"
                ).first.click(timeout=8000)
                tab.wait_for(timeout=5000)
                break
            self.page.keyboard.press("Escape")
        tab.wait_for(timeout=1000)
        self.page.locator(".editor-group-container.active .monaco-editor.focused").wait_for(
            timeout=STEP_S * 1000
        )

    def go_to(self, line: int, column: int | None = None) -> None:
        """Moves the cursor with Go to Line (Ctrl+G); without a column, to the line's end."""
        self.page.keyboard.press("Control+G")
        box = self.page.locator(".quick-input-widget input")
        box.wait_for(state="visible", timeout=STEP_S * 1000)
        box.fill(f":{line}:{column}" if column is not None else f":{line}")
        self.page.keyboard.press("Enter")
        box.wait_for(state="hidden", timeout=STEP_S * 1000)
        if column is None:
            self.page.keyboard.press("End")
        until(
            lambda: self.cursor()[0] == line and (column is None or self.cursor()[1] == column),
            f"the cursor at {line}:{column}",
        )

    def cursor(self) -> tuple[int, int]:
        """Line and column from the status bar ("Ln 3, Col 8")."""
        text = self.page.locator("#status\\.editor\\.selection").inner_text(timeout=5000)
        found = re.search(r"Ln (\d+), Col (\d+)", text)
        return (int(found.group(1)), int(found.group(2))) if found else (0, 0)

    def save(self) -> None:
        self.page.keyboard.press("Control+S")
        until(
            lambda: (
                self.page.locator(".editor-group-container.active .tab.active.dirty").count() == 0
            ),
            "the editor to be saved",
        )

    def configure(self, *, remote: bool = False, **changes: Any) -> None:
        """Changes user (or ``remote``) settings in their settings.json, as an editor of it
        would; VS Code follows the file."""
        self.server.settings_file(remote).write_text(
            self.server.changed(remote, **changes), encoding="utf-8"
        )

    def hide_panel(self) -> None:
        """Hides the panel (Problems, Output…) when it shows (Ctrl+J toggles it)."""
        panel = self.page.locator(".part.panel")
        if panel.is_visible():
            self.page.keyboard.press("Control+J")
            panel.wait_for(state="hidden", timeout=STEP_S * 1000)

    def type(self, text: str) -> None:
        self.page.keyboard.type(text)

    # -- what the window shows ------------------------------------------------------------

    def active_tab(self, name: str) -> str:
        """Waits for the focused group's active tab to be ``name`` (its start)."""
        tab = self.page.locator(f".editor-group-container.active .tab.active[aria-label^='{name}']")
        tab.wait_for(timeout=STEP_S * 1000)
        return tab.get_attribute("aria-label") or ""

    def tabs(self) -> list[str]:
        labels: list[str] = self.page.locator(".tab").evaluate_all(
            "tabs => tabs.map(tab => tab.getAttribute('aria-label') || '')"
        )
        return labels

    def editor_lines(self, group: Locator | None = None) -> str:
        """The visible lines of the editor in ``group`` (the active one by default), in
        order, as one squashed string (a wrapped line is one line)."""
        where = group or self.page.locator(".editor-group-container.active")
        lines: list[str] = where.locator(".monaco-editor .view-lines").first.evaluate(
            """lines => [...lines.querySelectorAll('.view-line')]
                .sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top))
                .map(line => line.innerText)"""
        )
        return _squash(" ".join(lines))

    def suggestions(self, expected: str) -> list[str]:
        """Waits for the suggest widget to offer ``expected`` (a label's start) first —
        the list shows older answers while the newest is on its way — and returns the rows'
        accessible labels ("@prefer_morning_a3f2, Text"), top first."""
        rows = self.page.locator(".suggest-widget.visible .monaco-list-row")

        def listed() -> list[str] | None:
            labels: list[str] = rows.evaluate_all(
                """rows => rows
                    .sort((a, b) => Number(a.dataset.index) - Number(b.dataset.index))
                    .map(row => row.getAttribute('aria-label') || '')"""
            )
            return labels if labels and labels[0].startswith(expected) else None

        return until(listed, f"the suggestions to start with {expected!r}")

    def accept_suggestion(self, expected: str) -> str:
        """Selects the suggestion whose label starts with ``expected`` (arrow keys) and
        accepts it with Enter; returns its accessible label."""
        widget = self.page.locator(".suggest-widget.visible")
        focused = widget.locator(".monaco-list-row.focused")

        def on_it() -> str | None:
            label = focused.get_attribute("aria-label", timeout=5000) or ""
            if label.startswith(expected):
                return label
            self.page.keyboard.press("ArrowDown")
            return None

        label = until(on_it, f"the suggestion {expected!r} to be selected", timeout=10)
        self.page.keyboard.press("Enter")
        widget.wait_for(state="hidden", timeout=STEP_S * 1000)
        return label

    def hover(self) -> Locator:
        """Shows the hover at the cursor (Ctrl+K Ctrl+I) and waits for its content."""
        self.page.keyboard.press("Control+K")
        self.page.keyboard.press("Control+I")
        hover = self.page.locator(".monaco-hover:visible").filter(has_text=re.compile(r"\S"))
        hover.first.wait_for(timeout=STEP_S * 1000)
        return hover.first

    def status(self) -> str:
        """The language status's accessible label: every item's text and detail."""
        item = self.page.locator("#status\\.languageStatus")
        if item.count() == 0:  # no language status at all
            return ""
        return item.get_attribute("aria-label", timeout=5000) or ""

    def notifications(self) -> list[str]:
        texts: list[str] = self.page.locator(
            ".notifications-toasts .notification-toast"
        ).evaluate_all("toasts => toasts.map(toast => toast.innerText)")
        return [_squash(text) for text in texts]

    def clear_notifications(self) -> None:
        self.palette("Notifications: Clear All Notifications")
        until(lambda: not self.notifications(), "no notifications", timeout=10)

    def notification_button(self, message: str, button: str) -> Locator:
        toast = self.page.locator(".notifications-toasts .notification-toast", has_text=message)
        return toast.locator(".monaco-button", has_text=button).first

    def problems(self) -> list[str]:
        """The Problems panel's rows (Ctrl+Shift+M opens it)."""
        labels: list[str] = self.page.locator(".markers-panel .monaco-list-row").evaluate_all(
            "rows => rows.map(row => row.getAttribute('aria-label') || '')"
        )
        return labels

    def code_lenses(self) -> list[str]:
        """The active editor's code lenses, each alone (VS Code shows the lenses of one line
        in one decoration, joined by " | ")."""
        lines: list[str] = self.page.locator(
            ".editor-group-container.active .codelens-decoration"
        ).all_inner_texts()
        return [lens.strip() for line in lines for lens in _squash(line).split(" | ")]

    # -- pictures ---------------------------------------------------------------------------

    def shot(self, name: str, *parts: Locator) -> None:
        """Writes ``<shots>/<name>.png``, the part of the window that holds ``parts`` (when
        pictures are asked for)."""
        if self.shots is None:
            return
        boxes = [box for part in parts if (box := part.bounding_box()) is not None]
        assert boxes, f"nothing to show in {name}"
        viewport = self.page.viewport_size or {"width": 1000, "height": 600}
        left = max(0.0, min(box["x"] for box in boxes) - 4)
        top = max(0.0, min(box["y"] for box in boxes) - 4)
        right = min(float(viewport["width"]), max(box["x"] + box["width"] for box in boxes) + 4)
        bottom = min(float(viewport["height"]), max(box["y"] + box["height"] for box in boxes) + 4)
        self.shots.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(
            path=str(self.shots / f"{name}.png"),
            clip={"x": left, "y": top, "width": right - left, "height": bottom - top},
            animations="disabled",  # a notification fading in is drawn whole
        )
