"""What a command line process loads before it answers: only the services its command uses
(issue 24: importing every room of ``services`` — the extractor's and classifier's regular
expressions, the editor's, the block's — was ~0.3 s of a 1.5 s ``lsp-memory search``)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_cli import Run, run, store_dir  # noqa: F401


def imported(stderr: str) -> set[str]:
    """The modules a process imported, from ``-X importtime``'s lines on stderr."""
    return {
        line.rpartition("|")[2].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:")
    }


UNUSED_BY_SEARCH = (
    "lsp_memory.services.conversations.extract",
    "lsp_memory.services.conversations.ingest",
    "lsp_memory.services.memory.classify",
    "lsp_memory.services.memory.consolidate",
    "lsp_memory.services.block",
    "lsp_memory.services.editor.describe",
    "lsp_memory.services.editor.completion",
)


def test_search_imports_no_service_it_does_not_use(run: Run) -> None:  # noqa: F811
    added = run("claim", "add", "I drink sencha every morning", "--type", "preference")
    assert added.returncode == 0
    found = run("search", "sencha", PYTHONPROFILEIMPORTTIME="1")
    assert found.returncode == 0
    assert "sencha" in found.stdout
    modules = imported(found.stderr)
    assert "lsp_memory.services.retrieval.search" in modules
    assert modules.isdisjoint(UNUSED_BY_SEARCH), modules.intersection(UNUSED_BY_SEARCH)


def test_build_context_imports_neither_extraction_nor_classification(
    run: Run,  # noqa: F811
    tmp_path: Path,
) -> None:
    added = run("claim", "add", "I drink sencha every morning", "--type", "preference")
    assert added.returncode == 0
    prompt = tmp_path / "prompt.md"
    prompt.write_text("What do I drink? #1\n", encoding="utf-8")
    built = run("build-context", str(prompt), PYTHONPROFILEIMPORTTIME="1")
    assert built.returncode == 0
    assert "I drink sencha every morning" in built.stdout
    modules = imported(built.stderr)
    assert "lsp_memory.services.block.assembler" in modules
    unused = ("lsp_memory.services.conversations.extract", "lsp_memory.services.memory.classify")
    assert modules.isdisjoint(unused), modules.intersection(unused)


MODEL_MODULES = ("onnxruntime", "tokenizers")


def test_a_search_by_words_never_loads_the_model(run: Run) -> None:  # noqa: F811
    """``search --mode bm25`` needs no embedding: it imports neither onnxruntime nor the
    model's tokenizer — not to open the vector side, nor to embed a claim waiting in the
    queue (left for the next command that embeds) — while a hybrid search does both."""
    added = run("claim", "add", "I drink sencha every morning", "--type", "preference")
    assert added.returncode == 0
    assert run("index").returncode == 0  # the vector file written: the side has vectors
    added = run("claim", "add", "Kombucha brewing on Sundays", "--no-supersede")
    assert added.returncode == 0  # queued for embedding
    found = run("search", "kombucha", "--mode", "bm25", "--json", PYTHONPROFILEIMPORTTIME="1")
    assert found.returncode == 0, found.stderr
    modules = imported(found.stderr)
    assert "lsp_memory.services.retrieval.search" in modules
    assert modules.isdisjoint(MODEL_MODULES), modules.intersection(MODEL_MODULES)
    assert "Kombucha brewing on Sundays" in found.stdout
    # The queued claim is still waiting: the next command that embeds embeds it.
    assert "; 1 embedded," in run("index").stdout
    hybrid = run("search", "kombucha", PYTHONPROFILEIMPORTTIME="1")
    assert hybrid.returncode == 0 and "Kombucha" in hybrid.stdout
    assert set(MODEL_MODULES) <= imported(hybrid.stderr)
