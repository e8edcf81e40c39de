"""The unit index: candidate units for a query vector at scale, behind one protocol.

Two kinds satisfy :class:`UnitIndex`: the product-quantised scan (:class:`~g2cons_plugins.arrays.unit_pq.UnitPQ`,
faiss; the default below ``ann_pq_max_units`` units) and the HNSW graph
(:class:`~g2cons_plugins.arrays.unit_hnsw.UnitANN`, usearch). Either one only proposes candidates: the caller scores
them exactly (:mod:`g2cons_plugins.retrieval.scores`), so a ranking differs from the exact scan's only where the
index misses a true top unit. :func:`unit_index_for` chooses the kind
(:meth:`~g2cons_plugins.config.G2ConSConfig.unit_index_kind`) and reuses a loaded index, updates the previous
snapshot's, or builds one.

Like the rest of :mod:`g2cons_plugins.arrays`, this module imports nothing of the package outside it: the stored
state, the config and the previous snapshot are read by their attributes.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal, Protocol

import numpy as np

from .positions import positions_of

__all__ = ["UnitIndex", "kind_of", "unit_index_for"]


class UnitIndex(Protocol):
    """An index over a snapshot's unit vectors (one entry per unit, in the snapshot's unit order)."""

    @property
    def params(self) -> Any:
        """The index's parameters (compared with the config's to reuse a loaded index)."""
        ...

    def __len__(self) -> int:
        """The number of units."""
        ...

    def search(self, query: np.ndarray, k: int) -> np.ndarray | None:
        """Positions of candidate units near ``query``: at least ``k`` where there are that many, unsorted (the
        caller scores them exactly); None when the index cannot be read now (the caller then scans exactly)."""
        ...


def kind_of(index: Any) -> Literal["pq", "hnsw"] | None:
    """``"pq"`` / ``"hnsw"`` for a unit index of that kind, else None."""
    from .unit_hnsw import UnitANN
    from .unit_pq import UnitPQ

    return "pq" if isinstance(index, UnitPQ) else "hnsw" if isinstance(index, UnitANN) else None


def unit_index_for(
    stored: Any,
    config: Any,
    previous: Any = None,
    loaded: Any = None,
    old_units: np.ndarray | None = None,
) -> UnitIndex | None:
    """The index over the unit vectors of ``stored`` from ``engine.ann_threshold`` units on (extra ``[ann]``): a
    product-quantised scan (:mod:`~g2cons_plugins.arrays.unit_pq`) or an HNSW graph
    (:mod:`~g2cons_plugins.arrays.unit_hnsw`), as :meth:`~g2cons_plugins.config.G2ConSConfig.unit_index_kind` says;
    None below it, or when the library is not installed (then every query scans exactly, with a warning).
    ``loaded``: the index read with the snapshot (used as is when it is of that kind with the config's
    parameters); ``previous``: the snapshot this one was made from, whose index is updated by the changed units
    instead of rebuilt; ``old_units``: per unit, its position in ``previous`` (-1: new), where the caller knows
    them."""
    n = len(stored.units)
    kind = config.unit_index_kind(n, kind_of(loaded) or kind_of(getattr(previous, "unit_ann", None)))
    if kind is None:
        return None
    try:
        if kind == "pq":
            try:
                return _unit_pq(stored, config, previous, loaded, old_units)
            except ImportError as e:
                if config.engine.ann_kind != "auto":
                    raise
                warnings.warn(f"{e}; the unit index is the HNSW graph instead", stacklevel=3)
        from .unit_hnsw import unit_ann_for

        return unit_ann_for(stored, config, previous, loaded)
    except ImportError as e:
        warnings.warn(f"{n:,} units but no ANN library ({e}); queries scan every unit", stacklevel=3)
        return None


def _unit_pq(stored: Any, config: Any, previous: Any, loaded: Any, old_units: np.ndarray | None) -> UnitIndex:
    """The product-quantised index: ``loaded`` (its codes reused under new search parameters), ``previous``'s with
    the changed units encoded, or built."""
    from .unit_pq import UnitPQ, unit_pq_for, unit_pq_params

    params = unit_pq_params(config)
    if isinstance(loaded, UnitPQ) and len(loaded) == len(stored.units):
        if loaded.params == params:
            return loaded
        if loaded.params.dims_per_code == params.dims_per_code:  # the codes hold: only the search differs
            return UnitPQ(loaded.centroids, loaded.codes, params)
    prev = getattr(previous, "unit_ann", None)
    if isinstance(prev, UnitPQ) and old_units is None:
        old_units = positions_of(previous.unit_pos, [u.id for u in stored.units])
    return unit_pq_for(stored.unit_vecs, params, prev, old_units)
