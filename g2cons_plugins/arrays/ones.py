"""0/1 sparse matrices: :func:`binary` makes one, and :func:`share_ones` lets all of them share one read-only buffer
of ones as their data.

Why share: the incidence matrices (sentences, units and chunks x concepts, units x names, their transposes, the
sentence x unit membership) hold only ones, one per entry. At 80k passages their data arrays are ~76 MB of a
snapshot's ~330 MB of derived arrays. An update builds new matrices while the snapshot it replaces stays whole
(readers may hold it), so at its peak each is held twice: a removal of 1% peaked 1.2-1.3 GB, of which those arrays
were ~150 MB. As views of one buffer they cost nothing each; the buffer (as long as the largest matrix, per dtype)
is allocated once and grown by half when a larger matrix comes, and freed once no matrix views it. A derive that
spills its results (:mod:`g2cons_plugins.storage.step_spill`) writes their ones to files instead.

A matrix whose data is a view of a file map (a loaded index) is left as it is: its pages are the file's, which
the kernel can drop, and sharing them would add the buffer to a process that only queries.

``freeze`` (:func:`g2cons_plugins.build.freeze`) may share the data of a matrix that an earlier snapshot already
holds (a new snapshot keeps unchanged arrays). Its readers see no half-updated state: the data attribute is
replaced in one step by a view holding the same values, and a reader that took the old array keeps it alive.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

from .mapped import is_file_backed

__all__ = ["binary", "is_shared_ones", "share_ones"]

_LOCK = threading.Lock()
# per dtype: the buffer new views are taken from, while any matrix views it (then it is freed, not kept for later)
_CURRENT: weakref.WeakValueDictionary[np.dtype[Any], np.ndarray] = weakref.WeakValueDictionary()
_ALL: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()  # every buffer still viewed

M = TypeVar("M")


def binary(M: Any) -> sp.csr_matrix:
    """``M`` as a 0/1 float32 csr matrix."""
    M = sp.csr_matrix(M, dtype=np.float32)
    M.eliminate_zeros()
    M.data[:] = 1.0
    return M


def _ones(n: int, dtype: np.dtype[Any]) -> np.ndarray:
    with _LOCK:
        buf = _CURRENT.get(dtype)
        if buf is None or len(buf) < n:
            size = n if buf is None else max(n, len(buf) + len(buf) // 2)
            buf = np.ones(size, dtype=dtype)
            buf.flags.writeable = False
            _CURRENT[dtype] = buf
            _ALL[id(buf)] = buf
        return buf[:n]


def is_shared_ones(a: Any) -> bool:
    """``a`` is a view of a shared buffer of ones."""
    base = getattr(a, "base", None)
    return base is not None and _ALL.get(id(base)) is base


def share_ones(matrix: M) -> M:
    """``matrix`` (a SciPy sparse matrix with a ``data`` array), in place: where every stored value is 1 and its
    data is in memory (not a view of a file map, not shared already), its data becomes a read-only view of the
    shared buffer of ones of its dtype. Anything else is returned unchanged."""
    data = getattr(matrix, "data", None)
    if (
        not isinstance(data, np.ndarray)
        or data.ndim != 1
        or not len(data)
        or data.dtype.kind not in "fiu"
        or is_shared_ones(data)
        or data[0] != 1  # a weight matrix, at once
        or data[-1] != 1
        or is_file_backed(data)
        or not bool(np.all(data == 1))
    ):
        return matrix
    matrix.data = _ones(len(data), data.dtype)  # type: ignore[attr-defined]
    return matrix
