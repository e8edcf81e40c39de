"""0/1 sparse matrices share one read-only buffer of ones as their data (arrays.ones); anything else is left as
it is, and an index built, updated, saved and loaded holds the same values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from g2cons_plugins import G2ConSIndex
from g2cons_plugins.arrays.ones import is_shared_ones, share_ones
from g2cons_plugins.build import freeze


def _binary(n: int, seed: int) -> sp.csr_matrix:
    M = sp.random(n, 40, density=0.2, format="csr", random_state=seed, dtype=np.float32)
    M.data[:] = 1.0
    return M


def test_a_binary_matrix_takes_a_view_of_the_shared_ones_and_keeps_its_values() -> None:
    a, b = _binary(60, 1), _binary(50, 2)  # the larger first: the smaller one fits in its buffer
    dense_a, dense_b = a.toarray(), b.toarray()
    assert share_ones(a) is a and share_ones(b) is b
    assert is_shared_ones(a.data) and is_shared_ones(b.data)
    assert np.shares_memory(a.data, b.data)  # one buffer
    np.testing.assert_array_equal(a.toarray(), dense_a)
    np.testing.assert_array_equal(b.toarray(), dense_b)
    with pytest.raises(ValueError):
        a.data[0] = 2.0  # read-only: no reader can change what the others see
    big = share_ones(_binary(4000, 3))  # more entries than the buffer: a larger one; older views stay valid
    assert is_shared_ones(big.data) and big.nnz > a.nnz
    np.testing.assert_array_equal(a.toarray(), dense_a)


@pytest.mark.parametrize("first", [0, -1, 7])
def test_a_matrix_with_any_other_value_is_left_as_it_is(first: int) -> None:
    W = _binary(30, 4)
    W.data[first] = 0.5  # one weight that is not 1, at either end or inside
    data = W.data
    assert share_ones(W).data is data and not is_shared_ones(W.data)
    empty = sp.csr_matrix((5, 5), dtype=np.float32)
    assert share_ones(empty).data is empty.data


def test_a_file_backed_matrix_is_left_as_it_is(tmp_path: Path) -> None:
    M = _binary(40, 5)
    np.save(tmp_path / "d.npy", M.data)
    mapped = np.load(tmp_path / "d.npy", mmap_mode="r")
    F = sp.csr_matrix((mapped, M.indices, M.indptr), shape=M.shape)
    data = F.data
    assert np.shares_memory(data, mapped)
    assert share_ones(F).data is data and not is_shared_ones(F.data)


def test_an_index_shares_the_ones_through_build_update_save_and_load(
    corpus: list[dict[str, str]], tmp_path: Path
) -> None:
    idx = G2ConSIndex.build(corpus, embedder="hash")
    dv = idx.derived
    for name in ("sent_inc", "unit_inc", "chunk_inc", "extracted", "unit_names"):
        assert is_shared_ones(getattr(dv, name).data), name
    assert not is_shared_ones(dv.A.data)  # Dice weights
    idx.add([{"id": "zz-new", "text": "A new passage about the film's director and its studio."}], exact=False)
    idx.remove([corpus[1]["id"]], exact=False)
    dv = idx.derived
    for name in ("sent_inc", "unit_inc", "chunk_inc", "extracted", "unit_names"):
        assert is_shared_ones(getattr(dv, name).data), name
    idx.save(tmp_path / "i")  # built in memory: the save refreshes first, and the index keeps the refreshed state
    dv = idx.derived
    assert all(is_shared_ones(getattr(dv, n).data) for n in ("sent_inc", "unit_inc", "chunk_inc"))
    loaded = G2ConSIndex.load(tmp_path / "i")
    for name in ("sent_inc", "unit_inc", "chunk_inc", "extracted", "unit_names", "A"):
        got, want = getattr(loaded.derived, name), getattr(dv, name)
        assert np.array_equal(got.toarray(), want.toarray()) and got.dtype == want.dtype, name
    q = "Who directed the film?"
    assert [(r.unit_id, r.score) for r in loaded.retrieve(q)] == [(r.unit_id, r.score) for r in idx.retrieve(q)]


def test_freeze_shares_the_ones_of_a_sparse_matrix() -> None:
    M = freeze(_binary(20, 6))
    assert is_shared_ones(M.data) and not M.indices.flags.writeable


def test_the_buffer_of_ones_is_freed_once_no_matrix_views_it() -> None:
    import gc
    import weakref

    M = share_ones(_binary(5000, 7))
    buf = weakref.ref(M.data.base)
    assert is_shared_ones(M.data) and buf() is not None
    N = share_ones(_binary(300, 5))  # a smaller matrix: a view of the same buffer
    assert N.data.base is buf()
    del M
    gc.collect()
    assert buf() is not None  # N still views it
    del N
    gc.collect()
    assert buf() is None  # not held for later: the next matrix takes a new one
    again = share_ones(_binary(300, 5))
    assert is_shared_ones(again.data) and np.all(again.data == 1)
