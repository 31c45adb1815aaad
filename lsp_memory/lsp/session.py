"""What the server knows about its workspace: settings, the vaults, and two views of the
same indexes — one for requests (on the event loop's thread) and one for the indexing thread,
which alone writes. The full-text index object and the vaults are shared; each thread has its
own SQLite connection.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from lsp_memory.app import App, IndexReport
from lsp_memory.config import Config, apply_settings, load_config
from lsp_memory.services.completion import Completer
from lsp_memory.services.describe import Describer

Progress = Callable[[str, int, int], None]


class Session:
    """One workspace: built at ``initialize``, indexed from ``initialized``."""

    def __init__(self, config: Config, warnings: Sequence[str] = ()) -> None:
        self.config = config
        self.warnings = list(warnings)
        self.app = App(config)
        self.ready = threading.Event()  # set once the first index sync has finished
        self.index_error: str | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def from_client(cls, options: Mapping[str, Any] | None, folders: Sequence[Path]) -> Session:
        """Settings from ``lsp-memory.toml`` at the (first) workspace root, then the client's
        ``initializationOptions``; every workspace folder is a vault."""
        root = folders[0] if folders else Path.cwd()
        config, warnings = load_config(cwd=root)
        if options:
            config, found = apply_settings(
                config, options, base=root, origin="initializationOptions"
            )
            warnings += found
        vaults = tuple(dict.fromkeys([*config.vaults, *(f.resolve() for f in folders)]))
        return cls(replace(config, vaults=vaults), warnings)

    @property
    def completer(self) -> Completer:
        app = self.app
        text = app.text_index if self.ready.is_set() else None
        return Completer(app.store, text, app.vaults, self.config.user)

    @property
    def describer(self) -> Describer:
        app = self.app
        return Describer(app.store, self.config.user, app.vaults)

    def start_indexing(
        self, progress: Progress, done: Callable[[IndexReport | None, str | None], None]
    ) -> None:
        """Sync the indexes with the store and the vaults on a background thread; requests
        are answered meanwhile (from the store and the vaults, and the index once ready)."""
        text = self.app.text_index  # opened here, shared with the indexing thread
        vaults = self.app.vaults

        def run() -> None:
            worker = App(self.config, vaults=vaults, text_index=text)
            try:
                report = worker.index(embed=False, progress=progress)
            except Exception as error:
                self.index_error = f"indexing failed: {error}"
                done(None, self.index_error)
            else:
                done(report, None)
            finally:
                self.ready.set()
                worker.close()

        self._thread = threading.Thread(target=run, name="lsp-memory-index", daemon=True)
        self._thread.start()

    def close(self) -> None:
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.app.close()
