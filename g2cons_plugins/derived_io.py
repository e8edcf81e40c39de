"""Write and read the derived state (:class:`~g2cons_plugins.state.Derived`) without pickle, so a load does not
re-derive the corpus.

Two files inside an index version folder:

- ``derived.npz``: every array, uncompressed (``np.savez``; read in place by :mod:`~g2cons_plugins.npz_view`, no
  pickle). A sparse matrix ``M`` is three arrays ``M.data``, ``M.indices``, ``M.indptr``;
- ``derived.json``: strings and scalars: the concept vocabulary, the bridge names, the term words, the sparse
  shapes, the edge threshold and the graph statistics.

:func:`read_derived` checks every shape against the stored state, every sparse structure (indices in range,
indptr monotone), and that vectors and PageRank are finite; an inconsistency raises :class:`PersistError` naming
the file and the field. Transposes and the concept -> position map are rebuilt, not stored.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from .config import G2ConSConfig
from .errors import PersistError
from .graph import EdgeSet, GraphStats
from .npz_view import NpzView
from .state import Derived, Stored
from .stored_io import fsync_write
from .terms import TermIndex

__all__ = ["DERIVED_FILES", "read_derived", "write_derived"]

DERIVED_FILES = ("derived.npz", "derived.json")
_SPARSE = ("extracted", "sent_inc", "unit_inc", "chunk_inc", "A", "unit_names")
_DENSE = ("concept_vecs", "sentence_counts", "df", "pagerank", "name_share", "name_df")
_EDGE = ("rows", "cols", "co", "cosine", "dice")
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


def _savez(fh: Any, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez`` with fixed zip timestamps, so equal state gives equal bytes."""
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, arr in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with zf.open(info, "w", force_zip64=True) as out:
                np.lib.format.write_array(out, np.ascontiguousarray(arr), allow_pickle=False)


def write_derived(folder: Path, dv: Derived, config: G2ConSConfig) -> None:
    """Write ``dv`` (made with ``config``) as ``derived.npz`` + ``derived.json`` into ``folder``."""
    arrays: dict[str, np.ndarray] = {}
    shapes: dict[str, list[int]] = {}

    def put_sparse(name: str, M: sp.csr_matrix) -> None:
        M = sp.csr_matrix(M)
        arrays[f"{name}.data"] = np.ascontiguousarray(M.data)
        arrays[f"{name}.indices"] = np.ascontiguousarray(M.indices)
        arrays[f"{name}.indptr"] = np.ascontiguousarray(M.indptr)
        shapes[name] = [int(M.shape[0]), int(M.shape[1])]

    for name in _SPARSE:
        put_sparse(name, getattr(dv, name))
    for name in _TERMS:
        put_sparse(f"terms.{name}", getattr(dv.terms, name))
    for name in _DENSE:
        arrays[name] = np.ascontiguousarray(getattr(dv, name))
    for name in _EDGE:
        arrays[f"edges.{name}"] = np.ascontiguousarray(getattr(dv.edges, name))
    meta = {
        "vocab": list(dv.vocab),
        "names": list(dv.names),
        "terms.words": list(dv.terms.words),
        "shapes": shapes,
        "edges": {"theta_sem": float(dv.edges.theta_sem), "n_candidates": int(dv.edges.n_candidates)},
        "stats": dv.stats.to_dict(),
        "config_sha256": config_digest(config),
    }
    fsync_write(folder / "derived.npz", lambda fh: _savez(fh, arrays))
    fsync_write(folder / "derived.json", lambda fh: fh.write(json.dumps(meta, ensure_ascii=False).encode("utf-8")))


class _Reader:
    def __init__(self, folder: Path) -> None:
        self.npz_path, self.json_path = folder / "derived.npz", folder / "derived.json"
        try:
            self.npz = NpzView(self.npz_path)  # arrays in place (one copy-on-write map), not copied
        except (OSError, ValueError, zipfile.BadZipFile) as e:
            raise PersistError(f"{self.npz_path}: unreadable ({e})") from None
        try:
            self.meta = json.loads(self.json_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
            raise PersistError(f"{self.json_path}: unreadable or not valid JSON ({e})") from None
        if not isinstance(self.meta, dict):
            raise PersistError(f"{self.json_path}: not a JSON object")

    def field(self, name: str) -> Any:
        if name not in self.meta:
            raise PersistError(f"{self.json_path}: missing field {name!r}")
        return self.meta[name]

    def strings(self, name: str) -> list[str]:
        v = self.field(name)
        if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
            raise PersistError(f"{self.json_path}: field {name!r} must be a list of strings")
        return v

    def array(self, name: str, length: int | None = None, finite: bool = False) -> np.ndarray:
        if name not in self.npz.files:
            raise PersistError(f"{self.npz_path}: missing array {name!r}")
        try:
            a = self.npz[name]
        except (OSError, ValueError) as e:
            raise PersistError(f"{self.npz_path}: array {name!r} unreadable ({e})") from None
        if a.dtype.kind not in "iuf" or (length is not None and (a.ndim < 1 or a.shape[0] != length)):
            raise PersistError(f"{self.npz_path}: array {name!r} has dtype {a.dtype} / shape {a.shape}")
        if finite and a.dtype.kind == "f" and not np.isfinite(a).all():
            raise PersistError(f"{self.npz_path}: array {name!r} holds NaN or infinite values")
        return a

    def sparse(self, name: str, shape: tuple[int, int]) -> sp.csr_matrix:
        shapes = self.field("shapes")
        got = shapes.get(name) if isinstance(shapes, dict) else None
        if got != list(shape):
            raise PersistError(f"{self.json_path}: shape of {name!r} is {got}, expected {list(shape)}")
        data, indices, indptr = (self.array(f"{name}.{k}") for k in ("data", "indices", "indptr"))
        if len(indptr) != shape[0] + 1 or len(indices) != len(data) or indices.dtype.kind not in "iu":
            raise PersistError(f"{self.npz_path}: sparse matrix {name!r} is malformed")
        try:
            M = sp.csr_matrix((data, indices, indptr), shape=shape)
            M.check_format(full_check=True)
        except ValueError as e:
            raise PersistError(f"{self.npz_path}: sparse matrix {name!r} is malformed ({e})") from None
        return M


def read_derived(
    folder: Path, st: Stored, dim: int, config: G2ConSConfig, saved_config: dict[str, Any] | None = None
) -> Derived:
    """Read the derived state written by :func:`write_derived`, checked against ``st`` and ``config`` (see module
    doc). ``saved_config``: the config as the manifest holds it, to accept the whole-config digest of older saves."""
    r = _Reader(folder)
    digest = r.field("config_sha256")
    if digest != config_digest(config) and (saved_config is None or digest != _legacy_digest(saved_config)):
        raise PersistError(f"{r.json_path}: the derived state was computed with another config than the manifest's")
    try:
        vocab, names, words = r.strings("vocab"), r.strings("names"), r.strings("terms.words")
        n_c, n_u, n_s, n_v, n_n = len(st.chunks), len(st.units), len(st.sentences), len(vocab), len(names)
        t = {k: r.sparse(f"terms.{k}", (n_s, len(words))) for k in _TERMS}
        terms = TermIndex(tuple(words), t["counts"], t["noninit"], t["caps"])
        sparse = {
            "extracted": r.sparse("extracted", (n_c, n_v)),
            "sent_inc": r.sparse("sent_inc", (n_s, n_v)),
            "unit_inc": r.sparse("unit_inc", (n_u, n_v)),
            "chunk_inc": r.sparse("chunk_inc", (n_c, n_v)),
            "A": r.sparse("A", (n_v, n_v)),
            "unit_names": r.sparse("unit_names", (n_u, n_n)),
        }
        vecs = r.array("concept_vecs", n_v, finite=True)
        if vecs.ndim != 2 or vecs.shape[1] != dim:
            raise PersistError(f"{r.npz_path}: concept_vecs has shape {vecs.shape}, expected ({n_v}, {dim})")
        edge_meta = r.field("edges")
        m = len(r.array("edges.rows"))
        e = {k: r.array(f"edges.{k}", m, finite=True) for k in _EDGE}
        edges = EdgeSet(
            rows=e["rows"],
            cols=e["cols"],
            co=e["co"],
            cosine=e["cosine"],
            dice=e["dice"],
            theta_sem=float(edge_meta["theta_sem"]),
            n_candidates=int(edge_meta["n_candidates"]),
        )
        if m and (edges.rows.max() >= n_v or edges.cols.max() >= n_v or min(edges.rows.min(), edges.cols.min()) < 0):
            raise PersistError(f"{r.npz_path}: edge endpoints out of range of {n_v} concepts")
        stats = GraphStats(**r.field("stats"))
        if (stats.n_chunks, stats.n_units, stats.n_sentences, stats.n_concepts) != (n_c, n_u, n_s, n_v):
            raise PersistError(f"{r.json_path}: stats do not match the stored state")
    except (KeyError, TypeError, ValueError) as e:
        raise PersistError(f"{folder}: derived state inconsistent ({type(e).__name__}: {e})") from None
    unit_names = sparse["unit_names"]
    return Derived(
        vocab=vocab,
        concept_index={w: i for i, w in enumerate(vocab)},
        extracted=sparse["extracted"],
        sent_inc=sparse["sent_inc"],
        unit_inc=sparse["unit_inc"],
        chunk_inc=sparse["chunk_inc"],
        unit_concepts=sparse["unit_inc"].T.tocsr(),
        concept_vecs=vecs,
        sentence_counts=r.array("sentence_counts", n_v),
        df=r.array("df", n_v),
        edges=edges,
        A=sparse["A"],
        pagerank=r.array("pagerank", n_v, finite=True),
        name_share=r.array("name_share", n_v, finite=True),
        names=names,
        name_df=r.array("name_df", n_n),
        unit_names=unit_names,
        name_units=unit_names.T.tocsr(),
        stats=stats,
        terms=terms,
    )
