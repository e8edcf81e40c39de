"""A dependency-free hashed bag of words (blake2b, stable across processes): for tests and examples."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from .base import _as_text_list, _positive_int

_WORD = re.compile(r"\w+")


@lru_cache(maxsize=65536)
def _hash_token(token: str, dim: int) -> tuple[int, float]:
    h = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")
    return (h >> 1) % dim, (1.0 if h & 1 else -1.0)


class HashEmbedder:
    """Deterministic hashed bag of lowercase words (blake2b, stable across processes); no dependencies."""

    _OFFSET = 0.05  # added to every coordinate: counts are integers, so no row can be zero

    def __init__(self, dim: int = 64) -> None:
        self.dim = _positive_int(dim, "HashEmbedder dim")
        self.name = f"hash-{self.dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts by signed hashed word counts plus a small constant, then L2-normalise."""
        items = _as_text_list(texts, self.name)
        out = np.full((len(items), self.dim), self._OFFSET, dtype=np.float64)
        for i, text in enumerate(items):
            for tok in _WORD.findall(text.lower()):
                j, sign = _hash_token(tok, self.dim)
                out[i, j] += sign
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out.astype(np.float32)

    def __repr__(self) -> str:
        return f"HashEmbedder(dim={self.dim})"
