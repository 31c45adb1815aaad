"""``lsp-memory mcp --http``: the official SDK's client over streamable HTTP with the bearer
token; a request without it (401), with a wrong one (401), with a Host or Origin that is not
the server's (421, 403: DNS rebinding); the token from a file, from the environment, or
generated and told on stderr; a non-loopback address or ``--no-auth`` off loopback refused
with one line."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.mcp.test_mcp import environment

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
ACCEPT = {"accept": "application/json, text/event-stream"}


@contextmanager
def serving(tmp_path: Path, module: Sequence[str], **env: str) -> Iterator[tuple[str, str]]:
    """``python -m MODULE…`` serving MCP over HTTP on 127.0.0.1: its URL and what it wrote
    to stderr on starting; stopped (with no traceback on stderr) on leaving."""
    errors = tmp_path / "http.log"
    with errors.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", *module],
            env=environment(tmp_path, **env),
            stdout=subprocess.DEVNULL,
            stderr=log,
            cwd=tmp_path,
        )
    try:
        deadline = time.monotonic() + 60
        while not (found := re.search(r"http://127\.0\.0\.1:\d+/mcp", errors.read_text())):
            assert process.poll() is None, errors.read_text()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        yield found.group(0), errors.read_text()
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert "Traceback" not in errors.read_text()


def http_server(tmp_path: Path, *options: str, **env: str) -> Any:
    """``lsp-memory mcp --http 127.0.0.1:0 OPTIONS`` running (``serving``)."""
    return serving(tmp_path, ["lsp_memory", "mcp", "--http", "127.0.0.1:0", *options], **env)


async def test_the_sdk_client_over_http_with_the_token(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n", encoding="utf-8")
    with http_server(tmp_path, "--token-file", str(token_file)) as (url, said):
        assert "s3cret" not in said  # a token the user gave is not repeated
        headers = {"authorization": "Bearer s3cret-token"}
        async with (
            httpx2.AsyncClient(headers=headers) as client,
            streamable_http_client(url, http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            remembered = await session.call_tool("remember", {"statement": "I like green tea"})
            assert not remembered.is_error
            listed = await session.call_tool("list_memories", {})
            assert listed.structured_content is not None
            assert listed.structured_content["memories"][0]["statement"] == "I like green tea"
            resources = await session.list_resources()
            assert [str(r.uri) for r in resources.resources] == ["memory://status"]

        async with httpx2.AsyncClient() as plain:
            missing = await plain.post(url, json=INITIALIZE, headers=ACCEPT)
            assert missing.status_code == 401
            assert missing.headers["www-authenticate"] == "Bearer"
            wrong = await plain.post(
                url, json=INITIALIZE, headers={**ACCEPT, "authorization": "Bearer guess"}
            )
            assert wrong.status_code == 401
            right = {**ACCEPT, **headers}
            # DNS rebinding: a page of evil.example.com resolving to 127.0.0.1, even with the
            # token (a browser could hold it), is refused before anything is read.
            rebound = await plain.post(
                url, json=INITIALIZE, headers={**right, "host": "evil.example.com"}
            )
            assert rebound.status_code == 421
            rebound = await plain.post(
                url, json=INITIALIZE, headers={**right, "origin": "http://evil.example.com"}
            )
            assert rebound.status_code == 403
            local = await plain.post(
                url, json=INITIALIZE, headers={**right, "origin": "http://localhost:3000"}
            )
            assert local.status_code == 200


async def test_the_token_from_the_environment_or_generated(tmp_path: Path) -> None:
    with http_server(tmp_path, LSP_MEMORY_MCP_TOKEN="from-env") as (url, said):
        assert "from-env" not in said
        async with httpx2.AsyncClient() as plain:
            given = {**ACCEPT, "authorization": "Bearer from-env"}
            assert (await plain.post(url, json=INITIALIZE, headers=given)).status_code == 200
    with http_server(tmp_path) as (url, said):
        token = re.search(r"bearer token for this run: (\S+)", said)
        assert token is not None, said
        async with httpx2.AsyncClient() as plain:
            given = {**ACCEPT, "authorization": f"Bearer {token.group(1)}"}
            assert (await plain.post(url, json=INITIALIZE, headers=given)).status_code == 200
            assert (await plain.post(url, json=INITIALIZE, headers=ACCEPT)).status_code == 401
    with http_server(tmp_path, "--no-auth") as (url, said):
        assert "no token" in said
        async with httpx2.AsyncClient() as plain:
            assert (await plain.post(url, json=INITIALIZE, headers=ACCEPT)).status_code == 200


def refused(tmp_path: Path, *arguments: str) -> str:
    """``lsp-memory mcp ARGUMENTS`` failing (exit 1): its one line on stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "lsp_memory", "mcp", *arguments],
        env=environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()
    return line


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--http", "0.0.0.0:8765"], "not a loopback address: pass --allow-remote"),
        (["--http", "192.168.1.2:8765"], "not a loopback address"),
        (["--http", "0.0.0.0:8765", "--allow-remote", "--no-auth"], "--no-auth is for a loopback"),
        (["--http", "8765"], "expected HOST:PORT"),
        (["--http", "127.0.0.1:99999"], "at most 65535"),
        (["--http", "127.0.0.1:0", "--token-file", "/nonexistent"], "cannot read it"),
        (["--no-auth"], "--no-auth goes with --http"),
    ],
)
def test_refused_settings(tmp_path: Path, arguments: list[str], said: str) -> None:
    assert said in refused(tmp_path, *arguments)


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = refused(tmp_path, "--http", f"127.0.0.1:{port}")
    assert line.startswith(f"lsp-memory: error: cannot listen on http://127.0.0.1:{port}/mcp")
