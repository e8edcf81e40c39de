"""A test oracle for the concept step: the chunk-level TF-IDF vocabulary computed directly with scikit-learn
(``TfidfVectorizer`` over whole chunks), against which the package's sentence-level
:func:`~g2cons_plugins.concepts.top_concepts` is checked."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from g2cons_plugins.concepts import _vectorizer_kwargs
from g2cons_plugins.config import G2ConSConfig
from g2cons_plugins.errors import InputError


def extract_vocabulary(chunk_texts: Sequence[str], config: G2ConSConfig) -> tuple[list[str], sp.csr_matrix]:
    """Concept vocabulary W (sorted) and the chunk x concept 'extracted' mask (csr, 0/1)."""
    n = len(chunk_texts)
    max_df: float | int = config.graph.max_df if n * config.graph.max_df >= max(config.graph.min_df, 1) else n
    kw = _vectorizer_kwargs(config)
    try:
        if config.graph.concept_mode == "all_words":
            cv = CountVectorizer(binary=True, min_df=config.graph.min_df, max_df=max_df, **kw)  # type: ignore[arg-type]
            X = cv.fit_transform(chunk_texts).tocsr()
            vocab = list(cv.get_feature_names_out())
            X.data[:] = 1
            return vocab, X.astype(np.float32)
        tv = TfidfVectorizer(min_df=config.graph.min_df, max_df=max_df, **kw)  # type: ignore[arg-type]
        T = tv.fit_transform(chunk_texts).tocsr()
    except ValueError as e:  # sklearn: "empty vocabulary; perhaps the documents only contain stop words"
        raise InputError(f"no concepts could be extracted from the corpus: {e}") from e
    terms = tv.get_feature_names_out()
    rows, cols = [], []
    for i in range(n):
        lo, hi = T.indptr[i], T.indptr[i + 1]
        if hi == lo:
            continue
        idx, val = T.indices[lo:hi], T.data[lo:hi]
        order = np.lexsort((idx, -val))[: config.graph.top_n]  # score desc, then term index (alphabetical)
        rows.extend([i] * len(order))
        cols.extend(idx[order].tolist())
    keep = np.unique(np.asarray(cols, dtype=np.int64))
    remap = -np.ones(len(terms), dtype=np.int64)
    remap[keep] = np.arange(len(keep))
    mask = sp.csr_matrix(
        (np.ones(len(rows), np.float32), (np.asarray(rows), remap[np.asarray(cols, dtype=np.int64)])),
        shape=(n, len(keep)),
    )
    return [str(terms[j]) for j in keep], mask
