"""Related-note suggestions: the threshold (``related_similarity``) calibrated on a vault
someone else wrote, and the precision it gives on paragraphs it was not tuned on; with
``--speed``, the code action's latency through a real server on the 100k-claim corpus.

    .venv/bin/python -m benchmarks.related [--mirror GIT_DIR] [--folder en] [--json]
    .venv/bin/python -m benchmarks.related --speed [--cache DIR] [--samples 200] [--json]

The vault is Obsidian's help (github.com/obsidianmd/obsidian-help, ``en/``), read at run time
from a bare git mirror (its Markdown files): the repository states no licence, so none of its
text is copied here. The labelled set is made from it, by its authors' own links:

- a **linked paragraph** is one of its paragraphs (``services.editor.related.paragraph_at``)
  with at least ``MIN_WORDS`` words and a ``[[link]]`` to another note of the vault; its links
  are read as their words (as a user's unlinked prose would hold them) and its **related
  notes** are the notes it linked. A suggestion is *right* when it is one of them (strict),
  or, leniently, a note its own note links or is linked from elsewhere;
- **unrelated prose** is ``benchmarks/data/related-unrelated.txt``: 40 paragraphs written for
  this benchmark on topics the help does not cover (cooking, sport, a roof, Kubernetes, …).

Each paragraph is asked for its suggestions as the editor asks (``Suggester.suggest``, its
own note excluded, at most 3), at threshold 0; a threshold then keeps those at or above it.
Notes are split in two halves by a hash of their path, the unrelated paragraphs by their
order (even: dev, odd: test). On the dev half the threshold chosen is the lowest, in steps of
0.01, at which at most ``UNRELATED_SHARE`` of unrelated paragraphs get any suggestion and the
strict precision reaches ``PRECISION``; the figures reported are the test half's at it.
"""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, emit, load_average, start_report

MIRROR = Path("/work/.mirror/obsidianmd+obsidian-help/repo")
UNRELATED = Path(__file__).parent / "data" / "related-unrelated.txt"
JUDGED = Path(__file__).parent / "data" / "related-judged.tsv"
UNRELATED_SHARE = 0.05
PRECISION = 0.5
STEPS = [round(0.20 + 0.01 * i, 2) for i in range(61)]  # 0.20 … 0.80


@dataclass(frozen=True, slots=True)
class Case:
    """One paragraph's suggestions at threshold 0: (cosine, strict, lenient) each."""

    source: str  # the note it is from, or "unrelated"
    dev: bool
    linked: bool  # a linked paragraph (else unrelated prose)
    found: tuple[tuple[float, bool, bool], ...]
    ordinal: int = 0  # which linked paragraph of its note, from 1
    suggested: tuple[str | None, ...] = ()  # the vault path of each suggestion


def extract(mirror: Path, folder: str, into: Path) -> Path:
    """The Markdown files of the vault's ``folder`` from the bare git ``mirror``, written
    under ``into`` (blob by blob: the mirror lacks some large attachments, which
    ``git archive`` then refuses)."""
    listing = subprocess.run(
        ["git", f"--git-dir={mirror}", "ls-tree", "-r", "-z", "HEAD", "--", folder],
        check=True,
        capture_output=True,
    ).stdout.decode()
    for entry in filter(None, listing.split("\0")):
        meta, path = entry.split("\t", 1)
        if not path.endswith(".md"):
            continue
        blob = meta.split()[2]
        data = subprocess.run(
            ["git", f"--git-dir={mirror}", "cat-file", "blob", blob],
            check=True,
            capture_output=True,
        ).stdout
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return into / folder


def _dev(path: str) -> bool:
    return hashlib.sha256(path.encode()).digest()[0] % 2 == 0


def cases(vault: Path, scratch: Path) -> tuple[list[Case], dict[str, Any]]:
    from lsp_memory import refs
    from lsp_memory.app import App
    from lsp_memory.config import load_config
    from lsp_memory.model import RefKind
    from lsp_memory.services.editor.related import MIN_WORDS, paragraph_at, query_text

    settings = {
        "store": str(scratch / "store"),
        "vaults": [str(vault)],
        "user": "bench",
        "cache": str(scratch / "cache"),  # its own: every run embeds the vault afresh
    }
    config, _ = load_config(settings, environ={"XDG_CACHE_HOME": str(scratch / "cache")})
    app = App(config)
    try:
        began = time.perf_counter()
        app.keeper.index(full=True, embed=True)
        indexed_s = time.perf_counter() - began
        reads = app.snapshot()
        (view,) = reads.vaults
        suggester = reads.suggester()

        def linked_from(path: str) -> set[str]:
            note = view.notes[path]
            targets = {view.resolve(link.target).note for link in note.links}
            return {t.path for t in targets if t is not None and t.path != path}

        found: list[Case] = []
        asked: list[float] = []
        for path in sorted(view.notes):
            text = (vault / path).read_text(encoding="utf-8")
            lenient = linked_from(path) | {source.path for source, _ in view.backlinks(path)}
            start, ordinal = 0, 0
            seen: set[int] = set()
            while start < len(text):
                paragraph = paragraph_at(text, start)
                line_end = text.find("\n", start)
                if paragraph is None or paragraph.start in seen:
                    start = len(text) if line_end < 0 else line_end + 1
                    continue
                seen.add(paragraph.start)
                start = paragraph.end + 1
                body = text[paragraph.start : paragraph.end]
                strict = set()
                for reference in refs.parse(body, markdown=True).references:
                    if reference.kind is RefKind.NOTE:
                        note = view.resolve(reference.target).note
                        if note is not None and note.path != path:
                            strict.add(note.path)
                query = query_text(body)
                if not strict or len(query.split()) < MIN_WORDS:
                    continue
                tick = time.perf_counter()
                _, suggestions = suggester.suggest(
                    query, 0, threshold=0.0, path=str(vault / path), language_id="markdown"
                )
                asked.append(time.perf_counter() - tick)
                named = [_path(s.reference, view) for s in suggestions]
                ordinal += 1
                found.append(
                    Case(
                        path,
                        _dev(path),
                        True,
                        tuple(
                            (s.similarity, name in strict, name in strict | lenient)
                            for s, name in zip(suggestions, named, strict=True)
                        ),
                        ordinal,
                        tuple(named),
                    )
                )
        prose = [
            line.strip()
            for line in UNRELATED.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")
        ]
        for index, paragraph_text in enumerate(prose):
            _, suggestions = suggester.suggest(
                paragraph_text, 0, threshold=0.0, path=str(scratch / "prose.md"),
                language_id="markdown",
            )  # fmt: skip
            found.append(
                Case(
                    "unrelated",
                    index % 2 == 0,
                    False,
                    tuple((s.similarity, False, False) for s in suggestions),
                )
            )
        facts = {
            "notes": len(view.notes),
            "index_and_embed_s": round(indexed_s, 1),
            "suggest_in_process_ms_median": round(sorted(asked)[len(asked) // 2] * 1000, 1)
            if asked
            else None,
        }
        return found, facts
    finally:
        app.close()


def _path(reference: str, view: Any) -> str | None:
    """The vault path a suggested ``[[link]]`` names (None for a claim's reference)."""
    if not reference.startswith("[["):
        return None
    note = view.resolve(reference[2:-2]).note
    return None if note is None else str(note.path)


def figures(found: Sequence[Case], threshold: float) -> dict[str, Any]:
    """Precision, recall and the unrelated paragraphs offered something, at ``threshold``."""
    linked = [case for case in found if case.linked]
    unrelated = [case for case in found if not case.linked]
    kept = [[s for s in case.found if s[0] >= threshold] for case in linked]
    offered = sum(len(k) for k in kept)
    strict = sum(s[1] for k in kept for s in k)
    lenient = sum(s[2] for k in kept for s in k)
    noisy = sum(any(s[0] >= threshold for s in case.found) for case in unrelated)
    return {
        "threshold": threshold,
        "linked_paragraphs": len(linked),
        "suggestions": offered,
        "precision_strict": round(strict / offered, 3) if offered else None,
        "precision_lenient": round(lenient / offered, 3) if offered else None,
        "paragraphs_with_a_suggestion": sum(bool(k) for k in kept),
        "paragraphs_given_a_linked_note": sum(any(s[1] for s in k) for k in kept),
        "unrelated_paragraphs": len(unrelated),
        "unrelated_given_any": noisy,
    }


def choose(dev: Sequence[Case]) -> float:
    """The lowest step meeting both targets on the dev half (the highest step if none)."""
    for step in STEPS:
        row = figures(dev, step)
        share = row["unrelated_given_any"] / max(1, row["unrelated_paragraphs"])
        precision = row["precision_strict"]
        if share <= UNRELATED_SHARE and precision is not None and precision >= PRECISION:
            return step
    return STEPS[-1]


def speed(cache: Path, samples: int) -> dict[str, Any]:
    """``textDocument/codeAction`` on paragraphs of the corpus's notes through a real server
    (``benchmarks.server_corpus``, 100 000 claims, 10 000 notes; VS Code's capabilities):
    each paragraph asked twice, first (its embedding made by the helper, then the searches)
    and again (the embedding kept); the helper started beforehand by a search."""
    import random

    from benchmarks.common import latency_ms, workspace
    from benchmarks.lspclient import Client, vs_code_capabilities
    from benchmarks.server_corpus import prepare_in
    from benchmarks.server_suites import SERVER, wait_idle, wait_ready

    prepared = prepare_in(cache, 100_000, 10_000, 7)
    rng = random.Random(7)
    with workspace("related-speed") as work:
        client = Client(SERVER, prepared.env(), work / "server.stderr")
        try:
            client.initialize(prepared.vault, vs_code_capabilities())
            ready_s = wait_ready(client)
            wait_idle(client)
            client.request(
                "workspace/executeCommand",
                {"command": "lspMemory.search", "arguments": ["kitchen budget", "all", 5]},
            )
            first: list[float] = []
            again: list[float] = []
            offered = 0
            for index, path in enumerate(rng.sample(prepared.paths, samples)):
                text = (prepared.vault / path).read_text(encoding="utf-8")
                lines = text.split("\n")
                spots = [
                    n
                    for n, line in enumerate(lines)
                    if len(line.split()) >= 10 and not line.startswith(("#", "-"))
                ]
                if not spots:
                    continue
                uri = (prepared.vault / path).as_uri()
                client.notify(
                    "textDocument/didOpen",
                    {"textDocument": {"uri": uri, "languageId": "markdown", "version": 1,
                                      "text": text}},
                )  # fmt: skip
                spot = {"line": rng.choice(spots), "character": 3}
                params = {
                    "textDocument": {"uri": uri},
                    "range": {"start": spot, "end": spot},
                    "context": {"diagnostics": [], "only": ["refactor.rewrite"]},
                }
                reply = client.request("textDocument/codeAction", params)
                first.append(reply.seconds)
                offered += bool(reply.result)
                again.append(client.request("textDocument/codeAction", params).seconds)
                client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
                if index % 20 == 0:
                    time.sleep(0.3)  # let the indexing thread catch up with the closed notes
        finally:
            client.close()
    return {
        "corpus": {
            "claims": 100_000,
            "notes": 10_000,
            "documents": prepared.build.get("documents"),
        },
        "ready_s": ready_s,
        "first_ask": {**latency_ms(first), "runs": len(first)},
        "asked_again": {**latency_ms(again), "runs": len(again)},
        "paragraphs_offered_something": offered,
    }


def _offered(found: Sequence[Case], threshold: float) -> list[tuple[str, int, str | None, float]]:
    """Every suggestion at ``threshold``: its note, paragraph ordinal, suggestion, cosine."""
    return [
        (case.source, case.ordinal, name, score)
        for case in found
        if case.linked
        for (score, _, _), name in zip(case.found, case.suggested, strict=True)
        if score >= threshold
    ]


def sample(found: Sequence[Case], threshold: float, count: int) -> list[dict[str, Any]]:
    """``count`` suggestions drawn at random (seed 7), for a person to judge by reading the
    paragraph in the vault and the suggested note (``JUDGED`` keeps the verdicts)."""
    import random

    offered = _offered(found, threshold)
    random.Random(7).shuffle(offered)
    return [
        {"note": note, "paragraph": ordinal, "suggested": name, "cosine": round(score, 3)}
        for note, ordinal, name, score in offered[:count]
    ]


def judged(found: Sequence[Case], threshold: float) -> dict[str, Any] | None:
    """The hand verdicts of ``JUDGED`` on this run's suggestions: how many it still makes,
    and how many of those a person judged related."""
    if not JUDGED.exists():
        return None
    verdicts: dict[tuple[str, int, str | None], bool] = {}
    for line in JUDGED.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            note, ordinal, name, verdict = line.split("\t")
            verdicts[note, int(ordinal), name] = verdict.strip() == "1"
    made = [
        v for n, o, s, _ in _offered(found, threshold) if (v := verdicts.get((n, o, s))) is not None
    ]
    return {"verdicts": len(verdicts), "still_suggested": len(made), "judged_related": sum(made)}


def main() -> int:
    parser = arguments(__doc__)
    parser.add_argument("--mirror", type=Path, default=MIRROR)
    parser.add_argument("--folder", default="en")
    parser.add_argument("--speed", action="store_true")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/bench-related"))
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument(
        "--sample", type=int, default=0, help="list N test-half suggestions to judge by hand"
    )
    args = parser.parse_args()
    began = time.perf_counter()
    if args.speed:
        report = start_report("related-speed", load_average_at_start=load_average())
        report.update(speed(args.cache, args.samples))
        emit(report, as_json=True, began=began)
        return 0
    report = start_report("related", load_average_at_start=load_average())
    with tempfile.TemporaryDirectory(prefix="lsp-memory-related-") as folder:
        scratch = Path(folder)
        vault = extract(args.mirror, args.folder, scratch / "vault")
        found, facts = cases(vault, scratch / "work")
    dev = [case for case in found if case.dev]
    test = [case for case in found if not case.dev]
    chosen = choose(dev)
    report.update(facts)
    report["chosen_on_dev"] = chosen
    report["dev"] = figures(dev, chosen)
    report["test"] = figures(test, chosen)
    report["test_curve"] = [figures(test, step) for step in STEPS[::5]]
    report["dev_curve"] = [figures(dev, step) for step in STEPS[::5]]
    report["judged"] = judged(test, chosen)
    report["to_judge"] = sample(test, chosen, args.sample)
    emit(report, as_json=True, began=began)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
