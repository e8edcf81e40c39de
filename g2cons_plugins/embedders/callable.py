"""Any ``list[str] -> array`` function as an embedder (output validated and re-normalised)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import InputError
from .base import _as_text_list, _positive_int, validate_embeddings


class CallableEmbedder:
    """Wraps any ``Callable[[list[str]], array-like]``; the output is validated and re-normalised."""

    def __init__(self, fn: Callable[[list[str]], Any], dim: int, name: str) -> None:
        if not callable(fn):
            raise InputError(f"CallableEmbedder needs a callable, got {type(fn).__name__}")
        if not isinstance(name, str) or not name:
            raise InputError(f"CallableEmbedder needs a non-empty name, got {name!r}")
        self.fn = fn
        self.dim = _positive_int(dim, "CallableEmbedder dim")
        self.name = name

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Call the wrapped function and validate its output."""
        items = _as_text_list(texts, self.name)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        return validate_embeddings(self.fn(items), len(items), self.dim, self.name)

    def __repr__(self) -> str:
        return f"CallableEmbedder(name={self.name!r}, dim={self.dim})"
