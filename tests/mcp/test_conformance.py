"""The official MCP conformance suite (npm ``@modelcontextprotocol/conformance``, pinned in
``install_conformance.sh``) against ``lsp-memory mcp --http`` on loopback: the scenarios
that apply to a memory server. The others exercise the reference server's own demo tools.

The suite sends no ``Authorization`` header, so the server runs with ``--no-auth`` (loopback
only); ``dns-rebinding-protection`` is the scenario for exactly that case (a loopback server
without a token). ``json-schema-2020-12`` looks for a fixture tool of its own, which
``conformance_server.py`` adds for the test; the scenario checks that its schema keywords
reach the client unchanged through the SDK and this transport.

Skipped without npm, unless ``LSP_MEMORY_REQUIRE_CONFORMANCE=1`` (``.ci/run`` sets it); the
suite and the Node it needs are installed into the cache folder on first use."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.mcp.test_mcp_http import serving

HERE = Path(__file__).parent
SCENARIOS = (
    "server-initialize",
    "ping",
    "tools-list",
    "logging-set-level",
    "resources-list",
    "prompts-list",
    "json-schema-2020-12",
    "dns-rebinding-protection",
)
REQUIRED = os.environ.get("LSP_MEMORY_REQUIRE_CONFORMANCE") == "1"


def installed() -> Path:
    """The folder with Node and the suite, installed when missing."""
    if shutil.which("npm") is None:
        if REQUIRED:
            pytest.fail("npm is needed for the MCP conformance suite")
        pytest.skip("npm is not installed (LSP_MEMORY_REQUIRE_CONFORMANCE=1 requires it)")
    done = subprocess.run(
        ["bash", str(HERE / "install_conformance.sh")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        message = f"installing the conformance suite failed: {done.stderr[-2000:]}"
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)
    return Path(done.stdout.strip().splitlines()[-1])


def test_conformance_scenarios(tmp_path: Path) -> None:
    home = installed()
    node = home / "node" / "bin" / "node"
    suite = home / "suite" / "node_modules" / "@modelcontextprotocol" / "conformance"
    with serving(tmp_path, ["tests.mcp.conformance_server"]) as (url, _):
        failed = {}
        for scenario in SCENARIOS:
            command = [str(node), str(suite / "dist" / "index.js"), "server"]
            done = subprocess.run(
                [*command, "--url", url, "--scenario", scenario],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
                cwd=tmp_path,
            )
            result = re.search(r"Passed: (\d+)/(\d+), (\d+) failed", done.stdout)
            passed = result is not None and result[1] == result[2] and result[3] == "0"
            if done.returncode != 0 or not passed:
                failed[scenario] = (done.stdout + done.stderr)[-1500:]
    assert failed == {}
