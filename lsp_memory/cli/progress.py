"""Progress bars for the long commands (``index``, ``ingest``, ``import-chat``): on stderr
when it is a terminal, and nothing at all otherwise, so a log or a pipe gets only the
answer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def progress_bar() -> tuple[Any, Callable[[str, int, int], None]]:
    """A progress display on stderr (counts, rate, time left) and the callback feeding it
    (``update(stage, done, total)``); nothing at all when stderr is not a terminal."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        Task,
        TextColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            return Text(f"{speed:,.0f}/s" if speed else "–/s")

    console = Console(stderr=True)
    bar = Progress(
        TextColumn("{task.description:<10}"),
        BarColumn(),
        MofNCompleteColumn(),
        Rate(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
        disable=not console.is_terminal,
    )
    tasks: dict[str, Any] = {}

    def update(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=total)
        bar.update(tasks[stage], completed=done, total=total)

    return bar, update


@contextmanager
def progress() -> Iterator[Callable[[str, int, int], None]]:
    """``progress_bar``'s callback, the bar shown while the block runs; a block that fails
    takes its bar away, leaving the error line alone."""
    bar, update = progress_bar()
    with bar:
        try:
            yield update
        except BaseException:
            bar.live.transient = True
            raise
