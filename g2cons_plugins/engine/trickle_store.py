"""The stored side of a trickle update: insert or drop a few chunks in time proportional to the change.

:func:`~g2cons_plugins.build.store` re-walks every chunk, unit and sentence (Python loops over the whole corpus);
the functions here touch only the new or removed chunks and otherwise copy arrays (NumPy / SciPy, no Python loop
over the corpus). Chunks and units stay sorted by id exactly as ``store`` keeps them. Two things differ from
``store`` until the next refresh (:func:`g2cons_plugins.engine.update.refresh`):

- new distinct sentences are appended after the known ones (``store`` orders them by first use);
- a removed chunk's sentences stay as rows with no unit ("orphans": in no unit, so no retrieval and no concept
  reads them; the derived state marks them dead).

Known sentences are found through a text -> row map that is shared, append-only, along a chain of snapshots (see
:class:`RowMap`; the sentences' one, :class:`TextRows`, keeps hashes, not the texts), so an add never rebuilds a map
of the whole corpus after the first one.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import scipy.sparse as sp

from ..arrays.columns import bisect_left, concat, inserted, kept
from ..arrays.first_use import FirstUse
from ..arrays.ones import binary
from ..arrays.tables import chunk_id_view
from ..build import Stored, freeze
from ..chunks import Chunk, Unit, split_units
from ..config import G2ConSConfig
from ..embedders import Embedder, validate_embeddings
from ..errors import InputError
from ..storage.growable import growable
from ..storage.memory import drop_mapped_pages
from ..storage.spill import kept_rows
from ..text import Tokenizer, count_tokens_batch

__all__ = [
    "Inserted",
    "RowMap",
    "TextRows",
    "appended",
    "drop_stored",
    "insert_rows",
    "insert_stored",
    "spliced",
    "with_spare",
]

_LOCK = threading.Lock()
T = TypeVar("T")

# spare rows of a grown buffer, as a share of its rows (an append copies the whole array only when they run out:
# amortised, each row is copied about 1 / SPARE times per doubling)
SPARE = 0.10
_BUFFERS: dict[int, tuple[weakref.ref[np.ndarray], int]] = {}  # id(buffer) -> (buffer, rows in use)


def appended(prev: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``prev`` with ``rows`` appended (axis 0), read-only. A snapshot's array is a view of the first rows of a
    buffer with spare rows; the holder of the view with every row in use writes the new rows in place (the views
    of older snapshots end before them, so they see nothing change), any other holder (or an array with no such
    buffer) copies into a new buffer with :data:`SPARE` spare rows. No array is ever written where a view reads."""
    rows = np.asarray(rows, dtype=prev.dtype)
    n, k = len(prev), len(rows)
    with _LOCK:
        base = prev.base
        buf: np.ndarray = base if isinstance(base, np.ndarray) else prev
        entry = _BUFFERS.get(id(buf)) if isinstance(base, np.ndarray) else None
        if not (
            entry is not None
            and entry[0]() is buf
            and entry[1] == n
            and len(buf) >= n + k
            and buf.shape[1:] == prev.shape[1:]
            and n > 0
            and prev.__array_interface__["data"][0] == buf.__array_interface__["data"][0]
        ):
            rows_cap = n + k + max(int(SPARE * (n + k)), 16)
            mapped = growable(prev, rows_cap)  # a loaded array: its rows stay the file's pages (no copy)
            if mapped is not None:
                buf = mapped
            else:
                buf = np.empty((rows_cap,) + prev.shape[1:], prev.dtype)
                buf[:n] = prev
                drop_mapped_pages([prev])  # a loaded array's file pages, read once by the copy
            weakref.finalize(buf, _BUFFERS.pop, id(buf), None)
        buf[n : n + k] = rows
        _BUFFERS[id(buf)] = (weakref.ref(buf), n + k)
    out = buf[: n + k]
    out.flags.writeable = False
    return out


class RowMap:
    """A key -> row map shared, append-only, by a chain of snapshots. A holder with ``n`` rows reads only rows
    below ``n`` (a later snapshot may have appended more); only the holder whose ``n`` equals the map's length may
    append (:meth:`extended`), any other gets a fresh copy first, so two branches never share a row number."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.rows: dict[str, int] = {k: i for i, k in enumerate(keys)}

    def get(self, key: str, n: int) -> int:
        """The row of ``key`` for a holder of ``n`` rows, or -1."""
        r = self.rows.get(key, -1)
        return r if r < n else -1

    def extended(self, n: int, keys: Sequence[str], all_keys: Sequence[str]) -> tuple[RowMap, list[int]]:
        """A map for ``n + len(new keys)`` rows and the row of each of ``keys`` (new ones appended in order);
        ``all_keys``: the holder's ``n`` keys (used only when the map must be copied)."""
        with _LOCK:
            target = self
            if len(self.rows) != n:  # another snapshot appended after ours: copy our rows
                target = RowMap(all_keys[:n])
            rows = [target.rows.setdefault(k, len(target.rows)) for k in keys]
        return target, rows


class TextRows:
    """A :class:`RowMap` for many long keys (the sentences), without keeping them: the keys' rows by two 64-bit
    hashes each (:class:`~g2cons_plugins.arrays.first_use.FirstUse`; 64 bytes a sentence against 277 in the dict,
    ~1.1 GB less for the ~5M distinct sentences of a real corpus of 1M passages). The same rows as ``RowMap``
    for distinct keys, the same sharing rules (:meth:`extended`)."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.rows = FirstUse.of_distinct(keys, _TEXT_BATCH)

    def extended(self, n: int, keys: Sequence[str], all_keys: Sequence[str]) -> tuple[TextRows, list[int]]:
        """As :meth:`RowMap.extended`."""
        with _LOCK:
            target = self
            if len(self.rows) != n:  # another snapshot appended after ours: number our rows again
                target = TextRows(all_keys[:n])
            rows, _ = target.rows.number(list(keys))
        return target, rows.tolist()


_TEXT_BATCH = 1 << 16  # keys hashed at a time when a TextRows is built


@dataclass(frozen=True)
class Inserted:
    """Where an insertion put things: old-coordinate insertion points (as ``np.insert`` takes them) and the final
    positions of the new chunks and units; the sentence rows of each new unit; how many sentence rows are new."""

    chunk_ins: np.ndarray
    chunk_at: np.ndarray
    unit_ins: np.ndarray
    unit_at: np.ndarray
    unit_chunk: np.ndarray  # per new unit: index of its chunk among the new chunks
    unit_sents: list[list[int]]  # per new unit: its sentence rows
    n_fresh: int  # sentence rows appended


def insert_rows(M: sp.spmatrix, ins: np.ndarray, R: sp.spmatrix) -> sp.csr_matrix:
    """csr ``M`` with the rows of ``R`` inserted before the old rows ``ins`` (sorted, ``np.insert`` semantics);
    copies the arrays once, no sort."""
    M, R = sp.csr_matrix(M), sp.csr_matrix(R, dtype=M.dtype)
    R.sort_indices()  # the rows of ``M`` keep theirs sorted: so does the result
    n, k = M.shape[0], R.shape[0]
    if k and int(np.min(ins)) == n and int(M.indptr[-1]) + R.nnz <= np.iinfo(M.indptr.dtype).max:
        return _appended_rows(M, R)
    cuts = np.concatenate([[0], np.asarray(ins, np.int64), [n]])
    idx: list[np.ndarray] = []
    dat: list[np.ndarray] = []
    for j in range(k + 1):
        lo, hi = M.indptr[cuts[j]], M.indptr[cuts[j + 1]]
        idx.append(M.indices[lo:hi])
        dat.append(M.data[lo:hi])
        if j < k:
            a, b = R.indptr[j], R.indptr[j + 1]
            idx.append(R.indices[a:b])
            dat.append(R.data[a:b])
    at = np.asarray(ins, np.int64) + np.arange(k)
    lens = np.empty(n + k, np.int64)
    old = np.ones(n + k, bool)
    old[at] = False
    lens[old] = np.diff(M.indptr)
    lens[at] = np.diff(R.indptr)
    indptr = np.concatenate([[0], np.cumsum(lens)])
    out = sp.csr_matrix((np.concatenate(dat), np.concatenate(idx), indptr), shape=(n + k, M.shape[1]))
    drop_mapped_pages([M])  # a loaded matrix's file pages, read once by the copy
    return out


# insertion points up to which spliced() copies the slices between them (a Python step each) instead of np.insert
# (a boolean mask over the result: 0.09-0.16 s on 30M items against 0.012 s by slices for 60 points)
SLICED_MAX = 4096


def spliced(a: np.ndarray, where: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``np.insert(a, where, values)`` for a 1-d ``a`` and ascending ``where``: by copies of the slices between the
    points when they are few (:data:`SLICED_MAX`), memory speed."""
    where = np.asarray(where, np.int64)
    values = np.asarray(values, dtype=a.dtype)
    if len(where) > SLICED_MAX or a.ndim != 1:
        return np.insert(a, where, values)
    out = np.empty(len(a) + len(where), a.dtype)
    src = dst = 0
    for i, w in enumerate(where.tolist()):
        out[dst : dst + w - src] = a[src:w]
        dst += w - src
        out[dst] = values[i]
        dst += 1
        src = w
    out[dst:] = a[src:]
    return out


def with_spare(a: np.ndarray) -> np.ndarray:
    """``a`` as a read-only view of a buffer with :data:`SPARE` spare rows (one copy, none when it is one
    already), so that the next :func:`appended` writes in place: for the arrays a trickle add grows (unit vectors,
    chunk and unit tokens, unit parents) where a build or a load makes them anyway."""
    return appended(a, a[:0])


def _appended_rows(M: sp.csr_matrix, R: sp.csr_matrix) -> sp.csr_matrix:
    """csr ``M`` with the rows of ``R`` after its own, its arrays grown in place where they can be
    (:func:`appended`)."""
    nnz = int(M.indptr[-1])
    data = appended(M.data[:nnz], R.data)
    indices = appended(M.indices[:nnz], R.indices.astype(M.indices.dtype))
    indptr = appended(M.indptr, (R.indptr[1:] + nnz).astype(M.indptr.dtype))
    out = sp.csr_matrix((data, indices, indptr), shape=(M.shape[0] + R.shape[0], M.shape[1]), copy=False)
    out.has_sorted_indices = True
    return out


def _merge(old: Sequence[T], ins: Sequence[int], new: Sequence[T]) -> Sequence[T]:
    """``old`` with ``new`` inserted at ``ins``: a :class:`~g2cons_plugins.arrays.columns.Rope` of slices, no copy."""
    return inserted(old, ins, new)


def _split_new(
    new: list[Chunk], tok: Tokenizer, config: G2ConSConfig, chunk_pos: Mapping[str, int], unit_pos: Mapping[str, int]
) -> list[list[Unit]]:
    """The units of each new chunk; unit ids must not collide with known chunks or units (as ``store`` checks)."""
    new_ids = {c.id for c in new}
    per_chunk = [split_units(c, tok, config.graph.unit_tokens) for c in new]
    seen: set[str] = set()
    for us in per_chunk:
        for u in us:
            clash = u.id in seen or u.id in unit_pos or (u.id != u.parent_id and (u.id in chunk_pos or u.id in new_ids))
            if clash:
                raise InputError(f"retrieval unit id {u.id!r} collides with another chunk id; rename that chunk")
            seen.add(u.id)
    for c in new:
        if c.id in unit_pos:
            raise InputError(f"chunk id {c.id!r} collides with a retrieval unit id of another chunk; rename it")
    return per_chunk


def insert_stored(
    prev: Stored,
    new: Sequence[Chunk],
    emb: Embedder,
    tok: Tokenizer,
    config: G2ConSConfig,
    positions: tuple[Mapping[str, int], Mapping[str, int]],
    sent_map: TextRows,
) -> tuple[Stored, Inserted, TextRows]:
    """``prev`` with the ``new`` chunks (ids not in ``prev``) inserted in id order; only new texts are split,
    counted and embedded. ``positions``: the chunk and unit id -> position maps of ``prev``."""
    new = sorted(new, key=lambda c: c.id)
    per_chunk = _split_new(new, tok, config, *positions)
    known = chunk_id_view(prev.chunks)  # ids read one at a time: a search over the chunks made a chunk per probe
    chunk_ins = np.array([bisect_left(known, c.id) for c in new], np.int64)
    starts = np.searchsorted(prev.unit_parent, chunk_ins, side="left")
    units = [u for us in per_chunk for u in us]
    unit_chunk = np.repeat(np.arange(len(new)), [len(us) for us in per_chunk])
    unit_ins = starts[unit_chunk]
    n_s = len(prev.sentences)
    texts = [s for u in units for s in u.sentences]
    sent_map, rows = sent_map.extended(n_s, texts, prev.sentences)
    fresh = _fresh(rows, texts, n_s)
    it = iter(rows)
    unit_sents = [[next(it) for _ in u.sentences] for u in units]
    chunk_at = chunk_ins + np.arange(len(new))
    unit_at = unit_ins + np.arange(len(units))
    old_parent = prev.unit_parent
    if int(chunk_ins.min()) < len(prev.chunks):
        old_parent = prev.unit_parent + np.searchsorted(chunk_ins, prev.unit_parent, side="right")
    n_fresh = len(fresh) if prev.sent_vecs is not None else 0  # sentence vectors only where the index keeps them
    vecs = _embed(emb, [s for _, s in fresh][:n_fresh] + [u.text for u in units])
    at_end = int(chunk_ins.min()) == len(prev.chunks)  # new ids after every known one: arrays grow in place

    def grown(a: np.ndarray, at: np.ndarray, values: Sequence[int] | np.ndarray) -> np.ndarray:
        values = np.asarray(values, dtype=a.dtype)
        return appended(a, values) if at_end else _ro(np.insert(a, at, values, axis=0))

    chunks, units_all, sentences = _sequences(prev, (chunk_ins, new), (unit_ins, units), [s for _, s in fresh])
    st = Stored(
        chunks=chunks,
        chunk_tokens=grown(prev.chunk_tokens, chunk_ins, count_tokens_batch(tok, [c.text for c in new])),
        units=units_all,
        unit_parent=grown(old_parent, unit_ins, chunk_at[unit_chunk]),
        unit_tokens=grown(prev.unit_tokens, unit_ins, [u.n_tokens for u in units]),
        sentences=sentences,
        sent_unit=_sent_unit(prev.sent_unit, unit_ins, unit_at, unit_sents, n_s + len(fresh)),
        sent_vecs=None if prev.sent_vecs is None else appended(prev.sent_vecs, vecs[:n_fresh]),
        unit_vecs=grown(prev.unit_vecs, unit_ins, vecs[n_fresh:]),
        timings=dict(prev.timings),
    )
    return st, Inserted(chunk_ins, chunk_at, unit_ins, unit_at, unit_chunk, unit_sents, len(fresh)), sent_map


def _sequences(
    prev: Stored, chunks: tuple[np.ndarray, Sequence[Chunk]], units: tuple[np.ndarray, Sequence[Unit]], fresh: list[str]
) -> tuple[Sequence[Chunk], Sequence[Unit], Sequence[str]]:
    """``prev``'s chunks and units with the new ones inserted before the old positions given (``np.insert``
    semantics), and its sentences with the ``fresh`` ones appended (the one place the sequences are merged): ropes
    of slices (:mod:`g2cons_plugins.arrays.columns`), no copy of the known items."""
    return (
        _merge(prev.chunks, chunks[0].tolist(), chunks[1]),
        _merge(prev.units, units[0].tolist(), units[1]),
        concat([(prev.sentences, 0, len(prev.sentences)), (fresh, 0, len(fresh))]),
    )


def _fresh(rows: list[int], texts: list[str], n_s: int) -> list[tuple[int, str]]:
    """The appended (row, sentence) pairs, in row order, each once."""
    out: dict[int, str] = {}
    for r, s in zip(rows, texts, strict=True):
        if r >= n_s:
            out.setdefault(r, s)
    return sorted(out.items())


def _embed(emb: Embedder, texts: list[str]) -> np.ndarray:
    if not texts:
        return np.zeros((0, emb.dim), np.float32)
    return validate_embeddings(emb.embed(texts), len(texts), emb.dim, emb.name)


def _sent_unit(
    old: sp.csr_matrix, unit_ins: np.ndarray, unit_at: np.ndarray, unit_sents: list[list[int]], n_rows: int
) -> sp.csr_matrix:
    """The sentence x unit incidence with the new units' columns inserted and the new sentence rows added (new
    units after every old one: only the rows of their sentences are made again)."""
    n_u = old.shape[1]
    if len(unit_at) and int(unit_ins.min()) == n_u and old.has_sorted_indices:
        r = np.fromiter((r for rs in unit_sents for r in rs), np.int64)
        c = np.repeat(unit_at, [len(rs) for rs in unit_sents])
        key = np.unique(r * (n_u + len(unit_at)) + c)  # a unit may hold a sentence twice
        r, c = key // (n_u + len(unit_at)), key % (n_u + len(unit_at))
        rows = np.unique(r)
        known = rows[rows < old.shape[0]]
        lens = np.diff(old.indptr)[known]
        o_own = np.repeat(np.searchsorted(rows, known), lens)
        o_col = np.concatenate([old.indices[old.indptr[i] : old.indptr[i + 1]] for i in known.tolist()] or [r[:0]])
        own = np.concatenate([o_own, np.searchsorted(rows, r)])
        col = np.concatenate([o_col, c])
        order = np.lexsort((col, own))
        ones = np.ones(len(order), old.dtype)
        M = replace_rows(old, rows, own[order], col[order], ones, (n_rows, n_u + len(unit_at)))
        return freeze(M)
    C = old.tocoo()
    shift = np.searchsorted(unit_ins, np.arange(old.shape[1]), side="right")
    rows = np.concatenate([C.row, np.fromiter((r for rs in unit_sents for r in rs), np.int64)])
    cols = np.concatenate([C.col + shift[C.col], np.repeat(unit_at, [len(rs) for rs in unit_sents])])
    M = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(n_rows, old.shape[1] + len(unit_at)))
    return freeze(binary(M))


def drop_stored(prev: Stored, keep_chunk: np.ndarray) -> tuple[Stored, np.ndarray]:
    """``prev`` without the chunks where ``keep_chunk`` is False (their units go; their sentences stay as rows,
    see module doc); returns the kept-units mask too."""
    keep_unit = keep_chunk[prev.unit_parent]
    new_pos = np.cumsum(keep_chunk) - 1
    st = Stored(
        chunks=kept(prev.chunks, keep_chunk),
        chunk_tokens=_ro(prev.chunk_tokens[keep_chunk]),
        units=kept(prev.units, keep_unit),
        unit_parent=_ro(new_pos[prev.unit_parent[keep_unit]].astype(np.int64)),
        unit_tokens=_ro(prev.unit_tokens[keep_unit]),
        sentences=prev.sentences,
        sent_unit=freeze(sp.csr_matrix(prev.sent_unit[:, np.flatnonzero(keep_unit)])),
        sent_vecs=prev.sent_vecs,
        unit_vecs=kept_rows(prev.unit_vecs, keep_unit),  # file-backed where prev's are (storage.spill)
        timings=dict(prev.timings),
    )
    return st, keep_unit


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


def replace_rows(
    M: sp.csr_matrix,
    rows: np.ndarray,
    own: np.ndarray,
    col: np.ndarray,
    val: np.ndarray,
    shape: tuple[int, int] | None = None,
) -> sp.csr_matrix:
    """csr ``M`` (grown to ``shape``: new rows empty) with its ``rows`` (sorted, unique) replaced by the entries
    ``(rows[own], col, val)``, sorted by (``own``, ``col``); the other rows are copied by slices (their indices
    stay sorted when ``M``'s are)."""
    n_old = M.shape[0]
    shape = M.shape if shape is None else shape
    lens = np.zeros(shape[0], np.int64)
    lens[:n_old] = np.diff(M.indptr)
    lens[rows] = np.bincount(own, minlength=len(rows))
    indptr = np.zeros(shape[0] + 1, np.int64)
    np.cumsum(lens, out=indptr[1:])
    starts = np.searchsorted(own, np.arange(len(rows) + 1))
    ptr = M.indptr
    pieces: list[np.ndarray] = []
    idx: list[np.ndarray] = []
    last = 0
    for k, r in enumerate(rows.tolist()):
        r_old = min(r, n_old)
        pieces += [M.data[ptr[last] : ptr[r_old]], val[starts[k] : starts[k + 1]]]
        idx += [M.indices[ptr[last] : ptr[r_old]], col[starts[k] : starts[k + 1]]]
        last = min(r + 1, n_old)
    pieces.append(M.data[ptr[last] : ptr[n_old]])
    idx.append(M.indices[ptr[last] : ptr[n_old]])
    small = indptr[-1] <= np.iinfo(np.int32).max and M.indices.dtype == np.int32 and shape[1] < 2**31
    out = sp.csr_matrix(
        (
            np.concatenate(pieces).astype(M.dtype, copy=False),
            np.concatenate(idx).astype(np.int32 if small else np.int64, copy=False),
            indptr.astype(np.int32) if small else indptr,
        ),
        shape=shape,
    )
    out.has_sorted_indices = True
    return out
