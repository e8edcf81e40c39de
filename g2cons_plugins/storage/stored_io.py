"""Write and read the stored state's texts (:class:`~g2cons_plugins.build.Stored`: chunks and retrieval units) as
columns, so a load parses two JSON documents instead of a JSON object per record.

Two files inside an index version folder (format versions 3 and 4):

- ``chunks.json``: ``{"id": [...], "text": [...], "n_tokens": [...], "metadata": {"<position>": {...}}}``
  (metadata only for the chunks that have some);
- ``units.json``: ``{"id": [...], "parent": [chunk positions], "text": [...], "n_tokens": [...],
  "n_sentences": [...], "sentences": [sentence positions, unit after unit]}``. A unit's ``text`` is ``null`` where
  it is what splitting makes of its sentences: its chunk's text when the unit is the chunk's only one, otherwise
  its sentences joined by one space (checked unit by unit when written, so ``null`` always reads back the same
  text); any other text is written out.

Measured at 80k passages (123,566 units): the stored state reads in 0.95 s against 2.7 s for the JSON-lines files
of format version 2 (written before 0.1.0, no longer read), and ``units.json`` is 6 MB against 63 MB. Every column
is validated on read; an error names the file, the record (1-based) and the field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..arrays.npy_file import load_npy
from ..arrays.ones import binary
from ..arrays.positions import first_mismatch
from ..build import Stored, freeze
from ..chunks import Chunk, Unit
from ..errors import PersistError
from .memory import drop_mapped_pages

__all__ = [
    "SENTENCE_VECTORS",
    "STORED_FILES",
    "encode_json",
    "fsync_write",
    "read_stored",
    "read_vectors",
    "sentence_membership",
    "write_stored",
]

SENTENCE_VECTORS = "sentence_vectors.npy"  # optional from format version 4 on: absent where no sentence is embedded
STORED_FILES = ("chunks.json", "units.json", "sentences.json", SENTENCE_VECTORS, "unit_vectors.npy")

encode_json = json.JSONEncoder(ensure_ascii=False).encode  # one encoder (json.dumps with options: one a call)
_BATCH = 4096  # values encoded per write: a column is streamed, never held as one string


def fsync_write(path: Path, write: Callable[[Any], Any]) -> None:
    """Create ``path`` (umask permissions; it must not exist), write, flush and fsync; the handle is closed."""
    with path.open("xb") as fh:
        write(fh)
        fh.flush()
        os.fsync(fh.fileno())


def _columns(columns: Sequence[tuple[str, Iterable[Any]]], tail: dict[str, Any]) -> Callable[[Any], None]:
    """A writer of one JSON object whose ``columns`` are streamed lists, then the small ``tail`` fields."""

    def write(fh: Any) -> None:
        fh.write(b"{")
        for i, (name, values) in enumerate(columns):
            fh.write(f"{',' if i else ''}{encode_json(name)}: [".encode())
            batch: list[str] = []
            first = True
            for v in values:
                batch.append(encode_json(v))
                if len(batch) == _BATCH:
                    fh.write(("" if first else ",").encode() + ",".join(batch).encode("utf-8"))
                    batch.clear()
                    first = False
            if batch:
                fh.write(("" if first else ",").encode() + ",".join(batch).encode("utf-8"))
            fh.write(b"]")
        for name, value in tail.items():
            fh.write(f", {encode_json(name)}: ".encode() + encode_json(value).encode("utf-8"))
        fh.write(b"}")

    return write


def write_stored(folder: Path, st: Stored) -> None:
    """Write the chunks and units of ``st`` as ``chunks.json`` and ``units.json`` into ``folder``."""
    texts = [c.text for c in st.chunks]
    parent = st.unit_parent.tolist()
    for u, p in zip(st.units, parent, strict=True):
        if u.parent_id != st.chunks[p].id:  # an internal invariant of Stored: never write an index that breaks it
            raise PersistError(f"unit {u.id!r}: parent {u.parent_id!r} is not chunk #{p} ({st.chunks[p].id!r})")
    only = (np.bincount(st.unit_parent, minlength=len(st.chunks))[st.unit_parent] == 1).tolist()
    unit_texts = (
        None if u.text == (texts[p] if one else " ".join(u.sentences)) else u.text
        for u, p, one in zip(st.units, parent, only, strict=True)
    )
    meta = {str(i): dict(c.metadata) for i, c in enumerate(st.chunks) if c.metadata}
    fsync_write(
        folder / "chunks.json",
        _columns(
            [("id", (c.id for c in st.chunks)), ("text", texts), ("n_tokens", st.chunk_tokens.tolist())],
            {"metadata": meta},
        ),
    )
    sent_pos = {s: i for i, s in enumerate(st.sentences)}
    fsync_write(
        folder / "units.json",
        _columns(
            [
                ("id", (u.id for u in st.units)),
                ("parent", parent),
                ("text", unit_texts),
                ("n_tokens", st.unit_tokens.tolist()),
                ("n_sentences", (len(u.sentences) for u in st.units)),
                ("sentences", (sent_pos[s] for u in st.units for s in u.sentences)),
            ],
            {},
        ),
    )


def _load_json(path: Path) -> Any:
    try:  # bytes decoded at once: a text-mode read (newline translation) took 4 of 24 s of a 1M-passage load
        return json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise PersistError(f"{path}: unreadable or not valid JSON ({e})") from None


def _table(path: Path, spec: dict[str, tuple[type, ...]], free: tuple[str, ...] = ()) -> dict[str, Any]:
    """The JSON object in ``path``, its ``spec`` columns checked: lists of exactly those types (JSON: no bool for
    int), of one length but the ``free`` ones."""
    obj = _load_json(path)
    if not isinstance(obj, dict):
        raise PersistError(f"{path}: must be a JSON object of columns")
    out: dict[str, Any] = dict(obj)
    for name, kinds in spec.items():
        col = obj.get(name)
        if not isinstance(col, list):
            raise PersistError(f"{path}: field {name!r} missing or not a list")
        if not set(map(type, col)) <= set(kinds):
            k = next(k for k, v in enumerate(col) if type(v) not in kinds)
            want = " or ".join("null" if t is type(None) else t.__name__ for t in kinds)
            raise PersistError(f"{path}: record {k + 1}: field {name!r} must be {want}, got {type(col[k]).__name__}")
        out[name] = col
    lengths = {name: len(out[name]) for name in spec if name not in free}
    if len(set(lengths.values())) > 1:
        raise PersistError(f"{path}: columns of different lengths {lengths}")
    return out


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _ids(path: Path, ids: list[str]) -> None:
    if len(set(ids)) != len(ids) or not all(ids):
        seen: set[str] = set()
        for k, i in enumerate(ids, 1):
            if not i or i in seen:
                raise PersistError(f"{path}: record {k}: id {i!r} is empty or repeated")
            seen.add(i)


def _int_array(path: Path, name: str, col: list[int]) -> np.ndarray:
    try:
        return np.array(col, dtype=np.int64)
    except OverflowError:
        k = next(k for k, v in enumerate(col) if not -(2**63) <= v < 2**63)
        raise PersistError(f"{path}: record {k + 1}: field {name!r} is {col[k]}, out of range") from None


def _token_counts(path: Path, n_tokens: list[int], texts: Sequence[str]) -> np.ndarray:
    n = _int_array(path, "n_tokens", n_tokens)
    chars = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    bad = (n < 1) | (n > 10 * chars + 16)
    if bad.any():
        k = _first(bad)
        raise PersistError(f"{path}: record {k + 1}: field 'n_tokens' is {n[k]}, impossible for {chars[k]} characters")
    n.flags.writeable = False
    return n


def sentence_membership(flat: np.ndarray, owner: np.ndarray, n_sentences: int, n_units: int) -> sp.csr_matrix:
    """The read-only sentences x units 0/1 matrix of a stored state: sentence ``flat[i]`` is in unit
    ``owner[i]``."""
    ones = np.ones(len(flat), np.float32)
    return freeze(binary(sp.csr_matrix((ones, (flat, owner)), shape=(n_sentences, n_units))))


def read_stored(folder: Path, dim: int, sentence_vectors: bool = True) -> Stored:
    """The stored state of an index version folder of format version 3 or 4: ``chunks.json`` + ``units.json``,
    with ``sentences.json`` and the
    memory-mapped vectors (``dim`` columns; the sentence vectors only with ``sentence_vectors``, else
    ``sent_vecs`` is None), every field checked (see module doc)."""
    sf = folder / "sentences.json"
    sentences = _load_json(sf)
    if not isinstance(sentences, list) or not all(type(s) is str for s in sentences):
        raise PersistError(f"{sf}: must be a list of strings")
    chunks, chunk_tokens, units, parent, unit_tokens, flat, owner = _read_columns(folder, sentences)
    sent_unit = sentence_membership(flat, owner, len(sentences), len(units))
    for a in (chunk_tokens, parent, unit_tokens):
        a.flags.writeable = False
    return Stored(
        chunks=chunks,
        chunk_tokens=chunk_tokens,
        units=units,
        unit_parent=parent,
        unit_tokens=unit_tokens,
        sentences=sentences,
        sent_unit=sent_unit,
        sent_vecs=read_vectors(folder / SENTENCE_VECTORS, len(sentences), dim) if sentence_vectors else None,
        unit_vecs=read_vectors(folder / "unit_vectors.npy", len(units), dim),
    )


_Read = tuple[list[Chunk], np.ndarray, list[Unit], np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _read_columns(folder: Path, sentences: list[str]) -> _Read:
    cf, uf = folder / "chunks.json", folder / "units.json"
    c = _table(cf, {"id": (str,), "text": (str,), "n_tokens": (int,)})
    ids, texts = c["id"], c["text"]
    if not ids:
        raise PersistError(f"{cf}: no chunks")
    _ids(cf, ids)
    chunk_tokens = _token_counts(cf, c["n_tokens"], texts)
    chunks = list(map(Chunk, ids, texts, _metadata(cf, c.get("metadata"), len(ids))))
    spec: dict[str, tuple[type, ...]] = {
        "id": (str,),
        "parent": (int,),
        "text": (str, type(None)),
        "n_tokens": (int,),
        "n_sentences": (int,),
        "sentences": (int,),
    }
    u = _table(uf, spec, free=("sentences",))
    _ids(uf, u["id"])
    parent = _int_array(uf, "parent", u["parent"])
    bad = (parent < 0) | (parent >= len(chunks))
    if bad.any():
        k = _first(bad)
        raise PersistError(f"{uf}: record {k + 1}: field 'parent' is {parent[k]}, not a chunk of {cf.name}")
    per_chunk = np.bincount(parent, minlength=len(chunks))
    if (per_chunk == 0).any():
        raise PersistError(f"{uf}: chunk {ids[_first(per_chunk == 0)]!r} of {cf.name} has no retrieval unit")
    counts = _int_array(uf, "n_sentences", u["n_sentences"])
    flat = _int_array(uf, "sentences", u["sentences"])
    if (counts < 1).any() or int(counts.sum()) != len(flat):
        k = _first(counts < 1) if (counts < 1).any() else len(counts) - 1
        raise PersistError(f"{uf}: record {k + 1}: field 'n_sentences' does not match the 'sentences' list")
    bad = (flat < 0) | (flat >= len(sentences))
    if bad.any():
        k = int(np.searchsorted(np.cumsum(counts), _first(bad), side="right"))
        raise PersistError(f"{uf}: record {k + 1}: field 'sentences' must list positions in [0, {len(sentences)})")
    strs = [sentences[i] for i in flat.tolist()]
    ends = np.cumsum(counts).tolist()
    unit_sents = [tuple(strs[a:b]) for a, b in zip([0, *ends[:-1]], ends, strict=True)]
    plist = parent.tolist()
    unit_texts = [
        t if t is not None else texts[p] if one else " ".join(ss)
        for t, p, one, ss in zip(u["text"], plist, (per_chunk[parent] == 1).tolist(), unit_sents, strict=True)
    ]
    unit_tokens = _token_counts(uf, u["n_tokens"], unit_texts)
    bad_id = first_mismatch(u["id"], ids, parent)
    if bad_id is not None:
        raise PersistError(f"{uf}: record {bad_id + 1}: id {u['id'][bad_id]!r} is not its chunk's unit id")
    units = list(map(Unit, u["id"], [ids[p] for p in plist], unit_texts, u["n_tokens"], unit_sents))
    return chunks, chunk_tokens, units, parent, unit_tokens, flat, np.repeat(np.arange(len(units)), counts)


def _metadata(path: Path, meta: Any, n: int) -> list[dict[str, Any]]:
    """Per chunk: its metadata (a new dict each, as a record would give), from ``{"<position>": {...}}``."""
    out: list[dict[str, Any]] = [{} for _ in range(n)]
    if meta is None:
        return out
    if not isinstance(meta, dict):
        raise PersistError(f"{path}: field 'metadata' must be an object")
    for key, value in meta.items():
        if not (key.isascii() and key.isdecimal() and len(key) < 20 and str(int(key)) == key and int(key) < n):
            raise PersistError(f"{path}: field 'metadata' has key {key!r}, not a chunk position below {n}")
        if not isinstance(value, dict):
            raise PersistError(f"{path}: record {int(key) + 1}: field 'metadata' must be an object")
        out[int(key)] = value
    return out


def read_vectors(path: Path, n: int | None, dim: int) -> np.ndarray:
    """The float32 ``(n, dim)`` vectors of ``path`` (``n`` None: any number of rows), memory-mapped read-only,
    checked finite and non-zero (streamed)."""
    a: np.ndarray = load_npy(path, np.float32, (n, dim), "vectors", mmap=True)  # header, size checked before the map
    n = a.shape[0]
    for s in range(0, n, 65_536):  # streamed: a memory-mapped file is not read into memory at once
        block = np.asarray(a[s : s + 65_536])
        if not np.isfinite(block).all():
            raise PersistError(
                f"{path}: NaN or infinite values (row {s + int(np.argmin(np.isfinite(block).all(axis=1)))})"
            )
        if not (np.abs(block).max(axis=1) > 0).all():
            raise PersistError(f"{path}: an all-zero vector (row {s + int(np.argmin(np.abs(block).max(axis=1) > 0))})")
        drop_mapped_pages([a])  # checked: unmapped again, so a load never holds the whole file
    return a
