"""Concept-path retrieval (Section 3.2.1): the units for a question within a token budget beta.

:func:`retrieve` reads one snapshot, embeds the question, and runs the strategy chosen by name from the table in
:mod:`~g2cons_plugins.retrieval.strategies`: ``"bridge"`` (the default, :mod:`~g2cons_plugins.retrieval.bridge`),
``"paper"`` (the paper's walk, :mod:`~g2cons_plugins.retrieval.paper`) and the baselines ``"dense"``, ``"ppr"`` and
``"e2"``. Every strategy ranks units by the scores of :mod:`~g2cons_plugins.retrieval.scores` (exact, or via the unit
index at scale) and fills beta with :mod:`~g2cons_plugins.retrieval.filling`. BM25 over the units is
:mod:`~g2cons_plugins.retrieval.lexical`; the names a question writes, :mod:`~g2cons_plugins.retrieval.entities`.

Query with no known concept: concepts are matched by vector, so every query still gets its nearest concepts and
units; the lexical ``query_concepts`` in each item's reason is then empty.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..errors import positive_int
from ..snapshot import HasSnapshot, as_snapshot, capped_query
from ..text.language import check_query
from .filling import RetrievedItem, fill_ranked
from .query import MAX_QUERY_CONCEPTS, Query, checked_vector, query_concepts
from .scores import SPREAD_REF, SPREAD_SAMPLE, DenseScores, HybridScores, score_spread
from .strategies import EVIDENCE_STRATEGIES, STRATEGIES, check_evidence, lookup

__all__ = [
    "EVIDENCE_STRATEGIES",
    "MAX_QUERY_CONCEPTS",
    "SPREAD_REF",
    "SPREAD_SAMPLE",
    "STRATEGIES",
    "DenseScores",
    "HybridScores",
    "RetrievedItem",
    "fill_ranked",
    "query_concepts",
    "retrieve",
    "score_spread",
]


def retrieve(
    index: HasSnapshot,
    query: str,
    beta: int | None = None,
    strategy: str | None = None,
    query_vector: np.ndarray | None = None,
    evidence: Mapping[int, float] | None = None,
) -> list[RetrievedItem]:
    """The concept path: units for ``query`` within ``beta`` tokens, by ``strategy`` (default: the config's; see
    :mod:`~g2cons_plugins.retrieval.strategies`).

    ``index``: a :class:`~g2cons_plugins.snapshot.Snapshot` or a ``G2ConSIndex`` (its current snapshot is read
    once). ``query_vector``: phi(query) when already computed (finite, of the embedder's dimension).
    ``evidence``: unit position -> a bonus from outside the concept path (score fusion: the host KG returned the
    unit's chunk), in the same units as ``bridge_bonus`` (scaled by the query's spread with ``score_scale``) and
    added to the unit's score; strategies ``bridge`` and ``dense`` only."""
    snap = as_snapshot(index)
    beta = snap.config.beta if beta is None else positive_int("beta", beta)
    chosen = lookup(strategy or snap.config.strategy)
    qv = snap.embed_query(query) if query_vector is None else checked_vector(query_vector, snap.embedder.dim)
    query = capped_query(query)  # names, concepts and BM25 read at most MAX_QUERY_CHARS characters
    check_query(snap, query)
    sc = DenseScores(snap, qv)
    if evidence:
        check_evidence(chosen)
    return chosen.run(Query(snap, query, qv, beta, sc, evidence))

