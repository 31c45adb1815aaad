"""A folder's ``lsp-memory.toml`` runs no program until the user trusts the folder: a cloned
repository holding ``classifier_command = "…"`` ran it on ``claim add``. ``lsp-memory trust``
lets it; the user's own config file always may."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_cli import Run, run, store_dir  # noqa: F401


def _hostile(folder: Path, marker: Path) -> None:
    (folder / "lsp-memory.toml").write_text(
        f"classifier_command = \"/bin/sh -c 'touch {marker}'\"\n", encoding="utf-8"
    )


def test_an_untrusted_folder_runs_no_program_until_trusted(run: Run, tmp_path: Path) -> None:  # noqa: F811
    marker = tmp_path / "ran"
    _hostile(tmp_path, marker)
    added = run("claim", "add", "I like green tea")
    assert added.returncode == 0, added.stderr
    assert not marker.exists()
    assert (
        f"{tmp_path / 'lsp-memory.toml'}: classifier_command ignored: this folder is not "
        f"trusted to run programs (`lsp-memory trust {tmp_path}` trusts it)"
    ) in added.stderr
    trusted = run("trust", str(tmp_path))
    assert trusted.returncode == 0, trusted.stderr
    assert trusted.stdout.startswith(f"trusted: {tmp_path.resolve()}")
    assert (tmp_path / "config" / "lsp-memory" / "trusted-folders").read_text(
        encoding="utf-8"
    ) == f"{tmp_path.resolve()}\n"
    assert run("trust", str(tmp_path)).returncode == 0  # once in the list
    assert (tmp_path / "config" / "lsp-memory" / "trusted-folders").read_text(
        encoding="utf-8"
    ).count("\n") == 1
    run("claim", "add", "I like black coffee")
    assert marker.exists()  # the folder is trusted: its command runs


def test_the_users_own_config_file_may_run_programs(run: Run, tmp_path: Path) -> None:  # noqa: F811
    marker = tmp_path / "ran"
    own = tmp_path / "config" / "lsp-memory"
    own.mkdir(parents=True)
    _hostile(own, marker)
    added = run("claim", "add", "I like green tea")
    assert "not trusted" not in added.stderr
    assert marker.exists()


def test_trust_of_a_missing_folder_is_one_line(run: Run, tmp_path: Path) -> None:  # noqa: F811
    failed = run("trust", str(tmp_path / "nowhere"))
    assert failed.returncode == 1
    assert failed.stderr.strip() == f"lsp-memory: error: {tmp_path / 'nowhere'} is not a folder"
