"""How many unlinked mentions a vault someone else wrote gets, with the quiet rule and
without it: every Markdown file scanned as the "Link to [[Title]]" code actions scan an open
note (``services.editor.mentions``).

    .venv/bin/python -m benchmarks.mentions_quiet VAULT [--top 15] [--json]

- ``without the rule``: every title and alias with a word in it, in any case; only the
  note's own names are left out;
- ``with the rule`` (what the server does, docs/reference.md, Unlinked mentions): a one-word
  title only as written and at least 3 characters long, and no note the file already links.

Reported for each: the mentions, the notes that have any, and the names found most often.
Used on Obsidian's own help vault (github.com/obsidianmd/obsidian-help, ``en/``).
"""

from __future__ import annotations

import collections
import time
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, emit, start_report


def count(vault: Path, top: int) -> dict[str, Any]:
    from lsp_memory.notes import Vault
    from lsp_memory.notes.mentions import build_index
    from lsp_memory.notes.noteset import fold
    from lsp_memory.services.editor.mentions import Mentions, prose_segments
    from lsp_memory.services.editor.references import read_note

    opened = Vault(vault)
    opened.scan()
    view = opened.view()
    everything = build_index(view._noteset, quiet=False)  # the note set itself: a measurement
    service = Mentions([view])
    found: dict[str, collections.Counter[str]] = {
        "without_rule": collections.Counter(),
        "with_rule": collections.Counter(),
    }
    notes: dict[str, set[str]] = {"without_rule": set(), "with_rule": set()}
    paths = sorted(vault.rglob("*.md"))
    for path in paths:
        document = read_note(path)
        if document is None:
            continue
        own = view.note_at(path)
        skip = (
            frozenset()
            if own is None
            else frozenset({own.path, fold(own.title), *(fold(a) for a in own.aliases)})
        )
        text = document.text
        for mention in everything.find(text, prose_segments(text), skip=skip):
            found["without_rule"][f"{text[mention.start : mention.end].casefold()}"] += 1
            notes["without_rule"].add(str(path))
        for suggestion in service.in_document(document):
            found["with_rule"][f"{text[suggestion.start : suggestion.end].casefold()}"] += 1
            notes["with_rule"].add(str(path))
    return {
        "files": len(paths),
        **{
            key: {
                "mentions": sum(counter.values()),
                "notes_with_mentions": len(notes[key]),
                "most_found": counter.most_common(top),
            }
            for key, counter in found.items()
        },
    }


def main() -> int:
    parser = arguments(__doc__)
    parser.add_argument("vault", type=Path)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    began = time.perf_counter()
    report = start_report("mentions_quiet", parameters={"vault": str(args.vault)})
    report.update(count(args.vault, args.top))
    emit(report, as_json=args.json, table=print_table, began=began)
    return 0


def print_table(report: dict[str, Any]) -> None:
    print(f"{report['files']} Markdown files")
    for key in ("without_rule", "with_rule"):
        part = report[key]
        print(
            f"{key.replace('_', ' ')}: {part['mentions']} mentions in "
            f"{part['notes_with_mentions']} notes; most found: "
            + ", ".join(f"{name} ({n})" for name, n in part["most_found"])
        )


if __name__ == "__main__":
    raise SystemExit(main())
