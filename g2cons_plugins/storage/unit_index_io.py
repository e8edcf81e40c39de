"""Saving and loading a snapshot's unit index (:mod:`g2cons_plugins.arrays.unit_index`) in an index version folder.

The HNSW graph (:mod:`~g2cons_plugins.arrays.unit_hnsw`) is written in usearch's own format with the units' keys as
``.npy`` (format ``g2cons-unit-ann/1``), so a load memory-maps it; the product-quantised scan
(:mod:`~g2cons_plugins.arrays.unit_pq`) as its codes and codebook (``.npy``, format ``g2cons-unit-pq/1``), its
codes memory-mapped and packed. Every file is checked against its manifest entry (:func:`.index_entry.entry_params`)
and its header (:func:`~g2cons_plugins.arrays.npy_file.load_npy`) before anything is read or mapped.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from ..arrays.npy_file import load_npy
from ..arrays.unit_hnsw import (
    UNIT_ANN_FORMAT,
    UNIT_ANN_GRAPH,
    UNIT_ANN_KEYS,
    UnitANN,
    UnitANNParams,
    restored_unit_ann,
    save_unit_graph,
)
from ..arrays.unit_pq import (
    NBITS,
    UNIT_PQ_CENTROIDS,
    UNIT_PQ_CODES,
    UNIT_PQ_FORMAT,
    UnitPQ,
    UnitPQParams,
    subspaces,
)
from ..errors import PersistError
from .index_entry import entry_params
from .memory import drop_mapped_pages

__all__ = ["read_unit_ann", "read_unit_pq", "write_unit_ann", "write_unit_pq"]

Write = Callable[[Path, Callable[[Any], Any]], None]


def write_unit_ann(ann: UnitANN, folder: Path, write: Write) -> dict[str, Any]:
    """Write ``ann`` into an index version folder (``write(path, fn)`` creates, fills and fsyncs a file): the
    graph in usearch's own format and the keys as ``.npy``. Returns the manifest entry (format, count, params)."""
    path = folder / UNIT_ANN_GRAPH
    if path.exists():
        raise PersistError(f"{path} exists; a unit index is only written into a new version folder")
    save_unit_graph(ann, path)
    with path.open("rb+") as fh:
        os.fsync(fh.fileno())
    write(folder / UNIT_ANN_KEYS, lambda fh: np.save(fh, np.asarray(ann.keys), allow_pickle=False))
    return {"format": UNIT_ANN_FORMAT, "n": len(ann), "params": asdict(ann.params)}


def read_unit_ann(folder: Path, entry: Any, n_units: int, dim: int, mmap: bool = True) -> UnitANN:
    """The unit index saved by :func:`write_unit_ann` (checksums are checked by the caller), memory-mapped unless
    ``mmap=False``; every mismatch with the manifest entry or the snapshot raises :class:`PersistError`."""
    params = entry_params(folder, entry, "unit_ann", UNIT_ANN_FORMAT, n_units, UnitANNParams)
    keys = load_npy(folder / UNIT_ANN_KEYS, np.uint64, (n_units,), "keys")  # header and size checked first
    if len(np.unique(keys)) != n_units:
        raise PersistError(f"{folder / UNIT_ANN_KEYS}: expected {n_units} distinct uint64 keys")
    return restored_unit_ann(folder / UNIT_ANN_GRAPH, keys, params, dim, mmap)


def write_unit_pq(pq: UnitPQ, folder: Path, write: Write) -> dict[str, Any]:
    """Write ``pq`` into an index version folder (``write(path, fn)`` creates, fills and fsyncs a file): its codes
    and codebook as ``.npy``. Returns the manifest entry (format, count, params)."""
    for name, arr in ((UNIT_PQ_CODES, pq.codes), (UNIT_PQ_CENTROIDS, pq.centroids)):
        path = folder / name
        if path.exists():
            raise PersistError(f"{path} exists; a unit index is only written into a new version folder")
        write(path, functools.partial(_save_npy, arr))
    return {"format": UNIT_PQ_FORMAT, "n": len(pq), "params": asdict(pq.params)}


def _save_npy(arr: np.ndarray, fh: Any) -> None:
    np.save(fh, np.asarray(arr), allow_pickle=False)


def read_unit_pq(folder: Path, entry: Any, n_units: int, dim: int, mmap: bool = True) -> UnitPQ:
    """The unit index saved by :func:`write_unit_pq` (checksums are checked by the caller), its codes
    memory-mapped unless ``mmap=False``; every mismatch with the manifest entry or the snapshot raises
    :class:`PersistError`."""
    params = entry_params(folder, entry, "unit_pq", UNIT_PQ_FORMAT, n_units, UnitPQParams)
    m = subspaces(dim, params)
    want = (m, 2**NBITS, dim // m)
    # headers and sizes checked against the manifest's count and the dimension before anything is read or mapped
    centroids = load_npy(folder / UNIT_PQ_CENTROIDS, np.float32, want, "centroids")
    if not np.isfinite(centroids).all():
        raise PersistError(f"{folder / UNIT_PQ_CENTROIDS}: expected finite float32 centroids of shape {want}")
    codes = load_npy(folder / UNIT_PQ_CODES, np.uint8, (n_units, (m * NBITS + 7) // 8), "codes", mmap=mmap)
    pq = UnitPQ(np.array(centroids), codes, params)
    drop_mapped_pages([codes])  # read once into the scan's packed copy; an update maps back what it copies
    return pq
