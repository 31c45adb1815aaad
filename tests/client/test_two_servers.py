"""Two servers on one store (two editor windows): the first writes the indexes; the second
follows them read-only and still scans the vaults itself, so its links and note hovers work
— it does not report a failed indexing."""

from __future__ import annotations

from typing import Any

from pytest_lsp import LanguageClient

from tests.client.conftest import VAULT, WORK
from tests.client.test_malformed import TIMEOUT, Channel


def logged(channel: Channel, needles: tuple[str, ...]) -> str:
    """The first log message holding one of ``needles``, answering the server meanwhile."""
    while True:
        message: dict[str, Any] = channel.inbox.get(timeout=TIMEOUT)
        if "id" in message and "method" in message:
            channel.send({"id": message["id"], "result": None})
        elif message.get("method") == "window/logMessage":
            text = str(message["params"]["message"])
            if any(needle in text for needle in needles):
                return text


async def test_a_second_server_follows_the_first(client: LanguageClient) -> None:
    assert client.log_messages  # the first server writes the indexes
    second = Channel()
    document = (WORK / "second.md").as_uri()
    try:
        initialize: dict[str, Any] = {"processId": None, "rootUri": VAULT.as_uri()}
        initialize["capabilities"] = {}
        second.send({"id": 1, "method": "initialize", "params": initialize})
        second.response(1)
        second.send({"method": "initialized", "params": {}})
        assert "index ready" in logged(second, ("index ready", "failed", "stopped"))
        text = "See [[Alice Notes]] today\n"
        item = {"uri": document, "languageId": "markdown", "version": 1, "text": text}
        second.send({"method": "textDocument/didOpen", "params": {"textDocument": item}})
        where = {"textDocument": {"uri": document}, "position": {"line": 0, "character": 7}}
        second.send({"id": 2, "method": "textDocument/hover", "params": where})
        hover = second.response(2)["result"]["contents"]["value"]
        assert "Alice Notes" in hover and "alice.md" in hover, hover
        second.send({"id": 3, "method": "shutdown"})
        second.response(3)
        second.send({"method": "exit"})
        assert second.process.wait(timeout=TIMEOUT) == 0
    finally:
        if second.process.poll() is None:
            second.process.kill()
        second.process.wait()
