"""``strategy="ppr"`` (a baseline): personalized PageRank over the concept graph plus concept-unit links, restarted
half on the query's concepts (TERAG: weight s(u)/f(u)) and half on the top dense units, fused with dense by
reciprocal rank."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..arrays.wide_rows import as_csr
from ..graph import pagerank
from .filling import Filler, RetrievedItem, eager_depth
from .order import iter_desc, stable_desc, top_desc
from .query import Query, query_concepts

__all__ = ["ppr"]


def ppr(q: Query) -> list[RetrievedItem]:
    """Units by the reciprocal-rank fusion of personalized PageRank and cosine."""
    index, text = q.snap, q.text
    cfg, dv, st = index.config, index.derived, index.stored
    dense = q.scores.full()
    n_c, n_u = len(dv.vocab), len(st.units)
    qc = query_concepts(index, text)
    # graph over concepts + units: concept edges (Dice) and concept-unit links (weight 1)
    B = as_csr(dv.unit_concepts)
    H = sp.bmat([[dv.A, B], [B.T, None]], format="csr")
    p = np.zeros(n_c + n_u)
    if qc:
        w = 1.0 / np.maximum(dv.df[qc], 1)
        p[qc] = 0.5 * w / w.sum()
    top = top_desc(dense, 10)
    p[n_c + top] += (0.5 if qc else 1.0) / len(top)
    pr = pagerank(H, damping=cfg.retrieval.ppr_damping, personalization=p)[n_c:]
    rr = 1.0 / (60 + np.argsort(stable_desc(pr))) + 1.0 / (60 + np.argsort(stable_desc(dense)))
    f = Filler(index, q.beta, stop_on_overflow=False)
    for u in iter_desc(rr, eager_depth(index, q.beta)):
        f.add(
            int(u),
            rr[u],
            {"via": "ppr", "ppr": float(pr[u]), "query_concepts": [dv.vocab[c] for c in qc][:5]},
        )
        if f.done:
            break
    return f.items
