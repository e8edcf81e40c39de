"""The strategy table: each strategy of ``G2ConSConfig.strategy`` is a function of a :class:`~.query.Query`,
chosen once by name, and says whether it accepts host evidence (score fusion).

- ``"bridge"`` (default, :mod:`.bridge`): dense seeds, then the units sharing a rare name with them, with BM25
  and the names the question writes;
- ``"paper"`` (:mod:`.paper`): the paper's concept walk (Section 3.2.1);
- ``"dense"`` (:mod:`.dense`): cosine alone (Text-RAG over the same units);
- ``"ppr"`` (:mod:`.ppr`): personalized PageRank over concepts and units, fused with dense (TERAG);
- ``"e2"`` (:mod:`.e2`): E2GraphRAG's adaptive router.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import InputError
from .bridge import bridge
from .dense import dense
from .e2 import e2
from .filling import RetrievedItem
from .paper import paper
from .ppr import ppr
from .query import Query

__all__ = ["EVIDENCE_STRATEGIES", "STRATEGIES", "TABLE", "Strategy", "check_evidence", "lookup"]


@dataclass(frozen=True)
class Strategy:
    """A retrieval strategy: its name, its function, and whether it accepts host evidence."""

    name: str
    run: Callable[[Query], list[RetrievedItem]]
    evidence: bool = False


TABLE: dict[str, Strategy] = {
    s.name: s
    for s in (
        Strategy("bridge", bridge, evidence=True),
        Strategy("paper", paper),
        Strategy("dense", dense, evidence=True),
        Strategy("ppr", ppr),
        Strategy("e2", e2),
    )
}
STRATEGIES = tuple(TABLE)
EVIDENCE_STRATEGIES = tuple(name for name, s in TABLE.items() if s.evidence)
"""The strategies that accept host evidence (score fusion): ``("bridge", "dense")``."""


def lookup(name: str) -> Strategy:
    """The strategy of this name (InputError for an unknown one)."""
    found = TABLE.get(name) if isinstance(name, str) else None
    if found is None:
        raise InputError(f"unknown strategy {name!r}; choose one of {STRATEGIES}")
    return found


def check_evidence(s: Strategy) -> None:
    """InputError when ``s`` does not accept host evidence."""
    if not s.evidence:
        takes = " or ".join(repr(n) for n in EVIDENCE_STRATEGIES)
        raise InputError(f"evidence (score fusion) needs strategy {takes}, not {s.name!r}")
