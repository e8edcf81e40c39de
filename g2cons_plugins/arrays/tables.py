"""Chunks and retrieval units as columns (:mod:`g2cons_plugins.arrays.columns`), read as
:class:`~g2cons_plugins.chunks.Chunk` and :class:`~g2cons_plugins.chunks.Unit` one at a time.

A loaded index holds its chunks and units this way (:mod:`g2cons_plugins.storage.stored_npz`): the texts stay in
the mapped file, and an item is made when it is read. A unit's id, text and parent follow from its chunk (as
:func:`~g2cons_plugins.chunks.split_units` makes them): the id by :func:`~g2cons_plugins.arrays.positions.unit_id`; the
text is its chunk's where the chunk is one unit, else its sentences joined by one space, unless the unit is one of
the few written out (``text_at``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, overload

import numpy as np

from ..chunks import Chunk, Unit, unit_id
from ..errors import PersistError
from .columns import Rope, SequenceEq, TextColumn, concat, position, take

__all__ = [
    "ChunkTable", "UnitTable", "chunk_id_view", "column_arrays", "first_out_of_order", "ids_increase", "unit_fields",
    "unit_fields_of", "unit_id_view", "unit_text", "unit_text_view", "unit_texts",
]


class ChunkTable(SequenceEq, Sequence[Chunk]):
    """Chunks from an id column, a text column and a metadata column (JSON objects; ``""`` for none)."""

    __slots__ = ("ids", "metadata", "texts")

    def __init__(self, ids: Sequence[str], texts: Sequence[str], metadata: Sequence[str]) -> None:
        self.ids, self.texts, self.metadata = ids, texts, metadata

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, i: int) -> Chunk: ...
    @overload
    def __getitem__(self, i: slice) -> list[Chunk]: ...
    def __getitem__(self, i: int | slice) -> Chunk | list[Chunk]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        return Chunk(self.ids[i], self.texts[i], self.meta(i))

    def __iter__(self) -> Iterator[Chunk]:
        for i in range(len(self)):
            yield self[i]

    def meta(self, i: int) -> dict[str, Any]:
        """The metadata of chunk ``i`` (a new dict each call)."""
        raw = self.metadata[i]
        if not raw:
            return {}
        try:
            out = json.loads(raw)
        except ValueError:
            out = None
        if not isinstance(out, dict):
            raise PersistError(f"chunk {self.ids[i]!r}: stored metadata is not a JSON object")
        return out


class UnitTable(SequenceEq, Sequence[Unit]):
    """Units from their chunks' columns, ``parent`` (chunk positions, ascending), token counts, sentence positions
    (``sent_flat`` cut by ``sent_off``) and the texts written out (``text_at`` ascending, ``texts``)."""

    __slots__ = ("_starts", "chunk_ids", "chunk_texts", "n_tokens", "parent", "sent_flat", "sent_off", "sentences", "slot", "text_at", "texts")  # noqa: E501

    def __init__(
        self,
        chunks: ChunkTable,
        parent: np.ndarray,
        n_tokens: np.ndarray,
        sentences: Sequence[str],
        sent: tuple[np.ndarray, np.ndarray],
        written: tuple[np.ndarray, Sequence[str]],
    ) -> None:
        self.chunk_ids, self.chunk_texts = chunks.ids, chunks.texts
        self.parent, self.n_tokens, self.sentences = parent, n_tokens, sentences
        self.sent_off, self.sent_flat = sent
        self.text_at, self.texts = written
        self._starts = np.searchsorted(parent, np.arange(len(chunks) + 1), side="left")
        self.slot = np.full(len(parent), -1, np.int32 if len(self.text_at) < 2**31 else np.int64)
        self.slot[self.text_at] = np.arange(len(self.text_at))  # unit -> its written text, or -1

    def __len__(self) -> int:
        return len(self.parent)

    @overload
    def __getitem__(self, j: int) -> Unit: ...
    @overload
    def __getitem__(self, j: slice) -> list[Unit]: ...
    def __getitem__(self, j: int | slice) -> Unit | list[Unit]:
        if isinstance(j, slice):
            return [self[k] for k in range(*j.indices(len(self)))]
        j = position(j, len(self), "unit")
        p = int(self.parent[j])
        lo, hi = int(self._starts[p]), int(self._starts[p + 1])
        cid = self.chunk_ids[p]
        sents = self._sentences(j)
        return Unit(unit_id(cid, j - lo, hi - lo), cid, self.text(j, sents), int(self.n_tokens[j]), sents)

    def ident(self, j: int) -> str:
        """The id of unit ``j``, without making the unit."""
        p = int(self.parent[j])
        lo, hi = int(self._starts[p]), int(self._starts[p + 1])
        return unit_id(self.chunk_ids[p], j - lo, hi - lo)

    def fields(self, j: int) -> tuple[str, str, str]:
        """Id, parent id and text of unit ``j``, without making the unit."""
        p = int(self.parent[j])
        lo, hi = int(self._starts[p]), int(self._starts[p + 1])
        cid = self.chunk_ids[p]
        return unit_id(cid, j - lo, hi - lo), cid, self.text(j)

    def text(self, j: int, sents: tuple[str, ...] | None = None) -> str:
        """The text of unit ``j`` (see module doc)."""
        k = int(self.slot[j])
        if k >= 0:
            return self.texts[k]
        p = int(self.parent[j])
        if int(self._starts[p + 1]) - int(self._starts[p]) == 1:
            return self.chunk_texts[p]
        return " ".join(self._sentences(j) if sents is None else sents)

    def texts_of(self, js: np.ndarray) -> list[str]:
        """The texts of units ``js`` (positions), read a column at a time: equal to ``[self.text(j) for j in js]``."""
        js = np.asarray(js, dtype=np.int64)
        out: list[str] = [""] * len(js)
        slot = self.slot[js]
        p = self.parent[js]
        alone = self._starts[p + 1] - self._starts[p] == 1
        for where, column, row in ((slot >= 0, self.texts, slot), ((slot < 0) & alone, self.chunk_texts, p)):
            at = np.flatnonzero(where)  # the units whose text is written out, and those that are their chunk's
            for k, t in zip(at.tolist(), take(column, row[at]), strict=True):
                out[k] = t
        joined = np.flatnonzero((slot < 0) & ~alone)  # the units whose text is their sentences joined by a space
        if len(joined):
            lo, hi = self.sent_off[js[joined]], self.sent_off[js[joined] + 1]
            counts = (hi - lo).astype(np.int64)
            starts = np.repeat(lo - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
            sents = take(self.sentences, self.sent_flat[starts + np.arange(int(counts.sum()))])
            ends = np.cumsum(counts).tolist()
            for k, a, b in zip(joined.tolist(), [0, *ends[:-1]], ends, strict=True):
                out[k] = " ".join(sents[a:b])
        return out

    def fields_of(self, js: np.ndarray) -> list[tuple[str, str, str]]:
        """Id, parent id and text of units ``js`` (positions), read a column at a time: equal to
        ``[self.fields(j) for j in js]``."""
        js = np.asarray(js, dtype=np.int64)
        p = self.parent[js].astype(np.int64)
        lo, hi = self._starts[p], self._starts[p + 1]
        cids = take(self.chunk_ids, p)
        ids = [unit_id(c, i, n) for c, i, n in zip(cids, (js - lo).tolist(), (hi - lo).tolist(), strict=True)]
        return list(zip(ids, cids, self.texts_of(js), strict=True))

    def _sentences(self, j: int) -> tuple[str, ...]:
        return tuple(self.sentences[k] for k in self.sent_flat[self.sent_off[j] : self.sent_off[j + 1]].tolist())

    def __iter__(self) -> Iterator[Unit]:
        for j in range(len(self)):
            yield self[j]


def metadata_json(meta: Mapping[str, Any]) -> str:
    """The metadata column's entry for ``meta`` (``""`` for none)."""
    return json.dumps(dict(meta), ensure_ascii=False, sort_keys=False) if meta else ""


def _where(units: Sequence[Unit], j: int) -> tuple[Sequence[Unit], int]:
    """The sequence that holds item ``j`` of ``units`` (through a Rope's pieces) and its position there."""
    while isinstance(units, Rope):
        units, j = units.locate(j)
    return units, j


def unit_text(units: Sequence[Unit], j: int) -> str:
    """``units[j].text``, without making the unit where ``units`` are columns."""
    seq, k = _where(units, j)
    return seq.text(k) if isinstance(seq, UnitTable) else seq[k].text


def unit_texts(units: Sequence[Unit], js: np.ndarray) -> list[str]:
    """``[units[j].text for j in js]``, a column at a time where ``units`` are columns (or a Rope of them): the
    cost of checking a few hundred units' texts in a large index."""
    js = np.asarray(js, dtype=np.int64)
    if isinstance(units, UnitTable):
        return units.texts_of(js)
    if isinstance(units, Rope):
        return units.take(js, unit_texts)
    return [units[j].text for j in js.tolist()]


def unit_fields(units: Sequence[Unit], j: int) -> tuple[str, str, str]:
    """Id, parent id and text of ``units[j]``, without making the unit where ``units`` are columns."""
    seq, k = _where(units, j)
    if isinstance(seq, UnitTable):
        return seq.fields(k)
    u = seq[k]
    return u.id, u.parent_id, u.text


def unit_fields_of(units: Sequence[Unit], js: np.ndarray) -> list[tuple[str, str, str]]:
    """``[unit_fields(units, j) for j in js]``, a column at a time where ``units`` are columns (or a Rope of them):
    the cost of filling a context with a hundred units of a large index."""
    js = np.asarray(js, dtype=np.int64)
    if isinstance(units, UnitTable):
        return units.fields_of(js)
    if isinstance(units, Rope):
        return units.take(js, unit_fields_of)
    return [(u.id, u.parent_id, u.text) for u in (units[j] for j in js.tolist())]


class _Field(SequenceEq, Sequence[str]):
    """One string field of a sequence of chunks or units, read one item at a time (a unit table reads it without
    making the unit)."""

    __slots__ = ("_items", "_name")

    def __init__(self, items: Sequence[Any], name: str) -> None:
        self._items, self._name = items, name

    def _get(self, i: int) -> str:
        items = self._items
        if isinstance(items, UnitTable):
            return items.ident(i) if self._name == "id" else items.text(i)
        return getattr(items[i], self._name)  # type: ignore[no-any-return]

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self._items)))]
        return self._get(i)


def _view(seq: Sequence[Any], name: str) -> Sequence[str]:
    if isinstance(seq, ChunkTable):
        return seq.ids if name == "id" else seq.texts
    if isinstance(seq, Rope):
        return concat((_view(s, name), a, b) for s, a, b in seq.pieces)
    return _Field(seq, name)


def chunk_id_view(chunks: Sequence[Chunk]) -> Sequence[str]:
    """``[c.id for c in chunks]`` as a sequence read one id at a time (a table's id column; no chunk is made)."""
    return _view(chunks, "id")


def first_out_of_order(ids: Iterable[str]) -> int | None:
    """The position of the first id that is not greater than the one before it (repeated or out of order), read
    one at a time (e.g. from :func:`chunk_id_view`: no chunk, and no chunk text, is made); None when the ids
    strictly increase."""
    prev = None
    for k, i in enumerate(ids):
        if prev is not None and not prev < i:
            return k
        prev = i
    return None


def ids_increase(ids: Iterable[str]) -> bool:
    """The ids strictly increase (sorted by id, none repeated): :func:`first_out_of_order` finds none."""
    return first_out_of_order(ids) is None


def unit_id_view(units: Sequence[Unit]) -> Sequence[str]:
    """``[u.id for u in units]`` as a sequence read one id at a time (no unit is made from a table)."""
    return _view(units, "id")


def unit_text_view(units: Sequence[Unit]) -> Sequence[str]:
    """``[u.text for u in units]`` as a sequence read one text at a time (no unit is made from a table)."""
    return _view(units, "text")


def column_arrays(seq: Any, _depth: int = 0) -> Iterator[np.ndarray]:
    """The NumPy arrays behind a sequence of columns: a :class:`~.columns.TextColumn`'s bytes and offsets, a
    :class:`ChunkTable`'s or :class:`UnitTable`'s columns, the sequences a :class:`~.columns.Rope` or a field
    view joins (followed down), an array itself; nothing for anything else (a list of Python objects is not
    walked). What :func:`g2cons_plugins.storage.memory.drop_mapped_pages` unmaps of a loaded index's texts."""
    if _depth > 8:
        return
    if isinstance(seq, np.ndarray):
        yield seq
    elif isinstance(seq, TextColumn):
        yield from (seq.buf, seq.off)
    elif isinstance(seq, Rope):
        for piece, _, _ in seq.pieces:
            yield from column_arrays(piece, _depth + 1)
    elif isinstance(seq, ChunkTable | UnitTable | _Field):
        for name in type(seq).__slots__:
            yield from column_arrays(getattr(seq, name, None), _depth + 1)

