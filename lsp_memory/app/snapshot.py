"""A request's read view: one thread's store connection, the vaults as last published, the
full-text index as last reloaded and the hybrid search — and the services built over them.

Snapshots are made by ``App.snapshot`` in the thread that uses them (a SQLite connection
belongs to one thread). The vaults and the indexes are never written through one: the
indexing thread is their one writer. The store is written only by services (``records``,
``renamer``), in one transaction each. The language server builds a snapshot per request;
the command line one per process.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsp_memory.config import Config
from lsp_memory.ids import seconds, stamp_at
from lsp_memory.notes import VaultView
from lsp_memory.store.sqlite import Store

if TYPE_CHECKING:
    from lsp_memory.model import Claim, Note
    from lsp_memory.services.block import Assembler
    from lsp_memory.services.conversations.recall import Conversations
    from lsp_memory.services.editor.annotate import Annotator
    from lsp_memory.services.editor.completion import Completer
    from lsp_memory.services.editor.counts import LinkCounts
    from lsp_memory.services.editor.describe import Describer
    from lsp_memory.services.editor.mentions import Mentions
    from lsp_memory.services.editor.moves import MovePlanner
    from lsp_memory.services.editor.references import ReferenceFinder
    from lsp_memory.services.editor.related import Suggester
    from lsp_memory.services.editor.rename import Renamer
    from lsp_memory.services.kernel.resolver import Resolver
    from lsp_memory.services.memory.records import Records
    from lsp_memory.services.memory.review import Review
    from lsp_memory.services.retrieval.search import HybridSearch
    from lsp_memory.store.fulltext import FullTextIndex

# The services are imported where they are built: a command line process imports only those
# its command uses (importing every room took ~0.3 s of a 1.5 s `lsp-memory search`).


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What one request reads, and the services that read it."""

    config: Config
    store: Store
    vaults: Sequence[VaultView]
    # The full-text index, opened when asked; None until the first index sync in the
    # language server (completion falls back to the store before).
    text: Callable[[], FullTextIndex] | None
    searcher: Callable[[], HybridSearch]  # the hybrid search, opened when first asked
    pages: Path  # the folder of generated record pages
    # Single-record writes on this thread's store (``App.records``: classifier, supersede
    # rules and vector side wired there): claim add, context add, retract, restore.
    records: Callable[[], Records]
    # Consolidation's review items and decisions (``App.review``).
    reviewer: Callable[[], Review]
    # The user's conversations (``App.conversations``): passive recall.
    conversations: Callable[[], Conversations]

    @property
    def user(self) -> str:
        return self.config.user

    def store_version(self) -> int:
        """The store's last change: anything built from this snapshot is stale once it
        moves (another process's write included)."""
        return self.store.last_change()

    def claim(self, claim_id: str) -> Claim | None:
        """The user's claim of this UUID, whatever its status (a lineage field names one)."""
        return self.store.claim_by_uuid(self.user, claim_id)

    def successor(self, claim: Claim) -> Claim | None:
        """The live claim down a superseded or merged claim's chain (``kernel.lineage``)."""
        from lsp_memory.services.kernel import lineage

        return lineage.successor(self.store, self.user, claim)

    def notes_changed_since(self, start: str, limit: int) -> list[dict[str, Any]]:
        """The notes of every vault saved at or after ``start`` (a stored timestamp), newest
        first, at most ``limit``: each note's vault, path, title and when it was saved."""
        after = seconds(start) * 1e9
        found = [
            note for vault in self.vaults for note in vault.notes.values() if note.mtime_ns >= after
        ]
        found.sort(key=lambda note: note.mtime_ns, reverse=True)
        return [
            {
                "vault": note.vault,
                "path": note.path,
                "title": note.title,
                "saved_at": stamp_at(note.mtime_ns / 1e9),
            }
            for note in found[:limit]
        ]

    def resolver(self) -> Resolver:
        from lsp_memory.services.kernel.resolver import Resolver

        return Resolver(self.store, self.user, self.vaults)

    def describer(self) -> Describer:
        from lsp_memory.services.editor.describe import Describer

        return Describer(self.store, self.user, self.vaults)

    def completer(self, buffers: Mapping[str, str] | None = None) -> Completer:
        """Completion; ``buffers`` are the open editor buffers' text by file path (what
        ``[[Note#^`` reads of a note open in the editor)."""
        from lsp_memory.services.editor.completion import Completer

        text = self.text() if self.text is not None else None
        return Completer(self.store, text, self.vaults, self.user, buffers)

    def references(self) -> ReferenceFinder:
        from lsp_memory.services.editor.references import ReferenceFinder

        return ReferenceFinder(self.resolver())

    def link_counts(self) -> LinkCounts:
        from lsp_memory.services.editor.counts import LinkCounts

        return LinkCounts(self.references())

    def renamer(self) -> Renamer:
        from lsp_memory.services.editor.rename import Renamer

        return Renamer(self.resolver())

    def mentions(self) -> Mentions:
        from lsp_memory.services.editor.mentions import Mentions

        return Mentions(self.vaults)

    def mover(self) -> MovePlanner:
        from lsp_memory.services.editor.moves import MovePlanner

        return MovePlanner(self.resolver())

    def annotator(self) -> Annotator:
        from lsp_memory.services.editor.annotate import Annotator

        return Annotator(self.resolver())

    def search(self) -> HybridSearch:
        return self.searcher()

    def suggester(self) -> Suggester:
        """Related-note suggestions for a paragraph (``services.editor.related``)."""
        from lsp_memory.services.editor.related import Suggester

        return Suggester(self.searcher(), self.resolver(), self.vaults, self.user)

    def search_records(
        self,
        query: str,
        *,
        kinds: Collection[str],
        statuses: Collection[str],
        k: int,
        min_similarity: float | None = None,
        as_of: str | None = None,
    ) -> list[dict[str, Any]]:
        """The hits of ``query`` as JSON (``lspMemory.search``), none below the relevance
        floor ``min_similarity``; with ``as_of``, as the memory held them then."""
        from lsp_memory.services.retrieval.search import search_records

        return search_records(
            self.search(),
            self.store,
            self.user,
            query,
            kinds=kinds,
            statuses=statuses,
            k=k,
            min_similarity=min_similarity,
            as_of=as_of,
        )

    def assembler(self, note_text: Callable[[Note], str] | None = None) -> Assembler:
        """The context assembler (build-context); ``note_text`` reads a pinned note (an
        editor's unsaved buffer; by default the file)."""
        from lsp_memory.services.block import Assembler, read_note
        from lsp_memory.services.block.conversation import TurnBudget

        config = self.config
        return Assembler(
            self.store,
            self.resolver(),
            self.searcher,
            user=config.user,
            tiers=config.tiers,
            budget=config.budget,
            note_text=note_text or read_note,
            min_similarity=config.min_similarity,
            turn_budget=TurnBudget(
                recent_tokens=config.recent_tokens,
                episode_tokens=config.episode_tokens,
                fact_tokens=config.fact_tokens,
                tool_tokens=config.tool_tokens,
            ),
        )
