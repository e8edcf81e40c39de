"""BM25 weights computed over blocks of words (:func:`g2cons_plugins.retrieval.lexical.bm25_weights`) equal the
weights of the whole unit x word product bit for bit, whatever the block size, with the same sparse layout."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from g2cons_plugins.retrieval.lexical import K1, B, bm25_weights


def _whole(sent_unit: sp.csr_matrix, counts: sp.csr_matrix) -> sp.csc_matrix:
    """The formula over the whole product at once (what the index computed before the blocks)."""
    tf = sp.csr_matrix(sent_unit.T @ counts, dtype=np.float64)
    n_units = tf.shape[0]
    lengths = np.asarray(tf.sum(axis=1)).ravel()
    avg = max(float(lengths.mean()) if n_units else 1.0, 1e-9)
    df = np.bincount(tf.indices, minlength=tf.shape[1]).astype(np.float64)
    idf = np.log1p((n_units - df + 0.5) / (df + 0.5))
    rows = np.repeat(np.arange(n_units), np.diff(tf.indptr))
    norm = K1 * (1 - B + B * lengths[rows] / avg)
    data = idf[tf.indices] * tf.data * (K1 + 1) / (tf.data + norm)
    return sp.csr_matrix((data, tf.indices, tf.indptr), shape=tf.shape).tocsc()


def _problem(seed: int, n_sent: int = 300, n_units: int = 120, n_words: int = 200) -> tuple[sp.csr_matrix, ...]:
    rng = np.random.default_rng(seed)
    units = rng.integers(0, n_units, n_sent)
    units[:n_units] = np.arange(n_units)  # every unit has a sentence
    sent_unit = sp.csr_matrix((np.ones(n_sent, np.float32), (np.arange(n_sent), units)), shape=(n_sent, n_units))
    dense = rng.poisson(0.05, (n_sent, n_words)).astype(np.int32)
    dense[:, rng.choice(n_words, 5, replace=False)] = 0  # words in no sentence: empty columns
    dense[:, 0] += rng.integers(0, 3, n_sent).astype(np.int32)  # a frequent word
    return sent_unit, sp.csr_matrix(dense)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("block", [1, 3, 50, 1000, 1 << 30])
def test_blocks_equal_the_whole_product(seed: int, block: int) -> None:
    sent_unit, counts = _problem(seed)
    want = _whole(sent_unit, counts)
    got = bm25_weights(sent_unit, counts, block)
    assert got.shape == want.shape and got.format == "csc"
    for part in ("data", "indices", "indptr"):
        a, b = getattr(got, part), getattr(want, part)
        assert a.dtype == b.dtype, part
        assert np.array_equal(a, b), part
    assert got.has_sorted_indices
    got.check_format(full_check=True)


def test_empty_corpus_parts() -> None:
    """No entries at all: an all-zero matrix of the right shape (no division by zero)."""
    sent_unit = sp.csr_matrix((4, 3), dtype=np.float32)
    counts = sp.csr_matrix((4, 5), dtype=np.int32)
    got = bm25_weights(sent_unit, counts, 2)
    assert got.shape == (3, 5) and got.nnz == 0


@pytest.mark.parametrize("block", [1, 7, 40, 1 << 30])
def test_word_blocks_bound_the_product_not_the_counts(block: int) -> None:
    """A block's unit x word product holds at most ``block`` entries unless one word alone holds more (then it is a
    block alone); the blocks cover every word once, in order. Sentences here sit in several units each, so the
    product is larger than the counts (what bounding the counts' entries let through at 1M passages)."""
    from g2cons_plugins.retrieval.lexical import _word_blocks

    rng = np.random.default_rng(3)
    n_sent, n_units, n_words = 200, 60, 90
    rows, cols = np.nonzero(rng.random((n_sent, n_units)) < 0.08)  # a sentence in ~5 units
    sent_unit = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(n_sent, n_units))
    counts = sp.csr_matrix(rng.poisson(0.08, (n_sent, n_words)).astype(np.int32))
    A, C = sp.csr_matrix(sent_unit.T), sp.csc_matrix(counts)
    bounds, _ = _word_blocks(A, C, block)
    assert bounds[0] == 0 and bounds[-1] == n_words and bounds == sorted(set(bounds))
    assert (A @ C).nnz > counts.nnz
    for a, b in zip(bounds, bounds[1:], strict=False):
        nnz = (A @ C[:, a:b]).nnz
        assert nnz <= block or b - a == 1, (a, b, nnz)
    if block >= (A @ C).nnz:
        assert bounds == [0, n_words]


@pytest.mark.parametrize("block", [3, 1 << 30])
def test_file_spool_gives_the_same_weights(block: int) -> None:
    """Blocks written to temporary files as they come (the engine's spool) give the weights of the in-memory
    default bit for bit, with the same dtypes; the weights are then file-backed (no anonymous copy)."""
    from g2cons_plugins.arrays.mapped import is_file_backed
    from g2cons_plugins.storage.spill import can_spill
    from g2cons_plugins.storage.spool import ArraySpool

    sent_unit, counts = _problem(4)
    want = bm25_weights(sent_unit, counts, block)
    got = bm25_weights(sent_unit, counts, block, spool=ArraySpool)
    for part in ("data", "indices", "indptr"):
        a, b = getattr(got, part), getattr(want, part)
        assert a.dtype == b.dtype and np.array_equal(a, b), part
    if can_spill():
        assert is_file_backed(got.data) and is_file_backed(got.indices)


def test_wide_row_indices_are_narrowed_when_the_count_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the product could hold 2^31 entries or more, the row indices are spooled 64-bit and narrowed to the
    32 bits the real count allows: the same dtype as when the bound was small."""
    import g2cons_plugins.retrieval.lexical as lexical

    sent_unit, counts = _problem(5)
    want = bm25_weights(sent_unit, counts, 50)
    real = lexical._word_blocks
    monkeypatch.setattr(lexical, "_word_blocks", lambda A, C, b: (real(A, C, b)[0], 2**31))
    seen: list[np.dtype] = []

    def spool(dtype: np.dtype) -> lexical.Spool:
        seen.append(np.dtype(dtype))
        return lexical._Blocks(dtype)

    got = bm25_weights(sent_unit, counts, 50, spool=spool)
    assert np.dtype(np.int64) in seen
    assert got.indices.dtype == want.indices.dtype == np.int32
    assert np.array_equal(got.indices, want.indices) and np.array_equal(got.data, want.data)
