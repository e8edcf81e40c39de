"""Write and read the derived state (:class:`~g2cons_plugins.build.Derived`) without pickle, so a load does not
re-derive the corpus.

Two files inside an index version folder:

- ``derived.npz``: every array, uncompressed (``np.savez``; read in place by
  :mod:`~g2cons_plugins.storage.npz_view`, no pickle). A sparse matrix ``M`` is three arrays ``M.data``,
  ``M.indices``, ``M.indptr``;
- ``derived.json``: strings and scalars: the concept vocabulary, the bridge names, the term words, the sparse
  shapes, the edge threshold and the graph statistics.

:func:`read_derived` checks every array's dimensions, dtype kind and range and its consistency with the others and
with the stored state, in whole-array NumPy passes: sparse structures (integer indices in range, indptr monotone,
sorted, no duplicates), incidences of 0/1, document frequencies and sentence counts equal to the incidences' column
counts, unit concept vectors, PageRank a positive distribution, name shares in [0, 1], name document frequencies
equal to the bridge incidence's, edges sorted distinct pairs within range with Dice weights of their counts, the
adjacency exactly the symmetric matrix of the edges, statistics equal to what the arrays give, distinct
vocabularies within the term words. An inconsistency raises :class:`PersistError` naming the file and the array
or field; every array comes back read-only. Transposes and the concept -> position map are rebuilt, not stored.
What cannot be checked without re-deriving (PageRank's fixed point, which words are concepts) is compared by
``load(verify=True)`` (:func:`differences`).
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
import zipfile
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..arrays.mapped import is_file_backed
from ..arrays.wide_rows import Matrix, as_csr
from ..build import Derived, Stored, freeze
from ..concepts import TermIndex
from ..config import G2ConSConfig
from ..engine.edge_update import find_pairs
from ..errors import PersistError
from ..graph import EdgeSet, GraphStats, NearPairs, graph_stats, pairs_sorted
from .memory import drop_mapped_pages
from .npz_view import NpzView
from .stored_io import fsync_write

__all__ = ["DERIVED_FILES", "differences", "read_derived", "write_array", "write_derived"]

DERIVED_FILES = ("derived.npz", "derived.json")
_SPARSE = ("extracted", "sent_inc", "unit_inc", "chunk_inc", "A", "unit_names")
# transposes written too (from format version 5 on), so a load maps them instead of holding a fresh copy in memory
_TRANSPOSES = {"unit_concepts": "unit_inc", "name_units": "unit_names"}
_DENSE = ("concept_vecs", "sentence_counts", "df", "pagerank", "name_share", "name_df")
_EDGE = ("rows", "cols", "co", "cosine", "dice")
_NEAR = ("rows", "cols", "co", "cosine")  # near pairs (from format version 5 on; absent in an older save: none)
_TERMS = ("counts", "noninit", "caps")


# The config fields the stored and derived state depend on (splitting, analysis, concepts, graph, PageRank). Fields
# that only steer selection, retrieval or fusion are left out, so an index saved before a retrieval knob existed
# (or with another beta, lambda, strategy ...) still loads its derived state.
DERIVE_FIELDS = (
    "unit_tokens",
    "concept_mode",
    "top_n",
    "min_df",
    "max_df",
    "ngram_max",
    "stop_words",
    "language",
    "segmenter",
    "incidence",
    "cooccurrence",
    "vector_level",
    "theta_co",
    "theta_sem",
    "theta_sem_percentile",
    "pagerank_damping",
)


def config_digest(config: G2ConSConfig) -> str:
    """sha256 of the canonical JSON of the config's :data:`DERIVE_FIELDS`: the derived state is only valid for the
    values it was made with."""
    d = config.to_dict()
    return hashlib.sha256(json.dumps({k: d[k] for k in DERIVE_FIELDS}, sort_keys=True).encode("utf-8")).hexdigest()


def _legacy_digest(saved_config: dict[str, Any]) -> str:
    """The digest indexes saved before :data:`DERIVE_FIELDS` wrote: sha256 of the whole saved config."""
    return hashlib.sha256(json.dumps(saved_config, sort_keys=True).encode("utf-8")).hexdigest()


ALIGN = 64
"""Each member's ``.npy`` bytes start at a multiple of this in the file (NumPy pads the ``.npy`` header to 64 bytes,
so every array's data is 64-byte aligned where the file is mapped)."""

_PAD_ID = 0xD935  # the zip extra field id of padding (as Android's zipalign writes it)


def savez(fh: Any, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez`` with fixed zip timestamps, so equal state gives equal bytes, and each member's local header
    padded (a zip extra field) so its ``.npy`` bytes start at a multiple of :data:`ALIGN`.

    Why: a member at an arbitrary offset maps as an array NumPy flags unaligned, and operations that need aligned
    data copy the whole array each call (``np.searchsorted`` over the 1.5M unit parents of a 1M-passage index:
    1.2-2.5 ms a call instead of 0.02 ms)."""
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, arr in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.extra = _padding(fh, info)
            with zf.open(info, "w", force_zip64=True) as out:
                write_array(out, arr)


def _padding(fh: Any, info: zipfile.ZipInfo) -> bytes:
    """The extra field that ends ``info``'s local header, written at ``fh``'s position, on a multiple of
    :data:`ALIGN` (empty where ``fh`` cannot tell its position)."""
    try:
        offset = fh.tell()
    except (AttributeError, OSError):
        return b""
    # the local header zipfile writes with zip64 forced: 30 bytes, the name, the extra field, zip64's 20 bytes
    plain = 30 + len(info.filename.encode("utf-8")) + 20
    pad = -(offset + plain) % ALIGN
    if 0 < pad < 4:  # an extra field takes 4 bytes at least (id, size)
        pad += ALIGN
    return struct.pack("<HH", _PAD_ID, pad - 4) + bytes(pad - 4) if pad else b""


_WRITE_BLOCK = 32 * 2**20  # bytes of a file-backed array written at a time before its pages are unmapped


def write_array(out: Any, arr: np.ndarray) -> None:
    """``np.lib.format.write_array(out, arr)`` (the same bytes); an array mapped from a file (a streamed build's
    vectors and texts, a loaded index's arrays) is written in blocks of :data:`_WRITE_BLOCK` bytes and the pages
    each block read are unmapped after it (:func:`.memory.drop_mapped_pages`), so a save does not leave the whole
    array resident."""
    if not (is_file_backed(arr) and arr.flags.c_contiguous and arr.nbytes > _WRITE_BLOCK and arr.ndim >= 1):
        np.lib.format.write_array(out, np.ascontiguousarray(arr), allow_pickle=False)
        return
    np.lib.format.write_array_header_1_0(out, np.lib.format.header_data_from_array_1_0(arr))
    row = max(1, arr.nbytes // max(len(arr), 1))
    step = max(1, _WRITE_BLOCK // row)
    for lo in range(0, len(arr), step):
        out.write(arr[lo : lo + step].data.cast("B"))
        drop_mapped_pages([arr])


def write_derived(folder: Path, dv: Derived, config: G2ConSConfig) -> None:
    """Write ``dv`` (made with ``config``) as ``derived.npz`` + ``derived.json`` into ``folder``."""
    arrays: dict[str, np.ndarray] = {}
    shapes: dict[str, list[int]] = {}

    def put_sparse(name: str, M: Matrix) -> None:
        M = sp.csr_matrix(as_csr(M))
        arrays[f"{name}.data"] = np.ascontiguousarray(M.data)
        arrays[f"{name}.indices"] = np.ascontiguousarray(M.indices)
        arrays[f"{name}.indptr"] = np.ascontiguousarray(M.indptr)
        shapes[name] = [int(M.shape[0]), int(M.shape[1])]

    for name in (*_SPARSE, *_TRANSPOSES):
        put_sparse(name, getattr(dv, name))
    for name in _TERMS:
        put_sparse(f"terms.{name}", getattr(dv.terms, name))
    for name in _DENSE:
        arrays[name] = np.ascontiguousarray(getattr(dv, name))
    if dv.sum_norms is not None:
        arrays["sum_norms"] = np.ascontiguousarray(dv.sum_norms)
    for name in _EDGE:
        arrays[f"edges.{name}"] = np.ascontiguousarray(getattr(dv.edges, name))
    for name in _NEAR:
        arrays[f"edges.near.{name}"] = np.ascontiguousarray(getattr(dv.edges.near, name))
    meta = {
        "vocab": list(dv.vocab),
        "names": list(dv.names),
        "terms.words": list(dv.terms.words),
        "shapes": shapes,
        "edges": {
            "theta_sem": float(dv.edges.theta_sem),
            "n_candidates": int(dv.edges.n_candidates),
            "near_margin": float(dv.edges.near.margin),
        },
        "stats": dv.stats.to_dict(),
        "config_sha256": config_digest(config),
    }
    fsync_write(folder / "derived.npz", lambda fh: savez(fh, arrays))
    fsync_write(folder / "derived.json", lambda fh: fh.write(json.dumps(meta, ensure_ascii=False).encode("utf-8")))


_KIND_NAMES = {"i": "integer", "u": "integer", "f": "float"}


class _Reader:
    def __init__(self, folder: Path) -> None:
        self.npz_path, self.json_path = folder / "derived.npz", folder / "derived.json"
        try:
            self.npz = NpzView(self.npz_path)  # arrays in place (one read-only map), not copied
        except (OSError, ValueError, zipfile.BadZipFile) as e:
            raise PersistError(f"{self.npz_path}: unreadable, not a .npz of arrays ({e})") from None
        try:
            self.meta = json.loads(self.json_path.read_bytes().decode("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
            raise PersistError(f"{self.json_path}: unreadable or not valid JSON ({e})") from None
        if not isinstance(self.meta, dict):
            raise PersistError(f"{self.json_path}: not a JSON object")

    def fail(self, name: str, what: str) -> PersistError:
        return PersistError(f"{self.npz_path}: array {name!r} {what}")

    def check(self, name: str, ok: Any, what: str) -> None:
        if not bool(ok):
            raise self.fail(name, what)

    def field(self, name: str) -> Any:
        if name not in self.meta:
            raise PersistError(f"{self.json_path}: missing field {name!r}")
        return self.meta[name]

    def strings(self, name: str) -> list[str]:
        """A list of strings (the set of the values' types: no Python loop over them)."""
        v = self.field(name)
        if not isinstance(v, list) or not set(map(type, v)) <= {str}:
            raise PersistError(f"{self.json_path}: field {name!r} must be a list of strings")
        return v

    def distinct(self, name: str, values: list[str], n_distinct: int) -> None:
        """Fail naming the first repeated value unless ``values`` has ``n_distinct`` distinct ones."""
        if n_distinct != len(values):
            seen: set[str] = set()
            for dup in values:  # only on the error path
                if dup in seen:
                    break
                seen.add(dup)
            raise PersistError(f"{self.json_path}: field {name!r} holds {dup!r} twice")

    def number(self, section: str, name: str, value: Any, integer: bool) -> float:
        ok = isinstance(value, int) if integer else isinstance(value, (int, float)) and math.isfinite(value)
        if isinstance(value, bool) or not ok:
            want = "an integer" if integer else "a finite number"
            raise PersistError(f"{self.json_path}: field '{section}.{name}' must be {want}, got {value!r}")
        return value  # type: ignore[no-any-return]

    def array(self, name: str, shape: tuple[int | None, ...], kinds: str) -> np.ndarray:
        """The array ``name``, of exactly ``len(shape)`` dimensions, the given sizes (None: any) and a dtype of
        one of ``kinds`` (NumPy kind letters)."""
        if name not in self.npz.files:
            raise PersistError(f"{self.npz_path}: missing array {name!r}")
        try:
            a = self.npz[name]
        except (OSError, ValueError, KeyError) as e:
            raise self.fail(name, f"unreadable ({e})") from None
        sizes_ok = a.ndim == len(shape) and all(w is None or g == w for g, w in zip(a.shape, shape, strict=True))
        if a.dtype.kind not in kinds or not sizes_ok:
            want = " or ".join(sorted({_KIND_NAMES[k] for k in kinds}))
            dims = ", ".join("any" if w is None else str(w) for w in shape)
            raise self.fail(name, f"has dtype {a.dtype} and shape {a.shape}; expected {want} of shape ({dims})")
        return a

    def sparse(self, name: str, shape: tuple[int, int], kinds: str = "f", binary: bool = False) -> sp.csr_matrix:
        """The csr matrix ``name`` of ``shape``: integer indices in range, ``indptr`` monotone, values finite (and
        non-negative, all 1 where ``binary``); sorted indices without duplicates (what this library writes: a file
        that is not so is made so, duplicates summed, before the values are checked)."""
        shapes = self.field("shapes")
        got = shapes.get(name) if isinstance(shapes, dict) else None
        if got != list(shape):
            raise PersistError(f"{self.json_path}: shape of {name!r} is {got}, expected {list(shape)}")
        data = self.array(f"{name}.data", (None,), kinds)
        indices = self.array(f"{name}.indices", (len(data),), "iu")
        indptr = self.array(f"{name}.indptr", (shape[0] + 1,), "iu")
        try:
            M = sp.csr_matrix((data, indices, indptr), shape=shape)
            M.check_format(full_check=True)
        except (ValueError, TypeError, OverflowError) as e:
            raise PersistError(f"{self.npz_path}: sparse matrix {name!r} is malformed ({e})") from None
        if not M.has_canonical_format:
            M = M.copy()
            M.sum_duplicates()
        d = M.data
        if binary:
            self.check(f"{name}.data", (d == 1).all(), "must hold only 1 (an incidence matrix)")
        elif d.dtype.kind == "f":
            self.check(f"{name}.data", np.isfinite(d).all(), "holds NaN or infinite values")
            self.check(f"{name}.data", (d >= 0).all(), "holds negative values")
        else:
            self.check(f"{name}.data", (d >= 0).all(), "holds negative values")
        drop_mapped_pages([M])  # checked: unmapped again, so a load never holds the whole file
        return M


def _column_counts(M: sp.csr_matrix) -> np.ndarray:
    """Non-zeros per column of a canonical csr matrix."""
    return np.bincount(M.indices, minlength=M.shape[1])


def read_derived(
    folder: Path, st: Stored, dim: int, config: G2ConSConfig, saved_config: dict[str, Any] | None = None
) -> Derived:
    """Read the derived state written by :func:`write_derived`, checked against ``st`` and ``config`` (see module
    doc); every array comes back read-only. ``saved_config``: the config as the manifest holds it, to accept the
    whole-config digest of older saves."""
    r = _Reader(folder)
    digest = r.field("config_sha256")
    if digest != config_digest(config) and (saved_config is None or digest != _legacy_digest(saved_config)):
        raise PersistError(f"{r.json_path}: the derived state was computed with another config than the manifest's")
    try:
        return freeze(_read(r, st, dim, config))
    except (KeyError, TypeError, ValueError, IndexError, OverflowError) as e:
        raise PersistError(f"{folder}: derived state inconsistent ({type(e).__name__}: {e})") from None


def _read(r: _Reader, st: Stored, dim: int, config: G2ConSConfig) -> Derived:
    """Every array's dimensions, dtype kind and range, and its consistency with the others and with ``st``, in
    whole-array passes (no loop over elements); see :func:`read_derived`."""
    vocab, names, words = r.strings("vocab"), r.strings("names"), r.strings("terms.words")
    known, concept_index = set(words), {w: i for i, w in enumerate(vocab)}  # the map a Derived holds anyway
    r.distinct("terms.words", words, len(known))
    r.distinct("vocab", vocab, len(concept_index))
    r.distinct("names", names, len(set(names)))
    for key, some in (("vocab", vocab), ("names", names)):
        if not known.issuperset(some):
            bad = next(w for w in some if w not in known)
            raise PersistError(f"{r.json_path}: field {key!r} holds {bad!r}, which is not in 'terms.words'")
    n_c, n_u, n_s, n_v, n_n = len(st.chunks), len(st.units), len(st.sentences), len(vocab), len(names)
    t = {k: r.sparse(f"terms.{k}", (n_s, len(words)), kinds="iuf") for k in _TERMS}
    terms = TermIndex(tuple(words), t["counts"], t["noninit"], t["caps"])
    inc = {
        name: r.sparse(name, shape, binary=True)
        for name, shape in (
            ("extracted", (n_c, n_v)),
            ("sent_inc", (n_s, n_v)),
            ("unit_inc", (n_u, n_v)),
            ("chunk_inc", (n_c, n_v)),
            ("unit_names", (n_u, n_n)),
        )
    }
    level = "unit_inc" if config.graph.vector_level == "chunk" else "sent_inc"  # what Eq. 1 averages over
    co_level = "chunk_inc" if config.graph.cooccurrence == "chunk" else "sent_inc"  # what co-occurrence counts
    per_concept = {k: _column_counts(inc[k]) for k in {"chunk_inc", level, co_level}}  # each counted once
    df = r.array("df", (n_v,), "iu")
    r.check("df", np.array_equal(df, per_concept["chunk_inc"]), "differs from the chunks of each concept")
    counts = r.array("sentence_counts", (n_v,), "iuf")
    r.check("sentence_counts", np.array_equal(counts, per_concept[level]), f"differs from {level}'s counts")
    vecs = r.array("concept_vecs", (n_v, dim), "f")
    norm2 = np.einsum("ij,ij->i", vecs, vecs)  # one pass; NaN / inf give NaN / inf here
    ok = np.where(counts > 0, np.abs(norm2 - 1.0) <= 1e-2, norm2 == 0)
    if not ok.all():
        k = int(np.argmin(ok))
        raise r.fail("concept_vecs", f"row {k} ({vocab[k]!r}) has squared norm {norm2[k]}, not a unit vector")
    sum_norms = None
    if "sum_norms" in r.npz.files:  # from format version 5 on (absent in an older save: the trickle sums again)
        sum_norms = r.array("sum_norms", (n_v,), "f")
        fine = np.isfinite(sum_norms) & np.where(counts > 0, sum_norms > 0, sum_norms == 0)
        r.check("sum_norms", bool(fine.all()), "must be finite, > 0 for a concept with sentences and 0 without")
    pr = r.array("pagerank", (n_v,), "f")
    r.check("pagerank", (pr > 0).all() and (n_v == 0 or abs(float(pr.sum()) - 1.0) <= 1e-6), "is not a distribution")
    share = r.array("name_share", (n_v,), "f")
    r.check("name_share", ((share >= 0) & (share <= 1)).all(), "must lie in [0, 1]")
    name_units = _transpose(r, "name_units", inc["unit_names"])
    name_df = r.array("name_df", (n_n,), "iu")
    r.check(
        "name_df", np.array_equal(name_df, _chunks_per_row(name_units, st.unit_parent, n_c)), "differs from unit_names"
    )

    edges = _edges(r, config, n_v, per_concept[co_level])
    A = r.sparse("A", (n_v, n_v))
    _check_adjacency(r, A, edges)
    stats = _stats(r, A, edges, (n_c, n_u, n_s, n_v))
    return Derived(
        vocab=vocab,
        concept_index=concept_index,
        extracted=inc["extracted"],
        sent_inc=inc["sent_inc"],
        unit_inc=inc["unit_inc"],
        chunk_inc=inc["chunk_inc"],
        unit_concepts=_transpose(r, "unit_concepts", inc["unit_inc"]),
        concept_vecs=vecs,
        sentence_counts=counts,
        df=df,
        edges=edges,
        A=A,
        pagerank=pr,
        name_share=share,
        names=names,
        name_df=name_df,
        unit_names=inc["unit_names"],
        name_units=name_units,
        stats=stats,
        terms=terms,
        sum_norms=sum_norms,
    )


def _transpose(r: _Reader, name: str, M: sp.csr_matrix) -> sp.csr_matrix:
    """The saved transpose ``name`` of ``M`` (memory-mapped), checked equal to ``M.T``; computed where an older
    save has none."""
    T = M.T.tocsr()  # counting sort: canonical, linear time
    shapes = r.field("shapes")
    if not isinstance(shapes, dict) or name not in shapes:
        return T
    saved = r.sparse(name, (M.shape[1], M.shape[0]), binary=True)
    same = np.array_equal(saved.indptr, T.indptr) and np.array_equal(saved.indices, T.indices)
    r.check(name, same, f"is not the transpose of {_TRANSPOSES[name]!r}")
    return saved


def _chunks_per_row(M: sp.csr_matrix, unit_parent: np.ndarray, n_chunks: int) -> np.ndarray:
    """For a canonical (rows x units) matrix: the number of distinct chunks among each row's units."""
    rows = np.repeat(np.arange(M.shape[0]), np.diff(M.indptr))
    parents = unit_parent[M.indices]
    if len(unit_parent) < 2 or (np.diff(unit_parent) >= 0).all():  # units in chunk order (what store makes)
        new = np.ones(len(parents), dtype=bool)
        new[1:] = (parents[1:] != parents[:-1]) | (rows[1:] != rows[:-1])
        return np.bincount(rows[new], minlength=M.shape[0])
    keys = np.unique(rows.astype(np.int64) * n_chunks + parents)
    return np.bincount(keys // n_chunks, minlength=M.shape[0])


def _edges(r: _Reader, config: G2ConSConfig, n_v: int, co_df: np.ndarray) -> EdgeSet:
    """The edge list: pairs ``row < col`` in range, sorted and distinct, co-occurrence counts within the
    threshold and the concepts' counts, cosines at or above the threshold, Dice weights equal to
    ``2 co / (df_row + df_col)``."""
    meta = r.field("edges")
    if not isinstance(meta, dict):
        raise PersistError(f"{r.json_path}: field 'edges' must be an object")
    theta = float(r.number("edges", "theta_sem", meta.get("theta_sem"), integer=False))
    n_candidates = int(r.number("edges", "n_candidates", meta.get("n_candidates"), integer=True))
    rows = r.array("edges.rows", (None,), "iu")
    m = len(rows)
    cols, co = r.array("edges.cols", (m,), "iu"), r.array("edges.co", (m,), "iu")
    cosine, dice = r.array("edges.cosine", (m,), "f"), r.array("edges.dice", (m,), "f")
    if n_candidates < m:
        raise PersistError(f"{r.json_path}: field 'edges.n_candidates' is {n_candidates}, below the {m} edges")
    if m:
        r.check("edges.rows", ((rows < cols) & (cols < n_v)).all(), f"needs 0 <= row < col < {n_v} for every edge")
        r.check("edges.rows", pairs_sorted(rows, cols), "must list each pair once, sorted by (row, col)")
        r0, c0 = co_df[rows], co_df[cols]
        r.check("edges.co", ((co >= config.theta_co) & (co <= np.minimum(r0, c0))).all(), "out of range")
        r.check("edges.cosine", ((cosine >= theta - 1e-6) & (cosine <= 1.0 + 1e-3)).all(), "out of range")
        r.check("edges.dice", np.allclose(dice, 2.0 * co / (r0 + c0), rtol=1e-5, atol=0.0), "differs from 2 co / df")
    near = _near(r, config, n_v, co_df, theta, (rows, cols))
    return EdgeSet(
        rows=rows, cols=cols, co=co, cosine=cosine, dice=dice, theta_sem=theta, n_candidates=n_candidates, near=near
    )


def _near(
    r: _Reader, config: G2ConSConfig, n_v: int, co_df: np.ndarray, theta: float, edges: tuple[np.ndarray, np.ndarray]
) -> NearPairs:
    """The near pairs (none in a save that has no ``near_margin``): pairs ``row < col`` in range, sorted and
    distinct, none an edge, Co within the threshold and the concepts' counts, cosines within the margin below
    theta_sem."""
    meta = r.field("edges")
    if "near_margin" not in meta:
        return NearPairs.empty()
    margin = float(r.number("edges", "near_margin", meta.get("near_margin"), integer=False))
    if not 0.0 <= margin <= 2.0:
        raise PersistError(f"{r.json_path}: field 'edges.near_margin' is {margin}, not in [0, 2]")
    rows = r.array("edges.near.rows", (None,), "iu")
    m = len(rows)
    cols, co = r.array("edges.near.cols", (m,), "iu"), r.array("edges.near.co", (m,), "iu")
    cosine = r.array("edges.near.cosine", (m,), "f")
    if m:
        r.check("edges.near.rows", ((rows < cols) & (cols < n_v)).all(), f"needs 0 <= row < col < {n_v} for every pair")
        r.check("edges.near.rows", pairs_sorted(rows, cols), "must list each pair once, sorted by (row, col)")
        r.check("edges.near.rows", not find_pairs(*edges, rows, cols)[1].any(), "lists a pair that is an edge")
        r0, c0 = co_df[rows], co_df[cols]
        r.check("edges.near.co", ((co >= config.theta_co) & (co <= np.minimum(r0, c0))).all(), "out of range")
        band = (cosine >= theta - margin - 1e-6) & (cosine < theta + 1e-6)
        r.check("edges.near.cosine", band.all(), f"must lie within {margin} below theta_sem")
    return NearPairs(rows, cols, co, cosine, margin)


def _check_adjacency(r: _Reader, A: sp.csr_matrix, edges: EdgeSet) -> None:
    """``A`` is the symmetric matrix of the edges' Dice weights (what :func:`~g2cons_plugins.graph.adjacency`
    makes): its upper triangle is the edge list, in order, and it equals its transpose."""
    row = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    upper = A.indices > row
    m = len(edges.rows)
    same = (
        A.nnz == 2 * m
        and int(upper.sum()) == m
        and np.array_equal(row[upper], edges.rows)
        and np.array_equal(A.indices[upper], edges.cols)
        and np.array_equal(A.data[upper], edges.dice.astype(np.float64))
    )
    r.check("A", same, "is not the matrix of the edges' Dice weights")
    T = A.T.tocsr()  # counting sort: canonical, linear time
    r.check("A", np.array_equal(T.indices, A.indices) and np.array_equal(T.data, A.data), "is not symmetric")


def _stats(r: _Reader, A: sp.csr_matrix, edges: EdgeSet, sizes: tuple[int, int, int, int]) -> GraphStats:
    raw = r.field("stats")
    want = {f.name: f.type for f in fields(GraphStats)}
    if not isinstance(raw, dict) or set(raw) != set(want):
        raise PersistError(f"{r.json_path}: field 'stats' must be an object with the keys {sorted(want)}")
    for name, kind in want.items():
        r.number("stats", name, raw[name], integer=kind in (int, "int"))
    for name, value in graph_stats(sizes, edges, A).to_dict().items():
        if not math.isclose(raw[name], value, rel_tol=1e-9, abs_tol=1e-12):
            raise PersistError(f"{r.json_path}: field 'stats.{name}' is {raw[name]}, the stored state gives {value}")
    return GraphStats(**raw)


def differences(a: Derived, b: Derived) -> list[str]:
    """The fields in which two derived states differ (``load(verify=True)``): strings, integers and the sparse
    structure exactly; float values (vectors, PageRank, weights, cosines, statistics) within a relative 1e-5. Near
    pairs are compared where both states have them (a save from before they existed has none)."""
    out = [k for k in ("vocab", "names") if list(getattr(a, k)) != list(getattr(b, k))]
    if tuple(a.terms.words) != tuple(b.terms.words):
        out.append("terms.words")

    def close(x: Any, y: Any) -> bool:
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            return False
        if x.dtype.kind == "f" or y.dtype.kind == "f":
            return bool(np.allclose(x, y, rtol=1e-5, atol=1e-6 / max(len(x), 1)))
        return bool(np.array_equal(x, y))

    def canonical(M: sp.csr_matrix) -> sp.csr_matrix:
        M = sp.csr_matrix(M)
        if not M.has_canonical_format:
            M = M.copy()
            M.sum_duplicates()
        return M

    pairs: list[tuple[str, Any, Any]] = [(k, getattr(a, k), getattr(b, k)) for k in _SPARSE + _DENSE]
    if a.sum_norms is not None and b.sum_norms is not None:  # a save from before they existed has none
        pairs.append(("sum_norms", a.sum_norms, b.sum_norms))
    pairs += [(f"terms.{k}", getattr(a.terms, k), getattr(b.terms, k)) for k in _TERMS]
    pairs += [(f"edges.{k}", getattr(a.edges, k), getattr(b.edges, k)) for k in _EDGE]
    if a.edges.near.margin and b.edges.near.margin:  # a save from before near pairs has none to compare
        pairs += [(f"edges.near.{k}", getattr(a.edges.near, k), getattr(b.edges.near, k)) for k in _NEAR]
    for name, x, y in pairs:
        if sp.issparse(x) or sp.issparse(y):
            x, y = canonical(x), canonical(y)
            same = x.shape == y.shape and close(x.indptr, y.indptr) and close(x.indices, y.indices)
            same = same and close(x.data, y.data)
        else:
            same = close(x, y)
        if not same:
            out.append(name)
    if (
        not math.isclose(a.edges.theta_sem, b.edges.theta_sem, rel_tol=1e-5)
        or a.edges.n_candidates != b.edges.n_candidates
        or (a.edges.near.margin and b.edges.near.margin and a.edges.near.margin != b.edges.near.margin)
    ):
        out.append("edges")
    sa, sb = a.stats.to_dict(), b.stats.to_dict()
    out += [f"stats.{k}" for k in sa if not math.isclose(sa[k], sb[k], rel_tol=1e-5, abs_tol=1e-9)]
    return out
