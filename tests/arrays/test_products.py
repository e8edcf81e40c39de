"""A product of a transpose made by rows (arrays.products.transposed_product) equals SciPy's ``A.T @ B`` in csr
form: the same entries, values, index types and entry order, for the 0/1 and count matrices a derive multiplies."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from g2cons_plugins.arrays.products import transposed_product


def _binary(rows: int, cols: int, density: float, seed: int) -> sp.csr_matrix:
    M = sp.random(rows, cols, density=density, format="csr", random_state=seed, dtype=np.float32)
    M.data[:] = 1.0
    return M


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", ["ones", "counts_float", "counts_int"])
def test_equals_the_csr_form_of_the_transposed_product(seed: int, kind: str) -> None:
    rng = np.random.default_rng(seed)
    A = _binary(200, 150, float(rng.uniform(0.005, 0.1)), seed)  # e.g. sentences x units
    B = _binary(200, 90, float(rng.uniform(0.005, 0.2)), seed + 100)  # e.g. sentences x concepts or words
    if kind != "ones":
        B.data = rng.integers(1, 6, size=B.nnz).astype(np.float32)
    if kind == "counts_int":
        B = B.astype(np.int32)
    want = sp.csr_matrix(A.T @ B)
    got = transposed_product(A, B)
    assert got.format == "csr" and got.has_sorted_indices
    assert (got.dtype, got.indices.dtype, got.indptr.dtype) == (want.dtype, want.indices.dtype, want.indptr.dtype)
    for part in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(got, part), getattr(want, part)), part


def test_a_csc_operand_and_an_empty_product() -> None:
    A = _binary(40, 30, 0.1, 1)
    B = _binary(40, 20, 0.1, 2).tocsc()  # e.g. ``sent_unit.T``: multiplied as csr
    want = sp.csr_matrix(A.T @ B)
    got = transposed_product(A, B)
    assert np.array_equal(got.toarray(), want.toarray()) and np.array_equal(got.indices, want.indices)
    empty = transposed_product(sp.csr_matrix((5, 3), dtype=np.float32), sp.csr_matrix((5, 4), dtype=np.float32))
    assert empty.shape == (3, 4) and empty.nnz == 0
