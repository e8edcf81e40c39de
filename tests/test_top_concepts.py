"""terms.top_concepts keeps, per chunk, the top_n words by TF-IDF (ties by word order): checked against a plain
per-row sort on random count matrices with many ties."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfTransformer

from g2cons_plugins.concepts import top_concepts
from g2cons_plugins.config import G2ConSConfig


def _reference(counts: sp.csr_matrix, keep: np.ndarray, top_n: int) -> set[tuple[int, int]]:
    T = TfidfTransformer().fit_transform(counts[:, keep].astype(np.float32)).tocsr()
    T.sort_indices()
    out = set()
    for i in range(T.shape[0]):
        lo, hi = T.indptr[i], T.indptr[i + 1]
        pairs = sorted(zip((-T.data[lo:hi]).tolist(), T.indices[lo:hi].tolist(), strict=True))[:top_n]
        out.update((i, int(keep[j])) for _, j in pairs)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_top_concepts_equals_a_per_row_sort(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_chunks, n_words = int(rng.integers(5, 60)), int(rng.integers(5, 80))
    dense = rng.integers(0, 3, size=(n_chunks, n_words)) * (rng.random((n_chunks, n_words)) < 0.3)
    dense[:, 0] = 1  # a word in every chunk (dropped by max_df); many equal counts make ties
    counts = sp.csr_matrix(dense.astype(np.float32))
    config = G2ConSConfig(top_n=int(rng.integers(1, 6)), max_df=0.9)
    cols, mask = top_concepts(counts, config)
    df = (dense > 0).sum(axis=0)
    keep = np.flatnonzero((df >= 1) & (df <= 0.9 * n_chunks))
    got = {(int(i), int(cols[j])) for i, j in zip(*mask.nonzero(), strict=True)}
    assert got == _reference(counts, keep, config.graph.top_n)
