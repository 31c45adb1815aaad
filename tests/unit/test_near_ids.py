"""A near miss among the user's ids (``checks.KnownIds``) is what difflib's
``get_close_matches`` finds, only faster: the letter counts rule out the ids that cannot
reach the cutoff before difflib compares the rest."""

from __future__ import annotations

import difflib

from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_memory.services.editor.checks import NEAR_CUTOFF, KnownIds

LETTERS = "abcdeé_1"
ids = st.text(LETTERS, min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(ids, max_size=40), st.text(LETTERS + "xZ", max_size=14), st.sampled_from([0.6, 0.8])
)
def test_the_closest_is_difflibs(names: list[str], word: str, cutoff: float) -> None:
    expected = difflib.get_close_matches(word, names, n=1, cutoff=cutoff)
    assert KnownIds.of(names).closest(word, cutoff) == (expected[0] if expected else None)


def test_a_near_miss_among_thousands() -> None:
    names = [f"project_{n:04d}_ctx" for n in range(7000)]
    known = KnownIds.of([*names, "leaf_ctx"])
    assert known.closest("leafctx", NEAR_CUTOFF) == "leaf_ctx"
    assert known.closest("project_0042_ct", NEAR_CUTOFF) == "project_0042_ctx"
    assert known.closest("nothing_like_these", NEAR_CUTOFF) is None
