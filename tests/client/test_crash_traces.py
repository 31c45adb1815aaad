"""A native crash says where: the language server and the embedding helper enable
``faulthandler``, so a segmentation fault prints every thread's Python stack to stderr (an
editor's language-server log) instead of ending the process with nothing said. Each crash
here is a real ``SIGSEGV`` sent to the real process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

from tests.client.conftest import ENV, VAULT, prepare
from tests.client.test_malformed import TIMEOUT, Channel

TRACED = "Fatal Python error: Segmentation fault"


def test_a_crashed_language_server_leaves_its_threads_stacks_on_stderr() -> None:
    prepare()
    channel = Channel()
    try:
        params: dict[str, Any] = {"processId": None, "rootUri": VAULT.as_uri(), "capabilities": {}}
        channel.send({"id": 1, "method": "initialize", "params": params})
        channel.response(1)
        channel.send({"method": "initialized", "params": {}})
        channel.send({"id": 2, "method": "shutdown"})
        channel.response(2)  # the server is past its start, serving
        os.kill(channel.process.pid, signal.SIGSEGV)
        assert channel.process.wait(timeout=TIMEOUT) == -signal.SIGSEGV
        assert channel.process.stderr is not None
        said = channel.process.stderr.read().decode()
        assert TRACED in said, said
        assert "lsp_memory" in said or "pygls" in said or "asyncio" in said, said
    finally:
        if channel.process.poll() is None:
            channel.process.kill()


def test_a_crashed_embedding_helper_leaves_its_threads_stacks_on_stderr() -> None:
    helper = subprocess.Popen(
        [sys.executable, "-m", "lsp_memory.store.embedhelper"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(ENV),
    )
    try:
        assert helper.stdout is not None and helper.stderr is not None
        assert helper.stdout.read(4)  # the first bytes of its hello: the model is loaded
        os.kill(helper.pid, signal.SIGSEGV)
        assert helper.wait(timeout=TIMEOUT) == -signal.SIGSEGV
        said = helper.stderr.read().decode()
        assert TRACED in said, said
        assert "embedhelper" in said, said
    finally:
        if helper.poll() is None:
            helper.kill()
