"""The BM25 weights of the units (:class:`~g2cons_plugins.retrieval.lexical.LexicalIndex`) saved with an index, so a
loaded index maps them instead of building them on its first query.

``lexical.npz`` (from format version 5 on; optional: a version without it builds the weights on first use):
``data`` (float64), ``indices``, ``indptr`` and ``shape`` of the units x words csc matrix :meth:`LexicalIndex.build`
makes. Read in place (:mod:`.npz_view`), checked: the shape is (units, term words), the structure is valid csc
with sorted row indices, the weights finite and positive. Measured at 1M passages: the first query of a loaded
index took 12.2 s and 3 GB building them.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import PersistError
from .derived_io import savez
from .npz_view import NpzView
from .stored_io import fsync_write

__all__ = ["LEXICAL_NPZ", "read_lexical", "write_lexical"]

LEXICAL_NPZ = "lexical.npz"


def write_lexical(folder: Path, weights: sp.spmatrix) -> None:
    """Write the units x words BM25 ``weights`` as ``lexical.npz`` into ``folder``."""
    W = sp.csc_matrix(weights)
    arrays = {
        "data": np.ascontiguousarray(W.data, dtype=np.float64),
        "indices": np.ascontiguousarray(W.indices),
        "indptr": np.ascontiguousarray(W.indptr),
        "shape": np.asarray(W.shape, dtype=np.int64),
    }
    fsync_write(folder / LEXICAL_NPZ, lambda fh: savez(fh, arrays))


def read_lexical(folder: Path, n_units: int, n_words: int) -> sp.csc_matrix:
    """The weights of ``lexical.npz`` in ``folder``, checked against ``n_units`` units and ``n_words`` words."""
    path = folder / LEXICAL_NPZ
    try:
        npz = NpzView(path)
        arrays = {k: npz[k] for k in ("data", "indices", "indptr", "shape")}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
        raise PersistError(f"{path}: unreadable ({type(e).__name__}: {e})") from None
    if arrays["shape"].tolist() != [n_units, n_words]:
        raise PersistError(f"{path}: shape {arrays['shape'].tolist()}, expected [{n_units}, {n_words}]")
    data = arrays["data"]
    try:
        if data.dtype != np.float64 or arrays["indices"].dtype.kind not in "iu" or arrays["indptr"].dtype.kind != "i":
            raise ValueError("dtypes")
        W = sp.csc_matrix((data, arrays["indices"], arrays["indptr"]), shape=(n_units, n_words))
        W.check_format(full_check=True)
    except (ValueError, TypeError, OverflowError) as e:
        raise PersistError(f"{path}: not a valid sparse matrix ({e})") from None
    if not W.has_sorted_indices:
        raise PersistError(f"{path}: row indices must be sorted within each column")
    if not (np.isfinite(data).all() and (data > 0).all()):
        raise PersistError(f"{path}: weights must be finite and positive")
    return W
