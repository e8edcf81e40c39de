"""Candidate units by a product-quantised scan of every unit (faiss fast scan, extra ``[ann]``).

From ``G2ConSConfig.ann_threshold`` units up to ``ann_pq_max_units`` (``ann_kind="auto"``), a snapshot's unit index
is a :class:`UnitPQ` instead of the HNSW graph of :mod:`~g2cons_plugins.arrays.unit_hnsw`: every unit vector is stored
as 4-bit product-quantisation codes (``dims_per_code`` dimensions a code: 64 bytes a unit at 256 dimensions), a
query scores all of them with faiss's SIMD fast scan, and the ``rerank x k`` best are passed on as candidates, which
the caller re-scores exactly on the float32 unit vectors (as it does the graph's). On 123k wordllama units the
default query's 850 candidates hold 0.997 of the exact top 150 (0.76 ms a search, re-scoring included), where the
graph's 640 held 0.968 (2.2 ms; ``benchmarks/scale/results/unit_index_kinds_80k.md``); the scan is linear in the
units (4.0 ms at 1.48M), so from ``ann_pq_max_units`` on the graph is used.

A :class:`UnitPQ` is immutable: its codes are row-aligned with the snapshot's units, so an ``add`` / ``remove``
gives the next snapshot a new one (:func:`moved_unit_pq`): the kept units' codes are copied, only the new units are
encoded (with the codebook trained at the last build), and the scan's packed layout is made again (the whole update
of the index: 0.01-0.05 s at 123k units, ``benchmarks/scale/results/update_parts_80k_pq.md``). Older snapshots keep
their own. A save writes the codes and the codebook as ``.npy`` files
(:func:`~g2cons_plugins.storage.unit_index_io.write_unit_pq`); a load memory-maps the codes and packs them
(:func:`~g2cons_plugins.storage.unit_index_io.read_unit_pq`). The codebook is trained by a build; updates and
``refresh()`` keep it, as they keep the graph.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..errors import InputError

UNIT_PQ_FORMAT = "g2cons-unit-pq/1"
UNIT_PQ_CODES = "unit_pq_codes.npy"
UNIT_PQ_CENTROIDS = "unit_pq_centroids.npy"
UNIT_PQ_FILES = (UNIT_PQ_CODES, UNIT_PQ_CENTROIDS)
NBITS = 4  # the fast scan's code width: 16 centroids a sub-space
TRAIN_MAX = 65_536  # units the codebook is trained on (an even stride through them), at most
_ENCODE_BLOCK = 65_536  # rows encoded at once (bounded float32 copies of memory-mapped vectors)


@dataclass(frozen=True)
class UnitPQParams:
    """Parameters of a :class:`UnitPQ` (from :class:`~g2cons_plugins.config.G2ConSConfig`'s ``ann_pq_*`` fields):
    ``dims_per_code`` dimensions per 4-bit code (1, or a divisor of the vector size; where it does not divide it,
    1), and the candidates a search passes on, ``max(rerank x k, min_candidates)``."""

    dims_per_code: int = 2
    rerank: float = 2.0
    min_candidates: int = 256

    def __post_init__(self) -> None:
        for name in ("dims_per_code", "min_candidates"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"ann_pq_{name} must be an integer >= 1, got {value!r}")
        number = isinstance(self.rerank, (int, float)) and not isinstance(self.rerank, bool)
        if not (number and math.isfinite(self.rerank) and self.rerank >= 1):
            raise InputError(f"ann_pq_rerank must be a finite number >= 1, got {self.rerank!r}")


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:
        raise ImportError(
            "the product-quantised unit index needs faiss: pip install 'g2cons-plugins[ann]' "
            "(or set ann_kind='hnsw', or raise ann_threshold to stay exact)"
        ) from exc
    return faiss


def subspaces(dim: int, params: UnitPQParams) -> int:
    """The number of 4-bit codes a vector of ``dim`` dimensions gets."""
    step = params.dims_per_code if dim % params.dims_per_code == 0 else 1
    return dim // step


def _quantizer(dim: int, m: int, centroids: np.ndarray | None = None) -> Any:
    faiss = _faiss()
    pq = faiss.ProductQuantizer(dim, m, NBITS)
    pq.cp.min_points_per_centroid = 1  # small corpora: no warning printed, training still works
    if centroids is not None:
        faiss.copy_array_to_vector(np.ascontiguousarray(centroids, np.float32).ravel(), pq.centroids)
        if hasattr(pq, "sync_transposed_centroids"):
            pq.sync_transposed_centroids()
    return pq


def _encode(pq: Any, vectors: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """The codes of ``vectors`` (or of its ``rows``), by blocks."""
    n = len(vectors) if rows is None else len(rows)
    out = np.empty((n, pq.code_size), dtype=np.uint8)
    for s in range(0, n, _ENCODE_BLOCK):
        block = vectors[s : s + _ENCODE_BLOCK] if rows is None else vectors[rows[s : s + _ENCODE_BLOCK]]
        out[s : s + _ENCODE_BLOCK] = pq.compute_codes(np.ascontiguousarray(block, dtype=np.float32))
    return out


def _readonly(a: np.ndarray) -> np.ndarray:
    if a.flags.writeable:
        a.flags.writeable = False
    return a


class UnitPQ:
    """A snapshot's product-quantised unit index: candidate unit positions for a query vector (see the module doc).

    ``centroids``: ``codes x 16 x dims_per_code`` float32 (the codebook); ``codes``: one row of packed 4-bit codes
    per unit, in the snapshot's unit order (may be memory-mapped)."""

    def __init__(self, centroids: np.ndarray, codes: np.ndarray, params: UnitPQParams) -> None:
        self.centroids = _readonly(np.asarray(centroids, dtype=np.float32).view())
        self.codes = _readonly(np.asarray(codes).view())  # a memory-mapped file stays mapped
        self.params = params
        m, _, dsub = self.centroids.shape
        self.dim = int(m * dsub)
        pq = _quantizer(self.dim, m, self.centroids)
        faiss = _faiss()
        flat = faiss.IndexPQ(self.dim, m, NBITS, faiss.METRIC_INNER_PRODUCT)
        flat.pq, flat.is_trained = pq, True
        if len(self.codes):
            flat.add_sa_codes(np.ascontiguousarray(self.codes))
        # the SIMD layout (the codes of 32 units interleaved); ``flat``, a plain copy of the codes, goes on return
        self._scan = faiss.IndexPQFastScan(flat)
        self._pq = pq

    def __len__(self) -> int:
        return len(self.codes)

    def __repr__(self) -> str:
        return f"UnitPQ(n={len(self)}, codes={self.centroids.shape[0]}x{NBITS} bits, rerank={self.params.rerank})"

    def search(self, query: np.ndarray, k: int) -> np.ndarray:
        """Positions of the ``max(rerank x k, min_candidates)`` units whose quantised vectors score best against
        ``query`` (every position when that is all of them); unsorted: the caller re-scores them exactly. faiss
        releases the GIL while it scans."""
        n = len(self)
        want = max(int(self.params.rerank * k), self.params.min_candidates, int(k))
        if want >= n:
            return np.arange(n, dtype=np.int64)
        q = np.ascontiguousarray(np.asarray(query, dtype=np.float32).reshape(1, -1))
        _, ids = self._scan.search(q, want)
        found = np.asarray(ids[0])
        out: np.ndarray = found[found >= 0].astype(np.int64)
        return out

    def encode(self, vectors: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Codes of ``vectors`` (or of its ``rows``) with this index's codebook."""
        return _encode(self._pq, vectors, rows)

    # pickling (copies, Ray): the arrays; the scan is packed again
    def __getstate__(self) -> dict[str, Any]:
        return {"centroids": np.asarray(self.centroids), "codes": np.asarray(self.codes), "params": asdict(self.params)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["centroids"], state["codes"], UnitPQParams(**state["params"]))  # type: ignore[misc]


def build_unit_pq(vectors: np.ndarray, params: UnitPQParams) -> UnitPQ:
    """A unit index over ``vectors``: the codebook trained on at most :data:`TRAIN_MAX` of them (an even stride,
    so the same vectors give the same codebook), then every vector encoded."""
    vecs = np.asarray(vectors)
    if vecs.ndim != 2 or vecs.shape[1] == 0:
        raise InputError(f"unit vectors must be a 2-d array n x d with d > 0, got shape {vecs.shape}")
    n, dim = vecs.shape
    m = subspaces(dim, params)
    pq = _quantizer(dim, m)
    step = max(1, -(-n // TRAIN_MAX))
    sample = np.ascontiguousarray(vecs[::step], dtype=np.float32)
    if len(sample) < 2**NBITS:  # fewer units than centroids: repeat them (k-means needs one point a centroid)
        sample = np.resize(sample, (2**NBITS, dim)) if len(sample) else np.zeros((2**NBITS, dim), np.float32)
    pq.train(sample)
    centroids = _faiss().vector_to_array(pq.centroids).reshape(m, 2**NBITS, dim // m)
    return UnitPQ(centroids, _encode(pq, vecs), params)


def moved_unit_pq(prev: UnitPQ, old: np.ndarray, vectors: np.ndarray, params: UnitPQParams) -> UnitPQ:
    """The next snapshot's index given, per unit of it, its position in ``prev`` (-1: a new unit): kept units keep
    their codes, new ones are encoded with ``prev``'s codebook. Built anew when the parameters or the vector size
    changed."""
    vecs = np.asarray(vectors)
    if params.dims_per_code != prev.params.dims_per_code or vecs.ndim != 2 or vecs.shape[1] != prev.dim:
        return build_unit_pq(vecs, params)
    old = np.asarray(old, dtype=np.int64)
    if len(old) != len(vecs):
        raise InputError(f"{len(old)} old positions for {len(vecs)} unit vectors")
    codes = np.empty((len(old), prev.codes.shape[1]), dtype=np.uint8)
    kept = old >= 0
    codes[kept] = prev.codes[old[kept]]
    new = np.flatnonzero(~kept)
    if len(new):
        codes[new] = prev.encode(vecs, new)
    return UnitPQ(prev.centroids, codes, params)


def unit_pq_for(vectors: np.ndarray, params: UnitPQParams, previous: Any, old: np.ndarray | None) -> UnitPQ:
    """``previous`` moved to the new units when it is a :class:`UnitPQ` and ``old`` (per new unit, its position in
    ``previous``'s snapshot, -1 for a new one) is known; else built."""
    if isinstance(previous, UnitPQ) and old is not None:
        return moved_unit_pq(previous, old, vectors, params)
    return build_unit_pq(vectors, params)


def unit_pq_params(config: Any) -> UnitPQParams:
    """The product-quantised index's parameters of a :class:`~g2cons_plugins.config.G2ConSConfig` (``ann_pq_*``)."""
    return UnitPQParams(dims_per_code=config.engine.ann_pq_dims_per_code, rerank=float(config.engine.ann_pq_rerank))
