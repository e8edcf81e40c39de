"""One question as every strategy reads it (:class:`Query`), and the concepts it writes."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ..snapshot import HasSnapshot, Snapshot, as_snapshot
from .scores import DenseScores

__all__ = ["MAX_QUERY_CONCEPTS", "Query", "checked_vector", "query_concepts"]

MAX_QUERY_CONCEPTS = 32  # concepts of one question used by e2 / ppr (the rarest; E2's pairs grow as their square)


@dataclass(frozen=True)
class Query:
    """A question for one snapshot: its text (at most :data:`~g2cons_plugins.snapshot.MAX_QUERY_CHARS` characters),
    phi(text), the budget beta, its dense scores and the host evidence (unit position -> bonus; score fusion)."""

    snap: Snapshot
    text: str
    vector: np.ndarray
    beta: int
    scores: DenseScores
    evidence: Mapping[int, float] | None = None


def checked_vector(v: Any, dim: int) -> np.ndarray:
    """A query vector given by the caller, as float32 (InputError unless finite, non-zero and of ``dim``)."""
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


def query_concepts(index: HasSnapshot, query: str) -> list[int]:
    """Concepts written in the query (lexical match, same analyzer as the corpus), ascending; of more than
    :data:`MAX_QUERY_CONCEPTS`, the rarest that many (fewest units; ties: the lower id), with a warning."""
    from ..concepts import incidence

    snap = as_snapshot(index)
    row = incidence([query], snap.derived.vocab, snap.config)
    found = np.asarray(row.indices, dtype=np.int64)
    if len(found) > MAX_QUERY_CONCEPTS:
        warnings.warn(
            f"the question holds {len(found):,} concepts: only the {MAX_QUERY_CONCEPTS} rarest are used "
            f"(g2cons_plugins.retrieval.MAX_QUERY_CONCEPTS)",
            UserWarning,
            stacklevel=3,
        )
        df = np.asarray(snap.derived.df)[found]
        found = np.sort(found[np.lexsort((found, df))[:MAX_QUERY_CONCEPTS]])
    out: list[int] = found.tolist()
    return out
