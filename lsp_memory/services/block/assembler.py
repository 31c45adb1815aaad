"""The :class:`Assembler`: builds a document's context block by running the steps in
output order (referenced, attached and pinned claims; pinned notes; the entity walk;
automatic memories; referenced documents) and then filling the budget. It reads the store,
the vaults and the search indexes and writes nothing."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lsp_memory import refs
from lsp_memory.config import TierSettings
from lsp_memory.errors import UnresolvedReference, UserError
from lsp_memory.ids import seconds
from lsp_memory.model import Note, RefKind
from lsp_memory.services.block.budget import fit
from lsp_memory.services.block.claims import add_labelled, add_not_found, add_referenced
from lsp_memory.services.block.conversation import (
    Streamed,
    ToolResult,
    Turn,
    TurnBudget,
    add_episodes,
    add_recent,
    add_streamed_facts,
    add_tool_results,
    recall_query,
    related_messages,
    stream,
)
from lsp_memory.services.block.entities import add_entities
from lsp_memory.services.block.notes import add_documents, pin_notes, read_note
from lsp_memory.services.block.pieces import Build, ContextBlock
from lsp_memory.services.block.tiers import add_automatic, anchor, remembered
from lsp_memory.services.kernel.asof import LiveThen, live_claims_then, resolved_then
from lsp_memory.services.kernel.resolver import Resolution, Resolver, parse_argument
from lsp_memory.services.kernel.tokens import TokenCounter, o200k
from lsp_memory.services.retrieval.search import HybridSearch
from lsp_memory.store.sqlite import Store


class Assembler:
    """Builds context blocks for one user over one store, its vaults and its indexes."""

    def __init__(
        self,
        store: Store,
        resolver: Resolver,
        search: Callable[[], HybridSearch | None] | None = None,
        *,
        user: str,
        tiers: TierSettings | None = None,
        budget: int = 1500,
        counter: Callable[[], TokenCounter] = o200k,
        note_text: Callable[[Note], str] = read_note,
        min_similarity: float | None = None,
        turn_budget: TurnBudget | None = None,
    ) -> None:
        """``search`` gives the hybrid search when first needed (loading the model is not
        free); without it the semantic tier is empty. ``note_text`` reads a note's text (the
        language server passes its open buffers). ``min_similarity``: the semantic tier's
        relevance floor (the setting; None: none)."""
        self.store = store
        self.resolver = resolver
        self.user = user
        self.tiers = tiers or TierSettings()
        self.budget = budget
        self._search = search
        self._counter = counter
        self._note_text = note_text
        self.min_similarity = min_similarity
        self.turn_budget = turn_budget or TurnBudget()

    def build(
        self,
        text: str,
        *,
        language_id: str | None = None,
        path: str | None = None,
        budget: int | None = None,
        attach: Sequence[str] = (),
        pin: Sequence[str] = (),
        query: str | None = None,
        now: float | None = None,
        turns: Sequence[Turn] = (),
        turn_budget: TurnBudget | None = None,
        streamed: Streamed | None = None,
        tool_results: Sequence[ToolResult] = (),
        as_of: str | None = None,
    ) -> ContextBlock:
        """The context block of the document ``text`` (``language_id``/``path`` tell
        whether it is Markdown, docs/reference.md, Reference grammar). ``attach`` and ``pin`` are
        references given
        outside the document (``--attach``, ``--pin``); ``query`` replaces the document's
        clean text as the retrieval query; ``now`` (seconds since the epoch) replaces the
        time of the user's newest claim as the moment recency is measured from. ``turns``:
        the messages of the conversation the block serves, oldest first: its last ones are
        shown, and the claims and earlier messages related to them recalled, within
        ``turn_budget`` (:mod:`.conversation`); ``streamed`` is that recall when it was
        made already; ``tool_results``, what ``search_memory`` gave the conversation.
        ``as_of`` (a stored moment, ``kernel.asof``): the block as it would have been built
        then (``_then``); it cannot serve a conversation, whose messages and recall are
        today's.

        Raises ``UnresolvedReference`` when an ``attach`` or ``pin`` reference is not one,
        names nothing or names a note; unresolved references in the document are
        warnings."""
        limit = self.budget if budget is None else budget
        if limit < 1:
            raise ValueError("the budget must be at least 1 token")
        parsed = refs.parse_document(text, language_id=language_id, path=path)
        build = Build(as_of=as_of)
        store, user = self.store, self.user
        attached = [self._argument(ref, "--attach") for ref in attach]
        pinned = [self._argument(ref, "--pin") for ref in pin]
        resolutions = self.resolver.resolve_all(parsed.references)
        then: LiveThen | None = None
        if as_of is not None:
            if turns or tool_results or streamed is not None:
                raise UserError("a context block as of a date cannot serve a conversation")
            resolutions, attached, pinned = self._then(build, as_of, resolutions, attached, pinned)
            then = live_claims_then(store, user, as_of)
        counter = self._counter()
        shares = turn_budget or self.turn_budget
        if turns:
            add_recent(build, turns, shares, counter)
        for resolution in resolutions:
            if resolution.error is not None:
                build.warn(f"{resolution.ref}: {resolution.error}")
        add_referenced(build, resolutions, store=store, user=user)
        add_not_found(build, resolutions)
        for resolution in attached:
            add_labelled(
                build, "ATTACHED", resolution.claims, resolution.ref, store=store, user=user
            )
        if then is not None:
            pins = then.pinned()  # whatever its confidence
        else:
            pins = remembered(store, ("pinned", user), lambda: store.pinned_claims(user))
        add_labelled(build, "GLOBAL PINNED", pins, store=store, user=user)
        for resolution in pinned:
            add_labelled(
                build, "CONV PINNED", resolution.claims, resolution.ref, store=store, user=user
            )
        add_tool_results(
            build, tool_results, shares, counter, store=store, user=user, note=self._note
        )
        if turns:
            if streamed is None:
                streamed = self.recall(turns, shares)
            add_streamed_facts(build, streamed, shares, counter, store=store, user=user)
        pinned_keys = pin_notes(build, resolutions, self._note_text, self.resolver.resolve)
        add_entities(
            build,
            resolutions,
            pinned_keys,
            store=store,
            user=user,
            resolver=self.resolver,
            read=self._note_text,
        )
        moment = now if now is not None else anchor(store, user)
        if as_of is not None and now is None:
            moment = min(moment, seconds(as_of))
        wanted = parsed.clean_text if query is None else query
        add_automatic(
            build,
            wanted,
            moment,
            store=store,
            user=user,
            tiers=self.tiers,
            load_search=self._search,
            min_similarity=self.min_similarity,
            then=then,
        )
        if streamed is not None:
            asked = related_messages(
                self._search() if self._search is not None else None,
                wanted,
                shares,
                user=user,
                skip=len(turns),
                min_similarity=self.min_similarity,
            )
            found = [*asked[: shares.episodes], *streamed.episodes, *asked[shares.episodes :]]
            add_episodes(build, found, turns, shares, counter, store=store, user=user)
        add_documents(build, resolutions)
        return fit(build, limit, counter)

    def recall(self, turns: Sequence[Turn], budget: TurnBudget | None = None) -> Streamed:
        """Passive recall from a conversation's messages ``turns`` (oldest first): what a
        block serving it recalls, found now."""
        shares = budget or self.turn_budget
        search = self._search() if self._search is not None else None
        return stream(
            search,
            recall_query(turns),
            shares,
            user=self.user,
            skip=len(turns),
            min_similarity=self.min_similarity,
        )

    def _then(
        self,
        build: Build,
        moment: str,
        resolutions: Sequence[Resolution],
        attached: Sequence[Resolution],
        pinned: Sequence[Resolution],
    ) -> tuple[list[Resolution], list[Resolution], list[Resolution]]:
        """The references of a block as of ``moment``, resolved as of then
        (``kernel.asof.resolved_then``): a claim as it was, one made later a ``[NOT FOUND]``
        line (an ``--attach`` or ``--pin`` one a warning). Notes and entities have no
        history: they are shown as they are now, and the block says so when it has notes."""
        found = [resolved_then(self.store, self.user, each, moment) for each in resolutions]
        arguments = []
        for option, given in (("--attach", attached), ("--pin", pinned)):
            kept = [resolved_then(self.store, self.user, each, moment) for each in given]
            for each in kept:
                if each.error is not None:
                    build.warn(f"{option} {each.ref}: {each.error}")
            arguments.append([each for each in kept if each.error is None])
        if any(each.kind == "note" and each.error is None for each in found):
            build.warn(f"as of {moment}: notes are shown as they are now (files keep no history)")
        return found, arguments[0], arguments[1]

    def _note(self, key: str) -> Note | None:
        """The note of the index key ``key`` (``<vault>::<path>``), if it is still there."""
        path = key.split("::", 1)[-1]
        for view in self.resolver.vaults:
            note = view.notes.get(path)
            if note is not None and note.key == key:
                return note
        return None

    def _argument(self, text: str, option: str) -> Resolution:
        reference = parse_argument(text)
        if reference.kind is RefKind.NOTE:
            raise UnresolvedReference(f"{option} {text}: a note; link it in the document to pin it")
        resolution = self.resolver.resolve(reference)
        if resolution.error is not None:
            raise UnresolvedReference(f"{option} {text}: {resolution.error}")
        return resolution
