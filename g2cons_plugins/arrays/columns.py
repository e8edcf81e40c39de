"""Sequences that hold many texts without a Python object per text.

- :class:`TextColumn`: texts as one UTF-8 byte buffer and an offsets array (what an index file holds; a loaded
  index maps both read-only, so its texts take no process memory until read). ``column[i]`` decodes one text.
- :class:`Rope`: a sequence made of slices of other sequences, so inserting a few items into (or dropping a few
  from) a sequence of a million items is O(pieces), not a copy of the million (a trickle update of a loaded index
  keeps its texts mapped). Reading item ``i`` is a binary search over the pieces' starts.

Measured at 100k passages: the chunks and units as Python objects took 197 MB of a loaded index's 425 MB of heap.
"""

from __future__ import annotations

import bisect
import codecs
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar, overload

import numpy as np

__all__ = [
    "Rope", "SequenceEq", "TextColumn", "bisect_left", "position", "check_utf8", "concat", "inserted", "kept", "take",
    "text_column",
]

T = TypeVar("T")


def position(i: int, n: int, what: str) -> int:
    """Index ``i`` of a sequence of ``n`` items as a position in ``[0, n)`` (negative from the end), else
    IndexError naming ``what``."""
    k = i + n if i < 0 else i
    if not 0 <= k < n:
        raise IndexError(f"{what} {i} of {n}")
    return k


class SequenceEq:
    """Equality with any sequence of equal items (a list, a tuple, another column), as the lists these replace had
    with each other; unhashable like them."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))  # type: ignore[arg-type, call-overload]


class TextColumn(SequenceEq, Sequence[str]):
    """``n`` texts: ``buf`` (uint8, UTF-8) and ``off`` (int64, ``n + 1`` ascending offsets from 0 to
    ``len(buf)``); text ``i`` is ``buf[off[i]:off[i + 1]]``. Read-only."""

    __slots__ = ("_mv", "buf", "off")

    def __init__(self, buf: np.ndarray, off: np.ndarray) -> None:
        self.buf, self.off = buf, off
        self._mv = memoryview(buf).cast("B") if buf.flags.c_contiguous else None  # type: ignore[arg-type]

    def __len__(self) -> int:
        return len(self.off) - 1

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle and deep-copy by value: the bytes and offsets as plain in-memory arrays (a memory-mapped column
        gives a copy that holds no map of the file, so nothing is ever written through it)."""
        return (TextColumn, (np.array(self.buf, dtype=np.uint8), np.array(self.off, dtype=np.int64)))

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                return [self[k] for k in range(start, stop, step)]
            return self._run(start, max(start, stop))
        i = position(i, len(self), "text")
        a, b = int(self.off[i]), int(self.off[i + 1])
        if self._mv is not None:
            return str(self._mv[a:b], "utf-8")
        return self.buf[a:b].tobytes().decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        off = self.off.tolist()
        buf = self.buf
        for a, b in zip(off, off[1:], strict=False):
            yield buf[a:b].tobytes().decode("utf-8")

    def _run(self, start: int, stop: int) -> list[str]:
        """Texts ``start`` to ``stop`` (a run): an ASCII run decoded at once and cut by its offsets (what reading a
        loaded index's ~5M sentences in order costs: 2-3x less than one decode a text), else one decode a text."""
        off = self.off[start : stop + 1]
        if len(off) < 2:
            return []
        a, b = int(off[0]), int(off[-1])
        cuts = (off - a).tolist()
        raw = self.buf[a:b]
        if not len(raw) or int(raw.max()) < 0x80:  # ASCII: byte offsets are character offsets
            text = raw.tobytes().decode("ascii")
            return [text[x:y] for x, y in zip(cuts, cuts[1:], strict=False)]
        mv = self._mv[a:b] if self._mv is not None else memoryview(raw.tobytes())
        return [str(mv[x:y], "utf-8") for x, y in zip(cuts, cuts[1:], strict=False)]

    def take(self, idx: np.ndarray) -> list[str]:
        """Texts ``idx`` (positions in ``[0, n)``), decoded from offsets read in one gather."""
        idx = np.asarray(idx, dtype=np.int64)
        a, b = self.off[idx].tolist(), self.off[idx + 1].tolist()
        if self._mv is not None:
            mv = self._mv
            return [str(mv[x:y], "utf-8") for x, y in zip(a, b, strict=True)]
        return [self.buf[x:y].tobytes().decode("utf-8") for x, y in zip(a, b, strict=True)]

    def nbytes(self, i: int) -> int:
        """Length of text ``i`` in UTF-8 bytes."""
        return int(self.off[i + 1] - self.off[i])


def text_column(texts: Iterable[str]) -> TextColumn:
    """A column of ``texts`` (in memory)."""
    raw = [t.encode("utf-8") for t in texts]
    off = np.zeros(len(raw) + 1, np.int64)
    np.cumsum([len(b) for b in raw], out=off[1:])
    return TextColumn(np.frombuffer(b"".join(raw), np.uint8), off)


def check_utf8(buf: np.ndarray, off: np.ndarray, block: int = 1 << 24) -> str | None:
    """Why ``buf``/``off`` is not a valid column (offsets not ascending from 0 to the end, an offset inside a
    character, bytes that are not UTF-8), or None. Streams ``buf`` in blocks (no copy of the whole buffer)."""
    if off.ndim != 1 or len(off) < 1 or int(off[0]) != 0 or int(off[-1]) != len(buf):
        return f"offsets must run from 0 to {len(buf)}"
    if len(off) > 1 and (np.diff(off) < 0).any():
        return f"offsets must not decrease (at text {int(np.argmax(np.diff(off) < 0))})"
    texts = np.flatnonzero(off[:-1] < len(buf))  # the non-empty ones
    inside = (buf[off[texts]] & 0xC0) == 0x80  # a UTF-8 continuation byte
    if inside.any():
        return f"text {int(texts[np.argmax(inside)])} starts inside a character"
    dec = codecs.getincrementaldecoder("utf-8")()
    try:
        for s in range(0, len(buf), block):
            dec.decode(buf[s : s + block].tobytes(), final=s + block >= len(buf))
        dec.decode(b"", final=True)
    except UnicodeDecodeError as e:
        return f"bytes that are not UTF-8 ({e.reason})"
    return None


class Rope(SequenceEq, Sequence[T]):
    """The concatenation of ``pieces``: ``(sequence, start, stop)`` slices of other sequences (never of a Rope:
    :func:`concat` flattens). Read-only."""

    __slots__ = ("_ends", "_firsts", "_pieces")

    def __init__(self, pieces: Sequence[tuple[Sequence[T], int, int]]) -> None:
        merged: list[tuple[Sequence[T], int, int]] = []
        for s, a, b in pieces:
            if b <= a:
                continue
            if merged and merged[-1][0] is s and merged[-1][2] == a:  # adjacent slices of one sequence
                merged[-1] = (s, merged[-1][1], b)
            else:
                merged.append((s, a, b))
        self._pieces = tuple(merged)
        self._ends = np.cumsum([b - a for _, a, b in self._pieces], dtype=np.int64)
        self._firsts: list[T] | None = None

    def __len__(self) -> int:
        return int(self._ends[-1]) if len(self._ends) else 0

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> Rope[T]: ...
    def __getitem__(self, i: int | slice) -> T | Rope[T]:
        n = len(self)
        if isinstance(i, slice):
            a, b, step = i.indices(n)
            if step != 1:
                raise ValueError("a Rope slices with step 1 only")
            return concat([(self, a, max(a, b))])
        s, k = self.locate(position(i, n, "item"))
        return s[k]

    def locate(self, i: int) -> tuple[Sequence[T], int]:
        """The sequence holding item ``i`` (0 <= i < len) and its position there."""
        p = int(np.searchsorted(self._ends, i, side="right"))
        s, a, _ = self._pieces[p]
        return s, a + i - (int(self._ends[p - 1]) if p else 0)

    def bisect_left(self, key: Any) -> int:
        """Where ``key`` goes in this rope of sorted items (``bisect.bisect_left`` semantics): a binary search over
        the pieces' first items, then one inside a piece on its own sequence (no piece look-up per probe)."""
        if self._firsts is None:
            self._firsts = [s[a] for s, a, _ in self._pieces]
        p = bisect.bisect_left(self._firsts, key)  # pieces before p start below key: it goes in piece p - 1 or at p
        if p == 0:
            return 0
        s, a, b = self._pieces[p - 1]
        return int(self._ends[p - 1]) - b + bisect.bisect_left(s, key, a, b)

    def take(
        self, idx: np.ndarray, read: Callable[[Sequence[T], np.ndarray], list[Any]] | None = None
    ) -> list[Any]:
        """Items ``idx`` (positions in ``[0, len)``): one :func:`take` per piece they fall in, or ``read(piece's
        sequence, positions there)`` for what to read of them instead of the items."""
        idx = np.asarray(idx, dtype=np.int64)
        out: list[Any] = [None] * len(idx)
        piece = np.searchsorted(self._ends, idx, side="right")
        for p in np.unique(piece).tolist():
            at = np.flatnonzero(piece == p)
            s, a, _ = self._pieces[p]
            local = a + idx[at] - (int(self._ends[p - 1]) if p else 0)
            for k, item in zip(at.tolist(), (read or take)(s, local), strict=True):
                out[k] = item
        return out

    def __iter__(self) -> Iterator[T]:
        for s, a, b in self._pieces:
            if isinstance(s, list | tuple):
                yield from s[a:b]
            else:
                for k in range(a, b):
                    yield s[k]

    @property
    def pieces(self) -> tuple[tuple[Sequence[T], int, int], ...]:
        """The slices this sequence is made of."""
        return self._pieces


def _flat(seq: Sequence[T], a: int, b: int) -> Iterator[tuple[Sequence[T], int, int]]:
    if not isinstance(seq, Rope):
        yield seq, a, b
        return
    start = 0
    for s, lo, hi in seq.pieces:
        n = hi - lo
        x, y = max(a, start), min(b, start + n)
        if x < y:
            yield s, lo + x - start, lo + y - start
        start += n


def take(seq: Sequence[T], idx: np.ndarray) -> list[T]:
    """``[seq[i] for i in idx]`` (``idx`` positions in ``[0, len(seq))``) with one gather per column or piece of a
    :class:`Rope` instead of a look-up per item: the cost of reading a few hundred texts of a large index."""
    idx = np.asarray(idx, dtype=np.int64)
    if isinstance(seq, TextColumn | Rope):
        return seq.take(idx)  # a TextColumn is a Sequence[str]: T is str
    return [seq[i] for i in idx.tolist()]


def bisect_left(seq: Sequence[Any], key: Any) -> int:
    """``bisect.bisect_left(seq, key)`` for a sorted sequence; a :class:`Rope` searches piece by piece."""
    return seq.bisect_left(key) if isinstance(seq, Rope) else bisect.bisect_left(seq, key)


def concat(pieces: Iterable[tuple[Sequence[Any], int, int]]) -> Rope[Any]:
    """A :class:`Rope` of ``(sequence, start, stop)`` slices (a Rope given as a piece is flattened)."""
    return Rope([f for s, a, b in pieces for f in _flat(s, a, b)])


def inserted(old: Sequence[T], at: Sequence[int], new: Sequence[T]) -> Rope[T]:
    """``old`` with ``new[k]`` inserted before ``old[at[k]]`` (``at`` ascending, ``np.insert`` semantics)."""
    pieces: list[tuple[Sequence[T], int, int]] = []
    last = 0
    for k, p in enumerate(at):
        pieces += [(old, last, p), (new, k, k + 1)]
        last = p
    pieces.append((old, last, len(old)))
    return concat(pieces)


def kept(old: Sequence[T], keep: np.ndarray) -> Rope[T]:
    """The items of ``old`` where the boolean mask ``keep`` is True (one piece per run of kept items)."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], keep.astype(np.int8), [0]])))
    return concat((old, int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True))
