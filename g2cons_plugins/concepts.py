"""Concepts: TF-IDF keywords per chunk (Ramos 2003) or every non-stop word (KET-RAG's Keyword-RAG vocabulary).

Tokens: lower-cased words of two or more word characters (Unicode aware: accented Latin, Cyrillic, Greek;
scripts written without spaces, such as Chinese, give one token per run of characters), minus NLTK's English
stop words, optionally with n-grams up to ``ngram_max``.

TF-IDF (``concept_mode="tfidf"``): scikit-learn ``TfidfVectorizer`` over the chunks (smooth idf, l2 norm,
raw term counts), ``min_df``/``max_df`` filters, then the ``top_n`` highest-scoring terms of each chunk (ties
broken by the term's alphabetical order, so the result is deterministic). The union over chunks is the
concept vocabulary W.

Incidence (which chunks a concept links to). ``"contains"`` (default): every chunk whose text contains the word,
as Section 1 of the paper defines a concept ("a word along with all chunks containing that word") and as the
co-occurrence Co(w_i, w_j) and T_w of the Dice weight need; ``"extracted"``: only the chunks the word was
extracted from (Section 3.2's "edges between w_i and its source chunk"). Measured on MuSiQue ketrag500 (minilm,
paper mode): "extracted" shortens each seed concept's chunk list, so the paper walk scores a little higher
(CR 48.0 / 56.6 / 74.0 at 2k / 4k / 12k against 46.0 / 55.4 / 71.4), but the graph collapses to 1,535 edges
with 96% of concepts isolated (16,673 edges with "contains"), so Co, Dice and PageRank lose their meaning. We
keep "contains", which also matches the calibration prototype.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from .config import G2ConSConfig
from .errors import InputError
from .text import english_stopwords

TOKEN_PATTERN = r"(?u)\b\w\w+\b"
_WORD = re.compile(TOKEN_PATTERN)


def _vectorizer_kwargs(config: G2ConSConfig) -> dict[str, object]:
    if config.language != "english":  # language-aware (g2cons_plugins.analysis); same words for English text
        from .analysis import analyzer

        stop = config.stop_words is not None
        return {"analyzer": analyzer(config.language, config.segmenter, stop, config.ngram_max), "dtype": np.float32}
    return {
        "lowercase": True,
        "token_pattern": TOKEN_PATTERN,
        "stop_words": sorted(english_stopwords()) if config.stop_words == "english" else None,
        "ngram_range": (1, config.ngram_max),
        "dtype": np.float32,
    }


def extract_vocabulary(chunk_texts: Sequence[str], config: G2ConSConfig) -> tuple[list[str], sp.csr_matrix]:
    """Concept vocabulary W (sorted) and the chunk x concept 'extracted' mask (csr, 0/1)."""
    n = len(chunk_texts)
    max_df: float | int = config.max_df if n * config.max_df >= max(config.min_df, 1) else n
    kw = _vectorizer_kwargs(config)
    try:
        if config.concept_mode == "all_words":
            cv = CountVectorizer(binary=True, min_df=config.min_df, max_df=max_df, **kw)  # type: ignore[arg-type]
            X = cv.fit_transform(chunk_texts).tocsr()
            vocab = list(cv.get_feature_names_out())
            X.data[:] = 1
            return vocab, X.astype(np.float32)
        tv = TfidfVectorizer(min_df=config.min_df, max_df=max_df, **kw)  # type: ignore[arg-type]
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
        order = np.lexsort((idx, -val))[: config.top_n]  # score desc, then term index (alphabetical)
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


def incidence(texts: Sequence[str], vocab: Sequence[str], config: G2ConSConfig) -> sp.csr_matrix:
    """texts x concepts 0/1 matrix: does the text contain the concept (same analyzer as extraction)."""
    kw = _vectorizer_kwargs(config)
    if "analyzer" not in kw:
        kw["stop_words"] = None  # the vocabulary has none; n-grams must match the extraction analyzer
        if config.stop_words == "english" and config.ngram_max > 1:
            kw["stop_words"] = sorted(english_stopwords())
    cv = CountVectorizer(vocabulary=list(vocab), binary=True, **kw)  # type: ignore[arg-type]
    M = cv.transform(texts).tocsr().astype(np.float32)
    M.data[:] = 1.0
    return M
