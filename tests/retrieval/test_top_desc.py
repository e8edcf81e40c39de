"""The partial top-k used on every query equals the full stable sort's first k, ties included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from g2cons_plugins.retrieval.order import stable_desc, top_desc


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(min_value=-3, max_value=3), min_size=0, max_size=60),  # few values: many ties
    st.integers(min_value=0, max_value=70),
)
def test_top_desc_equals_the_full_stable_sort(values: list[int], k: int) -> None:
    scores = np.asarray(values, dtype=np.float64) / 2.0
    got = top_desc(scores, k)
    assert got.tolist() == stable_desc(scores)[:k].tolist()


def test_top_desc_breaks_ties_at_the_cut_off_by_position() -> None:
    scores = np.array([0.0, 1.0, 0.5, 1.0, 0.5, 0.5])
    assert top_desc(scores, 3).tolist() == [1, 3, 2]
    assert top_desc(scores, 4).tolist() == [1, 3, 2, 4]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(min_value=-3, max_value=3), min_size=1, max_size=400),
    st.lists(st.integers(min_value=0, max_value=450), min_size=1, max_size=5),
)
def test_cached_top_units_answer_any_sequence_of_asks_like_a_fresh_sort(values: list[int], asks: list[int]) -> None:
    """DenseScores sorts the best TOP_MIN units once and answers smaller asks with prefixes, larger ones afresh:
    each answer equals the full stable sort's first k, whatever came before (a stale or mutable cache would not)."""
    from types import SimpleNamespace

    from g2cons_plugins.retrieval import DenseScores

    vecs = (np.asarray(values, dtype=np.float32) / 2.0)[:, None]
    snap = SimpleNamespace(stored=SimpleNamespace(unit_vecs=vecs), unit_ann=None)
    sc = DenseScores(snap, np.ones(1, dtype=np.float32))  # type: ignore[arg-type]
    sc.TOP_MIN = 8  # small, so that asks fall on both sides of the cache
    full = stable_desc(vecs[:, 0])
    for k in asks:
        got = sc.top(k)
        assert got.tolist() == full[:k].tolist()
        assert not got.flags.writeable
