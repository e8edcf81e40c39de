"""concepts.top_concepts scores and selects in blocks of TOP_BLOCK_ROWS chunks (bounded temporaries): the result
is the one-pass result bit for bit. Checked with 3-row blocks against one block and against the one-pass code it
replaced (kept below as the oracle), on the shared data sets' stored state (default and paper mode, both concept
modes, df filters, top_n) and on random count matrices (float32 / float64 / int32 data, explicit zeros, unsorted
indices, ties)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfTransformer
from test_build_speed import _passages

from g2cons_plugins import G2ConSConfig, G2ConSIndex, concepts
from g2cons_plugins.build import _unit_chunk
from g2cons_plugins.concepts import TermIndex, analyze, chunk_concepts, top_concepts
from g2cons_plugins.errors import InputError


def _old_top_concepts(chunk_counts: sp.csr_matrix, config: G2ConSConfig) -> tuple[np.ndarray, sp.csr_matrix]:
    """top_concepts as it was before the blocks (one pass over all chunks), verbatim."""
    n = chunk_counts.shape[0]
    present = chunk_counts.copy()
    present.data[:] = 1
    df = np.asarray(present.sum(axis=0)).ravel()
    max_count = config.graph.max_df * n if n * config.graph.max_df >= max(config.graph.min_df, 1) else n
    keep = np.flatnonzero((df >= max(config.graph.min_df, 1)) & (df <= max_count))
    if len(keep) == 0:
        raise InputError("no concepts")
    if config.graph.concept_mode == "all_words":
        mask = present[:, keep].tocsr().astype(np.float32)
        return keep, mask
    T = TfidfTransformer().fit_transform(chunk_counts[:, keep].astype(np.float32)).tocsr()
    T.eliminate_zeros()
    T.sort_indices()
    row_of = np.repeat(np.arange(n), np.diff(T.indptr))
    bits = np.asarray(T.data, dtype=np.float32).view(np.uint32).astype(np.uint64)
    key = (row_of.astype(np.uint64) << np.uint64(32)) | (np.uint64(0xFFFFFFFF) - bits)
    order = np.argsort(key, kind="stable")
    rank = np.arange(len(order)) - T.indptr[row_of[order]]
    sel = order[rank < config.graph.top_n]
    rows, local = row_of[sel], T.indices[sel]
    used = np.unique(local)
    remap = np.full(len(keep), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    mask = sp.csr_matrix((np.ones(len(sel), np.float32), (rows, remap[local])), shape=(n, len(used)))
    return keep[used], mask


def _old_chunk_concepts(
    terms: TermIndex, sent_unit: sp.csr_matrix, unit_chunk: sp.csr_matrix, config: G2ConSConfig
) -> tuple[np.ndarray, sp.csr_matrix]:
    chunk_counts = (unit_chunk.T @ sent_unit.T).tocsr() @ terms.counts
    return _old_top_concepts(sp.csr_matrix(chunk_counts), config)


def _same(got: tuple[np.ndarray, sp.csr_matrix], want: tuple[np.ndarray, sp.csr_matrix]) -> None:
    """Same columns and mask: values, dtypes, shape and csr parts (data, indices, indptr) bit for bit."""
    (gc, gm), (wc, wm) = got, want
    assert gc.dtype == wc.dtype and gc.tobytes() == wc.tobytes()
    assert type(gm) is type(wm) and gm.shape == wm.shape and gm.dtype == wm.dtype
    for a, b in ((gm.data, wm.data), (gm.indices, wm.indices), (gm.indptr, wm.indptr)):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.fixture(scope="module")
def state() -> tuple[Any, TermIndex, sp.csr_matrix]:
    index = G2ConSIndex.build(_passages(), embedder="hash", config=G2ConSConfig())
    st = index.snapshot.stored
    return st, analyze(st.sentences, index.config), _unit_chunk(st)


CONFIGS = [
    {},
    {"mode": "paper"},
    {"concept_mode": "all_words"},
    {"concept_mode": "all_words", "mode": "paper", "min_df": 2},
    {"top_n": 1},
    {"top_n": 3, "min_df": 2, "max_df": 0.05},
    {"top_n": 25, "max_df": 1.0},
]


@pytest.mark.parametrize("kw", CONFIGS, ids=[str(k) or "default" for k in CONFIGS])
def test_blocks_of_3_rows_equal_one_block_and_the_one_pass_code(
    state: tuple[Any, TermIndex, sp.csr_matrix], kw: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    st, terms, unit_chunk = state
    config = G2ConSConfig(**kw)
    want = _old_chunk_concepts(terms, st.sent_unit, unit_chunk, config)
    monkeypatch.setattr(concepts, "TOP_BLOCK_ROWS", 10**9)
    one = chunk_concepts(terms, st.sent_unit, unit_chunk, config)
    monkeypatch.setattr(concepts, "TOP_BLOCK_ROWS", 3)
    blocks = chunk_concepts(terms, st.sent_unit, unit_chunk, config)
    assert unit_chunk.shape[1] > 3 * 10  # many blocks
    _same(one, want)
    _same(blocks, want)


def _random_counts(seed: int, dtype: type) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    n_chunks, n_words = int(rng.integers(5, 60)), int(rng.integers(5, 80))
    dense = rng.integers(0, 3, size=(n_chunks, n_words)) * (rng.random((n_chunks, n_words)) < 0.3)
    dense[:, 0] = 1  # a word in every chunk (dropped by max_df); many equal counts make ties
    M = sp.csr_matrix(dense.astype(dtype))
    if seed % 2:  # explicit zeros and unsorted indices within rows
        coo = M.tocoo()
        extra = rng.integers(0, n_chunks, 7), rng.integers(0, n_words, 7)
        order = rng.permutation(coo.nnz + 7)
        r = np.concatenate([coo.row, extra[0]])[order]
        c = np.concatenate([coo.col, extra[1]])[order]
        v = np.concatenate([coo.data, rng.integers(0, 2, 7).astype(dtype)])[order]  # zeros, duplicates
        by_row = np.argsort(r, kind="stable")
        indptr = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=n_chunks))])
        M = sp.csr_matrix((v[by_row], c[by_row], indptr), shape=(n_chunks, n_words))
    return M


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("mode", ["tfidf", "all_words"])
def test_blocks_equal_the_one_pass_code_on_random_counts(
    seed: int, dtype: type, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = _random_counts(seed, dtype)
    rng = np.random.default_rng(100 + seed)
    config = G2ConSConfig(concept_mode=mode, top_n=int(rng.integers(1, 6)), max_df=0.9, min_df=int(rng.integers(1, 3)))
    want = _old_top_concepts(counts.copy(), config)
    parts = [counts.data.copy(), counts.indices.copy(), counts.indptr.copy()]
    for rows in (1, 3, 7, 10**9):
        monkeypatch.setattr(concepts, "TOP_BLOCK_ROWS", rows)
        _same(top_concepts(counts, config), want)
    for a, b in zip((counts.data, counts.indices, counts.indptr), parts, strict=True):
        assert a.tobytes() == b.tobytes()  # the input is left as it was


def test_no_concept_left_names_the_filters() -> None:
    counts = sp.csr_matrix(np.ones((4, 3), np.float32))
    with pytest.raises(InputError, match="min_df/max_df"):
        top_concepts(counts, G2ConSConfig(max_df=0.5))
