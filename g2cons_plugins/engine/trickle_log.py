"""The log of trickle updates since the last exact derive, so that a save need not re-derive.

A trickle update (:mod:`g2cons_plugins.engine.update`) drifts from a rebuild until ``refresh()``; the state it leaves
is a function of the exact snapshot it started from and of the updates made since, in their order. So instead
of re-deriving everything (``refresh()``: at 1M passages two minutes and a build's memory) before a save, the
save can write the exact snapshot's files as they already are on disk (hard links to its saved version) plus
this log, and a load replays the log on them: the same code on the same inputs gives the same state.

- :class:`TrickleOp`: one update. An add keeps its chunks and every text it embedded with its vector (the new
  sentences where the index keeps sentence vectors, then the new units), so a replay embeds nothing and gets
  the very vectors the add had (no model or API call at load). A removal keeps its chunk ids.
- :class:`Origin`: where an exact snapshot's files are saved (a version folder and its manifest's sha256).
- :class:`RecordingEmbedder` keeps what an add embedded; :class:`ReplayEmbedder` hands a replayed add those
  vectors, in the same calls, and refuses any other text.

The log is held in memory with the trickle state (:class:`~g2cons_plugins.engine.update.Pending`): proportional to the
change, which the drift budget bounds (``update.DRIFT_BUDGET``; past it an update is exact and the log starts
again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..chunks import Chunk
from ..errors import PersistError

__all__ = ["Origin", "RecordingEmbedder", "ReplayEmbedder", "TrickleOp"]


@dataclass(frozen=True)
class Origin:
    """An exact snapshot's saved files: the version folder (absolute) and the sha256 of its ``manifest.json``."""

    folder: str
    manifest_sha256: str


@dataclass(frozen=True, eq=False)
class TrickleOp:
    """One trickle update: ``kind`` "add" (``chunks``, and the ``texts`` it embedded with their ``vectors``,
    float32 rows) or "remove" (``ids``)."""

    kind: str
    chunks: tuple[Chunk, ...] = ()
    ids: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()
    vectors: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("add", "remove"):
            raise ValueError(f"TrickleOp kind must be 'add' or 'remove', got {self.kind!r}")
        if self.vectors is not None:
            self.vectors.flags.writeable = False

    @classmethod
    def add(cls, chunks: Sequence[Chunk], texts: Sequence[str], vectors: np.ndarray) -> TrickleOp:
        """An add of ``chunks`` that embedded ``texts`` as ``vectors``."""
        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        if vecs.ndim != 2 or len(vecs) != len(texts):
            raise ValueError(f"TrickleOp.add: {len(texts)} texts but vectors of shape {vecs.shape}")
        return cls("add", chunks=tuple(chunks), texts=tuple(texts), vectors=vecs)

    @classmethod
    def remove(cls, ids: Sequence[str]) -> TrickleOp:
        """A removal of the chunks ``ids``."""
        return cls("remove", ids=tuple(sorted(ids)))


class RecordingEmbedder:
    """Wraps the index's embedder for one add and keeps every text it embeds with the vector it returned."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.dim = inner, inner.name, int(inner.dim)
        self.texts: list[str] = []
        self._vecs: list[np.ndarray] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The inner embedder's vectors of ``texts``, recorded."""
        out = np.array(self.inner.embed(texts), dtype=np.float32)  # a copy: the caller's array is not ours to keep
        self.texts += list(texts)
        self._vecs.append(out)
        return out

    def op(self, chunks: Sequence[Chunk]) -> TrickleOp:
        """The add of ``chunks`` with what it embedded."""
        vecs = [v.reshape(-1, self.dim) for v in self._vecs]  # the add checked every shape already
        return TrickleOp.add(chunks, self.texts, np.concatenate(vecs) if vecs else np.zeros((0, self.dim), np.float32))


class ReplayEmbedder:
    """Hands a replayed add the vectors its op kept, call by call in the order the add made them, named and sized
    as the index's embedder; a text other than the one the add embedded there is an error: a replay never calls
    a model, and gets the very vectors the add had."""

    def __init__(self, name: str, dim: int, op: TrickleOp, source: str) -> None:
        self.name, self.dim, self.source = name, int(dim), source
        self._op, self._at = op, 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The kept vectors of the next ``len(texts)`` texts (which must be those the add embedded)."""
        texts = list(texts)
        a, b = self._at, self._at + len(texts)
        if tuple(texts) != self._op.texts[a:b]:
            raise PersistError(f"{self.source}: a replayed add embeds other texts than the logged add did")
        self._at = b
        vecs = self._op.vectors
        assert vecs is not None
        return np.array(vecs[a:b], dtype=np.float32)

    def done(self) -> bool:
        """True when every kept vector was handed out."""
        return self._at == len(self._op.texts)
