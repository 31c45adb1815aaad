"""The embedding model's memory while it embeds (issue 24), with the real default model: a
helper that has embedded a request of long notes holds about what the loaded model holds,
and the settings that keep it there leave the vectors as they were."""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lsp_memory.store.embedhelper import RemoteEmbedder
from lsp_memory.store.vectors import Embedder
from tests.store.test_vectors import SENTENCES

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")

WORDS = (
    "the project plan budget people meeting database migration moved thursday afternoon "
    "quarterly tax filing deadline billing service notes vault release review"
).split()


def passages(count: int, seed: int = 7) -> list[str]:
    """``count`` passages of 20 to 300 words (past the 256-token truncation), so the batches
    have many widths."""
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(20, 300))) for _ in range(count)]


def status(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of ``pid`` in MiB."""
    found = {}
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        key = row.split(":", 1)[0]
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(row.split()[1]) / 1024
    return found


@pytest.fixture
def remote() -> Iterator[RemoteEmbedder]:
    embedder = RemoteEmbedder(idle_seconds=60)
    yield embedder
    embedder.close()


def test_a_helper_that_embedded_long_notes_holds_about_the_loaded_model(
    remote: RemoteEmbedder,
) -> None:
    """The heap's free pages go back to the system once no request is under way, and no
    memory pattern is kept per batch width. Measured here: ~171 MiB loaded, ~217–225 after
    128 long notes (onnxruntime's arena keeps its blocks), against 276–314 with the
    memory pattern, without the arena and without the trim: the bound leaves room for
    the run-to-run spread."""
    remote.embed(["warm up"])
    assert remote.pid is not None
    for at in range(0, 128, 64):  # the background embedding's requests of 64 notes
        remote.embed(passages(128)[at : at + 64], batch_size=32)
    deadline = time.monotonic() + 5.0  # the trim follows the answer, in the helper's thread
    while (after := status(remote.pid))["VmRSS"] >= 255 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert after["VmRSS"] < 255, after


def test_the_default_model_is_handed_to_onnxruntime_by_its_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its bytes are read, checked against the pinned hash and dropped; onnxruntime gets the
    file's path. With the bytes handed over instead, the helper's peak while loading was
    295–302 MiB against 265–276 (benchmarks/embed_memory.py; a peak measured in a test varied
    by more than that margin between runs, so the test checks what is handed over)."""
    import onnxruntime as ort

    handed: list[Any] = []
    session = ort.InferenceSession

    def spy(model: Any, *args: Any, **kwargs: Any) -> Any:
        handed.append(model)
        return session(model, *args, **kwargs)

    monkeypatch.setattr(ort, "InferenceSession", spy)
    Embedder.load()
    assert len(handed) == 1
    assert isinstance(handed[0], str) and Path(handed[0]).name == "model.onnx", handed


def test_the_vectors_are_those_of_the_memory_pattern_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The session with onnxruntime's arena and without its memory pattern gives the vectors
    of the one without the arena and with the pattern (the settings before) within 1e-6
    cosine, on batches of every width up to 256 tokens."""
    import onnxruntime as ort

    texts = [*SENTENCES, *passages(40, seed=11)]
    now = Embedder.load().embed(texts, batch_size=32)
    session = ort.InferenceSession

    def with_pattern(model: Any, sess_options: Any = None, **kwargs: Any) -> Any:
        # the settings under test, then those before
        assert (sess_options.enable_cpu_mem_arena, sess_options.enable_mem_pattern) == (True, False)
        sess_options.enable_cpu_mem_arena = False
        sess_options.enable_mem_pattern = True
        return session(model, sess_options=sess_options, **kwargs)

    monkeypatch.setattr(ort, "InferenceSession", with_pattern)
    before = Embedder.load().embed(texts, batch_size=32)
    cosine = np.sum(now * before, axis=1) / np.maximum(
        np.linalg.norm(now, axis=1) * np.linalg.norm(before, axis=1), 1e-12
    )
    nonzero = np.linalg.norm(before, axis=1) > 0
    assert np.all(1.0 - cosine[nonzero] <= 1e-6)
    assert np.allclose(now, before, atol=1e-6)
