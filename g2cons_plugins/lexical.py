"""BM25 over the retrieval units from the term index a derive already holds (no second text pass).

Unit term counts = (unit x sentence) @ (sentence x word counts) of :class:`~g2cons_plugins.terms.TermIndex`, so
the words are the concept analyzer's (language-aware, stop words removed; :mod:`g2cons_plugins.analysis`).
Okapi BM25 with k1 = 1.5, b = 0.75 and the always-positive idf log(1 + (N - n + 0.5) / (n + 0.5)) (Lucene's).
A query costs one column slice per query word. The concept path uses it for lexical seeds and hybrid scores
(``G2ConSConfig.lexical_seeds`` / ``lexical_weight``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .config import G2ConSConfig
from .state import Stored
from .terms import TermIndex

__all__ = ["LexicalIndex"]

K1 = 1.5
B = 0.75


@dataclass(frozen=True)
class LexicalIndex:
    """Per-unit BM25 term weights (units x words, csc) and the word -> column map."""

    weights: sp.csc_matrix  # units x words: idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen))
    column: dict[str, int]
    analyze: Callable[[str], Sequence[str]]

    @classmethod
    def build(cls, stored: Stored, terms: TermIndex, config: G2ConSConfig) -> LexicalIndex:
        """Weights of every (unit, word) from the sentence term counts."""
        tf = sp.csr_matrix(stored.sent_unit.T @ terms.counts, dtype=np.float64)
        n_units = tf.shape[0]
        lengths = np.asarray(tf.sum(axis=1)).ravel()
        avg = max(float(lengths.mean()) if n_units else 1.0, 1e-9)
        present = tf.copy()
        present.data[:] = 1.0
        df = np.asarray(present.sum(axis=0)).ravel()
        idf = np.log1p((n_units - df + 0.5) / (df + 0.5))
        rows = np.repeat(np.arange(n_units), np.diff(tf.indptr))
        norm = K1 * (1 - B + B * lengths[rows] / avg)
        data = idf[tf.indices] * tf.data * (K1 + 1) / (tf.data + norm)
        W = sp.csr_matrix((data, tf.indices, tf.indptr), shape=tf.shape).tocsc()
        from sklearn.feature_extraction.text import CountVectorizer

        from .concepts import _vectorizer_kwargs

        analyze = CountVectorizer(**_vectorizer_kwargs(config.with_(ngram_max=1))).build_analyzer()  # type: ignore[arg-type]
        return cls(W, {w: j for j, w in enumerate(terms.words)}, analyze)

    def query_columns(self, query: str) -> list[int]:
        """Columns of the query's words (the corpus analyzer; a repeated word counts once per occurrence)."""
        return [self.column[w] for w in self.analyze(query) if w in self.column]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every unit (zeros when no query word is known)."""
        cols = self.query_columns(query)
        n = self.weights.shape[0]
        if not cols:
            return np.zeros(n)
        W = self.weights
        out = np.zeros(n)
        for c in cols:
            lo, hi = W.indptr[c], W.indptr[c + 1]
            out[W.indices[lo:hi]] += W.data[lo:hi]  # row indices are unique within a column
        return out

    def postings(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """BM25 of the units holding a query word, from the query words' postings only (no array over every
        unit): ``(units ascending, scores)``; the other units score 0, as in :meth:`scores`."""
        cols = self.query_columns(query)
        if not cols:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        W = self.weights
        if len(cols) == 1 and W.has_sorted_indices:  # one word: its column as it is
            lo, hi = W.indptr[cols[0]], W.indptr[cols[0] + 1]
            return W.indices[lo:hi].astype(np.int64), W.data[lo:hi].astype(np.float64)
        rows = np.concatenate([W.indices[W.indptr[c] : W.indptr[c + 1]] for c in cols])
        vals = np.concatenate([W.data[W.indptr[c] : W.indptr[c + 1]] for c in cols])
        # a stable sort of the concatenated columns (sorted runs: timsort merges them) keeps each unit's terms in
        # query-word order, so the sums below add them in the order :meth:`scores` does (the same float64 bits)
        order = np.argsort(rows, kind="stable")
        rows, vals = rows[order], vals[order]
        new = np.empty(len(rows), dtype=bool)
        new[:1], new[1:] = True, rows[1:] != rows[:-1]
        inverse = np.cumsum(new) - 1
        return rows[new].astype(np.int64), np.bincount(inverse, weights=vals, minlength=int(new.sum()))

    def top(self, query: str, k: int) -> np.ndarray:
        """The ``k`` units with the highest BM25 (units with a query word only; by score descending, ties by
        position), from the postings."""
        units, scores = self.postings(query)
        order = np.lexsort((units, -scores))[: max(int(k), 0)]
        return units[order]
