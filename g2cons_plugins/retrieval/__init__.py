"""Concept-path retrieval (Section 3.2.1) under a token budget beta.

Strategies (``G2ConSConfig.strategy`` or ``retrieve(..., strategy=...)``):

- ``"paper"`` exactly as Section 3.2.1: top-k concepts by cos(phi(q), Vector(w)); *local reranking*: for each
  seed concept in similarity order, its units reranked by cos(phi(q), unit) are appended; then BFS up to N hops
  over the concept graph from the seeds; *global reranking*: every unit of the expanded concepts, reranked
  together by cos(phi(q), unit). The walk ends the first time a unit would push the context over beta.
- ``"bridge"`` (default): the calibration showed the paper's walk fills the budget from ~4 frequent seed concepts
  and loses to plain dense retrieval. This mode keeps the ``n_seed_units`` (3) best units by cos(phi(q), unit)
  first, takes their *bridge concepts*: names (words written capitalised in most of their occurrences, from
  KET-RAG's all-words vocabulary when ``bridge_vocab="all_words"``, else from the TF-IDF concepts) that occur in
  2..``bridge_max_df`` (5) chunks, i.e. rare enough to identify one entity. Every unit containing a bridge
  concept gets a bonus ``bridge_bonus`` (0.2) x w, where w is the score of the best seed that contributed the
  bridge relative to the top seed (``bridge_link="seed_score"``; ``"indicator"``: w = 1). All other units are
  ranked by cos(phi(q), unit) + bonus. ``bridge_rounds`` (2) repeats this from the best bridged units, which
  reaches the third passage of a 3-hop question. It follows concept-to-chunk links, not concept-concept edges:
  in the paper walk the edges only matter when k is small, and never lift it to dense (docs/decisions.md).
  Lexical evidence (:mod:`g2cons_plugins.retrieval.lexical`, BM25 over the units from the concept analyzer's
  words): ``lexical_weight`` w > 0 scores every unit cos + w x BM25 / max BM25 (seeds too unless
  ``hybrid_seeds=False``), and ``lexical_seeds`` adds the best BM25 units to the seeds that bridges start from.
  Names the query writes (``entity_weight``, :mod:`g2cons_plugins.retrieval.entities`) pick the first ``n_seed_units``
  places: units chosen one at a time by score + the bonus of the names no chosen unit holds yet (each named
  entity's passage first); the seeds, bridges and the rest of the ranking are those without names.
  ``score_scale="spread"`` measures ``bridge_bonus`` and ``lexical_weight`` in the query's spread of cosines
  (std over the units / ``SPREAD_REF``): an embedder whose cosines crowd together (multilingual e5: std ~0.02
  against MiniLM's ~0.095) then gets a bonus of the same weight relative to its own score gaps.
- ``"dense"``: cos(phi(q), unit) alone (Text-RAG over the same units; a baseline and a fallback).
- ``"ppr"``: personalized PageRank over the concept graph plus concept-unit links, restarted half on the query's
  concepts (TERAG: weight s(u)/f(u)) and half on the top dense units, fused with dense by reciprocal rank.

Query with no known concept: concepts are matched by vector, so every query still gets its nearest concepts and
units; the lexical ``query_concepts`` in each item's reason is then empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..arrays.tables import unit_fields_of
from ..arrays.wide_rows import Matrix, as_csr, row, rows_union
from ..errors import InputError, positive_int
from ..graph import pagerank
from ..snapshot import HasSnapshot, Snapshot, as_snapshot, capped_query
from ..text.language import check_query
from .entities import name_bonus
from .lexical import QueryBM25, sorted_unique

STRATEGIES = ("bridge", "paper", "dense", "ppr", "e2")
MAX_QUERY_CONCEPTS = 32  # concepts of one question used by e2 / ppr (the rarest; E2's pairs grow as their square)
SPREAD_REF = 0.1  # score_scale="spread": a query whose cosines have this std gets bridge_bonus / lexical_weight as is
SPREAD_SAMPLE = 4096  # with a vector index, the spread is measured on at most about this many units (strided)


@dataclass(frozen=True)
class RetrievedItem:
    """One retrieved unit: ids, text, score, token count and why it was retrieved."""

    unit_id: str
    parent_id: str
    text: str
    score: float
    n_tokens: int
    reason: dict[str, Any] = field(default_factory=dict)

    @property
    def chunk_id(self) -> str:
        """The chunk this unit belongs to (``parent_id``)."""
        return self.parent_id


def _stable_desc(scores: np.ndarray) -> np.ndarray:
    """Indices by score descending, ties by index ascending (deterministic)."""
    return np.lexsort((np.arange(len(scores)), -scores))


def _top_desc(scores: np.ndarray, k: int) -> np.ndarray:
    """``_stable_desc(scores)[:k]`` without sorting every score: a partition finds the k-th largest value, and only
    the scores at or above it are sorted (ties by index, so every tie at the cut-off competes on position)."""
    n = len(scores)
    if k >= n:
        return _stable_desc(scores)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    cut = np.partition(scores, n - k)[n - k]  # the k-th largest value
    top = np.flatnonzero(scores >= cut)
    return top[np.lexsort((top, -scores[top]))][:k]


def _first(index: Snapshot, beta: int) -> int:
    """How many top units to sort eagerly for a budget: about 3x what fits at the median unit size."""
    return int(3 * beta / index.stored.median_unit_tokens) + 32


def _iter_desc(scores: np.ndarray, first: int) -> Iterator[int]:
    """Like ``_stable_desc`` but lazy: sorts only the top ``first`` unless more are consumed."""
    n = len(scores)
    if first >= n:
        yield from _stable_desc(scores).tolist()
        return
    cut = np.partition(scores, n - first)[n - first]  # the first-th largest value
    top = np.flatnonzero(scores >= cut)
    top = top[np.lexsort((top, -scores[top]))]
    yield from top.tolist()
    rest = np.flatnonzero(scores < cut)
    yield from rest[np.lexsort((rest, -scores[rest]))].tolist()


_NONE = np.zeros(0, dtype=np.int64)
_NONE.flags.writeable = False


class DenseScores:
    """cos(phi(q), unit) for the units a strategy asks for. Without a vector index (small corpora) one exact scan;
    with one (:attr:`Snapshot.unit_ann`, large corpora), :meth:`top` asks it for candidates and every score is
    computed exactly for the units asked for, so a ranking differs from the exact one only where the index
    misses a true top unit. While a newer snapshot updates the shared index, :meth:`top` scans exactly."""

    TOP_MIN = 256  # the exact path sorts at least this many top units at once; later, smaller asks are prefixes

    def __init__(self, snap: Snapshot, qv: np.ndarray) -> None:
        # a plain view of a memory-mapped matrix: np.memmap's own indexing costs ~30 us a call
        self.snap = snap
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
            return self._full[units]
        if not len(units):
            return np.zeros(0, np.float32)
        cand = self._cand
        if not len(cand):
            return self.vecs[units] @ self.qv
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
        want = min(max(k, self.reserve), self.n)
        cand = None if self.ann is None or k >= self.n else self.ann.search(self.qv, want)
        if cand is None:  # exact; one partition of every score serves the seeds and the ranking
            best = _top_desc(self.full(), max(k, min(self.TOP_MIN, self.n)))
        else:
            cand = sorted_unique(np.asarray(cand, dtype=np.int64))
            self._cand, self._cand_scores = cand, self.vecs[cand] @ self.qv  # ascending, and their scores
            best = cand[np.lexsort((cand, -self._cand_scores))][:want]
        best.flags.writeable = False  # callers get views of it
        self._sorted = best
        return best[:k]


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
    a unit. Given a :class:`~g2cons_plugins.retrieval.lexical.QueryBM25` and a vector index, the BM25 of a unit is read
    when it is scored and those best units are found without summing every posting (the same scores)."""

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
        self._weight = weight
        self._lex: QueryBM25 | None = None
        self._full = None
        if isinstance(lexical, QueryBM25):
            if self.ann is not None:  # BM25 read per unit scored (see the class doc)
                self._lex = lexical
                best = lexical.best(1)[1]
                self._top = float(best[0]) if len(best) else 0.0
                return
            lexical = lexical.postings()
        if isinstance(lexical, tuple):
            hit, vals = np.asarray(lexical[0], dtype=np.int64), np.asarray(lexical[1], dtype=np.float64)
        else:  # BM25 is zero on most units: add the term where it is not
            hit = np.flatnonzero(lexical != 0)  # a boolean mask: 10x faster than flatnonzero of floats
            vals = lexical[hit]
        top = float(vals.max(initial=0.0))
        self._top = top
        self._hit = hit  # units with a query word, ascending
        self._bonus = weight * vals / top if top > 0 else np.zeros(len(hit))
        if self.ann is None:
            self._full = dense.full().astype(np.float64)
            self._full[hit] += self._bonus

    def _all_postings(self) -> None:
        if self._lex is not None:  # every posting after all (a search that needs every unit)
            hit, vals = self._lex.postings()
            self._hit, self._lex = hit, None
            self._bonus = self._weight * vals / self._top if self._top > 0 else np.zeros(len(hit))

    def full(self) -> np.ndarray:
        """Hybrid scores of every unit (one exact scan)."""
        if self._full is None:
            self._all_postings()
            self._full = self._dense.full().astype(np.float64)
            self._full[self._hit] += self._bonus
        return self._full

    def of(self, units: np.ndarray) -> np.ndarray:
        """Exact hybrid scores of ``units``."""
        if self._full is not None:
            return self._full[units]
        units = np.asarray(units, dtype=np.int64)
        out = self._dense.of(units).astype(np.float64)
        if not len(units):
            return out
        if self._lex is not None:
            if self._top > 0:
                v = self._lex.of(units)
                on = v > 0
                out[on] += self._weight * v[on] / self._top  # as the bonus array of every posting holds it
            return out
        if len(self._hit):
            at = np.minimum(np.searchsorted(self._hit, units), len(self._hit) - 1)
            on = self._hit[at] == units
            out[on] += self._bonus[at[on]]
        return out

    def top(self, k: int) -> np.ndarray:
        """The ``k`` best units by hybrid score, ties by position (see the class doc)."""
        k = min(k, self.n)
        if k <= len(self._sorted):
            return self._sorted[:k]
        if self.ann is None or k >= self.n:
            best = _top_desc(self.full(), max(k, min(self.TOP_MIN, self.n)))
        else:
            best = self._top_candidates(k)
        best.flags.writeable = False
        self._sorted = best
        return best[:k]

    def expect(self, k: int) -> None:
        """Tell the scores that ``top(k)`` will be asked for later (one search of the vector index serves both)."""
        self._dense.expect(k + max(32, k // 8))

    EXTRA_MAX = 2  # x k: at most this many units with a query word are scored beyond the cosine candidates

    def _lexical_extra(self, need: float, cap: int) -> np.ndarray:
        """The units with a lexical term >= ``need``, at most ``cap``: the best by BM25, ties by position."""
        if self._lex is not None:
            if self._top <= 0:
                return _NONE
            # BM25 >= need x top / weight, with a margin for rounding; then exactly as the bonus array
            at_least = max(need * self._top / self._weight * (1 - 1e-9), 0.0) if self._weight > 0 else 0.0
            units, vals = self._lex.best(cap, at_least)
            return units[self._weight * vals / self._top >= need]
        extra = np.flatnonzero(self._bonus >= need)  # all units that could still reach kth
        if len(extra) > cap:  # bounded work: the best of them by BM25, ties by position
            extra = np.sort(extra[np.lexsort((extra, -self._bonus[extra]))[:cap]])
        return self._hit[extra]

    def _top_candidates(self, k: int) -> np.ndarray:
        K = k + max(32, k // 8)
        while True:
            dense_top = self._dense.top(K)
            if len(dense_top) >= self.n:  # every unit scored
                return dense_top[np.lexsort((dense_top, -self.of(dense_top)))][:k]
            floor = float(self._dense.of(dense_top[-1:])[0])  # no unit outside dense_top has a higher cosine
            s = self.of(dense_top)
            kth = float(np.partition(s, len(s) - k)[len(s) - k]) if len(s) >= k else floor
            pool = sorted_unique(np.concatenate((dense_top, self._lexical_extra(kth - floor, self.EXTRA_MAX * k))))
            s = self.of(pool)
            order = np.lexsort((pool, -s))[:k]
            if len(order) == k and s[order[-1]] > floor:
                return pool[order]
            K = min(4 * K, self.n)


def _units_of(unit_concepts: Matrix, concepts: Sequence[int] | np.ndarray) -> np.ndarray:
    if len(concepts) == 0:
        return np.zeros(0, dtype=np.int64)
    return rows_union(unit_concepts, concepts)


def _min_tokens(index: Snapshot) -> int:
    """The smallest unit's token count (1 without units), once per snapshot (its ``memo``): a minimum over every
    unit. (It was ``min(initial=1)``, i.e. never above 1: a filler then tried up to ``MAX_MISSES`` more units, none
    of which could fit, before it stopped, and a ranking asked for more candidates to go on trying.)"""

    def make() -> int:
        tokens = index.stored.unit_tokens
        return max(int(tokens.min()), 1) if len(tokens) else 1

    return index.memo("retrieval.min_tokens", make)


class _Filler:
    """Appends units in order until beta. ``stop_on_overflow``: the paper's rule, the walk ends at the first unit
    that would exceed beta. Otherwise a unit that does not fit is skipped and the next tried, until the room left
    is smaller than the smallest unit or ``MAX_MISSES`` units in a row did not fit."""

    MAX_MISSES = 64

    def __init__(self, index: Snapshot, beta: int, stop_on_overflow: bool, max_misses: int | None = MAX_MISSES):
        self.index, self.beta, self.stop = index, beta, stop_on_overflow
        self.max_misses = max_misses
        self._placed: list[tuple[int, float, int, dict[str, Any]]] = []  # (unit, score, tokens, reason)
        self.seen: set[int] = set()
        self.used = 0
        self.misses = 0
        self.full = False
        self.min_tokens = _min_tokens(index)

    def add(self, u: int, score: float, reason: dict[str, Any]) -> None:
        if self.full or u in self.seen:
            return
        st = self.index.stored
        n = int(st.unit_tokens[u])
        if self.used + n > self.beta:
            self.misses += 1
            too_many = self.max_misses is not None and self.misses >= self.max_misses
            if self.stop or too_many or self.beta - self.used < self.min_tokens:
                self.full = True
            return
        self.misses = 0
        self.seen.add(u)
        self.used += n
        self._placed.append((u, float(score), n, reason))

    @property
    def items(self) -> list[RetrievedItem]:
        """The units placed so far, in order, their ids and texts read a column at a time."""
        js = np.fromiter((p[0] for p in self._placed), dtype=np.int64, count=len(self._placed))
        fields = unit_fields_of(self.index.stored.units, js)
        return [
            RetrievedItem(uid, parent, text, score, n, reason)
            for (uid, parent, text), (_, score, n, reason) in zip(fields, self._placed, strict=True)
        ]


def fill_ranked(
    index: HasSnapshot, order: Iterable[int], scores: np.ndarray, beta: int, reason: dict[str, Any]
) -> list[RetrievedItem]:
    """Units in ``order`` while they fit in ``beta`` (one that does not fit is skipped); for external rankers."""
    index = as_snapshot(index)
    beta = positive_int("beta", beta)
    f = _Filler(index, beta, stop_on_overflow=False, max_misses=None)
    for u in order:
        f.add(int(u), float(scores[u]), dict(reason))
        if f.full or f.used >= beta:
            break
    return f.items


def query_concepts(index: HasSnapshot, query: str) -> list[int]:
    """Concepts written in the query (lexical match, same analyzer as the corpus), ascending; of more than
    :data:`MAX_QUERY_CONCEPTS`, the rarest that many (fewest units; ties: the lower id), with a warning."""
    from ..concepts import incidence

    index = as_snapshot(index)
    row = incidence([query], index.derived.vocab, index.config)
    found = np.asarray(row.indices, dtype=np.int64)
    if len(found) > MAX_QUERY_CONCEPTS:
        import warnings

        warnings.warn(
            f"the question holds {len(found):,} concepts: only the {MAX_QUERY_CONCEPTS} rarest are used "
            f"(g2cons_plugins.retrieval.MAX_QUERY_CONCEPTS)",
            UserWarning,
            stacklevel=3,
        )
        df = np.asarray(index.derived.df)[found]
        found = np.sort(found[np.lexsort((found, df))[:MAX_QUERY_CONCEPTS]])
    return found.tolist()


def retrieve(
    index: HasSnapshot,
    query: str,
    beta: int | None = None,
    strategy: str | None = None,
    query_vector: np.ndarray | None = None,
    evidence: Mapping[int, float] | None = None,
) -> list[RetrievedItem]:
    """The concept path: units for ``query`` within ``beta`` tokens (see module doc for strategies).

    ``index``: a :class:`~g2cons_plugins.snapshot.Snapshot` or a ``G2ConSIndex`` (its current snapshot is read
    once). ``query_vector``: phi(query) when already computed (finite, of the embedder's dimension).
    ``evidence``: unit position -> a bonus from outside the concept path (score fusion: the host KG returned the
    unit's chunk), in the same units as ``bridge_bonus`` (scaled by the query's spread with ``score_scale``) and
    added to the unit's score; strategies ``bridge`` and ``dense`` only."""
    index = as_snapshot(index)
    cfg = index.config
    beta = cfg.beta if beta is None else positive_int("beta", beta)
    strategy = strategy or cfg.strategy
    if strategy not in STRATEGIES:
        raise InputError(f"unknown strategy {strategy!r}; choose one of {STRATEGIES}")
    qv = index.embed_query(query) if query_vector is None else _query_vector(query_vector, index.embedder.dim)
    query = capped_query(query)  # names, concepts and BM25 read at most MAX_QUERY_CHARS characters
    check_query(index, query)
    sc = DenseScores(index, qv)
    if evidence and strategy not in ("bridge", "dense"):
        raise InputError(f"evidence (score fusion) needs strategy 'bridge' or 'dense', not {strategy!r}")
    if strategy == "paper":
        return _paper(index, qv, sc.full(), beta)
    if strategy == "dense":
        ev = _evidence(evidence, score_spread(sc) / SPREAD_REF if cfg.retrieval.score_scale == "spread" else 1.0)
        return _ranked(index, sc, ev, [], beta, lambda u: {"via": "host" if u in ev else "dense"})
    if strategy == "ppr":
        return _ppr(index, query, sc.full(), beta)
    if strategy == "e2":
        return _e2(index, query, sc.full(), beta)
    scale = score_spread(sc) / SPREAD_REF if cfg.retrieval.score_scale == "spread" else 1.0
    # with a vector index the hybrid term is computed on candidates only (HybridScores), so a query stays a search
    lw = cfg.retrieval.lexical_weight
    if strategy == "bridge" and (lw > 0 or cfg.retrieval.lexical_seeds > 0):
        lex = index.lexical.query(query)  # BM25 read from the query words' postings as far as needed
        try:
            hyb = HybridScores(sc, lex, lw * scale) if lw > 0 else sc
            return _bridge(
                index, hyb, beta, lex, seed_sc=hyb if cfg.retrieval.hybrid_seeds else sc, scale=scale,
                evidence=evidence,
                query=query,
            )
        finally:
            lex.close()
    return _bridge(index, sc, beta, scale=scale, evidence=evidence, query=query)


def _evidence(evidence: Mapping[int, float] | None, scale: float) -> dict[int, float]:
    return {int(u): float(w) * scale for u, w in (evidence or {}).items() if w > 0}


def _sample_covariance(vecs: np.ndarray, n: int) -> np.ndarray:
    """The covariance (float64, d x d, population) of a strided sample of about ``SPREAD_SAMPLE`` of the ``n``
    rows of ``vecs``."""
    sample = np.asarray(vecs[np.arange(0, n, max(1, n // SPREAD_SAMPLE))], dtype=np.float64)
    centred = sample - sample.mean(axis=0)
    cov = centred.T @ centred / len(sample)
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


def _ranked(
    index: Snapshot,
    sc: DenseScores,
    bonus: dict[int, float],
    first: list[tuple[int, float, dict[str, Any]]],
    beta: int,
    reason: Any,
) -> list[RetrievedItem]:
    """Fill beta with ``first`` (unit, score, reason) in order, then every unit by dense + ``bonus``, best first
    (ties by position). Candidates are the top K units by dense plus the bonus units; only a candidate scoring
    above the K-th dense score is placed before K grows (x4), so the order equals ranking all units."""
    K = _first(index, beta) + len(first)
    while True:
        f = _Filler(index, beta, stop_on_overflow=False)
        for u, score, why in first:
            f.add(u, score, why)
        top = sc.top(K)
        exhaustive = len(top) >= sc.n
        floor = -np.inf if exhaustive else float(sc.of(top[-1:])[0])
        if bonus:
            bonus_units = np.fromiter(bonus, dtype=np.int64, count=len(bonus))
            pool = sorted_unique(np.concatenate((top, bonus_units)))
            final = sc.of(pool).astype(np.float64)
            final[np.searchsorted(pool, bonus_units)] += np.fromiter(bonus.values(), dtype=np.float64, count=len(bonus))
            order = np.lexsort((pool, -final))
            units, scores = pool[order].tolist(), final[order].tolist()
        else:  # ``top`` is already in rank order
            units, scores = top.tolist(), sc.of(top).astype(np.float64).tolist()
        for u, score in zip(units, scores, strict=True):
            if f.full or f.used >= beta or (not exhaustive and score <= floor):
                break
            f.add(u, score, reason(u))
        if f.full or f.used >= beta or exhaustive:
            return f.items
        K *= 4


def _query_vector(v: Any, dim: int) -> np.ndarray:
    try:
        qv = np.asarray(v, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise InputError(f"query_vector is not a numeric vector: {e}") from None
    if qv.shape != (dim,):
        raise InputError(f"query_vector has shape {qv.shape}, expected ({dim},)")
    if not np.isfinite(qv).all():
        raise InputError("query_vector contains NaN or infinite values")
    if not np.any(qv):
        raise InputError("query_vector is all zeros")
    return qv


def _bfs(A: sp.csr_matrix, seeds: Sequence[int] | np.ndarray, hops: int) -> dict[int, int]:
    """Concept -> hop distance (<= ``hops``) from the seeds over the concept graph, seeds at 0."""
    hop_of: dict[int, int] = {int(c): 0 for c in seeds}
    frontier = list(hop_of)
    for hop in range(1, hops + 1):
        nxt = []
        for c in frontier:
            for nb in _row(A, c).tolist():
                if nb not in hop_of:
                    hop_of[nb] = hop
                    nxt.append(nb)
        frontier = nxt
    return hop_of


def _paper(index: Snapshot, qv: np.ndarray, dense: np.ndarray, beta: int) -> list[RetrievedItem]:
    cfg, dv = index.config, index.derived
    sims = dv.concept_vecs @ qv
    seeds = _top_desc(sims, cfg.k)
    f = _Filler(index, beta, stop_on_overflow=True)
    if cfg.retrieval.rerank == "naive":  # ablation D: seed and expanded concepts' units pooled and reranked together
        pool = _units_of(dv.unit_concepts, list(_bfs(dv.A, seeds, cfg.n_hops)))
        for u in pool[_stable_desc(dense[pool])]:
            f.add(int(u), dense[u], {"via": "naive", "hop": 0})
            if f.full:
                break
        return f.items
    for c in seeds:  # local reranking, seed by seed
        us = _row(dv.unit_concepts, c)
        for u in us[_stable_desc(dense[us])]:
            f.add(
                int(u),
                dense[u],
                {"via": "local", "concept": dv.vocab[c], "concept_sim": float(sims[c]), "hop": 0},
            )
        if f.full:
            return f.items
    hop_of = _bfs(dv.A, seeds, cfg.n_hops)
    expanded = [c for c, h in hop_of.items() if h > 0]
    pool = _units_of(dv.unit_concepts, expanded)
    for u in pool[_stable_desc(dense[pool])]:  # global reranking
        f.add(int(u), dense[u], {"via": "global", "n_expanded_concepts": len(expanded)})
        if f.full:
            break
    return f.items


def _row(M: Matrix, i: int) -> np.ndarray:
    """Column indices of row i of a csr matrix (or :class:`~g2cons_plugins.arrays.wide_rows.WideRows`), without scipy's
    per-call overhead."""
    return row(M, i)


def _lexical_seeds(lexical: QueryBM25 | tuple[np.ndarray, np.ndarray], seeds: list[int], n: int) -> list[int]:
    """The ``n`` best units by BM25 that are not ``seeds`` (``lexical``: the query's BM25, or the units with a
    query word ascending and their BM25, :meth:`~g2cons_plugins.retrieval.lexical.LexicalIndex.postings`; by score
    descending, ties by position)."""
    units, vals = lexical.best(n + len(seeds)) if isinstance(lexical, QueryBM25) else lexical
    hit = np.flatnonzero(vals > 0)  # only units with a query word can be lexical seeds
    have = set(seeds)
    lex_top = units[hit[_top_desc(vals[hit], n + len(seeds))]].tolist()
    return [u for u in lex_top if u not in have][:n]


def _bridge(
    index: Snapshot,
    sc: DenseScores,
    beta: int,
    lexical: QueryBM25 | None = None,
    seed_sc: DenseScores | None = None,
    scale: float = 1.0,
    evidence: Mapping[int, float] | None = None,
    query: str = "",
) -> list[RetrievedItem]:
    cfg, dv = index.config, index.derived
    if cfg.retrieval.bridge_vocab == "all_words":
        vocab, unit_x, x_units, df = dv.names, dv.unit_names, dv.name_units, dv.name_df
        is_name = None
    else:
        vocab, unit_x, x_units, df = dv.vocab, dv.unit_inc, dv.unit_concepts, dv.df
        is_name = dv.name_share >= 0.5
    # the ranking (_ranked) asks for at most this many best units later: one search of a vector index serves both
    opt = cfg.retrieval
    n_first = opt.n_seed_units * (2 if opt.entity_weight > 0 and query else 1) + opt.lexical_seeds
    sc.expect(_first(index, beta) + n_first)
    seeds = (seed_sc or sc).top(cfg.retrieval.n_seed_units).tolist()
    n_dense = len(seeds)
    if lexical is not None and cfg.retrieval.lexical_seeds > 0:  # the best BM25 units seed bridges too
        seeds += _lexical_seeds(lexical, seeds, cfg.retrieval.lexical_seeds)
    seed_scores = sc.of(np.asarray(seeds, dtype=np.int64))
    ref = max(float(seed_scores.max()), 1e-6) if seeds else 1.0
    score_of: dict[int, float] = dict(zip(seeds, seed_scores.tolist(), strict=True))
    bonus: dict[int, float] = {}  # unit -> bonus
    hop_of: dict[int, int] = {}
    round_bridges: list[set[int]] = []
    frontier = seeds
    taken = set(seeds)
    for rnd in range(1, cfg.retrieval.bridge_rounds + 1):
        bw: dict[int, float] = {}  # bridge concept -> weight of the best frontier unit holding it
        for u in frontier:
            w = score_of[u] / ref if cfg.retrieval.bridge_link == "seed_score" else 1.0
            for c in _row(unit_x, u).tolist():
                if 2 <= df[c] <= cfg.retrieval.bridge_max_df and (is_name is None or is_name[c]) and w > bw.get(c, 0.0):
                    bw[c] = w
        if not bw:
            break
        round_bridges.append(set(bw))
        reached: dict[int, float] = {}
        for c, w in bw.items():
            for u in _row(x_units, c).tolist():
                if w > reached.get(u, 0.0):
                    reached[u] = w
        new = [u for u in reached if u not in taken and u not in bonus and reached[u] > 0]
        score_of.update(zip(new, sc.of(np.asarray(new, dtype=np.int64)).tolist(), strict=True))
        for u in new:
            bonus[u] = cfg.retrieval.bridge_bonus * scale * reached[u]
            hop_of[u] = rnd
        new.sort(key=lambda u: (-(score_of[u] + bonus[u]), u))
        frontier = new[: cfg.retrieval.n_seed_units]
        taken.update(frontier)

    ev = _evidence(evidence, scale)
    for u, w in ev.items():  # seeds are placed first whatever their bonus
        bonus[u] = bonus.get(u, 0.0) + w

    def reason(u: int) -> dict[str, Any]:
        if u not in hop_of:
            return {"via": "host" if u in ev else "dense", "hop": 0}
        hop = hop_of[u]
        names = [vocab[c] for c in _row(unit_x, u).tolist() if c in round_bridges[hop - 1]]
        return {"via": "bridge", "bridge_concepts": names[:5], "hop": hop}

    first = [
        (u, score_of[u], {"via": "seed", "seed_rank": rank, "hop": 0, "source": "dense" if rank < n_dense else "bm25"})
        for rank, u in enumerate(seeds)
    ]
    if cfg.retrieval.entity_weight > 0 and query:
        first = _name_head(index, seed_sc or sc, query, scale, first, score_of)
    return _ranked(index, sc, bonus, first, beta, reason)


def _name_head(
    index: Snapshot,
    sc: DenseScores,
    query: str,
    scale: float,
    first: list[tuple[int, float, dict[str, Any]]],
    score_of: dict[int, float],
) -> list[tuple[int, float, dict[str, Any]]]:
    """The head of the list for a query that writes names (:mod:`g2cons_plugins.retrieval.entities`): ``n_seed_units``
    units chosen one at a time by score + the bonus of the names no chosen unit holds yet, then the seeds not
    chosen. The seeds (and so the bridges) stay those of the scores alone; the rest of the ranking is unchanged."""
    cfg = index.config
    opt = cfg.retrieval
    per_name = name_bonus(index, query, opt.entity_weight * opt.bridge_bonus * scale, opt.entity_head_share)
    if not per_name:
        return first
    picks = _covering(sc, cfg.retrieval.n_seed_units, per_name)
    score_of.update(zip(picks, sc.of(np.asarray(picks, dtype=np.int64)).tolist(), strict=True))
    named = {u for per in per_name.values() for u in per}
    head = [
        (u, score_of[u], {"via": "seed", "seed_rank": r, "hop": 0, "source": "name" if u in named else "dense"})
        for r, u in enumerate(picks)
    ]
    chosen = set(picks)
    return head + [t for t in first if t[0] not in chosen]


def _covering(sc: DenseScores, n: int, per_name: dict[str, dict[int, float]]) -> list[int]:
    """``n`` units chosen one at a time by score + the bonus of the query names not yet held by a chosen unit
    (a second unit about the same name does not outrank the unit about another name)."""
    ent_units = {u for per in per_name.values() for u in per}
    pool = sorted_unique(np.concatenate((sc.top(n), np.fromiter(ent_units, dtype=np.int64, count=len(ent_units)))))
    base = sc.of(pool).astype(np.float64)
    of_name = {nm: _on(pool, per) for nm, per in per_name.items()}  # each name's bonus over the pool
    left = dict(per_name)
    seeds: list[int] = []
    taken = np.zeros(len(pool), dtype=bool)
    for _ in range(min(n, len(pool))):
        held = np.zeros(len(pool))
        for nm in left:  # summed name by name in the names' order, as sum() over them did
            held += of_name[nm]
        s = base + held
        s[taken] = -np.inf
        at = int(np.argmax(s))  # the first of the best: the pool is ascending, so ties go to the lowest position
        taken[at] = True
        u = int(pool[at])
        seeds.append(u)
        left = {nm: per for nm, per in left.items() if u not in per}
    return seeds


def _on(pool: np.ndarray, per: dict[int, float]) -> np.ndarray:
    """``per`` (unit -> value) as an array over ``pool`` (ascending, holding every unit of ``per``), 0 elsewhere."""
    out = np.zeros(len(pool))
    if per:
        units = np.fromiter(per, dtype=np.int64, count=len(per))
        out[np.searchsorted(pool, units)] = np.fromiter(per.values(), dtype=np.float64, count=len(per))
    return out


def _ppr(index: Snapshot, query: str, dense: np.ndarray, beta: int) -> list[RetrievedItem]:
    cfg, dv, st = index.config, index.derived, index.stored
    n_c, n_u = len(dv.vocab), len(st.units)
    qc = query_concepts(index, query)
    # graph over concepts + units: concept edges (Dice) and concept-unit links (weight 1)
    B = as_csr(dv.unit_concepts)
    H = sp.bmat([[dv.A, B], [B.T, None]], format="csr")
    p = np.zeros(n_c + n_u)
    if qc:
        w = 1.0 / np.maximum(dv.df[qc], 1)
        p[qc] = 0.5 * w / w.sum()
    top = _top_desc(dense, 10)
    p[n_c + top] += (0.5 if qc else 1.0) / len(top)
    pr = pagerank(H, damping=cfg.retrieval.ppr_damping, personalization=p)[n_c:]
    rr = 1.0 / (60 + np.argsort(_stable_desc(pr))) + 1.0 / (60 + np.argsort(_stable_desc(dense)))
    f = _Filler(index, beta, stop_on_overflow=False)
    for u in _iter_desc(rr, _first(index, beta)):
        f.add(
            int(u),
            rr[u],
            {"via": "ppr", "ppr": float(pr[u]), "query_concepts": [dv.vocab[c] for c in qc][:5]},
        )
        if f.full or f.used >= beta:
            break
    return f.items


def _e2(index: Snapshot, query: str, dense: np.ndarray, beta: int) -> list[RetrievedItem]:
    """E2GraphRAG's adaptive router on G2ConS structures, three modes as the paper's Algorithm 2:

    * ``local``: two query concepts E_q (lexical match) lie within h hops on the concept graph; the units holding
      both are the candidates, h lowered from ``e2_hops`` until at most ``e2_max_units`` remain; they come first
      (Entity-Aware Ranking: query concepts held, then cosine), the rest by cosine;
    * ``global_occurrence``: query concepts but no such pair: the dense top 2 x ``e2_max_units`` units reranked
      by how many query concepts they hold (Occurrence Ranking; G2ConS keeps no per-unit counts, so a concept
      counts once per unit), then cosine;
    * ``global``: no query concept: dense retrieval."""
    cfg, dv = index.config, index.derived
    eq = query_concepts(index, query)
    f = _Filler(index, beta, stop_on_overflow=False)
    local: list[int] = []
    mode = "global"
    if len(eq) >= 2:
        from scipy.sparse.csgraph import dijkstra

        dist = dijkstra(dv.A, unweighted=True, indices=eq, limit=cfg.retrieval.e2_hops + 0.5)[:, eq]
        units_of = {c: set(_row(dv.unit_concepts, c).tolist()) for c in eq}
        prev: set[int] = set()
        for h in range(cfg.retrieval.e2_hops, 0, -1):
            cand: set[int] = set()
            for a in range(len(eq)):
                for b in range(a + 1, len(eq)):
                    if dist[a, b] <= h:
                        cand |= units_of[eq[a]] & units_of[eq[b]]
            if not cand:
                break
            prev = cand
            if len(cand) <= cfg.retrieval.e2_max_units:
                break
        if prev:
            mode = "local"
            eq_set = set(eq)
            count = {u: len(eq_set.intersection(_row(dv.unit_inc, u).tolist())) for u in prev}
            local = sorted(prev, key=lambda u: (-count[u], -dense[u], u))[: cfg.retrieval.e2_max_units]
    if eq and not local:
        mode = "global_occurrence"
        eq_set = set(eq)
        top = _top_desc(dense, 2 * cfg.retrieval.e2_max_units)
        held = {int(u): len(eq_set.intersection(_row(dv.unit_inc, int(u)).tolist())) for u in top}
        local = sorted((u for u in held if held[u] > 0), key=lambda u: (-held[u], -dense[u], u))
    for u in local:
        f.add(u, dense[u], {"via": f"e2_{mode}", "query_concepts": [dv.vocab[c] for c in eq][:5]})
    for u in _iter_desc(dense, _first(index, beta) + len(local)):
        if f.full or f.used >= beta:
            break
        f.add(u, dense[u], {"via": f"e2_{mode}_dense"})
    return f.items
