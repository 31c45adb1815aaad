"""The relevance floor (setting ``min_similarity``) from the command line: a query with
nothing relevant gets no automatic memories and the block says so; a related one still gets
them; ``search`` leaves out what is below the floor; a lower floor lets them back. Real
embeddings (the bundled model), no mocks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.test_build_context import Run, kb, run  # noqa: F401

ONLY_SEMANTIC = "[tiers]\ncore = {max = 0}\nactive = {max = 0}\nrecent = {max = 0}\n"
UNRELATED = "quantum chromodynamics"
FLOOR_WARNING = "no automatic memory reached the relevance floor (cosine 0.51) for the query"


def block(run: Run, query: str) -> dict[str, Any]:  # noqa: F811
    result = run("build-context", "-", "--query", query, "--format", "json", stdin="")
    assert result.returncode == 0, result.stderr
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def automatic(found: dict[str, Any]) -> list[str]:
    return [
        item["statement"]
        for section in found["sections"]
        for item in section["items"]
        if item.get("label") == "AUTO"
    ]


def test_an_unrelated_query_gets_no_automatic_memory_and_says_so(
    run: Run,  # noqa: F811
    kb: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    (tmp_path / "lsp-memory.toml").write_text(ONLY_SEMANTIC, encoding="utf-8")
    unrelated = block(run, UNRELATED)
    assert automatic(unrelated) == []
    assert FLOOR_WARNING in unrelated["warnings"]
    assert "AUTO" not in unrelated["markdown"]

    related = block(run, "Which database does Leaf use?")
    assert "The Leaf service uses PostgreSQL 16" in automatic(related)
    assert FLOOR_WARNING not in related["warnings"]


def test_a_lower_floor_lets_them_back(run: Run, kb: Path, tmp_path: Path) -> None:  # noqa: F811
    config = tmp_path / "lsp-memory.toml"
    config.write_text("min_similarity = 0.0\n" + ONLY_SEMANTIC, encoding="utf-8")
    found = block(run, UNRELATED)
    assert automatic(found)
    assert not any("relevance floor" in warning for warning in found["warnings"])
    config.write_text('min_similarity = "off"\n' + ONLY_SEMANTIC, encoding="utf-8")
    assert automatic(block(run, UNRELATED))


def test_search_leaves_out_what_is_below_the_floor(
    run: Run,  # noqa: F811
    kb: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    # "Friday" is in a claim (BM25 finds it), but the query means something else (cosine 0.22).
    query = "Friday chromodynamics"
    for mode in ("hybrid", "dense"):
        assert json.loads(run("search", query, "--mode", mode, "--json").stdout) == [], mode
    # BM25 alone searches by the words: the query is not embedded, so no floor applies.
    words = json.loads(run("search", query, "--mode", "bm25", "--json").stdout)
    assert words[0]["title"] == "I review my notes every Friday afternoon"
    assert all(hit["similarity"] == 0 for hit in words)
    exact = json.loads(run("search", "Friday afternoon", "--json").stdout)
    assert exact[0]["title"] == "I review my notes every Friday afternoon"
    # A word typed as the start of one in a title passes, as completion would find it:
    # "Tues" (cosine 0.10) found nothing, nor did "postgres" in the VS Code test's vault.
    typed = json.loads(run("search", "Tues", "--json").stdout)
    assert [hit["title"] for hit in typed] == ["Leaf deploys happen every Tuesday and Thursday"]
    related = json.loads(run("search", "Which database does Leaf use?", "--json").stdout)
    assert related[0]["title"] == "The Leaf service uses PostgreSQL 16"
    assert all(hit["similarity"] >= 0.46 for hit in related)

    (tmp_path / "lsp-memory.toml").write_text("min_similarity = 0.2\n", encoding="utf-8")
    found = json.loads(run("search", query, "--json").stdout)
    assert found[0]["title"] == "I review my notes every Friday afternoon"


def test_a_bad_floor_warns_and_keeps_the_default(run: Run, kb: Path, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "lsp-memory.toml").write_text("min_similarity = 7\n", encoding="utf-8")
    result = run("search", "Friday chromodynamics", "--json")
    assert "setting 'min_similarity'" in result.stderr and "using the default" in result.stderr
    assert json.loads(result.stdout) == []
