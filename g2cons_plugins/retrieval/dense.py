"""``strategy="dense"``: cos(phi(q), unit) alone (Text-RAG over the same units; a baseline and a fallback), plus
the host evidence of score fusion."""

from __future__ import annotations

from .filling import RetrievedItem, evidence_bonus, ranked
from .query import Query
from .scores import spread_scale

__all__ = ["dense"]


def dense(q: Query) -> list[RetrievedItem]:
    """Every unit by cosine (+ host evidence, in the query's spread when ``score_scale="spread"``)."""
    ev = evidence_bonus(q.evidence, spread_scale(q.snap, q.scores))
    return ranked(q.snap, q.scores, ev, [], q.beta, lambda u: {"via": "host" if u in ev else "dense"})
