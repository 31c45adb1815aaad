"""The embedding queue is written before the full-text index commits: an ``index`` that dies
anywhere between the two loses no document's embedding, ``index --full`` included, and the
next ``index`` ends with every document embedded (real model, ``App`` on ``tmp_path``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_memory.app import App
from lsp_memory.services.memory.interchange import import_records
from lsp_memory.store.catalog import Entry
from tests.conftest import KB, USER
from tests.store.test_search import make_app


class Crash(BaseException):
    """The process dying: nothing catches it."""


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    opened = make_app(tmp_path)
    import_records(opened.store, KB.read_bytes(), user=USER, source="kb")
    yield opened
    opened.close()


def dying(real: Callable[..., Any], *, after: bool) -> Callable[..., Any]:
    """``real``, but the process dies just before it or just after it."""

    def call(*args: Any, **kwargs: Any) -> Any:
        if not after:
            raise Crash
        real(*args, **kwargs)
        raise Crash

    return call


def everything_embedded(folder: Path) -> None:
    """A new process's ``index`` embeds every document the full-text index holds."""
    again = make_app(folder)
    try:
        report = again.keeper.index()
        side = again.vectors
        assert side is not None
        assert report.pending == 0
        assert side.catalog.counts() == (len(again.text_index), 0)
        assert len(side.index) == len(again.text_index) > 0
    finally:
        again.close()


@pytest.mark.parametrize("after", [False, True], ids=["before", "after"])
def test_a_first_index_dying_at_the_text_commit_loses_no_embedding(
    app: App, tmp_path: Path, after: bool
) -> None:
    text = app.text_index
    text.commit = dying(text.commit, after=after)  # type: ignore[method-assign]
    with pytest.raises(Crash):
        app.keeper.index(embed=False)
    app.close()
    everything_embedded(tmp_path)


@pytest.mark.parametrize("dies_at", ["enqueue", "commit"])
def test_index_full_dying_before_its_commit_loses_no_embedding(
    app: App, tmp_path: Path, dies_at: str
) -> None:
    """``index --full`` on an index that follows the store dies once the queue's entries of
    no document are removed, or once the queue is written."""
    app.keeper.index()
    side = app.vectors
    assert side is not None
    target: Any = side if dies_at == "enqueue" else app.text_index
    setattr(target, dies_at, dying(getattr(target, dies_at), after=False))
    with pytest.raises(Crash):
        app.keeper.index(full=True)
    app.close()
    everything_embedded(tmp_path)


def test_index_full_keeps_only_the_documents_there_are(app: App) -> None:
    app.keeper.index()
    side = app.vectors
    assert side is not None
    embedded, _ = side.catalog.counts()
    gone = [
        Entry("claim:gone-embedded", USER, "claim", "active", "h1", "an old claim"),
        Entry("claim:gone-waiting", USER, "claim", "active", "h2", "another old claim"),
    ]
    side.catalog.enqueue(gone)
    side.catalog.mark_embedded(gone[:1])
    assert side.catalog.counts() == (embedded + 1, 1)
    app.keeper.index(full=True)
    assert side.catalog.counts() == (embedded, 0)
