"""A csr matrix with appended columns kept apart (g2cons_plugins.arrays.wide_rows): rows, row unions and the merged
matrix equal the matrix with the columns appended, at any tail size; past COMPACT_SHARE it is one csr matrix again."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from g2cons_plugins.arrays import wide_rows
from g2cons_plugins.arrays.wide_rows import WideRows, as_csr, row, rows_union, with_columns


def _random(rng: np.random.Generator, rows: int, cols: int, density: float) -> sp.csr_matrix:
    M = sp.random(rows, cols, density=density, format="csr", random_state=rng, dtype=np.float32)
    M.data[:] = 1.0
    M.sort_indices()
    return M


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 30), st.integers(1, 40), st.integers(0, 12), st.integers(0, 2**31))
def test_rows_equal_the_appended_matrix(rows: int, n0: int, k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    base, tail = _random(rng, rows, n0, 0.3), _random(rng, rows, k, 0.3)
    W = WideRows(base, tail)
    full = sp.csr_matrix(sp.hstack([base, tail]))
    full.sort_indices()
    assert W.shape == full.shape and W.nnz == full.nnz
    assert (as_csr(W) != full).nnz == 0 and as_csr(W).has_sorted_indices
    for i in range(rows):
        np.testing.assert_array_equal(row(W, i), full.indices[full.indptr[i] : full.indptr[i + 1]])
    pick = rng.integers(0, rows, 5)
    np.testing.assert_array_equal(rows_union(W, pick), np.unique(full[pick].indices))
    np.testing.assert_array_equal(rows_union(full, pick), np.unique(full[pick].indices))


def test_a_large_tail_is_merged(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    base, tail = _random(rng, 20, 50, 0.5), _random(rng, 20, 5, 0.05)
    assert isinstance(with_columns(base, tail), WideRows)
    monkeypatch.setattr(wide_rows, "COMPACT_SHARE", 0.0)
    merged = with_columns(WideRows(base, tail), tail)
    assert isinstance(merged, sp.csr_matrix) and merged.shape == (20, 55)
