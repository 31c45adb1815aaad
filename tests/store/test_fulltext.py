"""The Tantivy full-text index: filters inside the index, lenient and prefix queries, rebuilds
of unusable folders, one writer across real processes, and following the store."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lsp_memory.ids import now
from lsp_memory.model import ClaimStatus
from lsp_memory.services.memory.interchange import add_record
from lsp_memory.services.retrieval.indexing import Indexer
from lsp_memory.store.fulltext import FullTextIndex, TextDoc, TextHit, open_index
from lsp_memory.store.sqlite import Store, open_store
from tests.conftest import USER

ROOT = Path(__file__).parents[2]

DOCS = [
    TextDoc(
        "claim:1",
        "claim",
        "ann",
        "active",
        "I prefer morning meetings",
        "When do I like meetings?",
        ("prefer_morning_a3f2", "claim_1"),
    ),
    TextDoc(
        "claim:2",
        "claim",
        "ann",
        "retracted",
        "I prefer evening meetings",
        "",
        ("prefer_evening_b4c5", "claim_2"),
    ),
    TextDoc(
        "claim:3",
        "claim",
        "bob",
        "active",
        "Bob prefers morning runs",
        "",
        ("morning_runs_c6d7", "claim_3"),
    ),
    TextDoc(
        "note:v::alpha.md",
        "note",
        "",
        "active",
        "Project Alpha Kickoff",
        "Kickoff meeting notes for the morning standup",
        ("alpha.md",),
    ),
]


@pytest.fixture
def index(tmp_path: Path) -> FullTextIndex:
    opened = open_index(tmp_path / "fulltext")
    opened.upsert(DOCS)
    opened.commit({"seq": 1})
    return opened


def ids(hits: list[TextHit]) -> list[str]:
    return [hit.id for hit in hits]


def test_search_filters_by_user_kind_and_status(index: FullTextIndex) -> None:
    assert set(ids(index.search("morning", user="ann"))) == {"claim:1", "note:v::alpha.md"}
    assert set(ids(index.search("morning", user="bob"))) == {"claim:3", "note:v::alpha.md"}
    assert ids(index.search("morning", user="ann", kinds={"claim"})) == ["claim:1"]
    live = index.search("prefer", user="ann", statuses={"active", "contested"})
    assert ids(live) == ["claim:1"]
    assert set(ids(index.search("prefer", user="ann"))) == {"claim:1", "claim:2"}


def test_hits_carry_snippets_and_fields(index: FullTextIndex) -> None:
    [hit] = index.search("standup", user="ann")
    assert hit.kind == "note" and hit.title == "Project Alpha Kickoff"
    assert "standup" in hit.snippet and hit.score > 0


def test_snippets_come_from_the_querys_first_words(tmp_path: Path) -> None:
    """A query is cut to its first words for snippets: a long fuzzed one held the request
    threads in the query parser for minutes."""
    index = open_index(tmp_path / "fulltext")
    body = "filler words " * 40 + "the standup moved to nine"
    index.upsert([TextDoc("note:v::s.md", "note", "", "active", "S", body, ("s.md",))])
    index.commit({"seq": 1})
    ids = ["note:v::s.md"]
    matched = index.snippets("standup", ids)
    assert "standup" in matched[ids[0]] and matched != index.snippets("zzz", ids)
    odd = "(((" * 5000 + '"' * 3000 + " standup"
    assert index.snippets(odd, ids) == matched
    assert index.snippets("zzz " * 40 + "standup", ids) == index.snippets("zzz", ids)
    # The search itself: brackets nested this deep crashed the process in Tantivy's parser.
    assert [hit.id for hit in index.search(odd, user="x")] == ids


@pytest.mark.parametrize("typed", ["[[Pro", '"unclosed', "a AND", "((", "title:", "*", "  "])
def test_half_typed_queries_never_raise(index: FullTextIndex, typed: str) -> None:
    index.search(typed, user="ann")


def test_prefix_completion(index: FullTextIndex) -> None:
    assert ids(index.prefix("prefer_mo", user="ann")) == ["claim:1"]
    assert ids(index.prefix("claim_2", user="ann")) == ["claim:2"]
    assert set(ids(index.prefix("morn meet", user="ann"))) == {"claim:1"}
    assert ids(index.prefix("kick", user="bob")) == ["note:v::alpha.md"]
    assert index.prefix("zzz", user="ann") == []


def test_short_prefixes_are_kept_until_the_next_reload(
    index: FullTextIndex, tmp_path: Path
) -> None:
    """The answers to one- and two-letter prefixes are kept, but never across a commit or a
    reload: a record written since is in the next answer, in this process and in a reader
    that has reloaded."""
    reader = open_index(tmp_path / "fulltext")  # another process's view: it cannot write
    assert not reader.writable
    for typed in ("p", "pr", "prefer"):
        assert {h.id for h in index.prefix(typed, user="ann", kinds={"claim"})} == {
            "claim:1",
            "claim:2",
        }
        assert {h.id for h in reader.prefix(typed, user="ann", kinds={"claim"})} == {
            "claim:1",
            "claim:2",
        }
    new = TextDoc("claim:9", "claim", "ann", "active", "I prefer tea", "", ("prefer_tea_1111",))
    index.upsert([new])
    index.commit()
    assert "claim:9" in ids(index.prefix("p", user="ann", kinds={"claim"}))
    assert "claim:9" in ids(index.prefix("pr", user="ann", kinds={"claim"}))
    reader.reload()
    assert "claim:9" in ids(reader.prefix("p", user="ann", kinds={"claim"}))
    changed = index.prefix("p", user="ann")
    changed.clear()  # a caller's list is its own
    assert ids(index.prefix("p", user="ann"))
    assert index.prefix("p", user="ann", kinds={"entity"}) == []  # the key holds the filters


def test_prefix_words_are_indexed_without_positions(index: FullTextIndex) -> None:
    """The prefix field is only ever looked up term by term, so it keeps no positions (13 %
    of the index): a phrase over it is refused. Prefix answers are unchanged (above)."""
    from tantivy import Query

    schema = index._index.schema
    searcher = index._index.searcher()
    assert searcher.search(Query.phrase_query(schema, "title", ["prefer", "morn"]), 5).hits
    with pytest.raises(ValueError, match="positions"):
        searcher.search(Query.phrase_query(schema, "prefix", ["mor", "morn"]), 5)


def test_empty_optional_fields_are_left_out(index: FullTextIndex) -> None:
    """A claim has no context, reply, facts, day or version: none is given to the index (an
    empty value indexes nothing), and the stored fields read back as before."""
    from tantivy import Query

    searcher = index._index.searcher()
    query = Query.term_query(index._index.schema, "id", "claim:1")
    [(_score, address)] = searcher.search(query, 1).hits
    assert "version" not in searcher.doc(address).to_dict()
    [hit] = index.get(["claim:1"]).values()
    assert (hit.title, hit.key, hit.status) == (
        "I prefer morning meetings",
        "prefer_morning_a3f2",
        "active",
    )
    assert index.versions("claim") == {"claim:1": "", "claim:2": "", "claim:3": ""}


def test_upsert_replaces_and_delete_removes(index: FullTextIndex) -> None:
    changed = TextDoc("claim:1", "claim", "ann", "active", "I prefer afternoon meetings", "")
    index.upsert([changed])
    index.delete(["note:v::alpha.md"])
    index.commit()
    assert ids(index.search("afternoon", user="ann")) == ["claim:1"]
    assert index.search("standup", user="ann") == []
    assert len(index) == 3


def test_reopen_keeps_documents(index: FullTextIndex, tmp_path: Path) -> None:
    index.close()
    again = open_index(tmp_path / "fulltext")
    assert not again.rebuilt and len(again) == 4 and again.meta["seq"] == 1


@pytest.mark.parametrize(
    "damage",
    [
        lambda folder: (folder / "meta.json").write_text("{ not json"),
        lambda folder: (folder / "lsp-memory-index.json").write_text('{"schema": 999}'),
        lambda folder: [p.unlink() for p in folder.iterdir() if p.suffix != ".json"],
    ],
    ids=["corrupt", "other-schema", "files-missing"],
)
def test_unusable_index_is_rebuilt(index: FullTextIndex, tmp_path: Path, damage: object) -> None:
    index.close()
    folder = tmp_path / "fulltext"
    damage(folder)  # type: ignore[operator]
    again = open_index(folder)
    assert again.rebuilt and len(again) == 0
    again.upsert(DOCS[:1])
    again.commit()
    assert ids(again.search("morning", user="ann")) == ["claim:1"]


def test_a_foreign_folder_is_rebuilt(tmp_path: Path) -> None:
    folder = tmp_path / "fulltext"
    folder.mkdir()
    (folder / "something.txt").write_text("not ours")
    assert open_index(folder).rebuilt


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from lsp_memory.store.fulltext import TextDoc, open_index
    index = open_index(Path(sys.argv[1]))
    print("writable" if index.writable else "reader", flush=True)
    sys.stdin.readline()
    index.upsert([TextDoc("claim:9", "claim", "ann", "active", "written by the other process", "")])
    index.commit()
    print("committed", flush=True)
    sys.stdin.readline()
    index.close()
    print("closed", flush=True)
    """
)


def test_one_writer_across_processes(tmp_path: Path) -> None:
    folder = tmp_path / "fulltext"
    open_index(folder).close()  # create it
    other = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert other.stdin is not None and other.stdout is not None
    try:
        assert other.stdout.readline().strip() == "writable"
        mine = open_index(folder)
        assert not mine.writable and not mine.try_write()
        with pytest.raises(RuntimeError, match="read-only"):
            mine.upsert(DOCS)
        other.stdin.write("go\n")
        other.stdin.flush()
        assert other.stdout.readline().strip() == "committed"
        mine.reload()
        assert ids(mine.search("other process", user="ann")) == ["claim:9"]
        other.stdin.write("close\n")
        other.stdin.flush()
        assert other.stdout.readline().strip() == "closed"
        other.wait(timeout=30)
        assert mine.try_write()  # the lock was handed over
        mine.upsert(DOCS[:1])
        mine.commit()
        assert len(mine) == 2
    finally:
        other.kill()


# -- following the store ----------------------------------------------------------------------


def test_indexer_builds_then_follows_changes_from_another_connection(
    kb: Store, tmp_path: Path
) -> None:
    text = open_index(tmp_path / "fulltext")
    first = Indexer(kb, text).sync()
    assert first.full and first.upserted == 7 + 5 + 21
    found = text.search("PostgreSQL", user=USER, kinds={"claim"})
    assert {h.title for h in found} == {
        "The Leaf service uses PostgreSQL 16",
        "The Leaf service uses PostgreSQL 14",
    }
    assert all(h.id.startswith("claim:") for h in found)
    assert text.search("PostgreSQL", user="nobody") == []

    with open_store(kb.path.parent) as other:  # e.g. the CLI, in another process
        added = add_record(
            other, {"kind": "claim", "statement": "Kombucha every Sunday"}, user=USER
        ).claims[0]
        retracting = other.claim_by_number(USER, 1)
        assert retracting is not None
        other.set_status(USER, retracting.claim_id, ClaimStatus.RETRACTED, now())
    second = Indexer(kb, text).sync()
    assert not second.full
    assert ids(text.search("kombucha", user=USER)) == [f"claim:{added.claim_id}"]
    [one] = [h for h in text.search("PostgreSQL 16", user=USER) if h.title.endswith("16")]
    assert one.status == "retracted"
    live = text.search("PostgreSQL", user=USER, statuses={"active", "contested"})
    assert all(not h.title.endswith("16") for h in live)
    assert (second.upserted, second.deleted) == (2, 0)
    third = Indexer(kb, text).sync()
    assert (third.upserted, third.deleted) == (0, 0)


def test_a_full_build_pauses_the_cycle_collector(kb: Store, tmp_path: Path) -> None:
    """Which path a sync takes: a full build runs with Python's cycle collector paused (its
    passes over the documents it holds until the end were 5 % of the build), a sync that
    follows changes with it running; either way it runs again afterwards."""
    text = open_index(tmp_path / "fulltext")
    seen: list[bool] = []
    record = lambda _report: seen.append(gc.isenabled())  # noqa: E731
    assert gc.isenabled()
    first = Indexer(kb, text).sync(before_commit=record)
    add_record(kb, {"kind": "claim", "statement": "Kombucha every Sunday"}, user=USER)
    second = Indexer(kb, text).sync(before_commit=record)
    assert (first.full, second.full) == (True, False)
    assert seen == [False, True]
    assert gc.isenabled()


def test_an_index_of_another_store_is_rebuilt(kb: Store, tmp_path: Path) -> None:
    text = open_index(tmp_path / "fulltext")
    Indexer(kb, text).sync()
    with open_store(tmp_path / "other-store") as other:
        add_record(other, {"kind": "claim", "statement": "only here"}, user=USER)
        report = Indexer(other, text).sync()
    assert report.full and len(text) == 1


def test_note_versions_are_kept_for_the_last_commit_only(tmp_path: Path) -> None:
    """A process's first sync compares every note with the versions the index holds; reading
    them from 10 000 stored documents was ~0.1-0.2 s of every command. The writer keeps them
    beside the index, good until the next commit."""
    import json

    from lsp_memory.store.fulltext import VERSIONS_FILE

    folder = tmp_path / "fulltext"
    first = open_index(folder)
    first.upsert([TextDoc("note:v::a.md", "note", "", "active", "A", "", version="h1")])
    first.commit()
    assert first.versions("note") == {"note:v::a.md": "h1"}
    kept = folder / VERSIONS_FILE.format(kind="note")
    assert kept.is_file()
    first.close()

    # Proof that a new process reads the kept file for the same commit: a planted version.
    data = json.loads(kept.read_text())
    kept.write_text(json.dumps({**data, "versions": {"note:v::a.md": "planted"}}))
    again = open_index(folder)
    assert again.versions("note") == {"note:v::a.md": "planted"}
    again.upsert([TextDoc("note:v::b.md", "note", "", "active", "B", "", version="h2")])
    again.commit()  # a new commit: the kept file is for another one
    assert again.versions("note") == {"note:v::a.md": "h1", "note:v::b.md": "h2"}
    again.close()

    data = json.loads(kept.read_text())
    kept.write_text(json.dumps({**data, "versions": {"note:v::a.md": 7}}))  # a wrong type
    third = open_index(folder)
    assert third.versions("note") == {"note:v::a.md": "h1", "note:v::b.md": "h2"}
    third.close()


def test_note_versions_too_large_to_keep_are_read_each_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept file near the largest JSON file an index may hold would make the whole index
    distrusted and rebuilt at every open."""
    from lsp_memory.store import fulltext
    from lsp_memory.store.fulltext import VERSIONS_FILE

    folder = tmp_path / "fulltext"
    index = open_index(folder)
    notes = [
        TextDoc(f"note:v::{n}.md", "note", "", "active", "N", "", version="h" * 64)
        for n in range(300)
    ]
    index.upsert(notes)
    index.commit()
    largest = max(f.stat().st_size for f in folder.iterdir() if f.suffix == ".json")
    monkeypatch.setattr(fulltext, "_MAX_JSON", 4 * largest)  # the versions: ~30 KB
    assert 4 * largest < 30_000
    assert len(index.versions("note")) == 300
    assert not (folder / VERSIONS_FILE.format(kind="note")).exists()
    index.close()
    assert not open_index(folder).rebuilt


def test_documents_asked_by_id_are_found_by_few_ids_and_by_many(index: FullTextIndex) -> None:
    """Up to ``FEW_IDS`` ids are looked up as one term query each (faster for a search's
    ~200), more as a term set: both find the same documents, each once, whatever the
    repeats and the unknown ids among them."""
    from lsp_memory.store.fulltext import FEW_IDS

    few = ["claim:1", "note:v::alpha.md", "claim:1", "claim:404"]
    many = few + [f"claim:{n}" for n in range(1000, 1000 + FEW_IDS)]
    for asked in (few, many):
        assert sorted(index.get(asked)) == ["claim:1", "note:v::alpha.md"]
        assert index.holding_every_word("morning", asked) == {"claim:1", "note:v::alpha.md"}
        assert index.holding_every_word("prefer morning", asked) == {"claim:1"}
        assert set(index.snippets("kickoff", asked)) == {"claim:1", "note:v::alpha.md"}
