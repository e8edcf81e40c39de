"""The stored state's texts as columns in one uncompressed ``stored.npz`` (format version 5), read in place.

Members (each a ``.npy`` inside the zip, read through one read-only memory map: :mod:`.npz_view`):

- ``chunk.id.*``, ``chunk.text.*``, ``chunk.meta.*``: text columns (``.buf`` UTF-8 bytes, ``.off`` int64 offsets;
  :class:`~g2cons_plugins.arrays.columns.TextColumn`); a chunk's metadata is a JSON object, ``""`` for none;
  ``chunk.n_tokens``;
- ``unit.parent`` (chunk positions, ascending), ``unit.n_tokens``, ``unit.sent.off`` / ``unit.sent.flat`` (each
  unit's sentence positions, in order), ``unit.text_at`` / ``unit.text.*`` (the units whose text is not what
  splitting makes of their chunk: written out; none in practice). Unit ids are not stored: they follow from the
  chunk ids (:func:`~g2cons_plugins.arrays.positions.unit_id`);
- ``sentence.*``: the distinct sentences.

A load checks every column without making a Python object per text (offsets, UTF-8 validity in streamed blocks,
ranges, chunk ids sorted and distinct in one pass over them) and returns a
:class:`~g2cons_plugins.build.Stored` whose chunks and units are :mod:`~g2cons_plugins.arrays.tables`: the texts stay
in the file (its pages are unmapped after the checks, :func:`.memory.drop_mapped_pages`). Measured at 100k
passages: see ``benchmarks/scale/results``.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from ..arrays.columns import TextColumn, check_utf8, text_column
from ..arrays.tables import ChunkTable, UnitTable, first_out_of_order, metadata_json
from ..build import Stored
from ..errors import PersistError
from .derived_io import savez
from .memory import drop_mapped_pages
from .npz_view import NpzView
from .stored_io import fsync_write, sentence_membership

__all__ = ["STORED_NPZ", "read_stored_npz", "write_stored_npz"]

STORED_NPZ = "stored.npz"


def _column(arrays: dict[str, np.ndarray], name: str, col: TextColumn) -> None:
    arrays[f"{name}.buf"], arrays[f"{name}.off"] = col.buf, col.off


def write_stored_npz(folder: Path, st: Stored) -> None:
    """Write the chunks, units and sentences of ``st`` as ``stored.npz`` into ``folder``."""
    arrays = _as_columns(st)
    if arrays is None:
        arrays = _from_objects(st)
    fsync_write(folder / STORED_NPZ, lambda fh: savez(fh, arrays))


def _as_columns(st: Stored) -> dict[str, np.ndarray] | None:
    """The members of a stored state that already is columns (a streaming build's or a loaded index's: its
    columns written as they are, no Python object per text), or None."""
    chunks, units, sentences = st.chunks, st.units, st.sentences
    if not (
        isinstance(chunks, ChunkTable)
        and isinstance(units, UnitTable)
        and isinstance(sentences, TextColumn)
        and units.chunk_ids is chunks.ids
        and units.sentences is sentences
        and all(isinstance(c, TextColumn) for c in (chunks.ids, chunks.texts, chunks.metadata, units.texts))
    ):
        return None
    meta = chunks.metadata
    kept = getattr(chunks, "kept", None)
    if kept:  # metadata JSON would not give back equal: written as JSON now, as the object path writes it
        meta = text_column(metadata_json(chunks.meta(i)) if i in kept else meta[i] for i in range(len(chunks)))
    arrays: dict[str, np.ndarray] = {}
    for name, col in (("chunk.id", chunks.ids), ("chunk.text", chunks.texts), ("chunk.meta", meta)):
        _column(arrays, name, col)  # type: ignore[arg-type]
    arrays["chunk.n_tokens"] = np.asarray(st.chunk_tokens, dtype=np.int64)
    arrays["unit.parent"] = np.asarray(st.unit_parent, dtype=np.int64)
    arrays["unit.n_tokens"] = np.asarray(st.unit_tokens, dtype=np.int64)
    arrays["unit.sent.off"] = np.asarray(units.sent_off, dtype=np.int64)
    arrays["unit.sent.flat"] = np.asarray(units.sent_flat, dtype=np.int64)
    arrays["unit.text_at"] = np.asarray(units.text_at, dtype=np.int64)
    _column(arrays, "unit.text", units.texts)  # type: ignore[arg-type]
    _column(arrays, "sentence", sentences)
    return arrays


def _from_objects(st: Stored) -> dict[str, np.ndarray]:
    """The members of a stored state of Python objects (a build in memory, an add's)."""
    parent = np.asarray(st.unit_parent, dtype=np.int64)
    chunk_ids = [c.id for c in st.chunks]
    chunk_texts = [c.text for c in st.chunks]
    one = (np.bincount(parent, minlength=len(chunk_ids))[parent] == 1).tolist()
    sent_pos = {s: i for i, s in enumerate(st.sentences)}
    flat: list[int] = []
    counts: list[int] = []
    text_at: list[int] = []
    texts: list[str] = []
    for j, (u, p, single) in enumerate(zip(st.units, parent.tolist(), one, strict=True)):
        if u.parent_id != chunk_ids[p]:  # an internal invariant of Stored: never write an index that breaks it
            raise PersistError(f"unit {u.id!r}: parent {u.parent_id!r} is not chunk #{p} ({chunk_ids[p]!r})")
        flat.extend(sent_pos[s] for s in u.sentences)
        counts.append(len(u.sentences))
        if not single or u.text != chunk_texts[p]:  # a query reads a text with one decode, never a join
            text_at.append(j)
            texts.append(u.text)
    arrays: dict[str, np.ndarray] = {}
    _column(arrays, "chunk.id", text_column(chunk_ids))
    _column(arrays, "chunk.text", text_column(chunk_texts))
    _column(arrays, "chunk.meta", text_column(metadata_json(c.metadata) for c in st.chunks))
    arrays["chunk.n_tokens"] = np.asarray(st.chunk_tokens, dtype=np.int64)
    arrays["unit.parent"] = parent
    arrays["unit.n_tokens"] = np.asarray(st.unit_tokens, dtype=np.int64)
    arrays["unit.sent.off"] = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int64)
    arrays["unit.sent.flat"] = np.asarray(flat, dtype=np.int64)
    arrays["unit.text_at"] = np.asarray(text_at, dtype=np.int64)
    _column(arrays, "unit.text", text_column(texts))
    _column(arrays, "sentence", text_column(st.sentences))
    return arrays


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.npz = NpzView(path)
        except (OSError, ValueError, zipfile.BadZipFile) as e:
            raise PersistError(f"{path}: unreadable, not a .npz of arrays ({e})") from None

    def fail(self, name: str, what: str) -> PersistError:
        return PersistError(f"{self.path}: {name} {what}")

    def ints(self, name: str, n: int | None = None) -> np.ndarray:
        if name not in self.npz.files:
            raise self.fail(name, "is missing")
        try:
            a = self.npz[name]
        except (OSError, ValueError, KeyError) as e:
            raise self.fail(name, f"is unreadable ({e})") from None
        if a.ndim != 1 or a.dtype.kind not in "iu" or (n is not None and len(a) != n):
            raise self.fail(name, f"has dtype {a.dtype} and shape {a.shape}; expected integers of length {n}")
        return a

    def column(self, name: str, n: int | None = None) -> TextColumn:
        buf, off = self.ints(f"{name}.buf"), self.ints(f"{name}.off", None if n is None else n + 1)
        if buf.dtype != np.uint8:
            raise self.fail(f"{name}.buf", f"has dtype {buf.dtype}; expected uint8")
        why = check_utf8(buf, off)
        if why:
            raise self.fail(name, why)
        drop_mapped_pages([buf])  # checked: unmapped again, so a load never holds the whole file
        return TextColumn(buf, off)


def read_stored_npz(folder: Path, unit_vecs: np.ndarray, sent_vecs: np.ndarray | None) -> Stored:
    """The stored state of ``stored.npz`` in ``folder`` with the given (checked) vectors; every column checked."""
    r = _Reader(folder / STORED_NPZ)
    ids = r.column("chunk.id")
    n_c = len(ids)
    if n_c == 0:
        raise r.fail("chunk.id", "holds no chunks")
    chunks = ChunkTable(ids, r.column("chunk.text", n_c), r.column("chunk.meta", n_c))
    _check_ids(r, ids)
    _check_meta(r, chunks.metadata)  # type: ignore[arg-type]
    chunk_tokens = _tokens(r, "chunk.n_tokens", n_c, np.diff(chunks.texts.off))  # type: ignore[attr-defined]
    parent = r.ints("unit.parent")
    n_u = len(parent)
    if n_u == 0 or int(parent.min()) < 0 or int(parent.max()) >= n_c or (np.diff(parent) < 0).any():
        raise r.fail("unit.parent", f"must list chunk positions in [0, {n_c}), ascending")
    if (np.bincount(parent, minlength=n_c) == 0).any():
        k = int(np.argmin(np.bincount(parent, minlength=n_c)))
        raise r.fail("unit.parent", f"gives chunk {ids[k]!r} no retrieval unit")
    unit_tokens = _tokens(r, "unit.n_tokens", n_u, np.diff(chunks.texts.off)[parent])  # type: ignore[attr-defined]
    sentences = r.column("sentence")
    off, flat = r.ints("unit.sent.off", n_u + 1), r.ints("unit.sent.flat")
    if int(off[0]) != 0 or int(off[-1]) != len(flat) or (np.diff(off) < 1).any():
        raise r.fail("unit.sent.off", "must give every unit at least one sentence")
    if len(flat) and (int(flat.min()) < 0 or int(flat.max()) >= len(sentences)):
        raise r.fail("unit.sent.flat", f"must list sentence positions in [0, {len(sentences)})")
    text_at = r.ints("unit.text_at")
    written = r.column("unit.text", len(text_at))
    if len(text_at) and (int(text_at.min()) < 0 or int(text_at.max()) >= n_u or (np.diff(text_at) <= 0).any()):
        raise r.fail("unit.text_at", f"must list unit positions in [0, {n_u}), ascending")
    owner = np.repeat(np.arange(n_u), np.diff(off))
    sent_unit = sentence_membership(flat, owner, len(sentences), n_u)
    units = UnitTable(chunks, parent, unit_tokens, sentences, (off, flat), (text_at, written))
    for name, vecs, n in (("unit", unit_vecs, n_u), ("sentence", sent_vecs, len(sentences))):
        if vecs is not None and len(vecs) != n:
            raise PersistError(f"{folder}: {len(vecs)} {name} vectors for {n} {name}s")
    return Stored(
        chunks=chunks,
        chunk_tokens=chunk_tokens,
        units=units,
        unit_parent=parent,
        unit_tokens=unit_tokens,
        sentences=sentences,
        sent_unit=sent_unit,
        sent_vecs=sent_vecs,
        unit_vecs=unit_vecs,
    )


def _check_ids(r: _Reader, ids: TextColumn) -> None:
    """Chunk ids non-empty, sorted and distinct (one pass)."""
    if (np.diff(ids.off) == 0).any():
        raise r.fail("chunk.id", f"holds an empty id (record {int(np.argmax(np.diff(ids.off) == 0)) + 1})")
    k = first_out_of_order(ids)
    if k is not None:
        raise r.fail("chunk.id", f"record {k + 1}: id {ids[k]!r} is repeated or out of order")


def _check_meta(r: _Reader, meta: TextColumn) -> None:
    """Each metadata entry is empty or braced (parsed, and so fully checked, when read)."""
    lens = np.diff(meta.off)
    some = np.flatnonzero(lens > 0)
    ok = (meta.buf[meta.off[some]] == ord("{")) & (meta.buf[meta.off[some + 1] - 1] == ord("}"))
    if not ok.all():
        raise r.fail("chunk.meta", f"record {int(some[np.argmin(ok)]) + 1} is not a JSON object")


def _tokens(r: _Reader, name: str, n: int, nbytes: np.ndarray) -> np.ndarray:
    a = r.ints(name, n)
    bad = (a < 1) | (a > 10 * nbytes + 16)
    if bad.any():
        k = int(np.argmax(bad))
        raise r.fail(name, f"record {k + 1} is {a[k]}, impossible for {nbytes[k]} bytes")
    return a
