"""Texts numbered in order of first use (:class:`g2cons_plugins.arrays.first_use.FirstUse`): the numbers a ``dict``
keyed by the texts gives, whatever the batches, the merges and the hash collisions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g2cons_plugins.arrays import first_use
from g2cons_plugins.arrays.first_use import FirstUse


def _dict_numbers(batches: list[list[str]]) -> tuple[list[list[int]], list[list[int]]]:
    """What the streaming build's dict gave: each text's number, and the positions of the new ones per batch."""
    seen: dict[str, int] = {}
    numbers, new = [], []
    for batch in batches:
        got, fresh = [], []
        for i, t in enumerate(batch):
            if t not in seen:
                seen[t] = len(seen)
                fresh.append(i)
            got.append(seen[t])
        numbers.append(got)
        new.append(fresh)
    return numbers, new


def _check(batches: list[list[str]]) -> FirstUse:
    fu = FirstUse()
    want_numbers, want_new = _dict_numbers(batches)
    for batch, numbers, new in zip(batches, want_numbers, want_new, strict=True):
        got, fresh = fu.number(batch)
        assert got.dtype == np.int64 and got.tolist() == numbers
        assert fresh == new
    assert len(fu) == len({t for b in batches for t in b})
    return fu


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.sampled_from([f"s{i}" for i in range(40)] + ["", "a b", "\x1f", "é"]), max_size=30),
                max_size=12))  # fmt: skip
def test_numbers_are_the_dicts(batches: list[list[str]]) -> None:
    _check(batches)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=8), max_size=60), st.lists(st.text(max_size=8), max_size=20), st.integers(1, 7))
def test_distinct_texts_numbered_at_once_as_one_by_one(texts: list[str], later: list[str], batch: int) -> None:
    """``of_distinct`` (an index's sentences) gives the numbers ``number`` gives them in order, and numbers what
    comes after as ``number`` would; texts that are not distinct after all fall back to ``number``."""
    fu = FirstUse.of_distinct(texts, batch)
    ref = FirstUse()
    for lo in range(0, len(texts), batch):
        ref.number(texts[lo : lo + batch])
    assert len(fu) == len(ref) == len(set(texts))
    got, fresh = fu.number(texts + later)
    want, want_fresh = ref.number(texts + later)
    assert got.tolist() == want.tolist() and fresh == want_fresh
    assert got[: len(texts)].tolist() == _dict_numbers([texts])[0][0]


def test_merged_keys_are_found_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a merge after every batch, every later batch looks its known texts up in the sorted arrays."""
    monkeypatch.setattr(first_use, "_MIN_PENDING", 1)
    batches = [[f"t{(7 * b + i) % 50}" for i in range(9)] for b in range(20)]
    fu = _check(batches)
    assert len(fu._pending) < len(fu)  # noqa: SLF001 - most keys went to the arrays


def test_equal_first_hashes_are_told_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """Distinct texts whose first hash is equal (forced here: three values for all) keep distinct numbers, in the
    pending keys and in the sorted arrays."""
    real = hash

    def weak(t: str) -> int:
        return real(t) if t.startswith(first_use._SEP) else len(t) % 3  # noqa: SLF001

    monkeypatch.setattr(first_use, "hash", weak, raising=False)
    monkeypatch.setattr(first_use, "_MIN_PENDING", 2)
    batches = [[f"x{i * j}" for i in range(6)] for j in range(1, 15)]
    _check(batches)


def test_empty_batches() -> None:
    fu = FirstUse()
    got, fresh = fu.number([])
    assert got.shape == (0,) and fresh == []
    _check([[], ["a"], [], ["a", "b"]])


def test_text_rows_give_the_row_maps_rows_on_every_branch() -> None:
    """The sentences' text -> row map (:class:`g2cons_plugins.engine.trickle_store.TextRows`) gives the rows the
    dict-keyed ``RowMap`` gives: known texts their rows, new ones appended in order, and a snapshot that appends
    after another one appended to the shared map gets a fresh map of its own rows first."""
    from g2cons_plugins.engine.trickle_store import RowMap, TextRows

    base = [f"sentence {i}." for i in range(300)]
    for cls in (RowMap, TextRows):
        m0 = cls(base)
        m1, rows1 = m0.extended(300, ["sentence 5.", "new a.", "sentence 299.", "new a.", "new b."], base)
        assert m1 is m0 and rows1 == [5, 300, 299, 300, 301]
        after1 = [*base, "new a.", "new b."]
        # a second branch from the 300-row snapshot: the shared map has 302 rows, so it gets its own copy
        m2, rows2 = m0.extended(300, ["new b.", "sentence 0."], base)
        assert m2 is not m0 and rows2 == [300, 0]
        # the first branch goes on appending to its map
        m3, rows3 = m1.extended(302, ["new b.", "new c."], after1)
        assert rows3 == [301, 302]
        assert m3 is m1
