"""The scores a strategy ranks units by, exact or via the unit index, in one place.

:class:`DenseScores` is cos(phi(q), unit); :class:`HybridScores` adds ``weight`` x BM25 / max BM25. Both answer the
same three questions: :meth:`~DenseScores.top` (the best units, ties by position), :meth:`~DenseScores.of` (exact
scores of given units) and :meth:`~DenseScores.full` (every unit). Without a unit index (small corpora) they scan
every unit once; with one (:attr:`Snapshot.unit_ann <g2cons_plugins.snapshot.Snapshot.unit_ann>`, large corpora)
the index proposes candidates and every score is still computed exactly. :func:`score_spread` is the query's
spread of cosines (``score_scale="spread"``).
"""

from __future__ import annotations

import numpy as np

from ..snapshot import Snapshot
from .lexical import QueryBM25, sorted_unique
from .order import top_desc

__all__ = [
    "SPREAD_REF",
    "SPREAD_SAMPLE",
    "DenseScores",
    "HybridScores",
    "score_spread",
    "spread_scale",
]

SPREAD_REF = 0.1  # score_scale="spread": a query whose cosines have this std gets bridge_bonus / lexical_weight as is
SPREAD_SAMPLE = 4096  # with a vector index, the spread is measured on at most about this many units (strided)

_NONE = np.zeros(0, dtype=np.int64)
_NONE.flags.writeable = False


class DenseScores:
    """cos(phi(q), unit) for the units a strategy asks for. Without a vector index (small corpora) one exact scan;
    with one (:attr:`Snapshot.unit_ann`, large corpora), :meth:`top` asks it for candidates and every score is
    computed exactly for the units asked for, so a ranking differs from the exact one only where the index
    misses a true top unit. While a newer snapshot updates the shared index, :meth:`top` scans exactly."""

    TOP_MIN = 256  # the exact path sorts at least this many top units at once; later, smaller asks are prefixes

    def __init__(self, snap: Snapshot, qv: np.ndarray) -> None:
        self.snap = snap
        # a plain view of a memory-mapped matrix: np.memmap's own indexing costs ~30 us a call
        self.vecs, self.qv, self.ann = np.asarray(snap.stored.unit_vecs), qv, snap.unit_ann
        self.n = len(self.vecs)
        self._full: np.ndarray | None = None if self.ann is not None else self.vecs @ qv
        self._sorted = _NONE  # the best units in rank order (a prefix of all on the exact path), read-only
        self.reserve = 0  # with a vector index: the fewest units one search asks for (see :meth:`expect`)
        self._cand, self._cand_scores = _NONE, np.zeros(0, np.float32)

    def expect(self, k: int) -> None:
        """Tell the scores that ``top(k)`` will be asked for later: the first search with a vector index then asks
        for at least ``k`` units, so the later ask is a prefix of it instead of a second search."""
        self.reserve = max(self.reserve, int(k))

    def full(self) -> np.ndarray:
        """Scores of every unit (one exact scan)."""
        if self._full is None:
            self._full = self.vecs @ self.qv
        return self._full

    def of(self, units: np.ndarray) -> np.ndarray:
        """Exact scores of ``units`` (with a vector index, the candidates of the last search are scored once and
        looked up after that)."""
        if self._full is not None:
            known: np.ndarray = self._full[units]
            return known
        if not len(units):
            return np.zeros(0, np.float32)
        cand = self._cand
        if not len(cand):
            scored: np.ndarray = self.vecs[units] @ self.qv
            return scored
        units = np.asarray(units, dtype=np.int64)
        at = np.minimum(np.searchsorted(cand, units), len(cand) - 1)
        on = cand[at] == units
        if on.all():
            return self._cand_scores[at]
        out = np.empty(len(units), dtype=self._cand_scores.dtype)
        out[on] = self._cand_scores[at[on]]
        out[~on] = self.vecs[units[~on]] @ self.qv
        return out

    def top(self, k: int) -> np.ndarray:
        """The ``k`` best units, by score descending, ties by position (all units when ``k >= n``)."""
        k = min(k, self.n)
        if k <= len(self._sorted):
            return self._sorted[:k]
        if self.ann is None or k >= self.n:
            best = self._exact_top(k)
        else:
            best = self._searched_top(k)
        best.flags.writeable = False  # callers get views of it
        self._sorted = best
        return best[:k]

    def _exact_top(self, k: int) -> np.ndarray:
        """One partition of every score serves the seeds and the ranking."""
        return top_desc(self.full(), max(k, min(self.TOP_MIN, self.n)))

    def _searched_top(self, k: int) -> np.ndarray:
        """The best of the unit index's candidates (exact when the index answers None: it is being updated)."""
        want = min(max(k, self.reserve), self.n)
        assert self.ann is not None  # top() searches only with a unit index
        found = self.ann.search(self.qv, want)
        if found is None:
            return self._exact_top(k)
        cand = sorted_unique(np.asarray(found, dtype=np.int64))
        self._cand, self._cand_scores = cand, self.vecs[cand] @ self.qv  # ascending, and their scores
        best: np.ndarray = cand[np.lexsort((cand, -self._cand_scores))][:want]
        return best


class _Postings:
    """The lexical term over the units with a query word: ``hit`` (ascending) and its bonus ``weight`` x BM25 /
    ``top`` (BM25 is zero elsewhere)."""

    def __init__(self, hit: np.ndarray, vals: np.ndarray, weight: float, top: float) -> None:
        self.hit, self.top = hit, top
        self.bonus = weight * vals / top if top > 0 else np.zeros(len(hit))

    def add_all(self, scores: np.ndarray) -> None:
        """Add the term to the scores of every unit."""
        scores[self.hit] += self.bonus

    def add_to(self, out: np.ndarray, units: np.ndarray) -> None:
        """Add the term to ``out``, the scores of ``units``."""
        if len(self.hit):
            at = np.minimum(np.searchsorted(self.hit, units), len(self.hit) - 1)
            on = self.hit[at] == units
            out[on] += self.bonus[at[on]]

    def extra(self, need: float, cap: int) -> np.ndarray:
        """The units with a term >= ``need``, at most ``cap``: the best by BM25, ties by position."""
        extra = np.flatnonzero(self.bonus >= need)  # all units that could still reach kth
        if len(extra) > cap:  # bounded work: the best of them by BM25, ties by position
            extra = np.sort(extra[np.lexsort((extra, -self.bonus[extra]))[:cap]])
        out: np.ndarray = self.hit[extra]
        return out


class _PerUnit:
    """The lexical term read from the query's :class:`QueryBM25` for the units scored, not over every posting."""

    def __init__(self, lex: QueryBM25, weight: float) -> None:
        self.lex, self.weight = lex, weight
        best = lex.best(1)[1]
        self.top = float(best[0]) if len(best) else 0.0

    def postings(self) -> _Postings:
        """The same term over every posting (a search that needs every unit)."""
        hit, vals = self.lex.postings()
        return _Postings(hit, vals, self.weight, self.top)

    def add_to(self, out: np.ndarray, units: np.ndarray) -> None:
        """Add the term to ``out``, the scores of ``units`` (as the bonus over every posting holds it)."""
        if self.top > 0:
            v = self.lex.of(units)
            on = v > 0
            out[on] += self.weight * v[on] / self.top

    def extra(self, need: float, cap: int) -> np.ndarray:
        """As :meth:`_Postings.extra`, without summing every posting."""
        if self.top <= 0:
            return _NONE
        # BM25 >= need x top / weight, with a margin for rounding; then exactly as the bonus array
        at_least = max(need * self.top / self.weight * (1 - 1e-9), 0.0) if self.weight > 0 else 0.0
        units, vals = self.lex.best(cap, at_least)
        out: np.ndarray = units[self.weight * vals / self.top >= need]
        return out


def _term(
    lexical: np.ndarray | tuple[np.ndarray, np.ndarray] | QueryBM25, weight: float, per_unit: bool
) -> _Postings | _PerUnit:
    """The lexical term of any of :class:`HybridScores`' inputs (``per_unit``: read per unit when it can)."""
    if isinstance(lexical, QueryBM25):
        if per_unit:
            return _PerUnit(lexical, weight)
        lexical = lexical.postings()
    if isinstance(lexical, tuple):
        hit, vals = np.asarray(lexical[0], dtype=np.int64), np.asarray(lexical[1], dtype=np.float64)
    else:  # BM25 is zero on most units: add the term where it is not
        hit = np.flatnonzero(lexical != 0)  # a boolean mask: 10x faster than flatnonzero of floats
        vals = lexical[hit]
    return _Postings(hit, vals, weight, float(vals.max(initial=0.0)))


class HybridScores(DenseScores):
    """cos(phi(q), unit) + ``weight`` x BM25(q, unit) / max BM25 (the same interface as :class:`DenseScores`).

    Without a vector index, one exact scan. With one, only candidates are scored: the ``K = k + max(32, k/8)``
    best units by cosine (from the index), whose k-th best hybrid score is ``s_k``, and the units with a query
    word whose lexical term is at least ``s_k`` - the K-th cosine ``c_K`` (BM25 is zero outside the query words'
    postings). Any other unit scores below ``s_k``, so the top ``k`` of the candidates is the top ``k`` of all
    units once its k-th score is above ``c_K`` (else ``K`` grows x4): given the index's cosine candidates, the
    ranking is the exact hybrid ranking, ties included. Where more than ``EXTRA_MAX`` x k units have such a
    lexical term (frequent query words in a large corpus), only the best of them by BM25 (ties by position) are
    scored, to bound the work: a unit with a high BM25 but a low cosine can then be missed, as the index can miss
    a unit. Given a :class:`~g2cons_plugins.retrieval.lexical.QueryBM25` and a vector index, the BM25 of a unit is
    read when it is scored and those best units are found without summing every posting (the same scores)."""

    EXTRA_MAX = 2  # x k: at most this many units with a query word are scored beyond the cosine candidates

    def __init__(
        self, dense: DenseScores, lexical: np.ndarray | tuple[np.ndarray, np.ndarray] | QueryBM25, weight: float
    ) -> None:
        """``lexical``: BM25 of every unit, ``(units ascending, BM25)`` of the units with a query word
        (:meth:`~g2cons_plugins.retrieval.lexical.LexicalIndex.postings`, no array over every unit), or the query's
        :class:`~g2cons_plugins.retrieval.lexical.QueryBM25`."""
        self.snap, self.vecs, self.qv, self.ann, self.n = dense.snap, dense.vecs, dense.qv, dense.ann, dense.n
        self._sorted = _NONE
        self._dense = dense
        self.reserve = 0
        self._term = _term(lexical, weight, per_unit=self.ann is not None)
        self._full = None if self.ann is not None else self._every()

    def _every(self) -> np.ndarray:
        """Hybrid scores of every unit (every posting read)."""
        if isinstance(self._term, _PerUnit):
            self._term = self._term.postings()
        scores: np.ndarray = self._dense.full().astype(np.float64)
        self._term.add_all(scores)
        return scores

    def full(self) -> np.ndarray:
        """Hybrid scores of every unit (one exact scan)."""
        if self._full is None:
            self._full = self._every()
        return self._full

    def of(self, units: np.ndarray) -> np.ndarray:
        """Exact hybrid scores of ``units``."""
        if self._full is not None:
            known: np.ndarray = self._full[units]
            return known
        units = np.asarray(units, dtype=np.int64)
        out: np.ndarray = self._dense.of(units).astype(np.float64)
        if len(units):
            self._term.add_to(out, units)
        return out

    def expect(self, k: int) -> None:
        """Tell the scores that ``top(k)`` will be asked for later (one search of the vector index serves both)."""
        self._dense.expect(k + max(32, k // 8))

    def _searched_top(self, k: int) -> np.ndarray:
        """The top ``k`` of the cosine candidates and the units whose lexical term can still reach it (class doc)."""
        K = k + max(32, k // 8)
        while True:
            dense_top = self._dense.top(K)
            if len(dense_top) >= self.n:  # every unit scored
                every: np.ndarray = dense_top[np.lexsort((dense_top, -self.of(dense_top)))][:k]
                return every
            floor = float(self._dense.of(dense_top[-1:])[0])  # no unit outside dense_top has a higher cosine
            s = self.of(dense_top)
            kth = float(np.partition(s, len(s) - k)[len(s) - k]) if len(s) >= k else floor
            extra = self._term.extra(kth - floor, self.EXTRA_MAX * k)
            pool = sorted_unique(np.concatenate((dense_top, extra)))
            s = self.of(pool)
            order = np.lexsort((pool, -s))[:k]
            if len(order) == k and s[order[-1]] > floor:
                best: np.ndarray = pool[order]
                return best
            K = min(4 * K, self.n)


def _sample_covariance(vecs: np.ndarray, n: int) -> np.ndarray:
    """The covariance (float64, d x d, population) of a strided sample of about ``SPREAD_SAMPLE`` of the ``n``
    rows of ``vecs``."""
    sample = np.asarray(vecs[np.arange(0, n, max(1, n // SPREAD_SAMPLE))], dtype=np.float64)
    centred = sample - sample.mean(axis=0)
    cov: np.ndarray = centred.T @ centred / len(sample)
    cov.flags.writeable = False
    return cov


def score_spread(sc: DenseScores) -> float:
    """Standard deviation of cos(phi(q), unit) over the units. With a vector index, over a strided sample of
    about ``SPREAD_SAMPLE`` units, so no full scan: the std of ``sample @ q`` is ``sqrt(q' C q)`` for the sample's
    covariance ``C`` (d x d), computed once per snapshot (its ``memo``), so a query costs a d x d product instead of
    gathering and scoring the sample (which cost more than the rest of a query at 100k units)."""
    if sc.n == 0:
        return 0.0
    if sc.ann is None:
        return float(np.std(sc.full()))
    cov = sc.snap.memo("retrieval.spread_covariance", lambda: _sample_covariance(sc.vecs, sc.n))
    q = np.asarray(sc.qv, dtype=np.float64)
    return float(np.sqrt(max(float(q @ cov @ q), 0.0)))


def spread_scale(snap: Snapshot, sc: DenseScores) -> float:
    """The unit of ``bridge_bonus``, ``lexical_weight`` and host evidence for this query: its spread of cosines /
    ``SPREAD_REF`` under ``score_scale="spread"``, else 1."""
    return score_spread(sc) / SPREAD_REF if snap.config.retrieval.score_scale == "spread" else 1.0
