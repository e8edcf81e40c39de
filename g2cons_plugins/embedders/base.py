"""The embedder protocol and what every embedder shares: output validation (unit-length float32 rows), input
checks, the message for a missing extra, and pickling for embedders that load a model on first use."""

from __future__ import annotations

import contextlib
import logging
import threading
import warnings
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import EmbeddingError, InputError


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors; ``name`` is a stable id for cache keys and settings."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a float32 ``(len(texts), dim)`` array with unit-length rows."""
        ...


def validate_embeddings(arr: Any, n: int, dim: int, source: str) -> np.ndarray:
    """Check an embedder's output (shape, dimension, finite) and return it as unit-row float32 (n, dim)."""
    try:
        out = np.asarray(arr, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"embedder {source!r} returned something that is not a numeric array: {exc}") from exc
    if out.ndim == 1 and n == 0 and out.size == 0:
        out = out.reshape(0, dim)
    if out.ndim != 2:
        raise EmbeddingError(
            f"embedder {source!r} returned a {out.ndim}-D array of shape {out.shape}; "
            f"expected a 2-D array of shape ({n}, {dim})"
        )
    if out.shape[0] != n:
        raise EmbeddingError(f"embedder {source!r} returned {out.shape[0]} rows for {n} texts")
    if out.shape[1] != dim:
        raise EmbeddingError(f"embedder {source!r} returned dimension {out.shape[1]} but {dim} was expected")
    if n == 0:
        return np.zeros((0, dim), dtype=np.float32)
    bad = ~np.isfinite(out).all(axis=1)
    if bad.any():
        rows = np.flatnonzero(bad)
        raise EmbeddingError(
            f"embedder {source!r} returned NaN or infinite values in {rows.size} of {n} rows "
            f"(first text index {int(rows[0])})"
        )
    norms = np.linalg.norm(out.astype(np.float64), axis=1)
    zero = norms == 0.0
    if zero.any():
        rows = np.flatnonzero(zero)
        raise EmbeddingError(
            f"embedder {source!r} returned an all-zero vector for text index {int(rows[0])} "
            f"({rows.size} zero rows in all)"
        )
    # rows already of unit length are kept bit for bit, so validating twice changes nothing
    scale = np.where(np.abs(norms - 1.0) <= 1e-6, 1.0, norms)
    return np.ascontiguousarray((out / scale[:, None]).astype(np.float32))


def _as_text_list(texts: Sequence[str], source: str) -> list[str]:
    if isinstance(texts, str):
        raise InputError(f"embedder {source!r} expects a sequence of strings, not a single string")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise InputError(f"embedder {source!r}: text index {i} is {type(t).__name__}, not str")
    return out


def _positive_int(value: Any, what: str, upper: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(f"{what} must be a positive integer, got {value!r}")
    if upper is not None and value > upper:
        raise InputError(f"{what} must be at most {upper}, got {value!r}")
    return int(value)


def _missing_extra(package: str, extra: str, exc: ImportError) -> ImportError:
    return ImportError(f'{package} is not installed; install it with: pip install "g2cons-plugins[{extra}]" ({exc})')


@contextlib.contextmanager
def _no_global_side_effects() -> Any:
    """Restore the root logger's level and handlers and the warnings filters after a third-party import."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        with warnings.catch_warnings():  # restores the filters on exit
            yield
    finally:
        for h in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(h)
        root.setLevel(level)


class _LazyModel:
    """Pickling for embedders that load a model on first use: the pickled state (also what ``copy.deepcopy``
    copies) holds the settings only. The model, which holds native handles (an ONNX session, a C library, locks),
    and the lock that guards its loading are left out; a copy makes a new lock and reloads the model by name the
    first time it embeds."""

    _lock: Any

    def _unloaded(self) -> dict[str, Any]:
        """The attributes that hold the loaded model, with their values before loading."""
        raise NotImplementedError

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_lock", None)
        state.update(self._unloaded())
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.update(self._unloaded())
        self._lock = threading.Lock()
