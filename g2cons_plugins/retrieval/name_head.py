"""The head of the bridge strategy's list for a question that writes names (:mod:`.entities`): each named entity's
passage first."""

from __future__ import annotations

import numpy as np

from ..snapshot import Snapshot
from .entities import name_bonus
from .filling import Head
from .lexical import sorted_unique
from .scores import DenseScores

__all__ = ["covering", "name_head"]


def name_head(
    index: Snapshot, sc: DenseScores, query: str, scale: float, first: Head, score_of: dict[int, float]
) -> Head:
    """The head of the list for a query that writes names (:mod:`g2cons_plugins.retrieval.entities`):
    ``n_seed_units`` units chosen one at a time by score + the bonus of the names no chosen unit holds yet, then the
    seeds not chosen. The seeds (and so the bridges) stay those of the scores alone; the rest of the ranking is
    unchanged. ``score_of`` gets the scores of the units chosen."""
    opt = index.config.retrieval
    per_name = name_bonus(index, query, opt.entity_weight * opt.bridge_bonus * scale, opt.entity_head_share)
    if not per_name:
        return first
    picks = covering(sc, opt.n_seed_units, per_name)
    score_of.update(zip(picks, sc.of(np.asarray(picks, dtype=np.int64)).tolist(), strict=True))
    named = {u for per in per_name.values() for u in per}
    head = [
        (u, score_of[u], {"via": "seed", "seed_rank": r, "hop": 0, "source": "name" if u in named else "dense"})
        for r, u in enumerate(picks)
    ]
    chosen = set(picks)
    return head + [t for t in first if t[0] not in chosen]


def covering(sc: DenseScores, n: int, per_name: dict[str, dict[int, float]]) -> list[int]:
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
