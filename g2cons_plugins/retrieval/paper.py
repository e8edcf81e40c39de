"""The paper's concept walk, ``strategy="paper"`` (Section 3.2.1; forced by ``mode="paper"``).

Top-k concepts by cos(phi(q), Vector(w)); *local reranking*: for each seed concept in similarity order, its units
reranked by cos(phi(q), unit) are appended; then BFS up to N hops over the concept graph from the seeds; *global
reranking*: every unit of the expanded concepts, reranked together by cos(phi(q), unit). The walk ends the first
time a unit would push the context over beta. ``rerank="naive"`` (Table 4 ablation D) pools the seed and expanded
concepts' units and reranks them together.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from ..arrays.wide_rows import Matrix, row, rows_union
from .filling import Filler, RetrievedItem
from .order import stable_desc, top_desc
from .query import Query

__all__ = ["bfs", "paper", "units_of"]


def paper(q: Query) -> list[RetrievedItem]:
    """The paper's walk: local reranking seed by seed, then global reranking of the expanded concepts' units."""
    cfg, dv = q.snap.config, q.snap.derived
    dense = q.scores.full()
    sims = dv.concept_vecs @ q.vector
    seeds = top_desc(sims, cfg.k)
    f = Filler(q.snap, q.beta, stop_on_overflow=True)
    if cfg.retrieval.rerank == "naive":  # ablation D: seed and expanded concepts' units pooled and reranked together
        pool = units_of(dv.unit_concepts, list(bfs(dv.A, seeds, cfg.n_hops)))
        for u in pool[stable_desc(dense[pool])]:
            f.add(int(u), dense[u], {"via": "naive", "hop": 0})
            if f.full:
                break
        return f.items
    for c in seeds:  # local reranking, seed by seed
        us = row(dv.unit_concepts, c)
        for u in us[stable_desc(dense[us])]:
            f.add(int(u), dense[u], {"via": "local", "concept": dv.vocab[c], "concept_sim": float(sims[c]), "hop": 0})
        if f.full:
            return f.items
    hop_of = bfs(dv.A, seeds, cfg.n_hops)
    expanded = [c for c, h in hop_of.items() if h > 0]
    pool = units_of(dv.unit_concepts, expanded)
    for u in pool[stable_desc(dense[pool])]:  # global reranking
        f.add(int(u), dense[u], {"via": "global", "n_expanded_concepts": len(expanded)})
        if f.full:
            break
    return f.items


def bfs(A: sp.csr_matrix, seeds: Sequence[int] | np.ndarray, hops: int) -> dict[int, int]:
    """Concept -> hop distance (<= ``hops``) from the seeds over the concept graph, seeds at 0."""
    hop_of: dict[int, int] = {int(c): 0 for c in seeds}
    frontier = list(hop_of)
    for hop in range(1, hops + 1):
        nxt = []
        for c in frontier:
            for nb in row(A, c).tolist():
                if nb not in hop_of:
                    hop_of[nb] = hop
                    nxt.append(nb)
        frontier = nxt
    return hop_of


def units_of(unit_concepts: Matrix, concepts: Sequence[int] | np.ndarray) -> np.ndarray:
    """The units holding any of ``concepts`` (ascending)."""
    if len(concepts) == 0:
        return np.zeros(0, dtype=np.int64)
    return rows_union(unit_concepts, concepts)
