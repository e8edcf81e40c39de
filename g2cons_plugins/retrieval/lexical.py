"""BM25 over the retrieval units from the term index a derive already holds (no second text pass).

Unit term counts = (unit x sentence) @ (sentence x word counts) of :class:`~g2cons_plugins.concepts.TermIndex`, so
the words are the concept analyzer's (language-aware, stop words removed; :mod:`g2cons_plugins.text.analysis`).
Okapi BM25 with k1 = 1.5, b = 0.75 and the always-positive idf log(1 + (N - n + 0.5) / (n + 0.5)) (Lucene's).
A query costs one column slice per query word. The concept path uses it for lexical seeds and hybrid scores
(``G2ConSConfig.lexical_seeds`` / ``lexical_weight``).
"""

from __future__ import annotations

import bisect
import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    from ..build import Stored
    from ..concepts import TermIndex
    from ..config import G2ConSConfig

__all__ = ["LEX_BLOCK_ENTRIES", "LexicalIndex", "QueryBM25", "SortedColumns", "Spool", "bm25_weights", "sorted_unique"]

K1 = 1.5
B = 0.75


@dataclass(frozen=True)
class LexicalIndex:
    """Per-unit BM25 term weights (units x words, csc) and the word -> column map."""

    weights: sp.csc_matrix  # units x words: idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen))
    column: Mapping[str, int]  # word -> column
    analyze: Callable[[str], Sequence[str]]

    def query(self, query: str) -> QueryBM25:
        """The BM25 of ``query`` over the units, computed on demand (:class:`QueryBM25`)."""
        return QueryBM25(self, self.query_columns(query))

    @classmethod
    def build(
        cls,
        stored: Stored,
        terms: TermIndex,
        config: G2ConSConfig,
        spool: Callable[[np.dtype[Any]], Spool] | None = None,
    ) -> LexicalIndex:
        """Weights of every (unit, word) from the sentence term counts (:func:`bm25_weights`; ``spool``: where its
        blocks go, default memory)."""
        W = bm25_weights(stored.sent_unit, terms.counts, spool=spool or _Blocks)
        return cls.from_weights(W, terms, config)

    @classmethod
    def from_weights(cls, weights: sp.csc_matrix, terms: TermIndex, config: G2ConSConfig) -> LexicalIndex:
        """The index over ``weights`` computed by :meth:`build` (e.g. read from a saved index)."""
        from ..concepts import _vectorizer_kwargs
        from ..text.vectorizer import word_analyzer

        analyze = word_analyzer(**_vectorizer_kwargs(config.with_(ngram_max=1)))  # type: ignore[arg-type]
        words = terms.words  # sorted after a derive; a trickle update appends its new words after the known ones
        ordered = all(a < b for a, b in zip(words, words[1:], strict=False))
        return cls(weights, SortedColumns(words) if ordered else {w: j for j, w in enumerate(words)}, analyze)

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
        return _sum_postings(
            [(W.indices[W.indptr[c] : W.indptr[c + 1]], W.data[W.indptr[c] : W.indptr[c + 1]]) for c in cols]
        )

    def top(self, query: str, k: int) -> np.ndarray:
        """The ``k`` units with the highest BM25 (units with a query word only; by score descending, ties by
        position), from the postings."""
        units, scores = self.postings(query)
        order = np.lexsort((units, -scores))[: max(int(k), 0)]
        return units[order]


#: Entries of the unit x word product that :func:`bm25_weights` computes at a time (an upper bound per block of
#: words): a block's product, its csc copy and two float64 temporaries are its only working memory, ~40 bytes an
#: entry. The bound was first on the sentence counts' entries, which a corpus whose sentences sit in several units
#: multiplies (at 1M passages one block of 2^22 counts held ~30M product entries: about 1.5 GB of temporaries at
#: once). 2^20: at 100k passages the weights took 0.25 s with a working peak of 42 MB, against 0.23 s and 126 MB
#: at 2^22 (0.30 s, 28 MB at 2^19).
LEX_BLOCK_ENTRIES = 1 << 20


def _word_blocks(A: sp.csr_matrix, C: sp.csc_matrix, block_entries: int) -> tuple[list[int], int]:
    """Bounds of blocks of words (columns of ``C``) whose product ``A @ C[:, a:b]`` has at most about
    ``block_entries`` entries: a word's product column has at most the sum, over its sentences, of the number of
    units holding that sentence (exact when no unit holds two of them); a word above the bound is a block alone.
    Also the bound over every word: the product has at most that many entries."""
    n_words = C.shape[1]
    per_sentence = np.diff(sp.csc_matrix(A).indptr).astype(np.int64)  # units holding each sentence
    at = np.zeros(C.nnz + 1, dtype=np.int64)
    np.cumsum(per_sentence[C.indices], out=at[1:])
    bound = at[C.indptr]  # bound[j]: the product entries of words before j, at most
    step = max(int(block_entries), 1)
    ends = np.searchsorted(bound, np.arange(1, bound[-1] // step + 2) * step, side="right") - 1
    return sorted({0, n_words, *np.clip(ends, 1, n_words).tolist()}), int(bound[-1])


class Spool(Protocol):
    """Where :func:`bm25_weights` puts its blocks of one array as it makes them: ``append`` a block, ``finish`` gives
    every block in order as one array (e.g. :class:`g2cons_plugins.storage.spool.ArraySpool`: a temporary file)."""

    def append(self, block: np.ndarray) -> None: ...

    def finish(self) -> np.ndarray: ...


class _Blocks:
    """The default :class:`Spool`: blocks kept in memory, joined by :meth:`finish` into one array, each block freed
    once copied (the blocks and the result are not held twice)."""

    def __init__(self, dtype: np.dtype[Any] | type) -> None:
        self.dtype = np.dtype(dtype)
        self._blocks: list[np.ndarray] = []

    def append(self, block: np.ndarray) -> None:
        self._blocks.append(block)

    def finish(self) -> np.ndarray:
        blocks, self._blocks = self._blocks[::-1], []
        out = np.empty(sum(len(b) for b in blocks), self.dtype)
        at = 0
        while blocks:
            b = blocks.pop()
            out[at : at + len(b)] = b
            at += len(b)
            del b
        return out


def bm25_weights(
    sent_unit: sp.spmatrix,
    counts: sp.spmatrix,
    block_entries: int = LEX_BLOCK_ENTRIES,
    spool: Callable[[np.dtype[Any]], Spool] = _Blocks,
) -> sp.csc_matrix:
    """Okapi BM25 weights (units x words, csc, row indices sorted) of the unit term counts
    ``sent_unit.T @ counts`` (``sent_unit``: sentences x units 0/1; ``counts``: sentences x words), computed over
    blocks of words whose product holds about ``block_entries`` entries each (:func:`_word_blocks`): a word's
    document frequency is its column's entry count, a unit's length (the sum of its counts) comes from the
    sentences' row sums, so no block needs another. The same float64 operations per entry as over the whole
    product (products and sums in the same order; in place where that changes no bit), hence the same weights bit
    for bit whatever the block size (the counts are integers, exact in float64).

    ``spool(dtype)``: where the blocks of the weights and of their row indices go as they are made (default: in
    memory, joined at the end); the engine passes a spool over a temporary file, so the weights (at 1M passages
    ~0.75 GB) are never all in anonymous memory. The result is the same whichever spool."""
    A = sp.csr_matrix(sent_unit.T)  # units x sentences
    n_units, n_words = A.shape[0], counts.shape[1]
    row_sums = np.asarray(counts.sum(axis=1), dtype=np.float64).ravel()
    lengths = np.asarray(A @ row_sums, dtype=np.float64).ravel()
    avg = max(float(lengths.mean()) if n_units else 1.0, 1e-9)
    norm = K1 * (1 - B + B * lengths / avg)
    C = sp.csc_matrix(counts)
    bounds, most = _word_blocks(A, C, block_entries)
    small = max(most, n_units, n_words) < 2**31  # at most ``most`` entries: 32-bit row indices whatever the count
    values, rows = spool(np.dtype(np.float64)), spool(np.dtype(np.int32 if small else np.int64))
    sizes: list[np.ndarray] = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        tf = sp.csc_matrix(A @ C[:, a:b], dtype=np.float64)
        tf.sort_indices()
        size = np.diff(tf.indptr)
        df = size.astype(np.float64)
        idf = np.log1p((n_units - df + 0.5) / (df + 0.5))
        w = np.repeat(idf, size)  # idf of each entry's word
        w *= tf.data
        w *= K1 + 1
        den = norm[tf.indices]
        den += tf.data
        w /= den  # ((idf * tf) * (K1 + 1)) / (tf + norm): the whole-product expression's operations, in its order
        del den
        values.append(w)
        rows.append(tf.indices)
        sizes.append(size)
        del tf, w
    nnz = int(sum(int(s.sum()) for s in sizes))
    idx = np.int32 if max(nnz, n_units, n_words) < 2**31 else np.int64
    indptr = np.zeros(n_words + 1, dtype=idx)
    np.cumsum(np.concatenate(sizes) if sizes else np.zeros(0, idx), out=indptr[1:])
    data, indices = values.finish(), rows.finish()
    if indices.dtype != idx:  # more entries were possible than came: 32-bit indices, as the count allows
        indices = indices.astype(idx)
    W = sp.csc_matrix((data, indices, indptr), shape=(n_units, n_words))
    W.has_sorted_indices = True
    return W


class QueryBM25:
    """The BM25 of one query over the units, computed as far as a question about it needs: the score of given
    units (:meth:`of`) or the best units (:meth:`best`). Every score is the float64 sum
    :meth:`LexicalIndex.scores` computes, term by term in the query's word order (the same bits).

    Up to ``MERGE_MAX`` postings in all, the postings are summed per unit by a merge (:meth:`postings`). Above, the
    terms are added into an array over every unit that the thread reuses from query to query (zero outside the
    query's postings, so no array over every unit is allocated, cleared or scanned per query): a unit's score is
    then one read. The best units come from the postings whose score reaches the ``M x words``-th largest posting
    score (``M = max(m, TOP_LIST)``): every unit scoring at least as well as the ``M``-th best, best first, is kept,
    so the later asks of the query (a few best units, then the units above a score) read that list instead of
    every posting again.
    :meth:`close` (called by ``retrieve``) clears the query's postings there and hands the array back; a query
    whose thread's array is in use gets its own. The postings' unit numbers are made index-sized once per query
    (a gather or a scatter with 32-bit indices costs numpy a conversion each time)."""

    MERGE_MAX = 8_192  # postings: up to this many in all, merged (faster than the array below; at 100k passages
    # the array path took 0.43 ms of BM25 a query against 0.75 merged: benchmarks/scale/query_bm25.py)
    TOP_LIST = 1024  # the array path keeps at least this many best units once the best ones are asked for

    def __init__(self, lexical: LexicalIndex, cols: Sequence[int]) -> None:
        self.lexical, self.cols = lexical, list(cols)
        self._all: tuple[np.ndarray, np.ndarray] | None = None
        W = lexical.weights
        self._total = int(sum(W.indptr[c + 1] - W.indptr[c] for c in self.cols))
        self._acc: np.ndarray | None = None  # the thread's array over every unit, holding this query's BM25
        self._rows = np.zeros(0, dtype=np.intp)  # the query's postings' units (with repeats), column by column
        self._row_scores: np.ndarray | None = None  # their BM25
        # every unit with BM25 >= _cut (> 0), best first (ties by position), and their BM25: see the class doc
        self._top: tuple[np.ndarray, np.ndarray, float] | None = None

    def _column(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        W = self.lexical.weights
        return W.indices[W.indptr[c] : W.indptr[c + 1]], W.data[W.indptr[c] : W.indptr[c + 1]]

    def _merged(self) -> bool:
        return self._all is not None or self._total <= self.MERGE_MAX

    def _accumulated(self) -> np.ndarray:
        if self._acc is None:
            acc = _take_scratch(self.lexical.weights.shape[0])
            columns = [self._column(c) for c in self.cols]
            rows = np.concatenate([r for r, _ in columns]).astype(np.intp, copy=False)
            # one aligned float64 copy: np.add.at (~1.8x as fast as acc[rows] += data) crawls on unaligned data,
            # as a loaded index's memory-mapped weights can be
            vals = np.concatenate([d for _, d in columns]).astype(np.float64, copy=False)
            start = 0
            for _, data in columns:  # in the query's word order, as scores() adds them
                end = start + len(data)
                np.add.at(acc, rows[start:end], vals[start:end])  # rows are unique within a column: acc[rows] += data
                start = end
            self._rows = rows
            self._acc = acc
        return self._acc

    def close(self) -> None:
        """Clear this query's postings in the thread's array and hand it back (a no-op when none was used)."""
        acc, self._acc = self._acc, None
        if acc is not None:
            acc[self._rows] = 0.0
            _give_scratch(acc)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter exit the module may be gone: nothing to hand back
            self.close()

    def postings(self) -> tuple[np.ndarray, np.ndarray]:
        """Every unit with a query word (ascending) and its BM25 (:meth:`LexicalIndex.postings`)."""
        if self._all is None:
            self._all = _sum_postings([self._column(c) for c in self.cols])
        return self._all

    def of(self, units: np.ndarray) -> np.ndarray:
        """BM25 of ``units`` (0 for a unit without a query word)."""
        units = np.asarray(units, dtype=np.int64)
        if not len(units) or not self.cols:
            return np.zeros(len(units))
        if not self._merged():
            acc: np.ndarray = self._accumulated()[units]
            return acc
        hit, vals = self.postings()
        out = np.zeros(len(units))
        if len(hit):
            at = np.minimum(np.searchsorted(hit, units), len(hit) - 1)
            on = hit[at] == units
            out[on] = vals[at[on]]
        return out

    def best(self, m: int, at_least: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """The units with a query word and BM25 >= ``at_least``, at most ``m`` of them: the best by BM25, ties by
        position; ``(units ascending, BM25)``."""
        if m <= 0 or not self.cols:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        if self._merged():
            return _best_of(*self.postings(), m, at_least)
        top = self._top
        if top is None or (m > len(top[0]) and at_least < top[2]):
            top = self._top = self._best_list(max(m, self.TOP_LIST))
        units, vals, _ = top  # every unit scoring at least as well as the m-th best or at_least is in it
        pick = np.flatnonzero(vals >= at_least)[:m] if at_least > 0 else np.arange(min(m, len(units)))
        order = pick[np.argsort(units[pick])]
        return units[order], vals[order]

    def _best_list(self, m: int) -> tuple[np.ndarray, np.ndarray, float]:
        """Every unit whose BM25 reaches the ``m``-th best unit's (ties included; every unit with a query word when
        there are at most ``m``), best first, ties by position; their BM25; that score (0 for every unit)."""
        acc = self._accumulated()
        if self._row_scores is None:
            self._row_scores = acc[self._rows]
        v, rows = self._row_scores, self._rows
        k = m * len(self.cols)  # a unit holds at most one posting per query word: the k best postings hold at
        cut = 0.0  # least m units, so no unit outside them is among the m best
        if len(v) > k:
            cut = float(np.partition(v, len(v) - k)[len(v) - k])
            rows = rows[v >= cut]
        units = sorted_unique(rows).astype(np.int64)
        vals = acc[units]
        keep = vals > 0
        if keep.sum() > m:  # every unit scoring >= cut is here, at least m of them: keep those >= the m-th best
            cut = max(cut, float(np.partition(vals, len(vals) - m)[len(vals) - m]))
            keep &= vals >= cut
        units, vals = units[keep], vals[keep]
        order = np.lexsort((units, -vals))
        return units[order], vals[order], cut


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """``np.unique(a)`` of an integer array, by a sort (numpy 2's hash-based ``unique`` took ~20x as long on the
    few thousand unit numbers of a query)."""
    s = np.sort(a, axis=None)
    if len(s) < 2:
        return s
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


_SCRATCH = threading.local()


def _take_scratch(n: int) -> np.ndarray:
    """The thread's zeroed array of ``n`` float64 (a new one when it is in use or of another size)."""
    free: np.ndarray | None = getattr(_SCRATCH, "free", None)
    if free is not None and len(free) == n:
        _SCRATCH.free = None
        return free
    return np.zeros(n)


def _give_scratch(acc: np.ndarray) -> None:
    _SCRATCH.free = acc


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


class SortedColumns(Mapping[str, int]):
    """Word -> column over the sorted term words (binary search; no dict of every word of the corpus)."""

    def __init__(self, words: Sequence[str]) -> None:
        self._words = words

    def __getitem__(self, word: str) -> int:
        i = bisect.bisect_left(self._words, word)
        if i < len(self._words) and self._words[i] == word:
            return i
        raise KeyError(word)

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self.get(word) is not None

    def __len__(self) -> int:
        return len(self._words)

    def __iter__(self) -> Iterator[str]:
        return iter(self._words)
