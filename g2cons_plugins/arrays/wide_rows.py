"""A csr matrix with columns appended after it was made, kept as that matrix plus a small matrix of the new columns'
entries (:class:`WideRows`), so that a trickle add of a few units to the concepts x units and names x units
transposes (``Derived.unit_concepts``, ``Derived.name_units``) does not copy every entry: at 1M passages that copy
wrote about 0.5 GB per add (0.5 s per 250 MB of memory the process had not touched before, on this machine).

Reading a row (:func:`row`, what retrieval does) takes both parts; anything else reads the merged csr matrix
(:func:`as_csr`, made once per matrix). The new columns' part is merged into the base once it holds
:data:`COMPACT_SHARE` of the base's entries.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeAlias, cast

import numpy as np
import scipy.sparse as sp

__all__ = ["COMPACT_SHARE", "WideRows", "as_csr", "row", "rows_union", "with_columns"]

COMPACT_SHARE = 1 / 16


@dataclass(frozen=True)
class WideRows:
    """``base`` (rows x n0) with the columns n0.. given by ``tail`` (rows x k: its column j is column n0 + j)."""

    base: sp.csr_matrix
    tail: sp.csr_matrix

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.base.shape[0]), int(self.base.shape[1] + self.tail.shape[1]))

    @property
    def nnz(self) -> int:
        return int(self.base.nnz + self.tail.nnz)

    @cached_property
    def csr(self) -> sp.csr_matrix:
        """The merged matrix (sorted indices)."""
        out = sp.csr_matrix(sp.hstack([self.base, self.tail], format="csr"))
        out.sort_indices()
        for a in (out.data, out.indices, out.indptr):
            a.flags.writeable = False
        return out


Matrix: TypeAlias = "sp.csr_matrix | WideRows"


def as_csr(M: Matrix) -> sp.csr_matrix:
    """``M`` as a csr matrix (the merged one of a :class:`WideRows`)."""
    return M.csr if isinstance(M, WideRows) else M


def row(M: Matrix, i: int) -> np.ndarray:
    """Column indices of row ``i`` (ascending), without scipy's per-call overhead."""
    if isinstance(M, WideRows):
        b, t = M.base, M.tail
        head = b.indices[b.indptr[i] : b.indptr[i + 1]]
        new = t.indices[t.indptr[i] : t.indptr[i + 1]]
        return np.concatenate([head, new.astype(np.int64) + b.shape[1]]) if len(new) else head
    return cast(np.ndarray, M.indices[M.indptr[i] : M.indptr[i + 1]])


def rows_union(M: Matrix, rows: Any) -> np.ndarray:
    """The distinct column indices of the ``rows`` (ascending)."""
    rows = np.asarray(rows, dtype=np.int64)
    if isinstance(M, WideRows):
        cols = [M.base[rows].indices.astype(np.int64), M.tail[rows].indices.astype(np.int64) + M.base.shape[1]]
        return np.unique(np.concatenate(cols))
    return np.unique(M[rows].indices)


def with_columns(M: Matrix, tail: sp.csr_matrix) -> Matrix:
    """``M``'s base with ``tail`` as its new columns' part (rows x all columns after the base), merged into one
    csr matrix once the tail holds :data:`COMPACT_SHARE` of the base's entries."""
    base = M.base if isinstance(M, WideRows) else M
    out = WideRows(base, tail)
    return out.csr if tail.nnz > COMPACT_SHARE * max(base.nnz, 1) else out
