"""``initialize`` answered before the server's imports (``lsp.early``): the reply pygls gave
a client is kept in the cache folder and sent at once to the next start that meets the same
client, and a kept reply that differs from the server's own is replaced, never trusted
again. Each start is the real ``python -m lsp_memory serve`` over stdio."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from lsp_memory.lsp import early
from tests.client.conftest import ENV, VAULT, prepare
from tests.client.test_malformed import TIMEOUT, Channel

NEOVIM = {"general": {"positionEncodings": ["utf-8", "utf-16"]}}
PREPARES = {"textDocument": {"rename": {"prepareSupport": True}}}


def start(cache: Path, capabilities: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Start a server in its own cache folder, initialize it as a client declaring
    ``capabilities``, ask for a hover, stop it; its reply and what it wrote on stderr."""
    prepare()
    channel = Channel(env={**ENV, "XDG_CACHE_HOME": str(cache)})
    try:
        params = {"processId": None, "rootUri": VAULT.as_uri(), "capabilities": capabilities}
        channel.send({"id": 1, "method": "initialize", "params": params})
        reply = channel.response(1)["result"]
        channel.send({"method": "initialized", "params": {}})
        uri = (VAULT / "early.md").as_uri()
        document = {"uri": uri, "languageId": "markdown", "version": 1, "text": "See #1\n"}
        channel.send({"method": "textDocument/didOpen", "params": {"textDocument": document}})
        hover = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 5}}
        channel.send({"id": 2, "method": "textDocument/hover", "params": hover})
        answer = channel.response(2)
        assert "PostgreSQL 16" in answer["result"]["contents"]["value"], answer
        channel.send({"id": 3, "method": "shutdown"})
        channel.response(3)
        channel.send({"method": "exit"})
        assert channel.process.wait(timeout=TIMEOUT) == 0
        assert channel.process.stderr is not None
        return reply, channel.process.stderr.read().decode()
    finally:
        if channel.process.poll() is None:
            channel.process.kill()


def kept(cache: Path) -> list[Path]:
    return sorted((cache / "lsp-memory" / early.FOLDER).glob("*.json"))


def test_the_kept_reply_is_sent_early_and_replaced_when_the_server_differs(
    tmp_path: Path,
) -> None:
    first, _ = start(tmp_path, NEOVIM)
    assert first["serverInfo"]["name"] == "lsp-memory"
    [path] = kept(tmp_path)
    assert json.loads(path.read_text()) == first  # what the server answered, kept
    assert path.stat().st_mode & 0o777 == 0o600

    # A kept reply unlike the server's: it is what the client gets (sent before the server
    # ran), and the server's own replaces it for the next start.
    marked = json.loads(path.read_text())
    marked["capabilities"]["experimental"] = {"marked": True}
    path.write_text(json.dumps(marked))
    second, stderr = start(tmp_path, NEOVIM)
    assert second == marked
    assert "differs from the server's" in stderr
    assert json.loads(path.read_text()) == first

    third, stderr = start(tmp_path, NEOVIM)
    assert third == first
    assert "differs" not in stderr


def test_another_clients_capabilities_get_their_own_reply(tmp_path: Path) -> None:
    plain, _ = start(tmp_path, {})
    prepares, _ = start(tmp_path, PREPARES)
    assert len(kept(tmp_path)) == 2
    assert plain["capabilities"]["positionEncoding"] == "utf-16"
    assert plain["capabilities"]["renameProvider"] != prepares["capabilities"]["renameProvider"]
    assert start(tmp_path, PREPARES)[0] == prepares


def test_a_kept_reply_others_may_write_is_not_sent(tmp_path: Path) -> None:
    first, _ = start(tmp_path, {})
    [path] = kept(tmp_path)
    marked = json.loads(path.read_text())
    marked["capabilities"]["experimental"] = {"marked": True}
    path.write_text(json.dumps(marked))
    path.chmod(0o666)
    assert start(tmp_path, {})[0] == first


@pytest.mark.parametrize(
    ("argv", "wanted"),
    [
        (["serve"], True),
        (["--store", "/s", "serve", "--user=ana", "--vault", "/v"], True),
        (["serve", "--tcp", "127.0.0.1:9000"], False),
        (["serve", "--help"], False),
        (["serve", "--store"], False),  # a value missing: argparse says so, not us
        (["mcp"], False),
        (["search", "serve"], False),
    ],
)
def test_only_a_server_on_stdio_answers_early(argv: list[str], wanted: bool) -> None:
    assert early.wants_early(argv) is wanted


def test_the_server_reads_what_the_handshake_read_then_the_rest() -> None:
    first = b"Content-Length: 2\r\n\r\n{}"
    replay = early.Replay(first, io.BytesIO(b"Content-Length: 3\r\n\r\n[1]"))
    assert replay.readline() == b"Content-Length: 2\r\n"
    assert replay.readline() == b"\r\n"
    assert replay.read(2) == b"{}"
    assert replay.readline() == b"Content-Length: 3\r\n"
    cut = early.Replay(b"Content-Le", io.BytesIO(b"ngth: 1\r\n\r\nx"))
    assert cut.readline() == b"Content-Length: 1\r\n"
    assert early.Replay(b"ab", io.BytesIO(b"cd")).read(3) == b"abc"


def test_a_first_message_that_is_not_initialize_is_left_to_the_server(tmp_path: Path) -> None:
    for first in (
        early.frame({"jsonrpc": "2.0", "id": 1, "method": "shutdown"}),
        b"Content-Length: abc\r\n\r\n",
        b"not a header\r\n",
        early.frame({"jsonrpc": "2.0", "id": True, "method": "initialize", "params": {}}),
    ):
        out, stream = io.BytesIO(), io.BytesIO(first + b"rest")
        handshake = early.answer(stream, out, tmp_path)
        assert out.getvalue() == b""
        assert handshake.sent is None
        assert early.Replay(handshake.prefix, stream).read() == first + b"rest"
        assert early.taken() is handshake and early.taken() is None
