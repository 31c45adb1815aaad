"""The full-text index (Tantivy): claims, contexts, entities and notes, searchable by BM25,
by word prefix as the user types, and filtered by kind, user and status inside the index.

It is derived data in the cache folder: rebuilt whenever it is missing, unreadable or of
another schema version. Tantivy allows one writer per index across processes; ``open_index``
takes the writer when it is free and otherwise opens read-only (``writable`` False): such a
reader sees the writer's commits after ``reload()`` and may take the writer over later with
``try_write()`` (the lock is released when the holder closes or dies).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_memory.cachefiles import Distrusted, check, read_bytes, remove, write_bytes
from lsp_memory.text import one_line

SCHEMA_VERSION = 6
META_FILE = "lsp-memory-index.json"
VERSIONS_FILE = "lsp-memory-versions-{kind}.json"
"""Each document's version of one kind at the last commit (see ``FullTextIndex.versions``)."""
_MAX_JSON = 64 * 1024 * 1024
"""The largest JSON file of an index that is read (Tantivy's meta.json, its .managed.json,
``META_FILE``): one of thousands of segments stays under a few megabytes."""
_PREFIX_MAX = 24  # longest word prefix indexed for completion
_SNIPPET_WORDS = 32  # words of a query its snippets are made from
_MAX_QUERY_CHARS = 2000  # a longer query is searched by its first words
_MAX_NESTING = 8  # so is one with brackets nested deeper
_QUERY_WORDS = 64


def _nesting(text: str) -> int:
    """How deep the brackets of ``text`` nest."""
    depth = deepest = 0
    for char in text:
        if char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth = max(depth - 1, 0)
    return deepest


_HEAP = 64_000_000  # writer memory budget: small, this is a 2-core laptop-class machine
_WORD = re.compile(r"[\w-]+")
CONTEXT_BOOST = 0.5
"""Weight of a document's ``context`` words (an episode's previous message: "what inspired
your painting?" before "I painted this after I visited…"). nDCG@10 over LoCoMo's dev turns
(docs/benchmarks.md), BM25 / hybrid: weight 0 → 0.415 / 0.475, 0.3 → 0.436 / 0.500,
0.5 → 0.440 / 0.508, 0.6 → 0.440 / 0.511, 1.0 → 0.399 / 0.503 (neighbours outrank the turn)."""
FACTS_BOOST = 0.5
"""Weight of a document's ``facts`` (an episode's extracted claims: words a rewording
extractor adds, and the user's own statements in the message counted once more). nDCG@10 over
LoCoMo's turns, hybrid, tuned / held-out conversations (docs/benchmarks.md): 0 → 0.500 /
0.516, 0.5 → 0.508 / 0.524, 1.0 → 0.508 / 0.520."""
WHEN_BOOST = 1.5
"""Weight of a document's ``when`` (an episode's day in words, "8 May 2023": what a question
such as "what did Maria donate in December 2023?" names). Hybrid nDCG@10 as above, with facts
at 0.5: 0 → 0.508 / 0.524, 0.5 → 0.512 / 0.529, 1.0 → 0.517 / 0.535, 1.5 → 0.521 / 0.540,
2.0 → 0.521 / 0.542."""
REPLY_BOOST = 0.5
"""Weight of a document's ``reply`` (an episode's next message: "What inspired your
painting?" is found by the answer it got). Hybrid nDCG@10 over LoCoMo's turns, tuned /
held-out conversations (docs/benchmarks.md): 0 → 0.534 / 0.547, 0.2 → 0.543 / 0.557,
0.3 → 0.542 / 0.559, 0.5 → 0.544 / 0.558, 0.7 → 0.531 / 0.558; in ``context`` with the
previous message instead of a field of its own → 0.540 / 0.552."""
TITLE_CHARS = 160
"""A document stored without a title (an episode: a message has none) is shown by this many
characters of its body."""


@dataclass(frozen=True, slots=True)
class TextDoc:
    """One searchable record. ``id`` is ``<kind>:<record id>`` (a note's is its key)."""

    id: str
    kind: str  # claim, context, entity, episode, note
    user: str  # "" for notes: they belong to the vault, every user sees them
    status: str  # a claim's status; "active" or "archived" for the rest
    title: str  # a claim's statement, a context's or entity's name, a note's title
    body: str  # everything else worth finding it by
    keys: tuple[str, ...] = ()  # exact handles: friendly id, claim_42, a note's path
    context: str = ""  # words around it, weighted less: an episode's previous message
    reply: str = ""  # what answered it: an episode's next message
    facts: str = ""  # what was found in it: the statements of an episode's extracted claims
    when: str = ""  # when it happened, in words: an episode's date ("8 May 2023")
    version: str = ""  # what it was made from: a note's content hash (unchanged: not rewritten)
    confidence: float = 1.0
    updated: int = 0  # seconds since the epoch, for recency


SHORT_PREFIX = 2
"""Prefixes of at most this many letters have their answers kept until the next reload."""
SHORT_KEPT = 512
"""How many such answers are kept (least recently asked dropped first)."""


@dataclass(frozen=True, slots=True)
class TextHit:
    """A search result: which record, how well it matched, a snippet of why."""

    id: str
    kind: str
    score: float
    title: str
    snippet: str
    status: str
    confidence: float
    updated: int
    key: str = ""  # its first key: a friendly id, or a note's path


def _schema() -> Any:
    from tantivy import SchemaBuilder

    builder = SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("kind", stored=True, tokenizer_name="raw")
    builder.add_text_field("user", stored=True, tokenizer_name="raw")
    builder.add_text_field("status", stored=True, tokenizer_name="raw")
    builder.add_text_field("title", stored=True, tokenizer_name="english")
    builder.add_text_field("body", stored=True, tokenizer_name="english")
    builder.add_text_field("keys", stored=True, tokenizer_name="raw")
    builder.add_text_field("context", stored=False, tokenizer_name="english")
    builder.add_text_field("reply", stored=False, tokenizer_name="english")
    builder.add_text_field("facts", stored=False, tokenizer_name="english")
    builder.add_text_field("when", stored=False, tokenizer_name="english")
    builder.add_text_field("version", stored=True, tokenizer_name="raw")
    # Looked up by single terms only, never as a phrase: no positions (13 % of the index).
    builder.add_text_field("prefix", stored=False, tokenizer_name="edge", index_option="freq")
    builder.add_float_field("confidence", stored=True, fast=True)
    builder.add_integer_field("updated", stored=True, fast=True)
    return builder.build()


def _register(index: Any) -> None:
    """Custom tokenizers are not stored in the index: register them after every open."""
    from tantivy import Filter, TextAnalyzerBuilder, Tokenizer

    edge = Tokenizer.ngram(min_gram=1, max_gram=_PREFIX_MAX, prefix_only=True)
    index.register_tokenizer("edge", TextAnalyzerBuilder(edge).filter(Filter.lowercase()).build())
    index.register_tokenizer("english", _english())


def _english() -> Any:
    """Tantivy's en_stem without stop words: "when did I …" questions matched on "did"."""
    from tantivy import Filter, TextAnalyzerBuilder, Tokenizer

    return (
        TextAnalyzerBuilder(Tokenizer.simple())
        .filter(Filter.remove_long(40))
        .filter(Filter.lowercase())
        .filter(Filter.stopword("english"))
        .filter(Filter.stemmer("english"))
        .build()
    )


def _prefix_words(doc: TextDoc) -> list[str]:
    """The words a user may start typing to find ``doc``: its keys and its title's words."""
    words = [key.lower() for key in doc.keys]
    words += [w.lower() for w in _WORD.findall(doc.title)]
    return list(dict.fromkeys(words))


_OPTIONAL = ("context", "reply", "facts", "when", "version")
"""Text fields most documents leave empty (only episodes, notes and claims extracted from a
message set some): given only when set, as an empty value indexes nothing and is read back as
absent."""


def _fields(doc: TextDoc) -> dict[str, Any]:
    """``doc`` as the index's fields; many-valued ones as lists (one call, not one a word)."""
    fields: dict[str, Any] = {
        "id": doc.id,
        "kind": doc.kind,
        "user": doc.user,  # "" too: the filter of every search looks it up
        "status": doc.status,
        "title": doc.title,
        "body": doc.body,
        "confidence": float(doc.confidence),
        "updated": int(doc.updated),
        "keys": list(doc.keys),
        "prefix": _prefix_words(doc),
    }
    for name in _OPTIONAL:
        value = getattr(doc, name)
        if value:
            fields[name] = value
    return fields


class FullTextIndex:
    """An open index folder. Searches see the state as of the last ``reload``."""

    def __init__(self, folder: Path, index: Any, writer: Any | None, rebuilt: bool) -> None:
        self.folder = folder
        self._index = index
        self._schema = index.schema
        self._writer = writer
        self.rebuilt = rebuilt  # True when this open created it afresh: a full build is due
        self.unwritable: str | None = None  # why this process cannot write it, if not a lock
        self.distrusted: str | None = None  # why the files found were not read (rebuilt)
        self.copy: Path | None = None  # where it is read from when its folder refused that
        # Answers to the shortest prefixes, for the searcher they came from (see ``prefix``).
        self._generation = 0  # counts reloads: a cached answer is for one generation
        self._short: OrderedDict[tuple[Any, ...], list[TextHit]] = OrderedDict()
        self._short_lock = threading.Lock()

    # -- writing ----------------------------------------------------------------------------

    @property
    def writable(self) -> bool:
        return self._writer is not None

    def try_write(self) -> bool:
        """Take the writer if no other process holds it now. True when this index writes."""
        if self.copy is not None:
            return False  # a copy of an index whose folder cannot be written: read only
        if self._writer is None:
            self._writer, self.unwritable = _take_writer(self._index)
        return self._writer is not None

    def _need_writer(self) -> Any:
        if self._writer is None:
            raise RuntimeError("this index is open read-only; another process writes it")
        return self._writer

    def upsert(self, docs: Iterable[TextDoc], *, fresh: bool = False) -> int:
        """Replace (or add) each document; visible after ``commit``. Returns the count.
        ``fresh``: the index was emptied since the last commit and holds none of ``docs``
        (a full build), so none is looked for to be replaced."""
        from tantivy import Document

        writer = self._need_writer()
        count = 0
        for doc in docs:
            if not fresh:
                writer.delete_documents_by_term("id", doc.id)
            writer.add_document(Document(**_fields(doc)))
            count += 1
        return count

    def delete(self, ids: Iterable[str]) -> None:
        writer = self._need_writer()
        for doc_id in ids:
            writer.delete_documents_by_term("id", doc_id)

    def delete_all(self) -> None:
        self._need_writer().delete_all_documents()

    def commit(self, meta: Mapping[str, Any] | None = None) -> None:
        """Make the changes durable and visible, then record ``meta`` (e.g. how far the index
        has followed the store) beside it. A crash between the two replays a few changes."""
        self._need_writer().commit()
        self.reload()
        if meta is not None:
            _write_meta(self.folder, {**self.meta, **meta, "schema": SCHEMA_VERSION})

    @property
    def meta(self) -> dict[str, Any]:
        return _read_meta(self.folder) or {"schema": SCHEMA_VERSION}

    def close(self) -> None:
        """Release the writer lock (waiting for merges) so another process can take it."""
        if self._writer is not None:
            self._writer.wait_merging_threads()
            self._writer = None
        if self.copy is not None:
            shutil.rmtree(self.copy, ignore_errors=True)
            self.copy = None

    # -- reading ----------------------------------------------------------------------------

    def reload(self) -> None:
        """See the latest commit, whichever process made it."""
        self._index.reload()
        with self._short_lock:
            self._generation += 1
            self._short.clear()

    def __len__(self) -> int:
        return int(self._index.searcher().num_docs)

    def _filters(
        self, user: str, kinds: Collection[str] | None, statuses: Collection[str] | None
    ) -> list[Any]:
        from tantivy import Query

        schema = self._schema
        filters = [Query.term_set_query(schema, "user", [user, ""])]
        if kinds:
            filters.append(Query.term_set_query(schema, "kind", sorted(kinds)))
        if statuses:
            filters.append(Query.term_set_query(schema, "status", sorted(statuses)))
        return filters

    def _run(self, query: Any, filters: list[Any], k: int, snippet_query: Any) -> list[TextHit]:
        """Run ``query`` under ``filters``; with ``snippet_query`` each hit gets a snippet
        (two thirds of a search's time when made for 100 candidates: ask only for the few
        shown)."""
        from tantivy import Occur, Query, SnippetGenerator

        combined = Query.boolean_query([(Occur.Must, query), *((Occur.Must, f) for f in filters)])
        searcher = self._index.searcher()
        hits = searcher.search(combined, k).hits
        if not hits:
            return []
        snippets = None
        if snippet_query is not None:
            snippets = SnippetGenerator.create(searcher, snippet_query, self._schema, "body")
            snippets.set_max_num_chars(160)
        found = []
        for score, address in hits:
            doc = searcher.doc(address)
            snippet = ""
            if snippets is not None:
                snippet = snippets.snippet_from_doc(doc).fragment() or doc.get_first("body")[:160]
            found.append(_hit(doc, float(score), snippet))
        return found

    def search(
        self,
        text: str,
        *,
        user: str,
        kinds: Collection[str] | None = None,
        statuses: Collection[str] | None = None,
        k: int = 10,
        snippets: bool = True,
    ) -> list[TextHit]:
        """BM25 over titles (boosted), bodies and keys. Half-typed or malformed input
        (``[[Pro``, ``"unclosed``, ``a AND``) is parsed leniently, never raises."""
        if not text.strip():
            return []
        query = self._parse(text)
        snippet_query = query if snippets else None
        return self._run(query, self._filters(user, kinds, statuses), k, snippet_query)

    def _parse(self, text: str) -> Any:
        if len(text) > _MAX_QUERY_CHARS or _nesting(text) > _MAX_NESTING:
            # Tantivy's parser recurses: 15 000 nested brackets crashed the process, and
            # long odd texts held it for minutes. Such a query is searched by its words.
            text = " ".join(_WORD.findall(text)[:_QUERY_WORDS])
        query, _errors = self._index.parse_query_lenient(
            text,
            ["title", "body", "keys", "context", "reply", "facts", "when"],
            field_boosts={
                "title": 2.0,
                "keys": 3.0,
                "context": CONTEXT_BOOST,
                "reply": REPLY_BOOST,
                "facts": FACTS_BOOST,
                "when": WHEN_BOOST,
            },
        )
        return query

    def holding_every_word(self, text: str, ids: Sequence[str]) -> set[str]:
        """Those of ``ids`` whose title, body, context (an episode's: the message it
        answers), reply, facts or day holds every word of ``text`` as the index reads them (stemmed,
        stop words aside), or whose title or id has a word starting with it (``postgres`` for
        "PostgreSQL", as completion finds it): a lexical match."""
        from tantivy import Occur, Query

        english = _english()
        words: dict[str, list[str]] = {}
        for raw in _WORD.findall(text.lower()):
            stems = english.analyze(raw)
            if stems:
                words.setdefault(raw[:_PREFIX_MAX], stems)
        if not words or not ids:
            return set()
        schema = self._schema
        each = [
            Query.boolean_query(
                [
                    *(
                        (Occur.Should, Query.term_query(schema, f, stem))
                        for f in ("title", "body", "context", "reply", "facts", "when")
                        for stem in stems
                    ),
                    (Occur.Should, Query.term_query(schema, "prefix", raw)),
                ]
            )
            for raw, stems in words.items()
        ]
        query = Query.boolean_query(
            [
                (Occur.Must, _any_id(schema, ids)),
                *((Occur.Must, q) for q in each),
            ]
        )
        searcher = self._index.searcher()
        hits = searcher.search(query, len(ids), count=False).hits
        return {searcher.doc(address).get_first("id") for _score, address in hits}

    def snippets(self, text: str, ids: Sequence[str]) -> dict[str, str]:
        """Snippets of ``text`` in the given documents (the start of the body when the words
        do not occur in it)."""
        from tantivy import SnippetGenerator

        if not ids:
            return {}
        searcher = self._index.searcher()
        # Its first words only, not the text as typed: a long or odd query (a fuzzed
        # workspace/symbol) held both request threads in the query parser for minutes.
        words = " ".join(_WORD.findall(text)[:_SNIPPET_WORDS])
        generator = SnippetGenerator.create(searcher, self._parse(words), self._schema, "body")
        generator.set_max_num_chars(160)
        found: dict[str, str] = {}
        for _score, address in searcher.search(_any_id(self._schema, ids), len(ids)).hits:
            doc = searcher.doc(address)
            fragment = generator.snippet_from_doc(doc).fragment()
            found[doc.get_first("id")] = fragment or doc.get_first("body")[:160]
        return found

    def prefix(
        self,
        typed: str,
        *,
        user: str,
        kinds: Collection[str] | None = None,
        statuses: Collection[str] | None = None,
        k: int = 20,
    ) -> list[TextHit]:
        """Records with a key or title word starting with each typed word (as you type
        ``@prefer_mo`` or ``@morn meet``), best first. No snippets: a few typed letters
        rarely make one, and completion shows the title."""
        from tantivy import Occur, Query

        words = [w.lower()[:_PREFIX_MAX] for w in _WORD.findall(typed)]
        if not words:
            return []
        # One or two letters match a large share of every record (the first keystrokes after
        # `@`: ~3 ms a search on 107k records), and there are few such prefixes: their
        # answers are kept until the next reload.
        short = sum(map(len, words)) <= SHORT_PREFIX
        key = (tuple(words), user, frozenset(kinds or ()), frozenset(statuses or ()), k)
        if short:
            with self._short_lock:
                generation, kept = self._generation, self._short.get(key)
                if kept is not None:
                    self._short.move_to_end(key)
                    return list(kept)
        schema = self._schema
        query = Query.boolean_query(
            [(Occur.Must, Query.term_query(schema, "prefix", word)) for word in words]
        )
        found = self._run(query, self._filters(user, kinds, statuses), k, None)
        if short:
            with self._short_lock:
                if generation == self._generation:  # not reloaded meanwhile
                    self._short[key] = found
                    while len(self._short) > SHORT_KEPT:
                        self._short.popitem(last=False)
        return list(found)

    def ids(self, kind: str) -> set[str]:
        """The ids of every document of ``kind`` (e.g. to find notes gone from a vault)."""
        return set(self.versions(kind))

    def versions(self, kind: str) -> dict[str, str]:
        """Every document of ``kind``: its id → its ``version`` (what it was made from).

        Kept beside the index for its last commit (``VERSIONS_FILE``): a process's first
        sync compares every note of its vaults with these, and reading 10 000 notes' stored
        documents to get them was ~0.1-0.2 s of every ``build-context`` and ``search``. The
        kept answer is used only while Tantivy's ``meta.json`` is the one it was read at
        (every commit rewrites it), and only by the writer, whose own commits are the only
        ones; it is a cache file like the rest (``cachefiles``)."""
        if self._writer is None:  # a reader answers as its searcher sees the index
            return self._read_versions(kind)
        committed = self._committed()
        kept = self._kept_versions(kind, committed)
        if kept is not None:
            return kept
        self.reload()  # the writer's searcher at that commit (nobody else commits)
        found = self._read_versions(kind)
        if committed is not None and committed == self._committed():
            data = json.dumps({"commit": committed, "kind": kind, "versions": found}).encode()
            # Never near the size a JSON file of the index may have (the whole index would
            # be distrusted and rebuilt: ~400 000 notes); a read-only or full cache folder:
            # they are read again next time.
            if len(data) <= _MAX_JSON // 2:
                with contextlib.suppress(OSError):
                    write_bytes(self.folder / VERSIONS_FILE.format(kind=kind), data)
        return found

    def _committed(self) -> str | None:
        """What identifies the index's last commit: a digest of Tantivy's ``meta.json``."""
        try:
            data = read_bytes(self.folder / "meta.json", limit=_MAX_JSON)
        except (OSError, Distrusted):
            return None
        return hashlib.sha256(data).hexdigest()

    def _kept_versions(self, kind: str, committed: str | None) -> dict[str, str] | None:
        if committed is None:
            return None
        try:
            data = json.loads(
                read_bytes(self.folder / VERSIONS_FILE.format(kind=kind), limit=_MAX_JSON)
            )
        except (OSError, Distrusted, ValueError, RecursionError):
            return None
        if (
            not isinstance(data, dict)
            or data.get("commit") != committed
            or data.get("kind") != kind
        ):
            return None
        found = data.get("versions")
        if not isinstance(found, dict) or not all(type(v) is str for v in found.values()):
            return None
        return found

    def _read_versions(self, kind: str) -> dict[str, str]:
        from tantivy import Query

        searcher = self._index.searcher()
        query = Query.term_query(self._schema, "kind", kind)
        hits = searcher.search(query, max(1, searcher.num_docs), count=False).hits
        found = {}
        for _score, address in hits:
            doc = searcher.doc(address)
            found[doc.get_first("id")] = doc.get_first("version") or ""
        return found

    def get(self, ids: Sequence[str]) -> dict[str, TextHit]:
        """Stored fields of the given documents (for ranking dense hits); no snippets."""

        if not ids:
            return {}
        searcher = self._index.searcher()
        found: dict[str, TextHit] = {}
        for _score, address in searcher.search(_any_id(self._schema, ids), len(ids)).hits:
            hit = _hit(searcher.doc(address), 0.0, "")
            found[hit.id] = hit
        return found


def _any_id(schema: Any, ids: Sequence[str]) -> Any:
    """A query for the documents of ``ids``: up to ``FEW_IDS``, one term query per id, any
    of them (the ~200 ids whose words a search checks at 207k documents: 1.5–1.8 ms where
    a term set query took 2.7; the ~600 of a context block's search at 117k: 3.2 against
    5.3 ms); more, a term set query."""
    from tantivy import Occur, Query

    unique = list(dict.fromkeys(ids))
    if len(unique) > FEW_IDS:
        return Query.term_set_query(schema, "id", unique)
    return Query.boolean_query(
        [(Occur.Should, Query.term_query(schema, "id", doc_id)) for doc_id in unique]
    )


FEW_IDS = 2048
"""At most this many ids are looked up as a disjunction of term queries (``_any_id``): at
117k documents the term set query was the slower up to ~3 000 ids (2 000: 14.6 against
12.9 ms; 4 000: 22.9 against 26.7)."""


def _hit(doc: Any, score: float, snippet: str) -> TextHit:
    return TextHit(
        id=doc.get_first("id"),
        kind=doc.get_first("kind"),
        score=score,
        title=doc.get_first("title") or one_line(doc.get_first("body"), TITLE_CHARS),
        snippet=snippet,
        status=doc.get_first("status"),
        confidence=float(doc.get_first("confidence")),
        updated=int(doc.get_first("updated")),
        key=doc.get_first("keys") or "",
    )


def _read_meta(folder: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads(read_bytes(folder / META_FILE, limit=_MAX_JSON))
    except (OSError, ValueError, RecursionError):
        return None
    return meta if isinstance(meta, dict) else None


def _distrusted(folder: Path) -> str | None:
    """Why the index's files in ``folder`` may not be opened (Tantivy reads them itself):
    the folder, or a file in it, is a symlink, a FIFO or a device, another user's or
    writable by others, or one of its JSON files is too large. None when all is well."""
    try:
        check_folder = os.lstat(folder)
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(check_folder.st_mode) or check_folder.st_uid != os.getuid():
        return f"{folder} is not a folder of this user's"
    try:
        for entry in os.scandir(folder):
            check(Path(entry.path), limit=_MAX_JSON if entry.name.endswith(".json") else None)
    except Distrusted as error:
        return str(error)
    return None


def _write_meta(folder: Path, meta: Mapping[str, Any]) -> None:
    partial = folder / f".{META_FILE}.partial"
    partial.write_text(json.dumps(meta, sort_keys=True), encoding="utf-8")
    partial.replace(folder / META_FILE)


def _take_writer(index: Any) -> tuple[Any | None, str | None]:
    """The index's writer, and why there is none: None, None when another process holds it;
    None and the reason when the folder cannot be written (read-only, disk full: the index
    is then read as it is)."""
    try:
        return index.writer(heap_size=_HEAP, num_threads=1), None
    except (ValueError, OSError) as error:
        refused = _refusal(error)
        if "LockBusy" in str(error) or refused is not None:
            return None, refused
        raise


def _refusal(error: BaseException) -> str | None:
    """Why the folder refused a write, if it did: "it is read-only", "the disk is full"."""
    text = str(error).lower()
    if "read-only" in text or "readonly" in text or "permission denied" in text:
        return "it is read-only"
    if "no space left" in text or "disk is full" in text:
        return "the disk is full"
    return None


def _open_copy(folder: Path, refused: str) -> FullTextIndex:
    """The index in ``folder``, which cannot be written, opened from a temporary copy (its
    files are only read; the copy goes when the index is closed)."""
    from tantivy import Index

    copy = Path(tempfile.mkdtemp(prefix="lsp-memory-index-"))
    try:
        shutil.copytree(folder, copy, dirs_exist_ok=True)
        index = Index.open(str(copy))
    except BaseException:
        shutil.rmtree(copy, ignore_errors=True)
        raise
    _register(index)
    opened = FullTextIndex(folder, index, None, rebuilt=False)
    opened.unwritable, opened.copy = refused, copy
    return opened


def open_index(folder: Path) -> FullTextIndex:
    """Open the index in ``folder`` (a folder of the cache that lsp-memory owns), taking the
    writer if it is free. A missing, unreadable, foreign or other-schema index is deleted and
    created empty, with ``rebuilt`` True: the caller then builds it from the store and vaults.
    """
    from tantivy import Index

    distrusted = _distrusted(folder)
    meta = None if distrusted else _read_meta(folder)
    if meta is not None and meta.get("schema") == SCHEMA_VERSION:
        try:
            index = Index.open(str(folder))
        except (ValueError, OSError) as error:
            refused = _refusal(error)
            if refused is not None:  # tantivy writes even to open: read a copy
                return _open_copy(folder, refused)
            # otherwise corrupt: rebuilt below
        else:
            _register(index)
            writer, refused = _take_writer(index)
            opened = FullTextIndex(folder, index, writer, rebuilt=False)
            opened.unwritable = refused
            return opened
    remove(folder)
    folder.mkdir(parents=True, exist_ok=True)
    index = Index(_schema(), path=str(folder))
    _register(index)
    writer, _refused = _take_writer(index)
    _write_meta(folder, {"schema": SCHEMA_VERSION})
    created = FullTextIndex(folder, index, writer, rebuilt=True)
    created.distrusted = distrusted
    return created
