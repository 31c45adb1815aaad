"""``[[`` completion's name index against the rule it implements (completion's ``_match``,
the scoring it replaced for note names and still uses for headings: each note's best name,
0 prefix, 1 a word's prefix, 2 substring, 3 letters in order), on random names and inputs;
and no input makes it backtrack."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_memory.model import Note
from lsp_memory.notes.names import NameIndex
from lsp_memory.services.editor.completion import _match


def note(path: str, title: str, aliases: tuple[str, ...] = ()) -> Note:
    return Note("/v", path, title, aliases, (), False, (), (), "", 0, 0, "")


def brute_force(notes: dict[str, Note], typed: str) -> list[tuple[int, str]]:
    want = typed.strip().casefold()
    scored = []
    for path, found in notes.items():
        names = [found.title, *found.aliases, path.rsplit("/", 1)[-1], path]
        best = min(_match(want, name.casefold()) for name in names)
        if best < 9:
            scored.append((best, path))
    return sorted(scored, key=lambda item: (item[0], len(item[1]), item[1]))


ALPHABET = "abcAB -_./éÉß"
names = st.text(ALPHABET, min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.builds(lambda n: f"{n}.md", names), st.tuples(names, st.lists(names, max_size=2))
    ),
    st.text(ALPHABET, max_size=4),
    st.integers(1, 8),
)
def test_the_same_notes_in_the_same_order_as_brute_force(
    made: dict[str, tuple[str, list[str]]], typed: str, enough: int
) -> None:
    notes = {path: note(path, title, tuple(aliases)) for path, (title, aliases) in made.items()}
    expected = brute_force(notes, typed)
    found = NameIndex(notes).matches(typed, enough)
    if len(found) < enough:
        assert found == expected  # every level was searched
    else:
        assert found[:enough] == expected[:enough]  # stopped once enough were found


def test_no_name_or_input_backtracks() -> None:
    """180 "a"s then no "b" on every line: a backtracking letters-in-order pattern would take
    hours here (and the suite would hang, which CI reports); the possessive one answers."""
    notes = {f"n{i}.md": note(f"n{i}.md", "a" * 180 + str(i)) for i in range(2000)}
    assert NameIndex(notes).matches("a" * 30 + "b", 51) == []


def test_a_letter_that_starts_thousands_of_names_gives_the_first_enough() -> None:
    """One letter typed over a large vault: the first ``enough`` notes in order, not every
    note with a name starting with it, sorted on each keystroke (2 500 for "a" at 10 000
    notes: 10-20 ms of the request)."""
    notes = {
        f"{folder}/{word}{i}.md": note(f"{folder}/{word}{i}.md", f"{word.title()} {i}")
        for i in range(1500)
        for folder, word in (("areas", "bee"), ("journal", "apple"), ("people", "cat"))
    }
    found = NameIndex(notes).matches("a", 51)
    assert found == brute_force(notes, "a")[:51]
    assert found[0] == (0, "areas/bee0.md") and found[-1][0] == 0
