"""Deterministic orders of scores: descending, ties by position (the order every strategy ranks units in)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["iter_desc", "stable_desc", "top_desc"]


def stable_desc(scores: np.ndarray) -> np.ndarray:
    """Indices by score descending, ties by index ascending (deterministic)."""
    return np.lexsort((np.arange(len(scores)), -scores))


def top_desc(scores: np.ndarray, k: int) -> np.ndarray:
    """``stable_desc(scores)[:k]`` without sorting every score: a partition finds the k-th largest value, and only
    the scores at or above it are sorted (ties by index, so every tie at the cut-off competes on position)."""
    n = len(scores)
    if k >= n:
        return stable_desc(scores)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    cut = np.partition(scores, n - k)[n - k]  # the k-th largest value
    top = np.flatnonzero(scores >= cut)
    return top[np.lexsort((top, -scores[top]))][:k]


def iter_desc(scores: np.ndarray, first: int) -> Iterator[int]:
    """Like :func:`stable_desc` but lazy: sorts only the top ``first`` unless more are consumed."""
    n = len(scores)
    if first >= n:
        yield from stable_desc(scores).tolist()
        return
    cut = np.partition(scores, n - first)[n - first]  # the first-th largest value
    top = np.flatnonzero(scores >= cut)
    top = top[np.lexsort((top, -scores[top]))]
    yield from top.tolist()
    rest = np.flatnonzero(scores < cut)
    yield from rest[np.lexsort((rest, -scores[rest]))].tolist()
