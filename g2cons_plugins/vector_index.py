"""Top-k inner-product search over unit-length vectors: exact below a size threshold, HNSW (usearch) above.

A :class:`VectorIndex` is built once from an ``n x d`` matrix and then only read. Row ``i`` of the matrix has
id ``i``. :meth:`VectorIndex.search` returns the ``k`` best ids with their scores, sorted by score descending and,
for equal scores, by id ascending. Scores are always exact dot products with the stored vectors (float32
arithmetic): the approximate index only proposes candidates, which are then re-scored and sorted, so the ANN path
differs from the exact path only by candidates it missed (its recall), never by a score or by tie order.

- Exact path (``n < ann_threshold``): one matrix-vector product, ``argpartition``, a stable sort.
- ANN path: usearch's HNSW graph (optional extra ``ann``; imported only when an index needs it), searched with
  ``expansion_search = max(ef_min, ef_factor * k)`` candidates, single-threaded, so a built index answers the same
  query the same way every time. The graph is built single-threaded by default, so the same vectors give the same
  graph (and the same saved bytes); ``threads > 1`` builds faster but may give a slightly different graph.
- ``dtype="float16"`` halves memory and disk; scores then come from float16-rounded vectors (measured on MuSiQue
  ketrag500, wordllama: CR unchanged at 1k-4k, unit recall >= 0.9996 against float32;
  ``benchmarks/scale/results/float16_quality_musique_wordllama.json``).

Persistence (no pickle): a directory with ``vectors.npy`` (NumPy format, memory-mapped on load by default),
``hnsw.usearch`` (ANN path only; usearch's own format, memory-mapped with ``view=True``) and ``vector_index.json``
(format, shape, dtype, parameters, file sizes), each written to a temporary file and renamed; the manifest is
written last, so a directory without it is never read as an index.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError, PersistError

FORMAT = "g2cons-vector-index/1"
MANIFEST = "vector_index.json"
VECTORS = "vectors.npy"
GRAPH = "hnsw.usearch"
_OUR_FILES = {MANIFEST, VECTORS, GRAPH}
_BLOCK = 65_536  # rows per block when scoring float16 vectors (bounded temporary memory)


@dataclass(frozen=True)
class ANNParams:
    """HNSW parameters: ``connectivity`` (M), ``expansion_add`` (ef_construction), the search expansion
    ``max(ef_min, ef_factor * k)``, and the build's thread count (1 = reproducible graph)."""

    connectivity: int = 16
    expansion_add: int = 128
    ef_factor: float = 4.0
    ef_min: int = 64
    threads: int = 1

    def __post_init__(self) -> None:
        for name in ("connectivity", "expansion_add", "ef_min", "threads"):
            if int(getattr(self, name)) < 1:
                raise InputError(f"ANNParams.{name} must be >= 1, got {getattr(self, name)}")
        if not self.ef_factor >= 1:
            raise InputError(f"ANNParams.ef_factor must be >= 1, got {self.ef_factor}")


def _usearch() -> Any:
    try:
        from usearch.index import Index
    except ImportError as exc:
        raise ImportError(
            "the approximate vector index needs usearch: pip install 'g2cons-plugins[ann]' "
            "(or raise ann_threshold to stay exact)"
        ) from exc
    return Index


def _top(candidates: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best of ``candidates`` by ``scores`` descending, ties by id ascending."""
    if k < len(scores):
        part = np.argpartition(-scores, k - 1)[:k]
        keep = scores >= scores[part].min()  # every tie at the cut-off competes on id
        candidates, scores = candidates[keep], scores[keep]
    order = np.lexsort((candidates, -scores))[:k]
    return candidates[order], scores[order]


class VectorIndex:
    """Read-only top-k search over the rows of a matrix (see module doc).

    ``vectors``: ``n x d`` finite floats (unit length for cosine scores). ``ann_threshold``: from this many rows
    on, search goes through the HNSW graph (``None``: never). ``dtype``: ``"float32"`` or ``"float16"`` storage.
    """

    def __init__(
        self,
        vectors: np.ndarray,
        ann_threshold: int | None = 200_000,
        dtype: str = "float32",
        params: ANNParams | None = None,
        _graph: Any = None,
    ) -> None:
        if dtype not in ("float32", "float16"):
            raise InputError(f"dtype must be 'float32' or 'float16', got {dtype!r}")
        if ann_threshold is not None and int(ann_threshold) < 1:
            raise InputError(f"ann_threshold must be a positive row count or None, got {ann_threshold}")
        arr = np.asarray(vectors)
        if arr.ndim != 2 or arr.shape[1] == 0:
            raise InputError(f"vectors must be a 2-d array n x d with d > 0, got shape {arr.shape}")
        if arr.dtype != np.dtype(dtype):
            arr = arr.astype(dtype)
        if arr.size and not np.isfinite(arr).all():
            raise InputError("vectors contain NaN or infinite values")
        self._vecs = arr
        self.dtype = dtype
        self.ann_threshold = ann_threshold
        self.params = params or ANNParams()
        self._graph = _graph
        if self.uses_ann and self._graph is None:
            self._graph = self._build_graph()

    # ------------------------------------------------------------------ properties
    @property
    def size(self) -> int:
        """Number of rows (ids are ``0 .. size-1``)."""
        return int(self._vecs.shape[0])

    @property
    def dim(self) -> int:
        return int(self._vecs.shape[1])

    @property
    def vectors(self) -> np.ndarray:
        """The stored matrix (read-only view; memory-mapped after ``load(mmap=True)``)."""
        view = self._vecs.view()
        view.flags.writeable = False
        return view

    @property
    def uses_ann(self) -> bool:
        """True when searches go through the HNSW graph."""
        return self.ann_threshold is not None and self.size >= self.ann_threshold

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        mode = "hnsw" if self.uses_ann else "exact"
        return f"VectorIndex(n={self.size}, dim={self.dim}, dtype={self.dtype}, {mode})"

    # ------------------------------------------------------------------ search
    def _build_graph(self) -> Any:
        Index = _usearch()
        p = self.params
        graph = Index(
            ndim=self.dim,
            metric="ip",
            dtype="f16" if self.dtype == "float16" else "f32",
            connectivity=p.connectivity,
            expansion_add=p.expansion_add,
        )
        if self.size:
            graph.add(np.arange(self.size, dtype=np.uint64), self._vecs, threads=p.threads)
        return graph

    def scores(self, query: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Exact float32 dot products of ``query`` with all rows (or with ``rows``)."""
        q = self._check_query(query)
        if rows is not None:
            return np.asarray(self._vecs[rows], dtype=np.float32) @ q
        if self._vecs.dtype == np.float32:
            return self._vecs @ q
        out = np.empty(self.size, dtype=np.float32)
        for s in range(0, self.size, _BLOCK):
            out[s : s + _BLOCK] = self._vecs[s : s + _BLOCK].astype(np.float32) @ q
        return out

    def _check_query(self, query: np.ndarray) -> np.ndarray:
        q = np.asarray(query, dtype=np.float32)
        if q.shape != (self.dim,):
            raise InputError(f"query vector has shape {q.shape}, expected ({self.dim},)")
        if not np.isfinite(q).all():
            raise InputError("query vector contains NaN or infinite values")
        return q

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` rows with the largest dot product with ``query``: ``(ids int64, scores float32)``, by score
        descending then id ascending; fewer than ``k`` when the index is smaller."""
        if int(k) < 1:
            raise InputError(f"k must be >= 1, got {k}")
        q = self._check_query(query)
        k = min(int(k), self.size)
        if k == 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        if not self.uses_ann:
            return _top(np.arange(self.size, dtype=np.int64), self.scores(q), k)
        ef = max(self.params.ef_min, int(np.ceil(self.params.ef_factor * k)))
        self._graph.expansion_search = ef
        found = self._graph.search(q.astype(self._vecs.dtype), k, threads=1)
        cand = np.sort(np.asarray(found.keys, dtype=np.int64))
        return _top(cand, self.scores(q, cand), k)

    # ------------------------------------------------------------------ persistence
    def save(self, directory: str | Path) -> None:
        """Write the index into ``directory`` (created if missing; it may hold only a previous vector index)."""
        d = Path(directory)
        if d.exists() and not d.is_dir():
            raise PersistError(f"{d} exists and is not a directory")
        d.mkdir(parents=True, exist_ok=True)
        foreign = sorted(p.name for p in d.iterdir() if p.name not in _OUR_FILES and not p.name.startswith("."))
        if foreign:
            raise PersistError(f"{d} holds files that are not a vector index ({foreign[:3]}); refusing to write there")
        (d / MANIFEST).unlink(missing_ok=True)  # an interrupted save must not leave a valid-looking index
        _atomic(d / VECTORS, lambda p: np.save(p, np.ascontiguousarray(self._vecs), allow_pickle=False))
        if self.uses_ann:
            _atomic(d / GRAPH, lambda p: self._graph.save(str(p)))
        else:
            (d / GRAPH).unlink(missing_ok=True)
        manifest = {
            "format": FORMAT,
            "n": self.size,
            "dim": self.dim,
            "dtype": self.dtype,
            "ann_threshold": self.ann_threshold,
            "params": asdict(self.params),
            "files": {name: (d / name).stat().st_size for name in (VECTORS, GRAPH) if (d / name).exists()},
        }
        _atomic(d / MANIFEST, lambda p: Path(p).write_text(json.dumps(manifest, indent=1), encoding="utf-8"))

    @classmethod
    def load(cls, directory: str | Path, mmap: bool = True) -> VectorIndex:
        """Read an index written by :meth:`save`; ``mmap=True`` maps the vectors and the graph instead of reading."""
        d = Path(directory)
        try:
            manifest = json.loads((d / MANIFEST).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise PersistError(f"{d} is not a vector index (no {MANIFEST})") from None
        except (OSError, ValueError) as exc:
            raise PersistError(f"{d / MANIFEST} is unreadable: {exc}") from None
        if manifest.get("format") != FORMAT:
            raise PersistError(f"{d / MANIFEST}: format {manifest.get('format')!r}, expected {FORMAT!r}")
        for name, size in manifest["files"].items():
            f = d / name
            if not f.is_file() or f.stat().st_size != size:
                raise PersistError(f"{f} is missing or has the wrong size (expected {size} bytes)")
        try:
            vecs = np.load(d / VECTORS, mmap_mode="r" if mmap else None, allow_pickle=False)
        except ValueError as exc:
            raise PersistError(f"{d / VECTORS} is not a valid .npy file: {exc}") from None
        if vecs.shape != (manifest["n"], manifest["dim"]) or str(vecs.dtype) != manifest["dtype"]:
            raise PersistError(f"{d / VECTORS}: shape {vecs.shape} {vecs.dtype} disagrees with {MANIFEST}")
        graph = None
        if GRAPH in manifest["files"]:
            graph = _usearch().restore(str(d / GRAPH), view=mmap)
            if graph is None or len(graph) != manifest["n"]:
                raise PersistError(f"{d / GRAPH} is not a usearch index of {manifest['n']} vectors")
        index = cls.__new__(cls)
        index._vecs = vecs
        index.dtype = manifest["dtype"]
        index.ann_threshold = manifest["ann_threshold"]
        index.params = ANNParams(**manifest["params"])
        index._graph = graph
        if index.uses_ann != (graph is not None):
            raise PersistError(f"{d}: the manifest's ann_threshold disagrees with the files present")
        return index


def _atomic(path: Path, write: Callable[[Any], Any]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it over ``path``."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        if path.suffix == ".npy":  # np.save appends .npy to names without it; give it a file object instead
            with open(tmp, "wb") as f:
                write(f)
        else:
            write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
