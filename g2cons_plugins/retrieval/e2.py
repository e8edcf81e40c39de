"""``strategy="e2"`` (a baseline): E2GraphRAG's adaptive router on G2ConS structures, three modes as the paper's
Algorithm 2:

* ``local``: two query concepts E_q (lexical match) lie within h hops on the concept graph; the units holding
  both are the candidates, h lowered from ``e2_hops`` until at most ``e2_max_units`` remain; they come first
  (Entity-Aware Ranking: query concepts held, then cosine), the rest by cosine;
* ``global_occurrence``: query concepts but no such pair: the dense top 2 x ``e2_max_units`` units reranked
  by how many query concepts they hold (Occurrence Ranking; G2ConS keeps no per-unit counts, so a concept
  counts once per unit), then cosine;
* ``global``: no query concept: dense retrieval.
"""

from __future__ import annotations

import numpy as np

from ..arrays.wide_rows import row
from ..snapshot import Snapshot
from .filling import Filler, RetrievedItem, eager_depth
from .order import iter_desc, top_desc
from .query import Query, query_concepts

__all__ = ["e2", "local_units", "occurrence_units"]


def e2(q: Query) -> list[RetrievedItem]:
    """The router's units first (local, else by occurrence), then every unit by cosine."""
    index, dv = q.snap, q.snap.derived
    dense = q.scores.full()
    eq = query_concepts(index, q.text)
    local = local_units(index, eq, dense) if len(eq) >= 2 else []
    mode = "local" if local else "global"
    if eq and not local:
        mode = "global_occurrence"
        local = occurrence_units(index, eq, dense)
    f = Filler(index, q.beta, stop_on_overflow=False)
    for u in local:
        f.add(u, dense[u], {"via": f"e2_{mode}", "query_concepts": [dv.vocab[c] for c in eq][:5]})
    for u in iter_desc(dense, eager_depth(index, q.beta) + len(local)):
        if f.done:
            break
        f.add(u, dense[u], {"via": f"e2_{mode}_dense"})
    return f.items


def local_units(index: Snapshot, eq: list[int], dense: np.ndarray) -> list[int]:
    """The units holding two query concepts within h hops, h lowered from ``e2_hops`` until at most
    ``e2_max_units`` remain (the last non-empty set), by query concepts held, then cosine; [] when none."""
    from scipy.sparse.csgraph import dijkstra

    opt, dv = index.config.retrieval, index.derived
    dist = dijkstra(dv.A, unweighted=True, indices=eq, limit=opt.e2_hops + 0.5)[:, eq]
    units_of = {c: set(row(dv.unit_concepts, c).tolist()) for c in eq}
    prev: set[int] = set()
    for h in range(opt.e2_hops, 0, -1):
        cand: set[int] = set()
        for a in range(len(eq)):
            for b in range(a + 1, len(eq)):
                if dist[a, b] <= h:
                    cand |= units_of[eq[a]] & units_of[eq[b]]
        if not cand:
            break
        prev = cand
        if len(cand) <= opt.e2_max_units:
            break
    eq_set = set(eq)
    count = {u: len(eq_set.intersection(row(dv.unit_inc, u).tolist())) for u in prev}
    return sorted(prev, key=lambda u: (-count[u], -dense[u], u))[: opt.e2_max_units]


def occurrence_units(index: Snapshot, eq: list[int], dense: np.ndarray) -> list[int]:
    """The dense top 2 x ``e2_max_units`` units that hold a query concept, by how many they hold, then cosine."""
    eq_set = set(eq)
    top = top_desc(dense, 2 * index.config.retrieval.e2_max_units)
    held = {int(u): len(eq_set.intersection(row(index.derived.unit_inc, int(u)).tolist())) for u in top}
    return sorted((u for u in held if held[u] > 0), key=lambda u: (-held[u], -dense[u], u))
