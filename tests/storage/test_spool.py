"""Spools (:mod:`g2cons_plugins.storage.spool`): what is appended comes back equal, read-only, from a file where
the temporary directory is on a disk, and usable by SciPy without a copy."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import scipy.sparse as sp

from g2cons_plugins.arrays.mapped import is_file_backed
from g2cons_plugins.storage.spill import can_spill
from g2cons_plugins.storage.spool import ArraySpool, TextSpool


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.float32])
def test_array_spool_gives_back_its_blocks(dtype: type) -> None:
    spool = ArraySpool(dtype, (3,))
    blocks = [np.arange(i * 9, i * 9 + 3 * i, dtype=dtype).reshape(i, 3) for i in (2, 0, 5)]
    for b in blocks:
        spool.append(b)
    out = spool.finish()
    assert out.dtype == np.dtype(dtype) and out.shape == (7, 3)
    assert np.array_equal(out, np.concatenate(blocks))
    assert not out.flags.writeable
    assert is_file_backed(out) == can_spill()


def test_spooled_parts_of_a_sparse_matrix_are_not_copied() -> None:
    """SciPy copies a part whose base array is over twice its length (``prune``): a float64 view of the bytes
    was copied into memory, so the weights made in files came back anonymous."""
    data, rows = ArraySpool(np.float64), ArraySpool(np.int32)
    data.append(np.linspace(0.5, 3.0, 6))
    rows.append(np.array([0, 2, 1, 0, 1, 2], np.int32))
    d, r = data.finish(), rows.finish()
    M = sp.csc_matrix((d, r, np.array([0, 2, 4, 6], np.int32)), shape=(3, 3))
    assert np.shares_memory(M.data, d) and np.shares_memory(M.indices, r)
    assert np.array_equal(M.toarray()[:, 0], [0.5, 0, 1.0])


def test_text_spool_reads_back_while_written_and_after() -> None:
    spool = TextSpool()
    assert [spool.append(t) for t in ("a", "", "北京 é")] == [0, 1, 2]
    assert spool.text(2) == "北京 é" and spool.text(1) == ""
    col = spool.finish()
    assert list(col) == ["a", "", "北京 é"]


def test_a_spooled_array_grows_without_a_copy() -> None:
    """The rows a spool wrote stay the file's pages when rows are appended (the first add after a build in the same
    process copied every unit vector into memory)."""
    from g2cons_plugins.engine.trickle_store import appended
    from g2cons_plugins.storage.growable import growable

    spool = ArraySpool(np.float32, (4,))
    spool.append(np.arange(4000, dtype=np.float32).reshape(1000, 4))
    a = spool.finish()
    if not can_spill() or not sys.platform.startswith("linux"):
        pytest.skip("no file-backed spool or no private file maps here (Linux only)")
    g = growable(a, 1100)
    assert g is not None and np.array_equal(g[:1000], a)
    b = appended(a, np.ones((5, 4), np.float32))
    assert np.array_equal(b[:1000], a) and b[1000:].sum() == 20
    assert not np.shares_memory(b, a)  # a private map of the same file: the spool's own map is never written
