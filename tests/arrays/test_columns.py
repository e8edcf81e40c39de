"""Text columns and ropes (g2cons_plugins.arrays.columns) behave as the lists they replace."""

from __future__ import annotations

import bisect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g2cons_plugins.arrays.columns import (
    Rope,
    TextColumn,
    bisect_left,
    check_utf8,
    concat,
    inserted,
    kept,
    take,
    text_column,
)

_texts = st.lists(st.text(max_size=12), max_size=30)


@settings(max_examples=150, deadline=None)
@given(_texts)
def test_a_column_reads_back_its_texts(texts: list[str]) -> None:
    col = text_column(texts)
    assert len(col) == len(texts) and list(col) == texts and col == texts and texts == col
    assert [col[i] for i in range(-len(texts), len(texts))] == texts + texts
    assert col[1:4] == texts[1:4] and check_utf8(col.buf, col.off) is None
    with pytest.raises(IndexError):
        col[len(texts)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=12) | st.text(st.characters(max_codepoint=127), max_size=12), max_size=30), st.data())
def test_slices_read_like_list_slices(texts: list[str], data: st.DataObject) -> None:
    """Runs are decoded at once (all ASCII) or text by text; any start, stop and step reads as the list's slice,
    from a column in memory and from one whose buffer is not contiguous (no memoryview)."""
    sl = slice(
        data.draw(st.none() | st.integers(-40, 40)),
        data.draw(st.none() | st.integers(-40, 40)),
        data.draw(st.none() | st.sampled_from([1, 2, 3, -1])),
    )
    col = text_column(texts)
    assert col[sl] == texts[sl]
    strided = TextColumn(np.repeat(col.buf, 2)[::2], col.off)
    assert strided[sl] == texts[sl]


@settings(max_examples=150, deadline=None)
@given(_texts, st.data())
def test_ropes_insert_and_keep_like_lists(texts: list[str], data: st.DataObject) -> None:
    base = text_column(texts)
    at = sorted(data.draw(st.lists(st.integers(0, len(texts)), max_size=6)))
    new = [f"new{k}" for k in range(len(at))]
    want = list(texts)
    for k, p in reversed(list(enumerate(at))):
        want.insert(p, new[k])
    r = inserted(base, at, new)
    assert list(r) == want and len(r) == len(want) and [r[i] for i in range(len(r))] == want
    mask = np.asarray(data.draw(st.lists(st.booleans(), min_size=len(want), max_size=len(want))), dtype=bool)
    k = kept(r, mask)  # a rope of a rope stays flat: pieces point into the base column and the new list
    assert list(k) == [t for t, m in zip(want, mask.tolist(), strict=True) if m]
    assert all(not isinstance(s, Rope) for s, _, _ in k.pieces) and len(k.pieces) <= 2 * len(at) + 1 + int(mask.sum())
    a, b = sorted(data.draw(st.tuples(st.integers(0, len(want)), st.integers(0, len(want)))))
    assert list(r[a:b]) == want[a:b]


@settings(max_examples=150, deadline=None)
@given(_texts, st.data())
def test_take_reads_items_like_indexing(texts: list[str], data: st.DataObject) -> None:
    base = text_column(texts)
    at = sorted(data.draw(st.lists(st.integers(0, len(texts)), max_size=4)))
    rope = inserted(base, at, [f"new{k}" for k in range(len(at))])
    for seq in (base, rope, list(rope)):
        idx = data.draw(st.lists(st.integers(0, len(seq) - 1), max_size=40)) if len(seq) else []
        assert take(seq, np.asarray(idx, dtype=np.int64)) == [seq[i] for i in idx]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=6), max_size=30, unique=True), st.data())
def test_a_sorted_rope_bisects_like_its_list(texts: list[str], data: st.DataObject) -> None:
    items = sorted(texts)
    col, copy = text_column(items), list(items)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(items)), max_size=6)))
    edges = [0, *cuts, len(items)]
    rope = concat((col if k % 2 else copy, a, b) for k, (a, b) in enumerate(zip(edges, edges[1:], strict=False)))
    assert list(rope) == items
    keys = items + data.draw(st.lists(st.text(max_size=6), max_size=10)) + [""]
    for key in keys:
        assert bisect_left(rope, key) == bisect.bisect_left(items, key) == bisect_left(copy, key)


def test_adjacent_pieces_merge() -> None:
    base = text_column(["a", "b", "c", "d"])
    r = concat([(base, 0, 2), (base, 2, 4)])
    assert len(r.pieces) == 1 and list(r) == ["a", "b", "c", "d"]
    assert len(Rope([])) == 0 and list(Rope([])) == []


@pytest.mark.parametrize(
    ("buf", "off", "why"),
    [
        (b"abc", [0, 2], "from 0 to 3"),
        (b"abc", [1, 3], "from 0 to 3"),
        (b"abc", [0, 2, 1, 3], "decrease"),
        ("é".encode(), [0, 1, 2], "inside a character"),
        (b"a\xffb", [0, 3], "not UTF-8"),
    ],
)
def test_bad_columns_are_named(buf: bytes, off: list[int], why: str) -> None:
    msg = check_utf8(np.frombuffer(buf, np.uint8), np.asarray(off, np.int64))
    assert msg is not None and why in msg


def test_non_ascii_and_empty_texts() -> None:
    texts = ["", "Zürich", "北京", "", "😀 ok"]
    col = text_column(texts)
    assert list(col) == texts and isinstance(col, TextColumn) and col.nbytes(2) == 6
