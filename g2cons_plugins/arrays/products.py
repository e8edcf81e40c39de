"""Sparse products of a transpose, made by rows.

A derive multiplies through the membership matrices the other way round: units x concepts is ``sent_unit.T @
sent_inc``, chunks x concepts ``unit_chunk.T @ unit_inc``. Written so, SciPy multiplies ``A.T`` (a csc view of the
csr ``A``) as csc: it first converts the other operand to csc (a copy of it), the product comes out csc, and the
caller converts it to csr (a second copy). At 1M passages the units x concepts product (~90M entries, 0.7 GB) was
then held about twice at once and its operand once more: the incidence step peaked 1.4 GB above its start.

:func:`transposed_product` transposes only ``A`` (``A.T.tocsr()``: the membership matrices are the small operand,
one entry a unit or a sentence occurrence) and multiplies by rows, the product's sorted csr form: the same entries,
values and order as ``sp.csr_matrix(A.T @ B)``, and one copy of the product.
"""

from __future__ import annotations

from typing import Any

import scipy.sparse as sp

__all__ = ["transposed_product"]


def transposed_product(A: Any, B: Any) -> sp.csr_matrix:
    """``A.T @ B`` as a csr matrix with sorted indices (module doc): equal to ``sp.csr_matrix(A.T @ B)``, entries
    in the same order, for whole-number values (sums are then exact whatever their order); ``A`` and ``B`` any
    SciPy sparse matrices (``B`` is multiplied as csr)."""
    At = sp.csr_matrix(A).T.tocsr()
    P = sp.csr_matrix(At @ sp.csr_matrix(B))
    P.sort_indices()
    return P
