"""The embedding helper process with the real default model: its vectors are the in-process
ones, it stops when idle and starts again on the next request, a helper killed or hung
mid-request fails that request with one line and the next one works, and a parent that dies
leaves no helper behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from lsp_memory.config import Config, apply_settings
from lsp_memory.store.embedhelper import HelperError, RemoteEmbedder
from lsp_memory.store.vectors import Embedder, ModelError
from tests.store.test_vectors import SENTENCES

ROOT = Path(__file__).parents[2]


@pytest.fixture
def remote() -> Iterator[RemoteEmbedder]:
    embedder = RemoteEmbedder(idle_seconds=60)
    yield embedder
    embedder.close()


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, exited but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def python(script: str) -> subprocess.CompletedProcess[str]:
    """``script`` run by a Python process of its own, with this checkout on its path."""
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )


def test_the_helpers_vectors_are_the_in_process_ones(remote: RemoteEmbedder) -> None:
    local = Embedder.load()
    assert (remote.model_id, remote.dim) == (local.model_id, local.dim)
    for batch_size in (32, 3):
        got = remote.embed(SENTENCES, batch_size=batch_size)
        assert got.dtype == np.float32 and got.shape == (len(SENTENCES), local.dim)
        assert np.allclose(got, local.embed(SENTENCES, batch_size=batch_size), atol=1e-6)
    assert remote.embed([]).shape == (0, local.dim)
    assert remote.starts == 1  # one helper answered them all


def test_the_model_is_not_loaded_in_the_parent() -> None:
    """Importing and using the remote embedder never imports onnxruntime here."""
    script = (
        "import sys\n"
        "from lsp_memory.store.embedhelper import RemoteEmbedder\n"
        "r = RemoteEmbedder.start()\n"
        "assert r.embed(['a dog']).shape == (1, 384)\n"
        "print(r.model_id, r.dim, 'onnxruntime' in sys.modules, 'tokenizers' in sys.modules)\n"
        "r.close()\n"
    )
    done = python(script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [Embedder.load().model_id, "384", "False", "False"]


def test_the_helper_stops_when_idle_and_starts_again_on_the_next_request() -> None:
    embedder = RemoteEmbedder(idle_seconds=1.0)
    try:
        first = embedder.embed(["the quarterly tax deadline"])
        pid = embedder.pid
        assert pid is not None and alive(pid)
        assert gone(pid), "the helper outlived its idle time"
        assert embedder.pid is None
        again = embedder.embed(["the quarterly tax deadline"])
        assert embedder.starts == 2 and embedder.pid not in (None, pid)
        assert np.allclose(first, again, atol=1e-6)
    finally:
        embedder.close()


def test_a_helper_in_use_is_not_stopped_for_idleness() -> None:
    embedder = RemoteEmbedder(idle_seconds=0.5)
    try:
        began = time.monotonic()
        while time.monotonic() - began < 2.0:  # requests closer together than the idle time
            embedder.embed(["still here"])
            time.sleep(0.1)
        assert embedder.starts == 1
    finally:
        embedder.close()


def test_the_helper_runs_with_one_malloc_arena(remote: RemoteEmbedder) -> None:
    """Its memory while embedding: one glibc arena, unless the environment says otherwise."""
    remote.embed(["a dog"])
    environ = Path(f"/proc/{remote.pid}/environ").read_bytes().split(b"\0")
    expected = os.environ.get("MALLOC_ARENA_MAX", "1")
    assert f"MALLOC_ARENA_MAX={expected}".encode() in environ


def test_a_query_is_answered_while_a_long_batch_is_embedded(remote: RemoteEmbedder) -> None:
    """The helper answers requests side by side, as the model did in the server's process:
    a search's query does not wait behind the indexing thread's batch of notes."""
    remote.embed(["warm up"])
    done: list[float] = []

    def long_request() -> None:
        remote.embed(["a long passage about many things " * 40] * 200)
        done.append(time.monotonic())

    worker = threading.Thread(target=long_request)
    worker.start()
    time.sleep(0.3)  # the batch is under way
    assert remote.embed(["a dog"]).shape == (1, remote.dim)
    answered = time.monotonic()
    worker.join(120)
    assert done and answered < done[0], "the query waited for the batch"


def test_a_helper_killed_mid_request_fails_it_with_one_line_and_the_next_works(
    remote: RemoteEmbedder,
) -> None:
    remote.embed(["warm up"])
    pid = remote.pid
    assert pid is not None
    failed: list[BaseException] = []

    def long_request() -> None:
        try:
            remote.embed(["a long passage about many things " * 40] * 1000)
        except HelperError as error:
            failed.append(error)

    worker = threading.Thread(target=long_request)
    worker.start()
    time.sleep(0.5)  # the helper is embedding
    os.kill(pid, signal.SIGKILL)
    worker.join(30)
    assert not worker.is_alive()
    assert len(failed) == 1
    message = str(failed[0])
    assert "\n" not in message and "was killed (SIGKILL)" in message, message
    assert remote.embed(["a dog"]).shape == (1, remote.dim)
    assert remote.starts == 2


def test_a_hung_helper_times_out_with_one_line_and_is_replaced() -> None:
    embedder = RemoteEmbedder(idle_seconds=60, answer_timeout_s=1.0)
    try:
        embedder.embed(["warm up"])
        pid = embedder.pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        began = time.monotonic()
        with pytest.raises(HelperError, match="did not answer in 2 s") as raised:
            embedder.embed(["a dog"])
        assert time.monotonic() - began < 10
        assert "\n" not in str(raised.value)
        assert gone(pid)
        assert embedder.embed(["a dog"]).shape == (1, embedder.dim)
        assert embedder.starts == 2
    finally:
        embedder.close()


@pytest.mark.parametrize("how", ["exits", "is killed"])
def test_a_parent_that_ends_leaves_no_helper(how: str) -> None:
    script = (
        "import os, signal, sys\n"
        "from lsp_memory.store.embedhelper import RemoteEmbedder\n"
        "r = RemoteEmbedder(idle_seconds=600)\n"
        "r.embed(['a dog'])\n"
        "print(r.pid, flush=True)\n"
        + ("os._exit(0)\n" if how == "exits" else "os.kill(os.getpid(), signal.SIGKILL)\n")
    )
    helper = int(python(script).stdout.split()[0])
    assert gone(helper), "the helper outlived its parent"


def test_a_model_the_helper_cannot_load_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as raised:
        RemoteEmbedder.start(tmp_path)
    setting = "(setting `model` in lsp-memory.toml)"
    assert str(raised.value) == f"model: {tmp_path} has no model.onnx {setting}"


def test_the_idle_setting_takes_seconds_and_zero() -> None:
    config, warnings = apply_settings(
        Config(), {"embedIdleSeconds": 30}, base=Path(), origin="test"
    )
    assert (config.embed_idle_seconds, warnings) == (30.0, [])
    config, _ = apply_settings(Config(), {"embed_idle_seconds": 0}, base=Path(), origin="t")
    assert config.embed_idle_seconds == 0.0
    for bad in (-1, "soon", True, float("nan")):
        config, warnings = apply_settings(
            Config(), {"embed_idle_seconds": bad}, base=Path(), origin="t"
        )
        assert config.embed_idle_seconds == Config().embed_idle_seconds
        assert len(warnings) == 1 and "embed_idle_seconds" in warnings[0]
