"""The default strategy, ``"bridge"``: dense seeds, then the units that share a rare name with them.

The calibration showed the paper's walk fills the budget from ~4 frequent seed concepts and loses to plain dense
retrieval. This strategy keeps the ``n_seed_units`` (3) best units by cos(phi(q), unit) first, takes their *bridge
concepts*: names (words written capitalised in most of their occurrences, from KET-RAG's all-words vocabulary when
``bridge_vocab="all_words"``, else from the TF-IDF concepts) that occur in 2..``bridge_max_df`` (5) chunks, i.e.
rare enough to identify one entity. Every unit containing a bridge concept gets a bonus ``bridge_bonus`` (0.2) x w,
where w is the score of the best seed that contributed the bridge relative to the top seed
(``bridge_link="seed_score"``; ``"indicator"``: w = 1). All other units are ranked by cos(phi(q), unit) + bonus.
``bridge_rounds`` (2) repeats this from the best bridged units, which reaches the third passage of a 3-hop
question. It follows concept-to-chunk links, not concept-concept edges: in the paper walk the edges only matter
when k is small, and never lift it to dense (docs/decisions.md).

Lexical evidence (:mod:`~g2cons_plugins.retrieval.lexical`, BM25 over the units from the concept analyzer's words):
``lexical_weight`` w > 0 scores every unit cos + w x BM25 / max BM25 (seeds too unless ``hybrid_seeds=False``),
and ``lexical_seeds`` adds the best BM25 units to the seeds that bridges start from. Names the query writes
(``entity_weight``, :mod:`~g2cons_plugins.retrieval.name_head`) pick the first ``n_seed_units`` places.
``score_scale="spread"`` measures ``bridge_bonus`` and ``lexical_weight`` in the query's spread of cosines
(:func:`~g2cons_plugins.retrieval.scores.spread_scale`).

The steps: :func:`bridge` (the hybrid scores) -> :func:`walk`: :func:`seed_units` -> :func:`bridge_rounds`
(:func:`bridge_words`, :func:`reached_units` per round) -> the head (seeds, or :func:`~.name_head.name_head`) ->
:func:`~g2cons_plugins.retrieval.filling.ranked` with the bonus -> the first passages in the linked order
(:mod:`~g2cons_plugins.retrieval.linked`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..arrays.wide_rows import Matrix, row
from ..snapshot import Snapshot
from .filling import Filler, Head, RetrievedItem, eager_depth, evidence_bonus, ranked_filler
from .lexical import QueryBM25
from .linked import linked_head
from .name_head import name_head
from .order import top_desc
from .query import Query
from .scores import DenseScores, HybridScores, spread_scale

if TYPE_CHECKING:
    from ..config import RetrievalOptions

__all__ = [
    "Reach",
    "Vocabulary",
    "bridge",
    "bridge_rounds",
    "bridge_words",
    "lexical_seeds",
    "reached_units",
    "seed_units",
    "vocabulary",
    "walk",
]


class Vocabulary(NamedTuple):
    """The words bridges are made of: their names, unit -> word and word -> unit incidences, chunk counts, and
    which of them are names (None: all)."""

    words: Sequence[str]
    unit_words: Matrix
    word_units: Matrix
    df: np.ndarray
    is_name: np.ndarray | None


@dataclass
class Reach:
    """What the rounds reached: unit -> bonus and round (hop), and each round's bridge words."""

    bonus: dict[int, float] = field(default_factory=dict)
    hop_of: dict[int, int] = field(default_factory=dict)
    rounds: list[set[int]] = field(default_factory=list)


def bridge(q: Query) -> list[RetrievedItem]:
    """The bridge strategy: :func:`walk` over the hybrid scores when lexical evidence is on, else the dense ones;
    the first passages in the linked order (:mod:`~g2cons_plugins.retrieval.linked`)."""
    opt = q.snap.config.retrieval
    scale = spread_scale(q.snap, q.scores)
    lw = opt.lexical_weight
    if not (lw > 0 or opt.lexical_seeds > 0):
        filled = walk(q, q.scores, None, q.scores, scale)
    else:
        # with a vector index the hybrid term is computed on candidates only (HybridScores), so a query stays a search
        lex = q.snap.lexical.query(q.text)  # BM25 read from the query words' postings as far as needed
        try:
            hyb = HybridScores(q.scores, lex, lw * scale) if lw > 0 else q.scores
            filled = walk(q, hyb, lex, hyb if opt.hybrid_seeds else q.scores, scale)
        finally:
            lex.close()
    return linked_head(q.snap, q.text, filled.items, filled.positions)


def walk(q: Query, sc: DenseScores, lexical: QueryBM25 | None, seed_sc: DenseScores, scale: float) -> Filler:
    """Seeds by ``seed_sc`` (+ the best BM25 units), bridges from them, then every unit by ``sc`` + bonus."""
    snap, opt = q.snap, q.snap.config.retrieval
    voc = vocabulary(snap)
    named = opt.entity_weight > 0 and bool(q.text)
    # the ranking asks for at most this many best units later: one search of a vector index serves both
    sc.expect(eager_depth(snap, q.beta) + opt.n_seed_units * (2 if named else 1) + opt.lexical_seeds)
    seeds, n_dense = seed_units(seed_sc, lexical, opt)
    seed_scores = sc.of(np.asarray(seeds, dtype=np.int64))
    ref = max(float(seed_scores.max()), 1e-6) if seeds else 1.0
    score_of: dict[int, float] = dict(zip(seeds, seed_scores.tolist(), strict=True))
    reach = bridge_rounds(sc, voc, seeds, score_of, ref, opt, scale)
    ev = evidence_bonus(q.evidence, scale)
    for u, w in ev.items():  # seeds are placed first whatever their bonus
        reach.bonus[u] = reach.bonus.get(u, 0.0) + w
    first: Head = [
        (u, score_of[u], {"via": "seed", "seed_rank": rank, "hop": 0, "source": "dense" if rank < n_dense else "bm25"})
        for rank, u in enumerate(seeds)
    ]
    if named:
        first = name_head(snap, seed_sc, q.text, scale, first, score_of)
    return ranked_filler(snap, sc, reach.bonus, first, q.beta, _reasons(voc, reach, ev))


def vocabulary(snap: Snapshot) -> Vocabulary:
    """The bridge words of ``bridge_vocab``: every capitalised word (``"all_words"``), or the concepts that are
    names (``"concepts"``)."""
    dv = snap.derived
    if snap.config.retrieval.bridge_vocab == "all_words":
        return Vocabulary(dv.names, dv.unit_names, dv.name_units, dv.name_df, None)
    return Vocabulary(dv.vocab, dv.unit_inc, dv.unit_concepts, dv.df, dv.name_share >= 0.5)


def seed_units(seed_sc: DenseScores, lexical: QueryBM25 | None, opt: RetrievalOptions) -> tuple[list[int], int]:
    """The seed units (the ``n_seed_units`` best by ``seed_sc``, then the ``lexical_seeds`` best by BM25) and how
    many of them came from the scores."""
    seeds: list[int] = seed_sc.top(opt.n_seed_units).tolist()
    n_dense = len(seeds)
    if lexical is not None and opt.lexical_seeds > 0:  # the best BM25 units seed bridges too
        seeds += lexical_seeds(lexical, seeds, opt.lexical_seeds)
    return seeds, n_dense


def lexical_seeds(lexical: QueryBM25 | tuple[np.ndarray, np.ndarray], seeds: list[int], n: int) -> list[int]:
    """The ``n`` best units by BM25 that are not ``seeds`` (``lexical``: the query's BM25, or the units with a
    query word ascending and their BM25, :meth:`~g2cons_plugins.retrieval.lexical.LexicalIndex.postings`; by score
    descending, ties by position)."""
    units, vals = lexical.best(n + len(seeds)) if isinstance(lexical, QueryBM25) else lexical
    hit = np.flatnonzero(vals > 0)  # only units with a query word can be lexical seeds
    have = set(seeds)
    lex_top = units[hit[top_desc(vals[hit], n + len(seeds))]].tolist()
    return [u for u in lex_top if u not in have][:n]


def bridge_rounds(
    sc: DenseScores,
    voc: Vocabulary,
    seeds: list[int],
    score_of: dict[int, float],
    ref: float,
    opt: RetrievalOptions,
    scale: float,
) -> Reach:
    """``bridge_rounds`` rounds from the seeds: each gives the units holding a bridge word of the frontier a bonus
    (``bridge_bonus`` x ``scale`` x the word's weight); the next frontier is the best ``n_seed_units`` of them.
    ``score_of`` gets the scores of the units reached."""
    reach = Reach()
    frontier, taken = seeds, set(seeds)
    for rnd in range(1, opt.bridge_rounds + 1):
        bw = bridge_words(voc, frontier, score_of, ref, opt)
        if not bw:
            break
        reach.rounds.append(set(bw))
        reached = reached_units(voc, bw)
        new = [u for u in reached if u not in taken and u not in reach.bonus and reached[u] > 0]
        score_of.update(zip(new, sc.of(np.asarray(new, dtype=np.int64)).tolist(), strict=True))
        for u in new:
            reach.bonus[u] = opt.bridge_bonus * scale * reached[u]
            reach.hop_of[u] = rnd
        new.sort(key=lambda u: (-(score_of[u] + reach.bonus[u]), u))
        frontier = new[: opt.n_seed_units]
        taken.update(frontier)
    return reach


def bridge_words(
    voc: Vocabulary, frontier: list[int], score_of: dict[int, float], ref: float, opt: RetrievalOptions
) -> dict[int, float]:
    """Bridge word -> the weight of the best frontier unit holding it (its score / ``ref``, or 1 with
    ``bridge_link="indicator"``): the names of the frontier in 2..``bridge_max_df`` chunks."""
    bw: dict[int, float] = {}
    for u in frontier:
        w = score_of[u] / ref if opt.bridge_link == "seed_score" else 1.0
        for c in row(voc.unit_words, u).tolist():
            if 2 <= voc.df[c] <= opt.bridge_max_df and (voc.is_name is None or voc.is_name[c]) and w > bw.get(c, 0.0):
                bw[c] = w
    return bw


def reached_units(voc: Vocabulary, bw: dict[int, float]) -> dict[int, float]:
    """Unit -> the largest weight of a bridge word it holds."""
    reached: dict[int, float] = {}
    for c, w in bw.items():
        for u in row(voc.word_units, c).tolist():
            if w > reached.get(u, 0.0):
                reached[u] = w
    return reached


def _reasons(voc: Vocabulary, reach: Reach, ev: dict[int, float]) -> Callable[[int], dict[str, Any]]:
    def reason(u: int) -> dict[str, Any]:
        if u not in reach.hop_of:
            return {"via": "host" if u in ev else "dense", "hop": 0}
        hop = reach.hop_of[u]
        names = [voc.words[c] for c in row(voc.unit_words, u).tolist() if c in reach.rounds[hop - 1]]
        return {"via": "bridge", "bridge_concepts": names[:5], "hop": hop}

    return reason
