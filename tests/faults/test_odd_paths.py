"""A store, a vault, a cache folder, a prompt and an export on paths with spaces and
non-ASCII characters (Latin, CJK, Cyrillic, emoji), and notes named the same way: import,
index, search, ``[[note]]`` links in build-context and resolve, status, and the export round
trip all work and give those paths back as they are."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.faults.harness import KB, KB_CLAIMS, Cli, store_file

ODD = "my memory/Ünïcødé 記憶"


def vault(folder: Path) -> Path:
    (folder / "sub dir é").mkdir(parents=True)
    (folder / "Café Plan.md").write_text(
        "# Café Plan\n\nOpen the café in Zürich by spring.\n\n## Menü\n\nCroissants and 抹茶 "
        "latte.\n",
        encoding="utf-8",
    )
    (folder / "sub dir é" / "記憶 notes.md").write_text(
        "---\ntitle: 記憶 Notes\n---\n\nWhat I remember about [[Café Plan]], in Kyoto.\n",
        encoding="utf-8",
    )
    return folder


def test_odd_paths_work_end_to_end(tmp_path: Path) -> None:
    base = tmp_path / ODD
    notes = vault(base / "notes vault ñ")
    cli = Cli(base / "work dir", store=base / "store ß", cache=base / "cache ☕", vaults=[notes])
    assert "21 claims" in cli.ok("import", str(KB)).stderr
    added = cli.ok("claim", "add", "Ich mag Käse aus Gruyères 🧀", "--type", "preference")
    assert added.stdout.startswith("added #43 @"), added.stdout
    assert "0 waiting to be embedded" in cli.ok("index").stdout

    found = cli.json("search", "Zürich café", "--kind", "note")
    assert found[0]["path"] == "Café Plan.md", found
    found = cli.json("search", "Kyoto", "--kind", "note", "--mode", "bm25")
    assert [hit["path"] for hit in found] == ["sub dir é/記憶 notes.md"]
    found = cli.json("search", "Käse Gruyères", "--kind", "claim", "-k", "1")
    assert found[0]["title"] == "Ich mag Käse aus Gruyères 🧀"

    prompt = base / "prompts ü" / "prompt ✓.md"
    prompt.parent.mkdir()
    prompt.write_text(
        "Plan [[Café Plan#Menü]] with @leaf_active_a001, see [[記憶 Notes]].\n", encoding="utf-8"
    )
    block = cli.ok("build-context", str(prompt)).stdout
    assert "[REFERENCED @leaf_active_a001] [fact] The Leaf service uses PostgreSQL 16" in block
    pinned = block[block.index("### [[Café Plan#Menü]] [id:Café Plan.md]\n") :]
    assert pinned.split("---")[0].splitlines()[1:] == ["## Menü", "", "Croissants and 抹茶 latte."]
    assert "### [[記憶 Notes]] [id:sub dir é/記憶 notes.md]\n" in block
    assert "- [[記憶 Notes]] (sub dir é/記憶 notes.md): What I remember about Café" in block
    resolved = {r["ref"]: r for r in cli.json("resolve", "--file", str(prompt))}
    assert resolved["[[Café Plan#Menü]]"]["note"]["path"] == "Café Plan.md"
    assert resolved["[[Café Plan#Menü]]"]["note"]["heading"] == "Menü"
    assert resolved["[[記憶 Notes]]"]["note"]["path"] == "sub dir é/記憶 notes.md"

    status = cli.json("status")
    assert (status["claims"]["total"], status["notes"]) == (KB_CLAIMS + 1, 2)
    assert status["paths"]["store"] == str(store_file(cli.store))
    assert status["paths"]["vaults"] == [str(notes)]
    assert status["paths"]["index"].startswith(str(cli.cache))

    exported = base / "exports ✓" / "mémoire export.jsonl"
    exported.parent.mkdir()
    assert f"to {exported}" in cli.ok("export", str(exported)).stderr
    other = Cli(base / "work 2", store=base / "другой store", cache=base / "cache ☕")
    other.ok("import", str(exported))
    again = base / "exports ✓" / "второй экспорт.jsonl"
    other.ok("export", str(again))
    assert again.read_bytes() == exported.read_bytes()
    lines = exported.read_text(encoding="utf-8").splitlines()
    assert any(
        json.loads(line).get("statement") == "Ich mag Käse aus Gruyères 🧀" for line in lines
    )
    assert not list(exported.parent.glob(".*partial"))


def test_names_no_link_can_name_are_skipped_with_one_warning(tmp_path: Path) -> None:
    """A file whose name is not valid UTF-8 made index, search and build-context exit 70 for
    the whole vault; a name with a line break completed as a link with a line break. Each is
    skipped with one warning, and the rest of the vault is indexed."""
    notes = vault(tmp_path / "vault")
    (notes / os.fsdecode(b"bad \xff name.md")).write_text("# Bad\n\nZurich secret.\n")
    folder = notes / os.fsdecode(b"folder \xfe")
    folder.mkdir()
    (folder / "inside.md").write_text("# Inside\n\nZurich inside.\n")
    (notes / "line\nbreak.md").write_text("# Break\n\nZurich break.\n", encoding="utf-8")
    cli = Cli(tmp_path / "work", store=tmp_path / "store", cache=tmp_path / "cache", vaults=[notes])
    indexed = cli.ok("index")
    warnings = [line for line in indexed.stderr.splitlines() if "skipped" in line]
    assert warnings == [
        "lsp-memory: warning: bad \\xff name.md: skipped, the name is not valid UTF-8",
        "lsp-memory: warning: folder \\xfe: skipped, the name is not valid UTF-8",
        "lsp-memory: warning: line\\nbreak.md: skipped, the name holds a line break or a "
        "control character",
    ], indexed.stderr
    found = cli.json("search", "Zürich café", "--kind", "note")
    # The 記憶 note only links the plan: below the relevance floor (min_similarity).
    assert [hit["path"] for hit in found] == ["Café Plan.md"]
    found = cli.json("search", "Kyoto", "--kind", "note")
    assert [hit["path"] for hit in found] == ["sub dir é/記憶 notes.md"]
    prompt = tmp_path / "work" / "prompt.md"
    prompt.write_text("See [[Café Plan]].\n", encoding="utf-8")
    built = cli.ok("build-context", str(prompt))
    assert "Open the café in Zürich" in built.stdout
