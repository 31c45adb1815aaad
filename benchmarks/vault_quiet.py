"""What the editor would report on a vault someone else wrote: the diagnostics of every note.

    .venv/bin/python -m benchmarks.vault_quiet VAULT [--json]

Every Markdown file of ``VAULT`` is checked as the language server checks an open document
(``services.editor.checks.check``, the default severities), over an empty store: what a
new user who points lsp-memory at the vault they already have sees. Reported: the count of
each kind and severity, and each distinct reference reported (with how many times).

Used on Obsidian's own help vault (github.com/obsidianmd/obsidian-help, ``en/``), which
documents every link form Obsidian resolves; its attachments need only exist (their bytes
are not read), so a checkout without the large files works.
"""

from __future__ import annotations

import collections
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, emit, start_report


def diagnostics(vault: Path) -> dict[str, Any]:
    from lsp_memory.app import App
    from lsp_memory.config import load_config
    from lsp_memory.services.editor.checks import check

    with tempfile.TemporaryDirectory(prefix="lsp-memory-quiet-") as folder:
        settings = {"store": f"{folder}/store", "vaults": [str(vault)], "user": "bench"}
        config, _ = load_config(settings, environ={"XDG_CACHE_HOME": folder})
        app = App(config)
        try:
            resolver = app.snapshot().resolver()
            kinds: collections.Counter[str] = collections.Counter()
            seen: collections.Counter[tuple[str, str, str]] = collections.Counter()
            notes = sorted(vault.rglob("*.md"))
            for path in notes:
                text = path.read_text(encoding="utf-8", errors="replace")
                for found in check(text, resolver, language_id="markdown", path=str(path)):
                    kinds[f"{found.kind} ({found.severity})"] += 1
                    seen[found.kind, found.severity, found.reference.text] += 1
        finally:
            app.close()
    return {
        "notes": len(notes),
        "by_kind": dict(sorted(kinds.items())),
        "references": [
            {"kind": kind, "severity": severity, "reference": text, "count": count}
            for (kind, severity, text), count in sorted(seen.items())
        ],
    }


def main() -> int:
    parser = arguments(__doc__)
    parser.add_argument("vault", type=Path)
    args = parser.parse_args()
    began = time.perf_counter()
    report = start_report("vault_quiet", vault=str(args.vault))
    report["results"] = diagnostics(args.vault.resolve())
    emit(report, as_json=args.json, began=began, table=table)
    return 0


def table(report: dict[str, Any]) -> None:
    results = report["results"]
    print(f"{results['notes']} notes in {report['vault']}")
    for kind, count in results["by_kind"].items():
        print(f"  {count:>5}  {kind}")
    for row in results["references"]:
        if row["severity"] in ("error", "warning"):
            print(f"  {row['count']:>5}× {row['kind']}: {row['reference']}")


if __name__ == "__main__":
    raise SystemExit(main())
