"""A derive's step results moved out of anonymous memory as soon as each step made them: every large array (a
concept vector matrix, the edges, the adjacency's parts, the incidences' indices) is written to an unlinked
temporary file and mapped read-only (:func:`.spill.to_file`), and the pages the later steps read of those maps are
unmapped again at the next step boundary (:func:`.memory.drop_mapped_pages`).

Why: a derive keeps every step's result until the end (the derived state holds them all), so what it holds grows
step by step and each later step's temporaries come on top (measured at 100k passages: ~500 MB of results at the
end, steps peaking 100-450 MB above that; at 1M passages ~4-5 GB of results). As clean file pages, the results
cost the process only the pages a step is reading; the kernel writes the rest back and reclaims it.

:class:`SpillSteps` is the ``keep`` hook of :func:`g2cons_plugins.build.derive` (the method knows nothing of
memory: identity by default). Only arrays of at least :data:`SPILL_STEP_MIN_BYTES` go to files, so a small index
keeps everything in memory, as before. A 0/1 matrix's data is written too, though ``freeze`` would make it a view
of the shared buffer of ones (:func:`g2cons_plugins.arrays.ones.share_ones`): that buffer is as long as the largest
such matrix and stays in memory while any matrix views it (at 1M passages 274 MB, for the life of the index);
its pages in a file cost a step only while it reads them. Where the temporary
directory is in memory (``tmpfs``) or a file cannot be written, the arrays stay where they are. The values, dtypes
and shapes are the same either way: the derived state is equal bit for bit.
"""

from __future__ import annotations

import copy
from dataclasses import fields, is_dataclass, replace
from typing import Any, TypeVar, cast

import numpy as np
import scipy.sparse as sp

from ..arrays.mapped import is_file_backed
from . import spill
from .memory import after_build_step, drop_mapped_pages, release_free_memory, state_arrays

__all__ = ["SPILL_BLOCK_MIN_BYTES", "SPILL_STEP_MIN_BYTES", "SpillSteps", "derive_hooks", "spilled"]

SPILL_STEP_MIN_BYTES = 16 * 2**20  # smaller arrays stay in memory (at 100k passages the largest are 20-80 MB)
# the floor for the candidate edge blocks a derive holds until its threshold is known ("edges.block"): many small
# blocks (at 1M passages ~100 of 1-12 MB an array, 75M candidates, ~820 MB in all)
SPILL_BLOCK_MIN_BYTES = 2**20

_V = TypeVar("_V")
_SPARSE_PARTS = ("data", "indices", "indptr")


class SpillSteps:
    """A derive's ``keep`` hook (module doc): ``keep(step, value)`` returns ``value`` with each of its arrays of at
    least ``min_bytes`` (default :data:`SPILL_STEP_MIN_BYTES`) in a read-only file map, following sparse matrices'
    parts and dataclasses' fields; other values unchanged. Each call first unmaps the pages read since the last
    call of what it spilled before and gives the heap freed since back (:func:`.memory.release_free_memory`). A
    kept array that is a file map already (shared with the state the derive starts from: a refresh's term counts)
    is not written, and the pages read of it are unmapped as the spilled ones are. ``inputs``: the state the
    derive reads (a :class:`~g2cons_plugins.build.Stored`, or any dataclass of arrays): the pages the steps read
    of its file maps (a loaded or streamed index: the unit vectors, 1.5 GB at 1M passages) are unmapped at each
    call too. One object per derive: it holds the maps it made until it goes."""

    def __init__(self, inputs: Any = None, min_bytes: int | None = None) -> None:
        self.min_bytes = SPILL_STEP_MIN_BYTES if min_bytes is None else int(min_bytes)
        self.spilled: list[np.ndarray] = []  # the arrays written to files so far
        self._inputs = [] if inputs is None else [a for a in state_arrays(inputs) if _mapped(a)]
        self._mapped: list[np.ndarray] = []  # kept values' arrays that were file maps already (shared with a state)
        self._freed = False

    def __call__(self, step: str, value: _V) -> _V:
        """``value`` (the result of ``step``) with its large arrays file-backed (class doc). A block of candidate
        edges (``"edges.block"``, held by the edge step until its threshold is known and freed by it) goes to
        files from :data:`SPILL_BLOCK_MIN_BYTES`, in the middle of a step: nothing is unmapped then, and its maps
        go with the block."""
        if step == "edges.block":
            return cast(_V, SpillSteps(min_bytes=min(self.min_bytes, SPILL_BLOCK_MIN_BYTES))._keep(value))
        drop_mapped_pages([*self.spilled, *self._inputs, *self._mapped])  # what the steps since the last call read
        if self._freed:  # the arrays spilled last time were freed since (the caller held them until it returned)
            release_free_memory()
            self._freed = False
        return cast(_V, self._keep(value))

    def after_step(self, step: str) -> None:
        """The derive's ``after_step`` hook to go with this ``keep``: :func:`.memory.after_build_step`, and after
        each block of vectors the concept vector step read (``"vectors.block"``,
        :func:`g2cons_plugins.graph.concept_vectors`) the pages read of the inputs' file maps unmapped (at 1M
        passages the unit vectors: 1.5 GB); once the edge step has made its products' inputs (``"edges.plan"``),
        the pages read of every map (the incidence it copied)."""
        if step == "vectors.block":
            drop_mapped_pages(self._inputs)
        elif step == "edges.plan":  # the products' inputs are copied: the incidence's pages are not read again
            drop_mapped_pages([*self.spilled, *self._inputs, *self._mapped])
        after_build_step(step)

    def _keep(self, value: Any) -> Any:
        if isinstance(value, np.ndarray):
            return self._array(value)
        if sp.issparse(value):
            return self._sparse(value)
        if is_dataclass(value) and not isinstance(value, type):
            changed = {}
            for f in fields(value):
                old = getattr(value, f.name)
                new = self._keep(old)
                if new is not old:
                    changed[f.name] = new
            return replace(value, **changed) if changed else value
        return value

    def _sparse(self, M: Any) -> Any:
        parts = {k: getattr(M, k) for k in _SPARSE_PARTS if isinstance(getattr(M, k, None), np.ndarray)}
        moved = {k: self._array(a) for k, a in parts.items()}
        if all(moved[k] is parts[k] for k in parts):
            return M
        out = copy.copy(M)  # shallow: the same flags (sorted indices, canonical format), no check or cast
        for k, a in moved.items():
            setattr(out, k, a)
        return out

    def _array(self, a: np.ndarray) -> np.ndarray:
        if is_file_backed(a):  # e.g. a refresh's term counts, shared with the state it refreshes: unmapped too
            self._mapped.append(a)
            return a
        if a.nbytes < self.min_bytes or a.size == 0:
            return a
        out = spill.to_file(a)
        if out is not a:
            self.spilled.append(out)
            self._freed = True
        return out


def derive_hooks(inputs: Any) -> dict[str, Any]:
    """The engine's two hooks for a derive over ``inputs`` (a stored state): ``keep`` a :class:`SpillSteps`,
    ``after_step`` its :meth:`SpillSteps.after_step`; as keyword arguments of :func:`g2cons_plugins.build.derive`
    or :func:`g2cons_plugins.snapshot.make_snapshot`."""
    keep = SpillSteps(inputs)
    return {"after_step": keep.after_step, "keep": keep}


def spilled(value: _V, min_bytes: int | None = None) -> tuple[_V, int]:
    """``value`` (an array, a sparse matrix or a dataclass of them, followed down) with each in-memory array of at
    least ``min_bytes`` (default :data:`SPILL_STEP_MIN_BYTES`) in a read-only file map, as :class:`SpillSteps` keeps
    a step's result, and how many arrays were written; ``value`` itself when there was nothing to move. The same
    values, dtypes and shapes."""
    keep = SpillSteps(min_bytes=min_bytes)
    out = keep._keep(value)
    return cast(_V, out), len(keep.spilled)


def _mapped(a: Any) -> bool:
    """``a`` is an array or sparse matrix with a part that is a view of a file map (what there is to unmap)."""
    if sp.issparse(a):
        return any(is_file_backed(getattr(a, k, None)) for k in _SPARSE_PARTS)
    return isinstance(a, np.ndarray) and is_file_backed(a)
