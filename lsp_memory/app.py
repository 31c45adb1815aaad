"""The composition root: configuration → store → services. The only place objects are wired;
the command line and (later) the language server ask it for what they need."""

from __future__ import annotations

from functools import cached_property

from lsp_memory.config import Config
from lsp_memory.services.resolver import Resolver
from lsp_memory.store.sqlite import Store, open_store


class App:
    """Services for one user over one store, opened on first use."""

    def __init__(self, config: Config) -> None:
        self.config = config

    @cached_property
    def store(self) -> Store:
        return open_store(self.config.store, busy_timeout_ms=self.config.busy_timeout_ms)

    @cached_property
    def resolver(self) -> Resolver:
        return Resolver(self.store, self.config.user)

    def close(self) -> None:
        if "store" in self.__dict__:
            self.store.close()
