"""The trickle log's files in a saved version (:mod:`g2cons_plugins.engine.trickle_log`): ``trickle_log.json`` (the
updates in order: an add's chunks and the texts it embedded, a removal's ids) and ``trickle_vectors.npy``
(float32: every add's vectors, one after the other). JSON and ``.npy`` only (no pickle); every field is checked
on read and every error names the file and the update."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..arrays.npy_file import load_npy
from ..chunks import Chunk
from ..engine.trickle_log import TrickleOp
from ..errors import PersistError

__all__ = ["LOG_FILES", "LOG_JSON", "LOG_VECTORS", "read_log", "write_log"]

LOG_JSON = "trickle_log.json"
LOG_VECTORS = "trickle_vectors.npy"
LOG_FILES = (LOG_JSON, LOG_VECTORS)
LOG_FORMAT = "g2cons-trickle-log/1"


def write_log(
    folder: Path, ops: Sequence[TrickleOp], dim: int, write: Callable[[Path, Callable[[Any], Any]], None]
) -> None:
    """Write ``ops`` into ``folder`` with ``write`` (the caller's fsyncing writer)."""
    records: list[dict[str, Any]] = []
    vecs: list[np.ndarray] = []
    for op in ops:
        if op.kind == "add":
            assert op.vectors is not None
            chunks = [{"id": c.id, "text": c.text, "metadata": dict(c.metadata)} for c in op.chunks]
            records.append({"kind": "add", "chunks": chunks, "texts": list(op.texts)})
            vecs.append(op.vectors)
        else:
            records.append({"kind": "remove", "ids": list(op.ids)})
    data = json.dumps({"format": LOG_FORMAT, "ops": records}, ensure_ascii=False).encode("utf-8")
    write(folder / LOG_JSON, lambda fh: fh.write(data))
    allv = np.concatenate(vecs) if vecs else np.zeros((0, dim), np.float32)
    write(
        folder / LOG_VECTORS, lambda fh: np.save(fh, np.ascontiguousarray(allv, dtype=np.float32), allow_pickle=False)
    )


def read_log(folder: Path, dim: int) -> list[TrickleOp]:
    """The updates saved in ``folder`` (see module doc)."""
    jf, vf = folder / LOG_JSON, folder / LOG_VECTORS
    try:
        doc = json.loads(jf.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise PersistError(f"{jf}: not valid JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != LOG_FORMAT or not isinstance(doc.get("ops"), list):
        raise PersistError(f"{jf}: not a {LOG_FORMAT} file (fields 'format' and 'ops')")
    vecs = load_npy(vf, np.float32, (None, dim), "vectors")  # header and size checked before it is read
    if not np.isfinite(vecs).all():
        raise PersistError(f"{vf}: holds NaN or infinite values")
    ops: list[TrickleOp] = []
    at = 0
    for i, rec in enumerate(doc["ops"]):
        where = f"{jf}: update {i}"
        kind = rec.get("kind") if isinstance(rec, dict) else None
        if kind == "remove":
            ids = rec.get("ids")
            if not isinstance(ids, list) or not ids or not all(isinstance(x, str) for x in ids):
                raise PersistError(f"{where}: field 'ids' must be a non-empty list of strings")
            ops.append(TrickleOp.remove(ids))
        elif kind == "add":
            chunks, texts = rec.get("chunks"), rec.get("texts")
            if not isinstance(chunks, list) or not chunks or not isinstance(texts, list):
                raise PersistError(f"{where}: fields 'chunks' (a non-empty list) and 'texts' (a list) are required")
            if not all(isinstance(t, str) for t in texts):
                raise PersistError(f"{where}: field 'texts' must hold strings")
            if at + len(texts) > len(vecs):
                raise PersistError(f"{where}: {vf.name} holds {len(vecs)} vectors, fewer than the updates embedded")
            ops.append(TrickleOp.add([_chunk(c, where) for c in chunks], texts, vecs[at : at + len(texts)]))
            at += len(texts)
        else:
            raise PersistError(f"{where}: field 'kind' must be 'add' or 'remove', got {kind!r}")
    if at != len(vecs):
        raise PersistError(f"{vf}: holds {len(vecs)} vectors but the updates embedded {at}")
    return ops


def _chunk(rec: Any, where: str) -> Chunk:
    if (
        not isinstance(rec, dict)
        or not isinstance(rec.get("id"), str)
        or not isinstance(rec.get("text"), str)
        or not isinstance(rec.get("metadata", {}), dict)
    ):
        raise PersistError(f"{where}: a chunk must be an object with string 'id' and 'text' and a 'metadata' object")
    return Chunk(rec["id"], rec["text"], rec.get("metadata") or {})
