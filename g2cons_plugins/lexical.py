"""BM25 over the retrieval units from the term index a derive already holds (no second text pass).

Unit term counts = (unit x sentence) @ (sentence x word counts) of :class:`~g2cons_plugins.terms.TermIndex`, so
the words are the concept analyzer's (language-aware, stop words removed; :mod:`g2cons_plugins.analysis`).
Okapi BM25 with k1 = 1.5, b = 0.75 and the always-positive idf log(1 + (N - n + 0.5) / (n + 0.5)) (Lucene's).
A query costs one column slice per query word. The concept path uses it for lexical seeds and hybrid scores
(``G2ConSConfig.lexical_seeds`` / ``lexical_weight``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .config import G2ConSConfig
from .state import Stored
from .terms import TermIndex

__all__ = ["LexicalIndex", "QueryBM25"]

K1 = 1.5
B = 0.75


@dataclass(frozen=True)
class LexicalIndex:
    """Per-unit BM25 term weights (units x words, csc) and the word -> column map."""

    weights: sp.csc_matrix  # units x words: idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen))
    column: dict[str, int]
    analyze: Callable[[str], Sequence[str]]
    # column -> its largest weight, filled as queries read the columns (:class:`QueryBM25`'s bounds)
    column_max: dict[int, float] = field(default_factory=dict, compare=False, repr=False)

    def query(self, query: str) -> QueryBM25:
        """The BM25 of ``query`` over the units, computed on demand (:class:`QueryBM25`)."""
        return QueryBM25(self, self.query_columns(query))

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
        return _sum_postings([(W.indices[W.indptr[c] : W.indptr[c + 1]], W.data[W.indptr[c] : W.indptr[c + 1]])
                              for c in cols])

    def top(self, query: str, k: int) -> np.ndarray:
        """The ``k`` units with the highest BM25 (units with a query word only; by score descending, ties by
        position), from the postings."""
        units, scores = self.postings(query)
        order = np.lexsort((units, -scores))[: max(int(k), 0)]
        return units[order]


class QueryBM25:
    """The BM25 of one query over the units, read from the query words' postings as far as a question about it
    needs: the score of given units (:meth:`of`), or the best units (:meth:`best`), without summing every posting
    of a frequent word. Every score is the float64 sum :meth:`LexicalIndex.scores` computes, term by term in the
    query's word order (the same bits).

    :meth:`best` bounds the work as MaxScore does: a unit holding only words whose largest weights sum to less
    than the score it must reach cannot qualify, so only the postings of the other (rarer, heavier) words are
    read; the lower bound comes from the units of the heaviest words, scored first. Columns whose row indices are
    not sorted fall back to summing every posting (:meth:`postings`)."""

    SLACK = 1e-9  # relative margin on the sums of largest weights (the float sums may round above them)
    MERGE_MAX = 65_536  # postings: up to this many in all, every posting is summed (faster than looking units up)
    LOOKUP_COST = 4  # a unit's look-up in one word's postings costs about this many additions of a posting

    def __init__(self, lexical: LexicalIndex, cols: Sequence[int]) -> None:
        self.lexical, self.cols = lexical, list(cols)
        self._all: tuple[np.ndarray, np.ndarray] | None = None
        W = lexical.weights
        self._sorted = W.has_sorted_indices
        self._size = {c: int(W.indptr[c + 1] - W.indptr[c]) for c in set(self.cols)}
        self._total = sum(self._size[c] for c in self.cols)

    def _column(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        W = self.lexical.weights
        return W.indices[W.indptr[c] : W.indptr[c + 1]], W.data[W.indptr[c] : W.indptr[c + 1]]

    def _max(self, c: int) -> float:
        got = self.lexical.column_max.get(c)
        if got is None:
            data = self._column(c)[1]
            got = self.lexical.column_max[c] = float(data.max()) if len(data) else 0.0
        return got

    def postings(self) -> tuple[np.ndarray, np.ndarray]:
        """Every unit with a query word (ascending) and its BM25 (:meth:`LexicalIndex.postings`)."""
        if self._all is None:
            self._all = _sum_postings([self._column(c) for c in self.cols])
        return self._all

    def of(self, units: np.ndarray) -> np.ndarray:
        """BM25 of ``units`` (0 for a unit without a query word)."""
        units = np.asarray(units, dtype=np.int64)
        out = np.zeros(len(units))
        if not len(units) or not self.cols:
            return out
        if self._all is not None or not self._sorted:
            hit, vals = self.postings()
            at = np.minimum(np.searchsorted(hit, units), max(len(hit) - 1, 0))
            on = hit[at] == units if len(hit) else np.zeros(len(units), bool)
            out[on] = vals[at[on]]
            return out
        W = self.lexical.weights
        keys = units.astype(W.indices.dtype)  # as the row indices: a search in them then copies nothing
        for c in self.cols:  # in the query's word order, as scores() adds them
            rows, data = self._column(c)
            if not len(rows):
                continue
            at = np.minimum(np.searchsorted(rows, keys), len(rows) - 1)
            on = rows[at] == keys
            out[on] += data[at[on]]
        return out

    def best(self, m: int, at_least: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """The units with a query word and BM25 >= ``at_least``, at most ``m`` of them: the best by BM25, ties by
        position; ``(units ascending, BM25)``."""
        if m <= 0 or not self.cols:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        if self._all is not None or not self._sorted or self._total <= self.MERGE_MAX:
            return _best_of(*self.postings(), m, at_least)
        read = self._to_read(m, at_least)
        if read is None:  # the bound prunes too little: summing every posting is cheaper
            return _best_of(*self.postings(), m, at_least)
        if not read:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        units = np.unique(np.concatenate([self._column(c)[0] for c in read])).astype(np.int64)
        return _best_of(units, self.of(units), m, at_least)

    def _to_read(self, m: int, at_least: float) -> list[int] | None:
        """The words whose postings hold every unit that can be among the ``m`` best with BM25 >= ``at_least``
        (None when looking their units up in every query word's postings would cost more than summing all the
        postings: a look-up per unit and word against an addition per posting)."""
        distinct = sorted(set(self.cols))
        bound = {c: self.cols.count(c) * self._max(c) * (1 + self.SLACK) for c in distinct}
        budget = self._total // (self.LOOKUP_COST * len(self.cols)) if self.LOOKUP_COST else self._total
        floor, seen, size = at_least, np.zeros(0, dtype=np.int64), 0
        for c in sorted(distinct, key=lambda c: (-bound[c], c)):  # a lower bound of the m-th best score: the
            size += self._size[c]  # m-th best of the heaviest words' units, while they are few
            if size > budget:
                break
            seen = np.union1d(seen, self._column(c)[0])
            if len(seen) >= m:
                floor = max(floor, float(np.partition(self.of(seen), len(seen) - m)[len(seen) - m]))
                break
        light = sorted(distinct, key=lambda c: (bound[c], c))
        total = 0.0
        for i, c in enumerate(light):  # words whose bounds sum below the floor: a unit holding only them fails
            total += bound[c]
            if total >= floor:
                read = light[i:]
                return read if sum(self._size[r] for r in read) <= budget else None
        return []


def _sum_postings(columns: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """``(units ascending, sums)`` of the given columns' postings, each unit's terms added in column order."""
    if not columns:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    rows = np.concatenate([r for r, _ in columns])
    vals = np.concatenate([v for _, v in columns]).astype(np.float64)
    # a stable sort of the concatenated columns (sorted runs: timsort merges them) keeps each unit's terms in
    # column order, so bincount adds them in the order scores() does (the same float64 bits)
    order = np.argsort(rows, kind="stable")
    rows, vals = rows[order], vals[order]
    new = np.empty(len(rows), dtype=bool)
    new[:1], new[1:] = True, rows[1:] != rows[:-1]
    inverse = np.cumsum(new) - 1
    return rows[new].astype(np.int64), np.bincount(inverse, weights=vals, minlength=int(new.sum()))


def _best_of(units: np.ndarray, vals: np.ndarray, m: int, at_least: float) -> tuple[np.ndarray, np.ndarray]:
    """The ``m`` best of ``units`` (ascending) by ``vals`` among those > 0 and >= ``at_least``, ties by position."""
    keep = (vals > 0) & (vals >= at_least)
    if not keep.all():
        units, vals = units[keep], vals[keep]
    if len(units) > m:
        cut = np.partition(vals, len(vals) - m)[len(vals) - m]  # the m-th largest value: sort only those above
        top = np.flatnonzero(vals >= cut)
        pick = np.sort(top[np.lexsort((units[top], -vals[top]))[:m]])
        units, vals = units[pick], vals[pick]
    return units, vals
