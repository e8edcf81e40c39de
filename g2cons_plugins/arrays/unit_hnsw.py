"""Approximate nearest-neighbour search over unit vectors (usearch HNSW, extra ``[ann]``).

Two things live here:

- :class:`UnitANN`, a snapshot's index over its unit vectors (``G2ConSConfig.ann_threshold`` units on): every
  unit has a stable 64-bit key, so ``add`` / ``remove`` update the previous snapshot's graph by the changed units
  (:func:`updated_unit_ann`) instead of rebuilding it, and a save writes the graph next to the other files
  (:func:`~g2cons_plugins.storage.unit_index_io.write_unit_ann`: usearch's own format + the keys as ``.npy``,
  format ``g2cons-unit-ann/1``) so a load memory-maps it
  (:func:`~g2cons_plugins.storage.unit_index_io.read_unit_ann`). Candidates are always re-scored exactly on the
  float32 unit vectors; the class doc states what readers of an older snapshot see while a newer one updates the
  shared graph.
- :class:`VectorIndex`, a stand-alone read-only top-k index over a matrix, described below.

**VectorIndex.** Top-k inner-product search over unit-length vectors: exact below a size threshold, HNSW above.

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

import contextlib
import functools
import json
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, PersistError
from .mapped import file_maps, unmap_read_pages
from .npy_file import load_npy
from .positions import positions_of

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


def system_cxx_runtime() -> None:
    """Load the system's C++ runtime (``libstdc++.so.6``) into the process, globally, before usearch's extension
    (Linux; a no-op where it is loaded already or missing). usearch's extension carries the C++ standard library
    inside it (its wheel links no ``libstdc++``); loaded first, a later ``ray.init`` in the same process aborted here
    (``std::regex_error: Invalid range in brace expression`` in Ray's GCS client), and not when the system's runtime
    was loaded first, as SciPy's C++ modules, pandas or pyarrow load it. Until scikit-learn stopped being imported,
    its import had loaded those first."""
    if sys.platform != "linux":
        return
    import ctypes

    with contextlib.suppress(OSError):
        ctypes.CDLL("libstdc++.so.6", mode=ctypes.RTLD_GLOBAL)


def _usearch() -> Any:
    system_cxx_runtime()
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
        view: np.ndarray = self._vecs.view()
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
            of_rows: np.ndarray = np.asarray(self._vecs[rows], dtype=np.float32) @ q
            return of_rows
        if self._vecs.dtype == np.float32:
            every: np.ndarray = self._vecs @ q
            return every
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
            want = (int(manifest["n"]), int(manifest["dim"])), np.dtype(manifest["dtype"])
        except (KeyError, TypeError, ValueError) as exc:
            raise PersistError(f"{d / MANIFEST}: fields 'n', 'dim' and 'dtype' are invalid ({exc})") from None
        vecs = load_npy(d / VECTORS, want[1], want[0], f"vectors (as {MANIFEST} says)", mmap=mmap)
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


# ---------------------------------------------------------------------------------------------- unit index
UNIT_ANN_FORMAT = "g2cons-unit-ann/1"
UNIT_ANN_GRAPH = "unit_ann.usearch"
UNIT_ANN_KEYS = "unit_ann_keys.npy"
UNIT_ANN_FILES = (UNIT_ANN_GRAPH, UNIT_ANN_KEYS)
QUANTIZATIONS = ("f32", "f16", "i8")


@dataclass(frozen=True)
class UnitANNParams:
    """HNSW parameters of a snapshot's unit index (from :class:`~g2cons_plugins.config.G2ConSConfig`'s ``ann_*``
    fields): the graph's scalar type ``quantization`` (candidates are re-scored on the float32 unit vectors, so it
    only steers which candidates are found), ``connectivity`` (M), ``expansion_add`` (ef_construction) and
    ``expansion_search`` (the search's ef; a search for more than ef candidates widens it to their number)."""

    quantization: str = "i8"
    connectivity: int = 16
    expansion_add: int = 128
    expansion_search: int = 128

    def __post_init__(self) -> None:
        if self.quantization not in QUANTIZATIONS:
            raise InputError(f"ann_quantization must be one of {QUANTIZATIONS}, got {self.quantization!r}")
        for name in ("connectivity", "expansion_add", "expansion_search"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 2:
                raise InputError(f"ann_{name} must be an integer >= 2, got {value!r}")


def available_threads() -> int:
    """CPU cores this process may run on (the build and update threads of a unit index)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _new_graph(dim: int, p: UnitANNParams) -> Any:
    graph = _usearch()(
        ndim=dim, metric="ip", dtype=p.quantization, connectivity=p.connectivity, expansion_add=p.expansion_add
    )
    graph.expansion_search = p.expansion_search
    return graph


class _Shared:
    """One usearch graph shared by a lineage of snapshots, and a gate between its readers and its one writer.

    ``head`` is the :class:`UnitANN` whose key set the graph holds exactly (None while an update runs or after one
    failed). Readers never wait: one that finds an update running is told so and scans exactly instead. An update
    waits for the searches already running, then holds new ones off until it is done."""

    def __init__(self, graph: Any, next_key: int, view: bool) -> None:
        self.graph, self.next_key, self.view = graph, next_key, view
        self.head: UnitANN | None = None
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False

    @contextlib.contextmanager
    def reading(self, wait: bool) -> Iterator[bool]:
        """Yields True while the graph may be searched (no update runs); False at once when one runs and not
        ``wait``."""
        with self._cond:
            while wait and self._writing:
                self._cond.wait()
            ok = not self._writing
            if ok:
                self._readers += 1
        try:
            yield ok
        finally:
            if ok:
                with self._cond:
                    self._readers -= 1
                    self._cond.notify_all()

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Exclusive: waits for the running searches, refuses new ones (they scan exactly) until it is left."""
        with self._cond:
            while self._writing:
                self._cond.wait()
            self._writing = True
            while self._readers:
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()


class UnitANN:
    """A snapshot's HNSW index over its unit vectors: candidate unit positions for a query vector.

    Every unit has a stable 64-bit key (``keys[position]``), kept by the unit while it stays in later snapshots,
    so the next snapshot's index is this one's graph plus the new units' keys minus the removed ones
    (:func:`updated_unit_ann`), not a rebuild. Snapshots of one lineage share the graph.

    **What an older snapshot's readers see.** The graph is updated in place only from the snapshot whose key set it
    holds (its ``head``); any other update (from an older snapshot, or from a loaded, memory-mapped graph) works on
    a copy. Every snapshot keeps its own key set and maps found keys to its own positions, dropping keys it does not
    hold, and its caller re-scores every candidate on the snapshot's own float32 vectors. So:

    - a snapshot's results only ever name its own units, with exact scores;
    - while a newer snapshot's update runs, an older snapshot's search does not wait and does not read the graph:
      :meth:`search` returns None and the caller scans its own vectors exactly;
    - afterwards an older snapshot searches the updated graph (asking for more candidates to make up for the keys
      it drops); the units the newer snapshot removed are no longer in it, so they can be missed by the older
      snapshot's ANN searches (a recall loss confined to those units; nothing wrong is ever returned). A search
      that needs every unit is exact anyway.
    """

    # a search visits max(OVERFETCH x k, ef) candidates, all re-scored exactly. At 123k wordllama units (i8, M 16)
    # the default query's context shared 0.979 of its units with the exact path's with ef_add 64 and 2x, 0.980 with
    # ef_add 128 (the default) and 1.5x, in 0.3-0.8 ms less (benchmarks/scale/results/ann_graph_80k.md)
    OVERFETCH = 1.5

    def __init__(
        self,
        shared: _Shared,
        keys: np.ndarray,
        params: UnitANNParams,
        pending: np.ndarray | None = None,
        pending_vecs: np.ndarray | None = None,
    ) -> None:
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        keys.flags.writeable = False
        self._shared, self.keys, self.params = shared, keys, params
        # units added since a memory-mapped graph was loaded, not in it (see moved_unit_ann): keys (sorted) and
        # float32 vectors; every search scores them and passes on the best (:meth:`_pending_best`)
        self.pending = np.zeros(0, np.uint64) if pending is None else np.asarray(pending, np.uint64)
        self.pending_vecs = (
            np.zeros((0, 0), np.float32) if pending_vecs is None else np.asarray(pending_vecs, np.float32)
        )

    def __len__(self) -> int:
        return len(self.keys)

    def __repr__(self) -> str:
        p = self.params
        return f"UnitANN(n={len(self)}, {p.quantization}, M={p.connectivity}, ef={p.expansion_search})"

    @functools.cached_property
    def _by_key(self) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(self.keys, kind="stable")
        return self.keys[order], order

    @functools.cached_property
    def _key_table(self) -> np.ndarray | None:
        """Key -> position (-1 where no unit has the key) when the keys are dense (the largest below
        ``2 x n + 1024``: a built or loaded index has keys 0..n-1, an updated one a few more), else None."""
        n = len(self.keys)
        top = int(self.keys.max(initial=0))
        if not n or top >= 2 * n + 1024:
            return None
        table = np.full(top + 1, -1, dtype=np.int32 if n < 2**31 else np.int64)
        table[self.keys] = np.arange(n, dtype=table.dtype)
        table.flags.writeable = False
        return table

    def positions(self, keys: np.ndarray) -> np.ndarray:
        """The positions of the ``keys`` this snapshot holds (int64, in the given order; the others dropped)."""
        keys = np.asarray(keys, dtype=np.uint64)
        table = self._key_table
        if table is not None:  # one read per key instead of a binary search over every key
            pos = table[keys[keys < len(table)].astype(np.int64)]
            return pos[pos >= 0].astype(np.int64)
        sorted_keys, order = self._by_key
        at = np.minimum(np.searchsorted(sorted_keys, keys), max(len(sorted_keys) - 1, 0))
        hit = sorted_keys[at] == keys if len(sorted_keys) else np.zeros(len(keys), bool)
        out: np.ndarray = order[at[hit]].astype(np.int64)
        return out

    def search(self, query: np.ndarray, k: int) -> np.ndarray | None:
        """Positions of the candidate units near ``query``: at least ``k`` where the snapshot has them, up to
        ``max(OVERFETCH x k, expansion_search)``, since re-scoring them exactly is cheap and recovers true
        neighbours the graph's quantised order put below ``k``; every position when that would be the whole graph
        (after removals a graph search can miss a node even then); or None while a newer snapshot
        updates the shared graph (then scan exactly; see the class doc). Unsorted: the caller re-scores them."""
        sh = self._shared
        with sh.reading(wait=False) as ok:
            if not ok:
                return None
            total = len(sh.graph)
            want = max(int(self.OVERFETCH * k), self.params.expansion_search)
            held = len(self) - len(self.pending)  # this snapshot's units in the graph; others' are dropped
            count = min(total, want if sh.head is self else want + max(0, total - held))
            q = np.asarray(query, dtype=np.float32)
            extra = self._pending_best(q, want)
            while count < total:  # asked for every node: every unit (an HNSW search may not reach them all)
                found = self.positions(np.asarray(sh.graph.search(q, max(count, 1), threads=1).keys))
                if len(found) + len(extra) >= min(k, len(self)):
                    return np.concatenate([found, extra]) if len(extra) else found
                count = min(total, 2 * count)
            return np.arange(len(self), dtype=np.int64)

    def _pending_best(self, q: np.ndarray, want: int) -> np.ndarray:
        """Positions of the pending units (those outside the mapped graph): all of them, or where they are more
        than ``want``, the ``want`` best by their exact score (ties at the cut kept), so the candidates a search
        passes on stay about ``want`` however many units wait. The caller asks for at most ``want`` units, so every
        pending unit of its answer is among them."""
        if not len(self.pending):
            return np.zeros(0, np.int64)
        keys = self.pending
        if len(keys) > want:
            s = self.pending_vecs @ q
            keys = keys[s >= np.partition(s, len(s) - want)[len(s) - want]]
        return self.positions(keys)

    # ------------------------------------------------------------------ pickling (copies, Ray): the graph as bytes
    def __getstate__(self) -> dict[str, Any]:
        with self._shared.reading(wait=True):
            graph = self._own_graph()
            return {"keys": np.asarray(self.keys), "params": asdict(self.params), "graph": bytes(graph.save())}

    def __setstate__(self, state: dict[str, Any]) -> None:
        params = UnitANNParams(**state["params"])
        graph = _usearch().restore(bytearray(state["graph"]))
        graph.expansion_search = params.expansion_search
        keys = np.asarray(state["keys"], dtype=np.uint64)
        shared = _Shared(graph, int(keys.max(initial=0)) + 1, view=False)
        self.__init__(shared, keys, params)  # type: ignore[misc]
        shared.head = self

    def _own_graph(self) -> Any:
        """The graph holding exactly this snapshot's keys (the shared one when it is the head, else a copy brought
        to its key set); call under :meth:`_Shared.reading`. Vectors of units missing from it cannot be had here,
        so a copy only drops foreign keys; a key it lacks is a unit a newer snapshot removed."""
        sh = self._shared
        if sh.head is self and not len(self.pending):
            return sh.graph
        graph = sh.graph.copy()
        graph.expansion_search = self.params.expansion_search
        held = sh.head.keys if sh.head is not None else np.asarray(graph.keys, dtype=np.uint64)
        stale = np.setdiff1d(held, self.keys)
        if len(stale):
            graph.remove(stale[graph.contains(stale)])
        if len(self.pending):
            graph.add(self.pending, self.pending_vecs, threads=available_threads())
        return graph


#: Vectors added to a new graph per call: where the vectors are a file map (a streamed build's, a loaded index's),
#: the pages one call read are unmapped before the next, so the build does not hold the whole vector file resident
#: besides the graph's own copy (1.5 GB at 1M passages).
ADD_ROWS = 1 << 16


def build_unit_ann(vectors: np.ndarray, params: UnitANNParams, threads: int | None = None) -> UnitANN:
    """A unit index over ``vectors`` (row i gets key i), built with ``threads`` (default: every available core)."""
    vecs = np.asarray(vectors, dtype=np.float32)
    graph = _new_graph(vecs.shape[1], params)
    keys = np.arange(len(vecs), dtype=np.uint64)
    maps = list(file_maps(vecs))
    for s in range(0, len(vecs), ADD_ROWS):  # keys in order, as one call adds them
        graph.add(keys[s : s + ADD_ROWS], vecs[s : s + ADD_ROWS], threads=threads or available_threads())
        for m in maps:  # the pages of mapped vectors this call read (the graph holds its own copy)
            unmap_read_pages(m)
    shared = _Shared(graph, len(vecs), view=False)
    ann = UnitANN(shared, np.arange(len(vecs), dtype=np.uint64), params)
    shared.head = ann
    return ann


def updated_unit_ann(
    prev: UnitANN,
    prev_pos: Mapping[str, int],
    unit_ids: Sequence[str],
    vectors: np.ndarray,
    params: UnitANNParams,
    threads: int | None = None,
) -> UnitANN:
    """The unit index of the next snapshot: ``prev``'s graph plus the units of ``unit_ids`` that ``prev_pos``
    (``prev``'s unit id -> position) does not know, minus ``prev``'s units not in ``unit_ids``. A unit keeps its
    key; ``vectors`` are the new snapshot's unit vectors (rows of ``unit_ids``). In place when ``prev`` is the head
    of its graph and the graph is in memory, else on a copy (see :class:`UnitANN`); rebuilt when the parameters
    changed or a previous update failed."""
    if params != prev.params or prev.keys.size and prev._shared.head is None:
        return build_unit_ann(vectors, params, threads)
    old = positions_of(prev_pos, unit_ids)
    return moved_unit_ann(prev, old, vectors, params, threads)


def moved_unit_ann(
    prev: UnitANN, old: np.ndarray, vectors: np.ndarray, params: UnitANNParams, threads: int | None = None
) -> UnitANN:
    """:func:`updated_unit_ann` given, per unit of the next snapshot, its position in ``prev`` (-1: a new unit):
    a trickle update knows them without a pass over the unit ids."""
    if params != prev.params or prev.keys.size and prev._shared.head is None:
        return build_unit_ann(vectors, params, threads)
    old = np.asarray(old, np.int64)
    reused = old >= 0
    keys = np.zeros(len(old), dtype=np.uint64)
    keys[reused] = prev.keys[old[reused]]
    added = np.flatnonzero(~reused)
    held = np.zeros(len(prev.keys), bool)
    held[old[reused]] = True
    removed = np.sort(prev.keys[~held])  # no sort of every key
    vecs = np.asarray(vectors, dtype=np.float32)
    sh = prev._shared
    lazy = _pending_after(prev, keys, added, removed, vecs)
    if lazy is not None:
        return lazy
    with sh.writing():
        in_place = sh.head is prev and not sh.view
        if in_place:
            sh.head = None  # until the update is done: a failure leaves no head, the next update rebuilds
            target = sh
        else:
            graph = prev._own_graph()  # the writer gate is held: no update runs on ``sh`` meanwhile
            target = _Shared(graph if graph is not sh.graph else sh.graph.copy(), sh.next_key, view=False)
            target.graph.expansion_search = params.expansion_search
            missing = ~target.graph.contains(prev.keys)  # units a newer snapshot removed from the shared graph
            removed = np.union1d(removed, prev.keys[missing])  # they cannot be re-added from here by key ...
            revived = np.flatnonzero(reused & np.isin(keys, prev.keys[missing]))
            added = np.union1d(added, revived)  # ... but their rows are in ``vectors``: added back as new keys
        keys[added] = np.arange(target.next_key, target.next_key + len(added), dtype=np.uint64)
        target.next_key += len(added)
        gone = removed[target.graph.contains(removed)] if len(removed) else removed
        if len(gone):
            target.graph.remove(gone)
        if len(added):
            target.graph.add(keys[added], vecs[added], threads=threads or available_threads())
        ann = UnitANN(target, keys, params)
        target.head = ann
    return ann


# units a snapshot may hold outside a memory-mapped graph (UnitANN.pending): every search scores them exactly and
# passes on the best it was asked for (0.11 ms a query at 8,192 units x 256 dimensions), and adding them to the graph
# needs a copy of it in memory (2.5 s for the 625 MB graph of 1M passages; 84 MB at 80k), made once they are more
PENDING_MAX = 8192


def _pending_after(
    prev: UnitANN, keys: np.ndarray, added: np.ndarray, removed: np.ndarray, vecs: np.ndarray
) -> UnitANN | None:
    """The next snapshot's index without touching a memory-mapped graph (None where the graph is in memory, or
    the units outside it would pass :data:`PENDING_MAX`): the added units are pending (their keys new, their
    vectors kept), the removed ones left in the graph (a search drops keys the snapshot does not hold)."""
    sh = prev._shared
    if not sh.view or len(prev.pending) + len(added) > PENDING_MAX:
        return None
    with sh.writing():  # new keys are taken under the gate, as an update in place takes them
        keys[added] = np.arange(sh.next_key, sh.next_key + len(added), dtype=np.uint64)
        sh.next_key += len(added)
    kept = ~np.isin(prev.pending, removed)
    pending = np.concatenate([prev.pending[kept], keys[added]])
    rows = [prev.pending_vecs[kept]] if len(prev.pending) else []
    pend_vecs = np.concatenate(rows + [vecs[added]]) if len(pending) else np.zeros((0, vecs.shape[1]), np.float32)
    order = np.argsort(pending, kind="stable")
    return UnitANN(sh, keys, prev.params, pending[order], pend_vecs[order])


# ---------------------------------------------------------------------------------------------- persistence
def save_unit_graph(ann: UnitANN, path: Path) -> None:
    """Write the graph holding exactly ``ann``'s keys to ``path`` in usearch's own format (no update runs while it
    is written). The keys, the manifest entry and the checks are :mod:`g2cons_plugins.storage.unit_index_io`'s."""
    with ann._shared.reading(wait=True):  # no update runs while the graph is written
        ann._own_graph().save(str(path))


def restored_unit_ann(path: Path, keys: np.ndarray, params: UnitANNParams, dim: int, mmap: bool = True) -> UnitANN:
    """The unit index over the graph saved at ``path`` (by :func:`save_unit_graph`) with the units' ``keys``
    (distinct, checked by the caller), memory-mapped unless ``mmap=False``; :class:`PersistError` when the file is
    not a usearch index of these keys x ``dim``."""
    n_units = len(keys)
    try:
        graph = _usearch().restore(str(path), view=mmap)
    except (RuntimeError, ValueError) as e:
        raise PersistError(f"{path}: not a usearch index ({e})") from None
    if graph is None or len(graph) != n_units or graph.ndim != dim or not graph.contains(keys).all():
        raise PersistError(f"{path}: not a usearch index of these {n_units} units x {dim}")
    graph.expansion_search = params.expansion_search
    shared = _Shared(graph, int(keys.max(initial=0)) + 1, view=mmap)
    ann = UnitANN(shared, keys, params)
    shared.head = ann
    return ann


def unit_ann_params(config: Any) -> UnitANNParams:
    """The unit index parameters of a :class:`~g2cons_plugins.config.G2ConSConfig` (its ``ann_*`` fields)."""
    return UnitANNParams(
        quantization=config.engine.ann_quantization,
        connectivity=config.engine.ann_connectivity,
        expansion_add=config.engine.ann_expansion_add,
        expansion_search=config.engine.ann_expansion_search,
    )


def unit_ann_for(stored: Any, config: Any, previous: Any = None, loaded: UnitANN | None = None) -> UnitANN:
    """The unit index of a snapshot over ``stored``: ``loaded`` when it has the config's parameters and one key per
    unit; else ``previous``'s (a snapshot) updated by the changed units (:func:`updated_unit_ann`); else built."""
    params = unit_ann_params(config)
    n = len(stored.units)
    if isinstance(loaded, UnitANN) and loaded.params == params and len(loaded) == n:
        return loaded
    prev = getattr(previous, "unit_ann", None)
    if isinstance(prev, UnitANN):
        ids = [u.id for u in stored.units]
        return updated_unit_ann(prev, previous.unit_pos, ids, stored.unit_vecs, params)
    return build_unit_ann(stored.unit_vecs, params)
