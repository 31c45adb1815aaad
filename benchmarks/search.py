"""The search benchmark: full-text build, embedding throughput, change-to-searchable, search
latency, resident memory, and SQLite FTS5 on the same corpus.

    .venv/bin/python -m benchmarks.search [--claims 100000] [--notes 10000] [--queries 1000]
        [--embed-sample 2000] [--json] [--seed 7] [--workdir DIR] [--only build]

The corpus (deterministic from the seed): the foundation benchmark's first user (claims,
a 2 000-context tree, 200 tags, 5 000 entities), imported with ``import_records`` into a store
opened by ``App``, and a vault of generated Markdown notes of ~2 KB (front matter with title,
aliases and tags on some, headings, paragraphs of Zipf-distributed English words, lists,
``[[links]]`` between notes). Then, in one process:

1. **Build**: ``IndexKeeper.index(full=True, embed=False)`` on a first start (the model load and the
   vault scan included), timed in parts; a separate ``Vault.scan()``; and the bare Tantivy
   build of the same ``TextDoc`` list into a fresh index (``upsert`` + ``commit``).
2. **Embeddings**: ``Embedder.load()`` (threads 1, as ``App`` loads it), then ``embed`` of
   ``--embed-sample`` claim statements and 500 note texts (``embed_text`` of ``note_doc``);
   items/s and the time to embed the whole corpus at those rates.
3. **Vectors**: every document gets a vector: the sampled ones their real vector, the rest a
   sampled vector plus Gaussian noise, re-normalised (exact search costs the same whatever the
   values). They go through the library's own path: the vector cache, the queue marked
   embedded, and the in-memory ``VectorIndex`` of the ``VectorSide``.
4. **Latency** (after a warm-up, for the claims' user): raw ``FullTextIndex.search``,
   ``HybridSearch.search`` in ``bm25`` and ``hybrid`` mode, the query embedding alone, hybrid
   with the query vector precomputed (an embedder that looks it up), dense search alone, and
   ``FullTextIndex.prefix`` of 2–8 characters of friendly ids and title words.
5. **Change → searchable**: a new word written into a note, then ``Vault.update`` +
   ``Indexer.sync(notes=[note])`` + searches until the word finds the note; ≥ 50 notes.
6. **FTS5 peer**: the same ``TextDoc`` list in an FTS5 table (``porter unicode61``): build,
   BM25 and prefix latency, change → searchable (same parse, UPDATE + commit + query), size;
   also a variant with a prefix index (``prefix='2 3 4'``).
7. **Memory**: a fresh process opens an ``App`` over the built store and index, scans the
   vault, loads the model and the full-size vector index through ``App.vectors`` (from the
   vector cache, as a restarted server does), runs a few searches; peak and current RSS.

With ``--only build``: the corpus, step 1's builds and step 6's two FTS5 builds (plain and
with the prefix index), nothing else: issue 24's "text index full build" row in about a minute.

Results are printed as a table (each figure beside its target) or as one JSON object. Work
goes to a temporary folder that is removed afterwards, or under ``--workdir`` (kept).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence, Sized
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from benchmarks.common import (
    ROOT,
    arguments,
    emit,
    latency_ms,
    noisy_copies,
    peak_rss_mib,
    print_head,
    print_memory_steps,
    proc_status,
    start_report,
    store_vectors,
    workspace,
)
from benchmarks.foundation import (
    ADJECTIVES,
    FIRST_NAMES,
    LAST_NAMES,
    WORDS,
    UserData,
    generate_user,
)
from lsp_memory.app import App
from lsp_memory.config import Config
from lsp_memory.model import doc_id
from lsp_memory.notes import Vault, parse_note
from lsp_memory.services.memory.interchange import import_records
from lsp_memory.services.retrieval.documents import embed_text, note_doc
from lsp_memory.services.retrieval.embedding import VectorSide
from lsp_memory.services.retrieval.indexing import Indexer
from lsp_memory.services.retrieval.search import HybridSearch
from lsp_memory.store.catalog import VectorCatalog
from lsp_memory.store.fulltext import TextDoc, open_index
from lsp_memory.store.vectors import (
    Embedder,
    FloatMatrix,
    FloatVector,
    VectorCache,
    content_hash,
)

USER = "bench"

# Targets from the issue.
TARGET_BUILD_S = 30.0
TARGET_CHANGE_MS = 100.0
TARGET_BM25_P99_MS = 5.0
TARGET_HYBRID_P99_MS = 30.0
TARGET_PREFIX_P99_MS = 2.0
TARGET_RSS_MB = 400.0  # 10^6 bytes: the stricter reading

CONTEXTS = 2000
ENTITIES = 5000
TAGS = 200
NOTE_EMBED_SAMPLE = 500
WARMUP = 100
CHANGES = 60  # notes changed one at a time (≥ 50)
CASE_BUDGET_S = 60.0  # a latency case stops after this much timed work (with ≥ MIN_RUNS runs)
MIN_RUNS = 300
NOISE = 0.02  # per-component sigma of the noise added to sampled vectors
MEMORY_QUERIES = 20
K = 10

# Tantivy's English stop words (its analyzer drops them): left out of FTS5 queries too, so
# both engines answer the same terms.
STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)
FUNCTION_WORDS = (
    "the of and to a in is for that with on as it was at by from this be are have not or but "
    "we i you they our my their will can has had an about after before when so also then"
).split()
# Real words beyond the foundation's vocabulary: the notes' long tail.
EXTRA_WORDS = """
ability absence academy accent acceptance accident accuracy achievement acid acoustic acre
adapter addition address adventure advice agency agreement alarm alcohol algorithm allergy
alley alloy alphabet altitude ambition amount anchor angle animal ankle anniversary antenna
anxiety apartment appetite application appointment approval arch architecture argument arrow
artist aspect assembly assistant asthma atmosphere attempt attention attic audience author
avenue average awareness bacon bakery balcony ballet bamboo bandwidth barrel basket battle
beacon bean beard behavior belief bench benefit berry biology biscuit blanket blender
blossom blueprint boat bonus boundary bowl bracket brain branch bread breakfast breath brick
brother brush bubble bucket buffer bulletin bundle bureau butter button cabinet cable cactus
cafe calculator calorie canal candle capacity capital caption carbon carpet carrot cartoon
cashier catalog category cathedral ceiling cellar cement census ceremony certificate chain
chair chalk champion channel charity cheese chemistry cherry chess chicken childhood chimney
chocolate circle citizen clarity classroom climate clinic clock closet cluster coast collar
colleague comfort committee community compass competition complaint concept conference
confidence conflict consensus consumer context contrast convention conversation cotton
council counter courage cousin craft crater crayon criteria crystal culture curiosity
curtain cushion dairy damage dancer daughter debate decade decision declaration defense
delivery density dentist departure deposit depth desert dessert detail device diagram
dialect diamond diet dimension dinosaur direction discount discovery disease distance
district diversity doorway dough drawer drum duty eagle earth economy edition education
effort elbow election electricity elephant elevator emergency emotion empire employee
encounter envelope episode equation equipment error essay evening evidence exhibition
expansion experience experiment expert explosion fabric factory failure fairness family
fantasy farmer fashion father fence fiction filter finger firewall fishing flavor fleet
flower fountain fraction freedom frequency fridge friendship frost fruit funeral furniture
galaxy gallery garage garlic generation genius geography gesture giant glacier glass glove
government graduate grandmother gravity greeting grocery growth guidance habitat hammer
handbook harmony harvest headline hearing heart heritage highway history hobby honey horizon
horse household humor hunger hurricane identity illness illusion image imagination impact
income industry infant inflation influence ingredient injury innocence insect inspection
instinct instruction instrument intention internet invention investment iron jacket jungle
justice keyboard kettle kidney kingdom knowledge label laboratory landscape lantern laundry
leadership leather lecture legend leisure lemon lens liberty lifestyle lighthouse limit
liquid literature lobby location logic loyalty luggage machine magazine magnet mailbox
majority mammal manager mansion marathon margin marriage mask material mathematics meadow
measure medicine melody member metal microphone midnight mineral minute mirror mission
mixture moment monument mood motion motor muscle mushroom mystery napkin narrative nation
nature neighbor nephew nerve nest noodle notion novel nurse nutrition ocean opinion orange
orbit orchestra organ outcome outline oven owner oxygen paddle palace pancake panel parade
parent parking passenger pasta pattern peace pencil pepper performance permission person
phrase physics pillow pilot planet plastic platform pleasure poem poetry pollution pond
population portrait potato poverty powder practice prayer precision pressure principle
prison privacy problem profession progress promise property proposal protein province
purpose pyramid quality quantity question rabbit railway rainbow reaction reader reality
reason receipt recovery reflection region relation religion remedy rental republic
reputation resource response restaurant revenue revolution rhythm ribbon rice rival robot
rocket romance routine rubber sailor salad sample sandwich satellite sauce scale scandal
scenario scholar science scissors screen sculpture secret section security seed sentence
sequence shadow shelter shoulder silence silver sister skeleton skill slogan smile society
soldier solution soup speaker species speech sphere spider spirit sponge stadium stairs
statement statue stomach stone stranger stream street strength structure student substance
suburb success sugar suitcase sunrise surface surgery surprise symbol sympathy symptom
talent target taxi technology telescope temperature tension territory texture theater theory
therapy thought thread thunder tissue tobacco toilet tomato tongue tourist tower tradition
traffic tragedy transport treasure treaty triangle trophy trouble truck tunnel turtle
umbrella uncle uniform universe university utility valley value vegetable vehicle venue
verdict victim victory viewpoint vitamin volcano voyage wagon waiter warning waste wealth
weapon whale wheel whisper wilderness wisdom witness wonder wood worker wrist writer youth
zone
""".split()
NO_HIT_WORDS = """
zeppelin xylophone quasar narwhal kumquat trombone yodel zither quokka axolotl gazpacho
kerfuffle flummox gobbledygook lollygag snollygoster bumfuzzle widdershins cattywampus
""".split()
FOLDERS = [
    "",
    "projects",
    "people",
    "meetings",
    "journal/2024",
    "journal/2025",
    "areas/work",
    "areas/home",
    "reading",
    "ideas",
    "reference",
]
NOTE_TAGS = ["work", "home", "reading", "idea", "meeting", "project", "health", "travel", "log"]
_TOKEN = re.compile(r"[\w-]+")

T = TypeVar("T")


# -- corpus -----------------------------------------------------------------------------------


@dataclass(slots=True)
class Corpus:
    """The generated vault and what queries are drawn from."""

    root: Path
    paths: list[str]  # vault-relative
    titles: list[str]
    bytes: int
    vocabulary: set[str]  # every lower-cased word written into notes or claims


def _zipf_weights(size: int, exponent: float = 1.0) -> list[float]:
    total = 0.0
    cumulative = []
    for rank in range(size):
        total += 1.0 / (rank + 1) ** exponent
        cumulative.append(total)
    return cumulative


def generate_vault(rng: random.Random, root: Path, count: int, claims: UserData) -> Corpus:
    """``count`` Markdown notes of ~2 KB under ``root``, deterministic from ``rng``."""
    content = sorted(set(WORDS) | set(ADJECTIVES) | set(EXTRA_WORDS))
    rng.shuffle(content)
    ranked = FUNCTION_WORDS + [w for w in content if w not in FUNCTION_WORDS]
    cumulative = _zipf_weights(len(ranked))
    names = [f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}" for _ in range(200)]

    def words(n: int) -> list[str]:
        return rng.choices(ranked, cum_weights=cumulative, k=n)

    def title_words(n: int) -> str:
        return " ".join(w.capitalize() for w in rng.sample(content, n))

    titles: list[str] = []
    taken: set[str] = set()
    paths: list[str] = []
    while len(titles) < count:
        title = title_words(rng.choice((2, 2, 3, 3, 4)))
        slug = "-".join(title.lower().split())
        if slug in taken:
            continue
        taken.add(slug)
        folder = rng.choice(FOLDERS)
        titles.append(title)
        paths.append(f"{folder}/{slug}.md" if folder else f"{slug}.md")

    def sentence(links: list[str]) -> str:
        parts = words(rng.randint(6, 16))
        if rng.random() < 0.08:
            parts.insert(rng.randrange(len(parts)), rng.choice(names))
        if links and rng.random() < 0.25:
            parts.insert(rng.randrange(len(parts) + 1), links.pop())
        if rng.random() < 0.03:
            parts.append("@" + rng.choice(claims.claim_fids))
        text = " ".join(parts)
        return text[0].upper() + text[1:] + rng.choice(".....?!")

    total = 0
    for path, title in zip(paths, titles, strict=True):
        size = rng.randint(1500, 2600)
        links: list[str] = []
        for _ in range(rng.choice((0, 1, 1, 2, 2, 3, 4))):
            other = rng.randrange(count)
            form = rng.random()
            if form < 0.6:
                links.append(f"[[{titles[other]}]]")
            elif form < 0.8:
                links.append(f"[[{titles[other]}|{' '.join(words(2))}]]")
            else:
                links.append(f"[[{paths[other].removesuffix('.md')}]]")
        lines: list[str] = []
        title_in_front = False
        if rng.random() < 0.6:
            lines.append("---")
            if rng.random() < 0.5:
                lines.append(f"title: {title}")
                title_in_front = True
            if rng.random() < 0.3:
                lines.append(f"aliases: [{title_words(2)}]")
            if rng.random() < 0.5:
                lines.append(f"tags: [{', '.join(rng.sample(NOTE_TAGS, rng.randint(1, 3)))}]")
            lines.append(f"created: 2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}")
            lines.append("---")
        if not title_in_front:
            lines.append(f"# {title}")
        lines.append("")
        written = sum(len(line) + 1 for line in lines)
        while written < size:
            block: list[str] = [f"## {title_words(rng.choice((1, 2, 3)))}", ""]
            for _ in range(rng.randint(1, 3)):
                if rng.random() < 0.2:
                    block += [f"- {sentence(links)}" for _ in range(rng.randint(2, 4))]
                else:
                    block.append(" ".join(sentence(links) for _ in range(rng.randint(2, 5))))
                block.append("")
            lines += block
            written += sum(len(line.encode()) + 1 for line in block)
        if links:
            lines += ["## Related", "", *(f"- {link}" for link in links), ""]
        data = "\n".join(lines).encode("utf-8")
        file = root / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(data)
        total += len(data)
    vocabulary = {w.lower() for w in ranked} | {n.lower() for name in names for n in name.split()}
    return Corpus(root, paths, titles, total, vocabulary)


def _misspelt(rng: random.Random, vocabulary: set[str]) -> str:
    """A typo of a content word (two letters swapped) that is no word of the corpus."""
    while True:
        if rng.random() < 0.3:
            word = rng.choice(NO_HIT_WORDS)
        else:
            word = rng.choice(EXTRA_WORDS)
            if len(word) < 5:
                continue
            at = rng.randrange(1, len(word) - 2)
            word = word[:at] + word[at + 1] + word[at] + word[at + 2 :]
        if word not in vocabulary:
            return word


def make_queries(rng: random.Random, count: int, claims: UserData, corpus: Corpus) -> list[str]:
    """Realistic 1–4-word queries: claim words, note words, names, a stop word now and then;
    one in ten made of typos and absent words (no hits expected)."""
    claim_words = WORDS + ADJECTIVES
    name_words = [w for name in claims.context_names for w in name.lower().split()]
    name_words += [w.lower() for w in FIRST_NAMES + LAST_NAMES]
    queries: list[str] = []
    while len(queries) < count:
        length = rng.choices((1, 2, 3, 4), weights=(30, 35, 25, 10))[0]
        if rng.random() < 0.1:
            queries.append(" ".join(_misspelt(rng, corpus.vocabulary) for _ in range(length)))
            continue
        words: list[str] = []
        for _ in range(length):
            pick = rng.random()
            if pick < 0.5:
                words.append(rng.choice(claim_words))
            elif pick < 0.8:
                words.append(rng.choice(EXTRA_WORDS))
            elif pick < 0.9 or length == 1:
                words.append(rng.choice(name_words))
            else:
                words.append(rng.choice(sorted(STOP_WORDS)))
        queries.append(" ".join(words))
    return queries


def make_prefixes(rng: random.Random, count: int, claims: UserData, corpus: Corpus) -> list[str]:
    """2–8 leading characters of friendly ids (claims, contexts, entities) and title words
    (claims' statements, contexts' names, notes' titles), as typed for completion."""
    title_words = [w.lower() for t in corpus.titles for w in t.split()]
    context_words = [w.lower() for n in claims.context_names for w in n.split()]
    claim_words = WORDS + ADJECTIVES
    typed: list[str] = []
    while len(typed) < count:
        pick = rng.random()
        if pick < 0.4:
            source = rng.choice(claims.claim_fids)
        elif pick < 0.55:
            source = rng.choice(claims.context_fids + claims.entity_fids)
        elif pick < 0.75:
            source = rng.choice(claim_words)
        elif pick < 0.85:
            source = rng.choice(context_words)
        else:
            source = rng.choice(title_words)
        length = min(rng.randint(2, 8), len(source))
        if length >= 2:
            typed.append(source[:length])
    return typed


@dataclass(frozen=True, slots=True)
class Inputs:
    """Timed and warm-up search queries and completion prefixes."""

    queries: list[str]
    warm_queries: list[str]
    prefixes: list[str]
    warm_prefixes: list[str]


# -- measuring ----------------------------------------------------------------------------------


def vm_status() -> dict[str, float]:
    """VmRSS and VmHWM of this process in MiB (Linux), and ru_maxrss."""
    return {**proc_status(), "ru_maxrss_mib": peak_rss_mib()}


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


@dataclass(slots=True)
class Case:
    """Timings of one latency case."""

    label: str
    samples: list[float] = field(default_factory=list)
    results: list[int] = field(default_factory=list)  # hits returned per run
    planned: int = 0

    def figures(self, target_p99_ms: float | None = None) -> dict[str, Any]:
        stats = latency_ms(self.samples)
        return {
            "label": self.label,
            "runs": len(self.samples),
            "runs_planned": self.planned,
            **stats,
            "hits_mean": statistics.fmean(self.results) if self.results else None,
            "no_hit_share": (
                sum(1 for r in self.results if r == 0) / len(self.results) if self.results else None
            ),
            "target_p99_ms": target_p99_ms,
            "met": None if target_p99_ms is None else stats["p99_ms"] <= target_p99_ms,
        }


def run_case(
    label: str,
    call: Callable[[T], Sized | int],
    inputs: Sequence[T],
    warmup: Sequence[T],
) -> Case:
    """``call`` over ``warmup`` untimed, then over ``inputs`` timed one by one, stopping after
    CASE_BUDGET_S of timed work (with at least MIN_RUNS runs)."""
    for item in warmup:
        call(item)
    case = Case(label, planned=len(inputs))
    spent = 0.0
    clock = time.perf_counter
    for item in inputs:
        started = clock()
        result = call(item)
        elapsed = clock() - started
        case.samples.append(elapsed)
        case.results.append(result if isinstance(result, int) else len(result))
        spent += elapsed
        if spent > CASE_BUDGET_S and len(case.samples) >= MIN_RUNS:
            break
    return case


class PrecomputedEmbedder:
    """An embedder that returns vectors computed beforehand: hybrid search without the
    query embedding, through ``HybridSearch`` unchanged."""

    def __init__(self, model_id: str, dim: int, vectors: dict[str, FloatVector]) -> None:
        self._model_id = model_id
        self._dim = dim
        self._vectors = vectors

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str], *, batch_size: int = 32) -> FloatMatrix:
        return np.stack([self._vectors[text] for text in texts]).astype(np.float32)


# -- steps --------------------------------------------------------------------------------------


def build(app: App) -> tuple[dict[str, Any], list[TextDoc]]:
    """``IndexKeeper.index(full=True, embed=False)`` on a first start, timed in parts."""
    parts: dict[str, float] = {}

    def timed(name: str, function: Callable[..., T]) -> Callable[..., T]:
        def wrapper(*args: Any, **kwargs: Any) -> T:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                parts[name] = parts.get(name, 0.0) + time.perf_counter() - started

        return wrapper

    started = time.perf_counter()
    side = app.vectors  # what IndexKeeper.index opens first: the model and the (empty) vector side
    parts["model_load_and_vector_side"] = time.perf_counter() - started
    if side is None:
        raise SystemExit(f"the embedding model cannot be loaded: {app.warnings}")
    (vault,) = app.vaults
    # Instance attributes shadow the methods: IndexKeeper.index calls these wrappers.
    setattr(vault, "scan", timed("vault_scan", vault.scan))  # noqa: B010
    setattr(side, "enqueue", timed("vector_queue", side.enqueue))  # noqa: B010
    stages: dict[str, float] = {}

    def progress(stage: str, done: int, total: int) -> None:
        if done == total:
            stages[stage] = time.perf_counter()

    began, cpu_began = time.perf_counter(), time.process_time()
    report = app.keeper.index(full=True, embed=False, progress=progress)
    index_s = time.perf_counter() - began
    index_cpu_s = time.process_time() - cpu_began  # every thread's, Tantivy's indexer too
    total = parts["model_load_and_vector_side"] + index_s
    sync_s = report.text.seconds
    figures = {
        "total_s": total,
        "index_call_s": index_s,
        "index_call_cpu_s": index_cpu_s,
        "model_load_and_vector_side_s": parts["model_load_and_vector_side"],
        "vault_scan_s": parts.get("vault_scan", 0.0),
        "indexer_sync_s": sync_s,
        "vector_queue_s": parts.get("vector_queue", 0.0),
        # The queue is filled inside Indexer.sync (its ``before_commit``): part of sync_s.
        "other_s": index_s - sync_s - parts.get("vault_scan", 0.0),
        "text_only_s": sync_s - parts.get("vector_queue", 0.0) + parts.get("vault_scan", 0.0),
        "stage_done_at_s": {k: v - began for k, v in stages.items()},
        "documents": report.text.upserted,
        "warnings": len(report.warnings),
        "target_s": TARGET_BUILD_S,
        "met": total <= TARGET_BUILD_S,
        "index_bytes": folder_bytes(app.index_folder / "fulltext"),
    }
    return figures, report.text.docs


def bare_tantivy_build(folder: Path, docs: Sequence[TextDoc]) -> dict[str, Any]:
    """The same documents into a fresh index: Tantivy alone, no store reads, no parsing."""
    index = open_index(folder)
    started, cpu_started = time.perf_counter(), time.process_time()
    index.upsert(docs, fresh=True)  # a fresh index, as a full build gives it
    added = time.perf_counter() - started
    index.commit({})
    seconds = time.perf_counter() - started
    cpu_s = time.process_time() - cpu_started  # the calling thread's and Tantivy's
    index.close()
    return {
        "seconds": seconds,
        "cpu_s": cpu_s,
        "add_s": added,
        "commit_s": seconds - added,
        "bytes": folder_bytes(folder),
    }


def embed_throughput(
    embedder: Embedder, docs: Sequence[TextDoc], rng: random.Random, claim_sample: int
) -> tuple[dict[str, Any], dict[int, FloatVector]]:
    """Embed a sample of claims and notes; items/s, and the vectors by document index."""
    claim_rows = [i for i, d in enumerate(docs) if d.kind == "claim"]
    note_rows = [i for i, d in enumerate(docs) if d.kind == "note"]
    picked_claims = rng.sample(claim_rows, min(claim_sample, len(claim_rows)))
    picked_notes = rng.sample(note_rows, min(NOTE_EMBED_SAMPLE, len(note_rows)))
    embedder.embed([embed_text(docs[i]) for i in picked_claims[:32]])  # warm-up, one batch
    vectors: dict[int, FloatVector] = {}
    result: dict[str, Any] = {"threads": embedder.threads, "batch_size": 32}
    for name, rows in (("claims", picked_claims), ("notes", picked_notes)):
        texts = [embed_text(docs[i]) for i in rows]
        tokens = [len(embedder._tokenizer.encode(t).ids) for t in texts]
        started = time.perf_counter()
        matrix = embedder.embed(texts, batch_size=32)
        seconds = time.perf_counter() - started
        vectors.update(zip(rows, matrix, strict=True))
        result[name] = {
            "items": len(texts),
            "seconds": seconds,
            "items_per_s": len(texts) / seconds,
            "chars_mean": statistics.fmean(len(t) for t in texts),
            "tokens_mean": statistics.fmean(tokens),
            "tokens_per_s": sum(tokens) / seconds,
        }
    counts = {kind: sum(1 for d in docs if d.kind == kind) for kind in ("claim", "context")}
    counts["entity"] = sum(1 for d in docs if d.kind == "entity")
    counts["note"] = len(note_rows)
    short = counts["claim"] + counts["context"] + counts["entity"]
    full = short / result["claims"]["items_per_s"] + counts["note"] / result["notes"]["items_per_s"]
    result["corpus"] = counts
    result["whole_corpus_s"] = full
    return result, vectors


def fill_vectors(
    app: App, docs: Sequence[TextDoc], real: dict[int, FloatVector], rng: random.Random
) -> dict[str, Any]:
    """A vector for every document, through the vector cache, the queue and the side's
    in-memory index: the real ones for the sample, noisy copies of them for the rest."""
    side = app.vectors
    assert side is not None
    generator = np.random.default_rng(rng.getrandbits(32))
    started = time.perf_counter()
    real_claims = np.stack([v for i, v in real.items() if docs[i].kind == "claim"])
    real_notes = np.stack([v for i, v in real.items() if docs[i].kind == "note"])
    matrix = np.empty((len(docs), side.embedder.dim), dtype=np.float32)
    is_note = np.array([d.kind == "note" for d in docs])
    for rows, pool in (
        (np.flatnonzero(~is_note), real_claims),
        (np.flatnonzero(is_note), real_notes),
    ):
        matrix[rows] = noisy_copies(pool, len(rows), generator, NOISE)
    for row, vector in real.items():
        matrix[row] = vector
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    made = time.perf_counter() - started
    hashes = [content_hash(embed_text(doc)) for doc in docs]
    started = time.perf_counter()
    store_vectors(side, docs, hashes, matrix)
    stored = time.perf_counter() - started
    started = time.perf_counter()
    for doc, vector in zip(docs, matrix, strict=True):
        side.index.upsert(doc.id, doc.user, doc.kind, doc.status, vector)
    loaded = time.perf_counter() - started
    embedded, pending = side.catalog.counts()
    return {
        "vectors": len(side.index),
        "real": len(real),
        "generated": len(docs) - len(real),
        "noise_sigma": NOISE,
        "generate_s": made,
        "cache_and_queue_s": stored,
        "index_upsert_s": loaded,
        "catalog_embedded": embedded,
        "catalog_pending": pending,
        "matrix_bytes": side.index.capacity * side.index.dim * 4,
    }


def latency(app: App, embedder: Embedder, inputs: Inputs) -> dict[str, Any]:
    side = app.vectors
    assert side is not None
    text = app.text_index
    vectors = side.index
    engine = HybridSearch(text, vectors, embedder)
    query_vectors: dict[str, FloatVector] = {}

    def embed_one(query: str) -> int:
        query_vectors[query] = embedder.embed([query])[0]
        return 1

    for query in inputs.warm_queries:
        query_vectors[query] = embedder.embed([query])[0]
    precomputed = HybridSearch(
        text, vectors, PrecomputedEmbedder(embedder.model_id, embedder.dim, query_vectors)
    )
    # key, label, the call, on prefixes (else queries), target p99 (ms); timed in this order.
    calls: list[tuple[str, str, Callable[[str], Sized | int], bool, float | None]] = [
        (
            "text_raw",
            "FullTextIndex.search, k=10",
            lambda q: text.search(q, user=USER, k=K),
            False,
            TARGET_BM25_P99_MS,
        ),
        (
            "bm25",
            'HybridSearch.search mode="bm25", k=10 (pool 100)',
            lambda q: engine.search(q, user=USER, k=K, mode="bm25"),
            False,
            TARGET_BM25_P99_MS,
        ),
        ("query_embedding", "Embedder.embed([query])", embed_one, False, None),
        (
            "dense",
            "VectorIndex.search, k=100 (query vector given)",
            lambda q: vectors.search(query_vectors[q], k=100, user=USER),
            False,
            None,
        ),
        (
            "hybrid_precomputed",
            'HybridSearch.search mode="hybrid", query vector given',
            lambda q: precomputed.search(q, user=USER, k=K, mode="hybrid"),
            False,
            None,
        ),
        (
            "hybrid",
            'HybridSearch.search mode="hybrid", k=10',
            lambda q: engine.search(q, user=USER, k=K, mode="hybrid"),
            False,
            TARGET_HYBRID_P99_MS,
        ),
        (
            "prefix",
            "FullTextIndex.prefix, k=20",
            lambda p: text.prefix(p, user=USER),
            True,
            TARGET_PREFIX_P99_MS,
        ),
    ]
    cases: dict[str, dict[str, Any]] = {}
    for key, label, call, on_prefixes, target in calls:
        timed, warm = (
            (inputs.prefixes, inputs.warm_prefixes)
            if on_prefixes
            else (inputs.queries, inputs.warm_queries)
        )
        cases[key] = run_case(label, call, timed, warm).figures(target)
    return cases


def _letters(number: int) -> str:
    out = ""
    while True:
        number, digit = divmod(number, 26)
        out += chr(ord("a") + digit)
        if not number:
            return out


def change_word(number: int) -> str:
    return f"zqchange{_letters(number)}"


def change_to_searchable(
    app: App, corpus: Corpus, rng: random.Random, count: int
) -> tuple[dict[str, Any], list[str]]:
    """A new word written into a note; the vault update, the index sync and searches until
    the word finds the note, timed from after the write."""
    (vault,) = app.vaults
    text = app.text_index
    picked = rng.sample(corpus.paths, count)
    totals: list[float] = []
    updates: list[float] = []
    syncs: list[float] = []
    searches: list[float] = []
    attempts: list[int] = []
    clock = time.perf_counter
    for number, path in enumerate(picked):
        word = change_word(number)
        file = corpus.root / path
        with file.open("a", encoding="utf-8") as handle:
            handle.write(f"\nAdded later: the {word} came up again.\n")
        started = clock()
        vault.update(file)
        updated = clock()
        note = vault.notes[path]
        Indexer(app.store, text).sync(notes=[note])
        synced = clock()
        wanted = doc_id("note", note.key)
        tries = 0
        while True:
            tries += 1
            if any(hit.id == wanted for hit in text.search(word, user=USER, k=K)):
                break
            if clock() - started > 10:
                raise SystemExit(f"{path}: {word} not searchable after 10 s")
        done = clock()
        totals.append(done - started)
        updates.append(updated - started)
        syncs.append(synced - updated)
        searches.append(done - synced)
        attempts.append(tries)
    result: dict[str, Any] = {
        "changes": count,
        "total": latency_ms(totals),
        "vault_update": latency_ms(updates),
        "indexer_sync": latency_ms(syncs),
        "search": latency_ms(searches),
        "searches_until_found_max": max(attempts),
        "target_ms": TARGET_CHANGE_MS,
    }
    result["met"] = result["total"]["p99_ms"] <= TARGET_CHANGE_MS
    return result, picked


# -- FTS5 ---------------------------------------------------------------------------------------


def fts_match(query: str) -> str | None:
    """The query's words (stop words left out, as Tantivy's analyzer does) OR-ed, each
    quoted: the same terms and the same any-word semantics as the lenient Tantivy parse."""
    words = [w for w in _TOKEN.findall(query.lower()) if w not in STOP_WORDS]
    if not words:
        return None
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def fts_prefix(typed: str) -> str:
    return 'title:"' + typed.lower().replace('"', '""') + '"*'


class Fts5:
    """The peer: an FTS5 table of the same documents, as zk and basic-memory index."""

    def __init__(self, path: Path, prefix_index: bool) -> None:
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = NORMAL")
        option = ", prefix='2 3 4'" if prefix_index else ""
        self.db.execute(
            "CREATE VIRTUAL TABLE t USING fts5(title, body, id UNINDEXED, kind UNINDEXED, "
            f"user UNINDEXED, status UNINDEXED, tokenize='porter unicode61'{option})"
        )
        self.rows: dict[str, int] = {}

    def build(self, docs: Sequence[TextDoc]) -> dict[str, Any]:
        started, cpu_started = time.perf_counter(), time.process_time()
        self.db.execute("BEGIN")
        self.db.executemany(
            "INSERT INTO t (rowid, title, body, id, kind, user, status) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                (row, d.title, d.body, d.id, d.kind, d.user, d.status)
                for row, d in enumerate(docs, start=1)
            ),
        )
        self.db.execute("COMMIT")
        seconds = time.perf_counter() - started
        cpu_s = time.process_time() - cpu_started
        self.rows = {d.id: row for row, d in enumerate(docs, start=1)}
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
        return {"seconds": seconds, "cpu_s": cpu_s, "bytes": size}

    def search(self, query: str) -> list[tuple[Any, ...]]:
        match = fts_match(query)
        if match is None:
            return []
        return self.db.execute(
            "SELECT id, kind, title, snippet(t, 1, '', '', '…', 24), bm25(t, 2.0, 1.0) "
            "FROM t WHERE t MATCH ? AND user IN (?, '') ORDER BY bm25(t, 2.0, 1.0) LIMIT ?",
            (match, USER, K),
        ).fetchall()

    def prefix(self, typed: str) -> list[tuple[Any, ...]]:
        return self.db.execute(
            "SELECT id, kind, title, snippet(t, 1, '', '', '…', 24) FROM t "
            "WHERE t MATCH ? AND user IN (?, '') ORDER BY bm25(t) LIMIT 20",
            (fts_prefix(typed), USER),
        ).fetchall()

    def change(self, vault_root: Path, paths: Sequence[str]) -> dict[str, Any]:
        """The notes already changed on disk (by the change benchmark): read and parse each
        as the vault does, UPDATE its row, commit, query its new word."""
        totals: list[float] = []
        clock = time.perf_counter
        for number, path in enumerate(paths):
            word = change_word(number)
            file = vault_root / path
            started = clock()
            data = file.read_bytes()
            note = parse_note(vault_root, Path(path), data, mtime_ns=file.stat().st_mtime_ns)
            doc = note_doc(note)
            self.db.execute(
                "UPDATE t SET title = ?, body = ? WHERE rowid = ?",
                (doc.title, doc.body, self.rows[doc.id]),
            )
            found = self.db.execute(
                "SELECT id FROM t WHERE t MATCH ? AND user IN (?, '') ORDER BY bm25(t) LIMIT ?",
                (f'"{word}"', USER, K),
            ).fetchall()
            if (doc.id,) not in found:
                raise SystemExit(f"FTS5: {word} did not find {path}")
            totals.append(clock() - started)
        return {"changes": len(paths), "total": latency_ms(totals)}

    def close(self) -> None:
        self.db.close()


def fts5_peer(
    folder: Path, docs: Sequence[TextDoc], inputs: Inputs, vault_root: Path, changed: Sequence[str]
) -> dict[str, Any]:
    queries, warm_queries = inputs.queries, inputs.warm_queries
    prefixes, warm_prefixes = inputs.prefixes, inputs.warm_prefixes
    result: dict[str, Any] = {}
    plain = Fts5(folder / "fts5.sqlite3", prefix_index=False)
    result["build"] = plain.build(docs)
    result["bm25"] = run_case(
        "FTS5 MATCH … ORDER BY bm25 LIMIT 10, user IN, snippet",
        plain.search,
        queries,
        warm_queries,
    ).figures(TARGET_BM25_P99_MS)
    result["prefix"] = run_case(
        "FTS5 title:pre* LIMIT 20", plain.prefix, prefixes, warm_prefixes
    ).figures(TARGET_PREFIX_P99_MS)
    result["change"] = plain.change(vault_root, changed)
    plain.close()
    indexed = Fts5(folder / "fts5-prefix.sqlite3", prefix_index=True)
    result["prefix_index_build"] = indexed.build(docs)
    result["prefix_index_prefix"] = run_case(
        "FTS5 prefix='2 3 4', title:pre* LIMIT 20", indexed.prefix, prefixes, warm_prefixes
    ).figures(TARGET_PREFIX_P99_MS)
    indexed.close()
    return result


# -- memory (a fresh process) -------------------------------------------------------------------


def memory_child(spec: dict[str, Any]) -> dict[str, Any]:
    """Run in a fresh process: open the App over the built store and index, scan the vault,
    load the model and the vectors, search; RSS after each step."""
    steps: dict[str, dict[str, float]] = {"start": vm_status()}
    config = replace(
        Config(),
        store=Path(spec["store"]),
        cache=Path(spec["cache"]),
        user=USER,
        vaults=(Path(spec["vault"]),),
    )
    app = App(config)
    text = app.text_index
    app.store.store_id()
    documents = len(text)
    steps["store_and_text_index_open"] = vm_status()
    (vault,) = app.vaults
    vault.scan()
    steps["vault_scanned"] = vm_status()
    # What App.vectors does, in two steps so that the model and the vectors are told apart.
    started = time.perf_counter()
    embedder = Embedder.load(config.model)
    model_s = time.perf_counter() - started
    steps["model_loaded"] = vm_status()
    started = time.perf_counter()
    side = VectorSide(
        VectorCatalog(app.index_folder / "queue.sqlite3"),
        VectorCache(config.cache / "vectors.sqlite3"),
        embedder,
    )
    side.load()
    vectors_s = time.perf_counter() - started
    app.__dict__["vectors"] = side  # App.vectors is a cached property: this is its value
    steps["vectors_loaded"] = vm_status()
    engine = app.hybrid_search()
    queries: list[str] = spec["queries"]
    for query in queries:
        engine.search(query, user=USER, mode="hybrid")
        engine.search(query, user=USER, mode="bm25")
        text.prefix(query[:3], user=USER)
    steps["after_searches"] = vm_status()
    gc.collect()
    steps["after_gc"] = vm_status()
    final = steps["after_gc"]
    try:  # diagnosis only: how much of the RSS is freed heap that malloc keeps
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
        steps["diagnosis_after_malloc_trim"] = vm_status()
    except (OSError, AttributeError):
        pass
    return {
        "steps": steps,
        "text_documents": documents,
        "notes": len(vault.notes),
        "vectors": len(side.index),
        "vector_matrix_bytes": side.index.capacity * side.index.dim * 4,
        "model_load_s": model_s,
        "vectors_load_s": vectors_s,
        "writable": text.writable,
        "peak_rss_mib": final["ru_maxrss_mib"],
        "vmhwm_mib": final.get("vmhwm_mib"),
        "current_rss_mib": final.get("vmrss_mib"),
        "peak_rss_mb": final["ru_maxrss_mib"] * 1.048576,
        "current_rss_mb": (final.get("vmrss_mib") or 0.0) * 1.048576,
        "target_mb": TARGET_RSS_MB,
        "met": final["ru_maxrss_mib"] * 1.048576 <= TARGET_RSS_MB,
    }


def measure_memory(spec: dict[str, Any]) -> dict[str, Any]:
    # Linux keeps the largest RSS seen at an exec in ru_maxrss, and a child forked from this
    # (large) process execs with a copy of its memory: its ru_maxrss would start at this
    # process's size. A shell in between forks the child from itself, a small process.
    command = [sys.executable, "-m", "benchmarks.search", "--memory-child", json.dumps(spec)]
    done = subprocess.run(
        ["/bin/sh", "-c", '"$@"; exit $?', "sh", *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"memory child failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# -- output -------------------------------------------------------------------------------------


def _mark(met: bool | None) -> str:
    return "" if met is None else ("✓" if met else "✗")


def _ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:.2f}" if theirs else "—"


def print_table(report: dict[str, Any]) -> None:
    params = report["parameters"]
    data = report["data"]
    print_head(
        "lsp-memory search benchmark",
        report,
        f"{params['claims']} claims, {CONTEXTS} contexts, {ENTITIES} entities for "
        f"{USER!r}; {params['notes']} notes ({data['note_bytes'] / 1e6:.1f} MB, "
        f"{data['note_bytes'] / max(1, params['notes']):.0f} B each); seed {params['seed']}; "
        f"generated in {data['generate_s']:.1f} s, imported in {data['import_s']:.1f} s",
    )
    b = report["build"]
    print("\nFull text-index build")
    print(
        f"  IndexKeeper.index(full=True, embed=False), first start  {b['total_s']:8.1f} s   "
        f"≤ {TARGET_BUILD_S:g} s {_mark(b['met'])}"
    )
    for key, label in (
        ("model_load_and_vector_side_s", "model load + vector side"),
        ("vault_scan_s", "vault scan (inside IndexKeeper.index)"),
        ("indexer_sync_s", "Indexer.sync: store → Tantivy, commit"),
        ("vector_queue_s", "  of it, the embedding queue (enqueue)"),
        ("other_s", "rest"),
    ):
        print(f"    {label:46} {b[key]:8.2f} s")
    print(f"  {b['documents']} documents, index {b['index_bytes'] / 1e6:.1f} MB")
    print(f"  Vault.scan() alone, fresh Vault                {report['vault_scan_s']:8.2f} s")
    bare = report["bare_tantivy"]
    print(f"  bare Tantivy build of the same TextDocs        {bare['seconds']:8.2f} s")
    e = report["embedding"]
    print(f"\nEmbeddings (threads {e['threads']}, batches of {e['batch_size']})")
    for key in ("claims", "notes"):
        row = e[key]
        print(
            f"  {key:8} {row['items']:6} items  {row['items_per_s']:7.1f} items/s  "
            f"{row['tokens_mean']:6.1f} tokens mean  {row['tokens_per_s']:8.0f} tokens/s"
        )
    print(
        f"  model load {e['load_s']:.2f} s; whole corpus at these rates: "
        f"{e['whole_corpus_s'] / 60:.1f} min"
    )
    v = report["vectors"]
    print(
        f"  vector index: {v['vectors']} vectors ({v['real']} real, {v['generated']} "
        f"noisy copies), matrix {v['matrix_bytes'] / 2**20:.0f} MiB"
    )
    c = report["change"]
    print("\nChange → searchable (ms)      p50      p90      p99      max   target p99")
    for key, label in (
        ("total", "total"),
        ("vault_update", "  Vault.update"),
        ("indexer_sync", "  Indexer.sync"),
        ("search", "  search"),
    ):
        row = c[key]
        tail = f"≤ {TARGET_CHANGE_MS:g} {_mark(c['met'])}" if key == "total" else ""
        print(
            f"  {label:26} {row['p50_ms']:8.2f} {row['p90_ms']:8.2f} {row['p99_ms']:8.2f} "
            f"{row['max_ms']:8.2f}   {tail}"
        )
    print(
        "\nLatency (ms)                                                runs  no-hit    p50  "
        "    p90      p99      max   target p99"
    )
    for row in [
        *report["latency"].values(),
        report["fts5"]["bm25"],
        report["fts5"]["prefix"],
        report["fts5"]["prefix_index_prefix"],
    ]:
        target = row["target_p99_ms"]
        share = row["no_hit_share"]
        print(
            f"  {row['label'][:56]:56} {row['runs']:6} "
            f"{'' if share is None else f'{share:.0%}':>6} {row['p50_ms']:8.3f} "
            f"{row['p90_ms']:8.3f} {row['p99_ms']:8.3f} {row['max_ms']:8.3f}   "
            + (f"≤ {target:g} {_mark(row['met'])}" if target is not None else "—")
        )
    m = report["memory"]
    print(
        f"\nMemory (fresh process: App, vault, model, {m['vectors']} vectors, searches): "
        f"peak {m['peak_rss_mb']:.0f} MB ({m['peak_rss_mib']:.0f} MiB), current "
        f"{m['current_rss_mb']:.0f} MB   ≤ {TARGET_RSS_MB:g} MB {_mark(m['met'])}"
    )
    print_memory_steps(m["steps"], 30)
    print("\nFTS5 peer (same documents)          ours       FTS5   ours/FTS5")
    for label, ours, theirs, unit in report["ratios_rows"]:
        print(f"  {label:32} {ours:9.3f} {theirs:9.3f}   {_ratio(ours, theirs):>8}  {unit}")
    print(f"\ntotal {report['total_s']:.0f} s; load average at end {report['load_average_at_end']}")


def ratios(report: dict[str, Any]) -> list[tuple[str, float, float, str]]:
    lat = report["latency"]
    fts = report["fts5"]
    return [
        ("build, keeper.index (all)", report["build"]["total_s"], fts["build"]["seconds"], "s"),
        ("build, bare Tantivy", report["bare_tantivy"]["seconds"], fts["build"]["seconds"], "s"),
        ("BM25 p50 (raw search)", lat["text_raw"]["p50_ms"], fts["bm25"]["p50_ms"], "ms"),
        ("BM25 p99 (raw search)", lat["text_raw"]["p99_ms"], fts["bm25"]["p99_ms"], "ms"),
        ("BM25 p50 (HybridSearch bm25)", lat["bm25"]["p50_ms"], fts["bm25"]["p50_ms"], "ms"),
        ("BM25 p99 (HybridSearch bm25)", lat["bm25"]["p99_ms"], fts["bm25"]["p99_ms"], "ms"),
        ("prefix p50", lat["prefix"]["p50_ms"], fts["prefix"]["p50_ms"], "ms"),
        ("prefix p99", lat["prefix"]["p99_ms"], fts["prefix"]["p99_ms"], "ms"),
        (
            "prefix p50 vs prefix index",
            lat["prefix"]["p50_ms"],
            fts["prefix_index_prefix"]["p50_ms"],
            "ms",
        ),
        (
            "prefix p99 vs prefix index",
            lat["prefix"]["p99_ms"],
            fts["prefix_index_prefix"]["p99_ms"],
            "ms",
        ),
        (
            "change → searchable p50",
            report["change"]["total"]["p50_ms"],
            fts["change"]["total"]["p50_ms"],
            "ms",
        ),
        (
            "change → searchable p99",
            report["change"]["total"]["p99_ms"],
            fts["change"]["total"]["p99_ms"],
            "ms",
        ),
        ("index size", report["build"]["index_bytes"] / 1e6, fts["build"]["bytes"] / 1e6, "MB"),
        (
            "index size vs prefix index",
            report["build"]["index_bytes"] / 1e6,
            fts["prefix_index_build"]["bytes"] / 1e6,
            "MB",
        ),
    ]


# -- main ---------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__, seed=True, claims=100_000, notes=10_000, queries=1000)
    parser.add_argument("--embed-sample", type=int, default=2000, help="claims embedded for real")
    parser.add_argument("--workdir", type=Path, help="put the store and indexes here and keep them")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    parser.add_argument(
        "--only", choices=["build"], help="build: only the full-text builds and FTS5's"
    )
    args = parser.parse_args(argv)
    if args.memory_child:
        print(json.dumps(memory_child(json.loads(args.memory_child))))
        return 0
    if args.claims < 100 or args.notes < CHANGES or args.queries < 10 or args.embed_sample < 32:
        parser.error("need --claims ≥ 100, --notes ≥ 60, --queries ≥ 10, --embed-sample ≥ 32")

    began = time.perf_counter()
    names = ("claims", "notes", "queries", "embed_sample", "seed")
    parameters = {name: getattr(args, name) for name in names}
    data = start_report(
        "search", parameters=parameters | {"contexts": CONTEXTS, "entities": ENTITIES}
    )
    if args.only == "build":
        with workspace("search", args.workdir) as base:
            data.update(run_build(args, random.Random(args.seed), base))
        emit(data, as_json=args.json, table=print_build, began=began)
        return 0
    with workspace("search", args.workdir) as base:
        data.update(run(args, random.Random(args.seed), base))
        data["workdir"] = str(base) if args.workdir is not None else None
    data["ratios_rows"] = ratios(data)
    emit(data, as_json=args.json, table=print_table, began=began)
    return 0


def generated_corpus(
    args: argparse.Namespace, rng: random.Random, base: Path
) -> tuple[UserData, Corpus, Config]:
    """The claims, then the vault (in that order from ``rng``), and the settings of an
    ``App`` over them in ``base``."""
    claims = generate_user(
        rng, user=None, claims=args.claims, contexts=CONTEXTS, entities=ENTITIES, tags=TAGS
    )
    vault_root = base / "vault"
    corpus = generate_vault(rng, vault_root, args.notes, claims)
    config = replace(
        Config(), store=base / "store", cache=base / "cache", user=USER, vaults=(vault_root,)
    )
    return claims, corpus, config


def imported_app(config: Config, claims: UserData) -> tuple[App, float]:
    """An ``App`` on ``config`` with the claims imported, and the import's seconds."""
    app = App(config)
    started = time.perf_counter()
    import_records(app.store, claims.data, user=USER, source="claims.jsonl")
    return app, time.perf_counter() - started


def builds(app: App, base: Path, vault_root: Path) -> dict[str, Any]:
    """Step 1: ``build``, a separate vault scan and the bare Tantivy build of the same docs."""
    build_figures, docs = build(app)
    docs = list({d.id: d for d in docs}.values())  # the last version of each
    started = time.perf_counter()
    scan = Vault(vault_root).scan()
    vault_scan = time.perf_counter() - started
    bare = bare_tantivy_build(base / "bare-fulltext", docs)
    shutil.rmtree(base / "bare-fulltext", ignore_errors=True)
    return {
        "build": build_figures,
        "docs": docs,
        "vault_scan_s": vault_scan,
        "scan_warnings": len(scan.warnings),
        "bare_tantivy": bare,
    }


def run_build(args: argparse.Namespace, rng: random.Random, base: Path) -> dict[str, Any]:
    """``--only build``: the corpus, step 1's builds and step 6's two FTS5 builds, no more."""
    started = time.perf_counter()
    claims, corpus, config = generated_corpus(args, rng, base)
    generated = time.perf_counter() - started
    app, imported = imported_app(config, claims)
    found = builds(app, base, config.vaults[0])
    app.close()
    docs = found.pop("docs")
    fts: dict[str, Any] = {}
    for key, prefix_index in (("build", False), ("prefix_index_build", True)):
        table = Fts5(base / f"fts5-{key}.sqlite3", prefix_index=prefix_index)
        fts[key] = table.build(docs)
        table.close()
    found["data"] = {"generate_s": generated, "import_s": imported, "note_bytes": corpus.bytes}
    return found | {"fts5": fts}


def print_build(report: dict[str, Any]) -> None:
    """``--only build``'s table: the builds beside issue 24's target (≤ 10 s, ≤ 2× FTS5)."""
    b, bare, fts = report["build"], report["bare_tantivy"], report["fts5"]
    plain, prefixed = fts["build"]["seconds"], fts["prefix_index_build"]["seconds"]
    print(f"documents {b['documents']}; load at end {report['load_average_at_end']}")
    print(
        f"IndexKeeper.index(full=True, embed=False): {b['total_s']:.2f} s (target ≤ 10 s; "
        f"vault scan {b['vault_scan_s']:.2f}, Indexer.sync {b['indexer_sync_s']:.2f}, model "
        f"{b['model_load_and_vector_side_s']:.2f}, rest {b['other_s']:.2f})"
    )
    print(f"bare Tantivy build: {bare['seconds']:.2f} s (add {bare['add_s']:.2f})")
    print(f"FTS5 build: {plain:.2f} s; with prefix='2 3 4': {prefixed:.2f} s")
    for name, ours in (("whole build", b["total_s"]), ("bare Tantivy", bare["seconds"])):
        print(f"{name} ÷ FTS5: {ours / plain:.2f}× plain, {ours / prefixed:.2f}× with prefixes")
    # CPU seconds (every thread of the process) vary less with the machine's load than wall.
    plain_cpu, prefixed_cpu = fts["build"]["cpu_s"], fts["prefix_index_build"]["cpu_s"]
    print(
        f"CPU: IndexKeeper.index {b['index_call_cpu_s']:.2f} s, "
        f"bare Tantivy {bare['cpu_s']:.2f} s, FTS5 {plain_cpu:.2f} / {prefixed_cpu:.2f} s; "
        "bare ÷ FTS5: "
        f"{bare['cpu_s'] / plain_cpu:.2f}× plain, {bare['cpu_s'] / prefixed_cpu:.2f}× with prefixes"
    )


def run(args: argparse.Namespace, rng: random.Random, base: Path) -> dict[str, Any]:
    started = time.perf_counter()
    claims, corpus, config = generated_corpus(args, rng, base)
    vault_root = config.vaults[0]
    queries = make_queries(rng, args.queries + WARMUP, claims, corpus)
    prefixes = make_prefixes(rng, args.queries + WARMUP, claims, corpus)
    inputs = Inputs(queries[WARMUP:], queries[:WARMUP], prefixes[WARMUP:], prefixes[:WARMUP])
    generated = time.perf_counter() - started

    app, imported = imported_app(config, claims)
    built = builds(app, base, vault_root)
    build_figures, docs = built["build"], built["docs"]
    vault_scan, bare = built["vault_scan_s"], built["bare_tantivy"]

    started = time.perf_counter()
    embedder = Embedder.load()
    load_s = time.perf_counter() - started
    embedding, real = embed_throughput(embedder, docs, rng, args.embed_sample)
    embedding["load_s"] = load_s
    vectors = fill_vectors(app, docs, real, rng)

    lat = latency(app, embedder, inputs)
    change, changed = change_to_searchable(app, corpus, rng, CHANGES)
    fts = fts5_peer(base, docs, inputs, vault_root, changed)

    spec = {
        "store": str(config.store),
        "cache": str(config.cache),
        "vault": str(vault_root),
        "queries": inputs.queries[:MEMORY_QUERIES],
    }
    app.close()
    del docs, real
    gc.collect()
    memory = measure_memory(spec)
    return {
        "data": {
            "generate_s": generated,
            "import_s": imported,
            "note_bytes": corpus.bytes,
            "claims_jsonl_bytes": len(claims.data),
            "scan_warnings": built["scan_warnings"],
        },
        "build": build_figures,
        "vault_scan_s": vault_scan,
        "bare_tantivy": bare,
        "embedding": embedding,
        "vectors": vectors,
        "latency": lat,
        "change": change,
        "fts5": fts,
        "memory": memory,
    }


if __name__ == "__main__":
    sys.exit(main())
