"""Filling a token budget: the retrieved item, the filler that appends units until beta, and the ranking of every
unit by score + bonus that the bridge and dense strategies end with."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..arrays.tables import unit_fields_of
from ..errors import positive_int
from ..snapshot import HasSnapshot, Snapshot, as_snapshot
from .lexical import sorted_unique

if TYPE_CHECKING:
    from .scores import DenseScores

__all__ = [
    "EAGER_FACTOR",
    "Filler",
    "Head",
    "RetrievedItem",
    "eager_depth",
    "evidence_bonus",
    "fill_ranked",
    "min_tokens",
    "ranked",
    "ranked_filler",
]

EAGER_FACTOR = 3  # eager_depth: the top units sorted at once, about this many times what fits at the median size

Head = list[tuple[int, float, dict[str, Any]]]
"""Units placed first, in order: (unit position, score, reason)."""


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


def eager_depth(index: Snapshot, beta: int) -> int:
    """How many top units to sort eagerly for a budget: about ``EAGER_FACTOR`` x what fits at the median unit
    size."""
    return int(EAGER_FACTOR * beta / index.stored.median_unit_tokens) + 32


def min_tokens(index: Snapshot) -> int:
    """The smallest unit's token count (1 without units), once per snapshot (its ``memo``): a minimum over every
    unit. (It was ``min(initial=1)``, i.e. never above 1: a filler then tried up to ``MAX_MISSES`` more units, none
    of which could fit, before it stopped, and a ranking asked for more candidates to go on trying.)"""

    def make() -> int:
        tokens = index.stored.unit_tokens
        return max(int(tokens.min()), 1) if len(tokens) else 1

    return index.memo("retrieval.min_tokens", make)


class Filler:
    """Appends units in order until beta. ``stop_on_overflow``: the paper's rule, the walk ends at the first unit
    that would exceed beta. Otherwise a unit that does not fit is skipped and the next tried, until the room left
    is smaller than the smallest unit or ``MAX_MISSES`` units in a row did not fit."""

    MAX_MISSES = 64

    def __init__(
        self, index: Snapshot, beta: int, stop_on_overflow: bool, max_misses: int | None = MAX_MISSES
    ) -> None:
        self.index, self.beta, self.stop = index, beta, stop_on_overflow
        self.max_misses = max_misses
        self._placed: list[tuple[int, float, int, dict[str, Any]]] = []  # (unit, score, tokens, reason)
        self.seen: set[int] = set()
        self.used = 0
        self.misses = 0
        self.full = False
        self.min_tokens = min_tokens(index)

    def add(self, u: int, score: float, reason: dict[str, Any]) -> None:
        """Place unit ``u`` when it fits (a unit placed already is ignored)."""
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
    def done(self) -> bool:
        """Nothing more fits: full, or the budget is used up."""
        return self.full or self.used >= self.beta

    @property
    def positions(self) -> np.ndarray:
        """The positions of the units placed so far, in order (int64)."""
        return np.fromiter((p[0] for p in self._placed), dtype=np.int64, count=len(self._placed))

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
    snap = as_snapshot(index)
    beta = positive_int("beta", beta)
    f = Filler(snap, beta, stop_on_overflow=False, max_misses=None)
    for u in order:
        f.add(int(u), float(scores[u]), dict(reason))
        if f.done:
            break
    return f.items


def evidence_bonus(evidence: Mapping[int, float] | None, scale: float) -> dict[int, float]:
    """Host evidence (unit position -> weight) as a bonus: the positive weights, times ``scale``."""
    return {int(u): float(w) * scale for u, w in (evidence or {}).items() if w > 0}


def ranked(
    index: Snapshot,
    sc: DenseScores,
    bonus: dict[int, float],
    first: Head,
    beta: int,
    reason: Callable[[int], dict[str, Any]],
) -> list[RetrievedItem]:
    """Fill beta with ``first`` (unit, score, reason) in order, then every unit by dense + ``bonus``, best first
    (ties by position). Candidates are the top K units by dense plus the bonus units; only a candidate scoring
    above the K-th dense score is placed before K grows (x4), so the order equals ranking all units."""
    return ranked_filler(index, sc, bonus, first, beta, reason).items


def ranked_filler(
    index: Snapshot,
    sc: DenseScores,
    bonus: dict[int, float],
    first: Head,
    beta: int,
    reason: Callable[[int], dict[str, Any]],
) -> Filler:
    """:func:`ranked`, as the filled :class:`Filler` (its ``items`` and their unit ``positions``)."""
    K = eager_depth(index, beta) + len(first)
    while True:
        f = Filler(index, beta, stop_on_overflow=False)
        for u, score, why in first:
            f.add(u, score, why)
        top = sc.top(K)
        exhaustive = len(top) >= sc.n
        floor = -np.inf if exhaustive else float(sc.of(top[-1:])[0])
        units, scores = _candidates(sc, top, bonus)
        for u, score in zip(units, scores, strict=True):
            if f.done or (not exhaustive and score <= floor):
                break
            f.add(u, score, reason(u))
        if f.done or exhaustive:
            return f
        K *= 4


def _candidates(sc: DenseScores, top: np.ndarray, bonus: dict[int, float]) -> tuple[list[int], list[float]]:
    """``top`` and the bonus units, by dense + bonus descending (ties by position)."""
    if not bonus:  # ``top`` is already in rank order
        return top.tolist(), sc.of(top).astype(np.float64).tolist()
    bonus_units = np.fromiter(bonus, dtype=np.int64, count=len(bonus))
    pool = sorted_unique(np.concatenate((top, bonus_units)))
    final = sc.of(pool).astype(np.float64)
    final[np.searchsorted(pool, bonus_units)] += np.fromiter(bonus.values(), dtype=np.float64, count=len(bonus))
    order = np.lexsort((pool, -final))
    return pool[order].tolist(), final[order].tolist()
