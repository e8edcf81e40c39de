"""Texts numbered in order of first use, without keeping the texts (a ``dict`` keyed by them held 4x more).

A streaming build numbers the distinct sentences in the order they first occur (the order the in-memory build gives
them) and so far kept a ``dict`` from every distinct sentence to its number: 277 bytes of resident memory a distinct
sentence (2M distinct MuSiQue / 2Wiki sentences of 130 characters, 3M uses, in batches of 25,000: ``/proc`` RSS
after against before), about 1.4 GB for the ~5M distinct sentences of a real corpus of 1M passages; 64 bytes here,
1.5x the time (5.9 against 4.0 s for those 3M uses). :class:`FirstUse` keys each text by two 64-bit hashes (Python's
``hash`` of the text and of the text with a separator in front: SipHash with the process's key, two different
inputs, so two independent 64-bit values) and keeps the keys sorted in NumPy arrays with their numbers (24 bytes a
text), the keys of the last texts in a small ``dict`` until it is merged in (at most one eighth of the sorted ones,
at least 65,536; 128-bit ``int`` keys, the rest of the 64 bytes). Two distinct texts share a number only if both
hashes collide: for 10M distinct texts that probability is below 1e-24.

Only the texts' numbers are kept, never the texts: the caller writes the new ones where it keeps them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["FirstUse"]

_SEP = "\x1f"  # the second hash's input is the text after this (unit separator) character
_MIN_PENDING = 1 << 16


def _keys(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The two 64-bit keys of each text (module doc)."""
    n = len(texts)
    return (
        np.fromiter((hash(t) for t in texts), np.int64, n),
        np.fromiter((hash(_SEP + t) for t in texts), np.int64, n),
    )


class FirstUse:
    """Numbers texts 0, 1, 2, ... in order of first use (see module doc): :meth:`number` a batch at a time."""

    def __init__(self) -> None:
        self._k1 = np.zeros(0, np.int64)  # sorted
        self._k2 = np.zeros(0, np.int64)  # in the order of _k1
        self._ids = np.zeros(0, np.int64)
        self._pending: dict[int, int] = {}  # (k1 << 64 | k2 as unsigned) -> number, not yet in the arrays
        self._n = 0

    def __len__(self) -> int:
        """How many distinct texts were numbered."""
        return self._n

    @classmethod
    def of_distinct(cls, texts: Sequence[str], batch: int = 1 << 16) -> FirstUse:
        """``texts`` numbered 0, 1, 2, ... in order, as :meth:`number` over them would (``texts`` read ``batch`` at a
        time). For texts known to be distinct (an index's sentences): their keys are sorted once instead of being
        looked up one by one (a serving process's first trickle add numbers every sentence of the index: 145k
        sentences 0.48 -> 0.1 s profiled). Texts that are not distinct after all are numbered one batch at a time."""
        out = cls()
        k1 = np.empty(len(texts), np.int64)
        k2 = np.empty(len(texts), np.int64)
        for lo in range(0, len(texts), batch):
            part = texts[lo : lo + batch]
            k1[lo : lo + len(part)], k2[lo : lo + len(part)] = _keys(part)
        order = np.lexsort((k2, k1))
        s1, s2 = k1[order], k2[order]
        if len(order) > 1 and bool(np.any((s1[1:] == s1[:-1]) & (s2[1:] == s2[:-1]))):  # a text twice
            for lo in range(0, len(texts), batch):
                out.number(texts[lo : lo + batch])
            return out
        out._k1, out._k2, out._ids, out._n = s1, s2, order.astype(np.int64), len(order)
        return out

    def number(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        """The number of each text (int64, one per text) and the positions in ``texts`` of the ones first seen here,
        in order (a text twice in ``texts`` and new: its first position)."""
        n = len(texts)
        k1, k2 = _keys(texts)
        out = np.full(n, -1, np.int64)
        if len(self._k1) and n:
            lo = np.searchsorted(self._k1, k1, side="left")
            hi = np.searchsorted(self._k1, k1, side="right")
            one = hi - lo == 1
            at = np.minimum(lo, len(self._k1) - 1)
            hit = one & (self._k2[at] == k2)
            out[hit] = self._ids[at[hit]]
            for i in np.flatnonzero(hi - lo > 1).tolist():  # equal first hashes (rare): look at each
                same = np.flatnonzero(self._k2[lo[i] : hi[i]] == k2[i])
                if len(same):
                    out[i] = self._ids[lo[i] + same[0]]
        new: list[int] = []
        pending, n_known = self._pending, self._n
        miss = np.flatnonzero(out < 0)
        got = []
        try:
            for i, a, b in zip(miss.tolist(), k1[miss].tolist(), k2[miss].view(np.uint64).tolist(), strict=True):
                key = (a << 64) | b
                v = pending.get(key)
                if v is None:
                    v = pending[key] = n_known
                    n_known += 1
                    new.append(i)
                got.append(v)
        finally:  # whatever was numbered stays counted: a number is never given twice (the map is shared)
            self._n = n_known
        out[miss] = got
        if len(pending) >= max(_MIN_PENDING, len(self._k1) >> 3):
            self._merge()
        return out, new

    def _merge(self) -> None:
        """Move the pending keys into the sorted arrays."""
        items = list(self._pending.items())
        self._pending = {}
        keys = np.array([k >> 64 for k, _ in items], dtype=np.int64)
        low = np.array([k & 0xFFFFFFFFFFFFFFFF for k, _ in items], dtype=np.uint64).view(np.int64)
        ids = np.array([v for _, v in items], dtype=np.int64)
        order = np.argsort(keys, kind="stable")
        keys, low, ids = keys[order], low[order], ids[order]
        at = np.searchsorted(self._k1, keys, side="right")
        self._k1 = np.insert(self._k1, at, keys)
        self._k2 = np.insert(self._k2, at, low)
        self._ids = np.insert(self._ids, at, ids)
