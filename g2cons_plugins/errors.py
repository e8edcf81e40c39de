"""Exceptions raised by g2cons_plugins, and the parameter checks that raise them. Every error names the offending
input or parameter.

Bools are not numbers here (``beta=True`` is refused), strings are not numbers (``kappa="0.5"`` is refused), and
NaN or infinite values are refused everywhere. Each check returns the value in its canonical Python type.
"""

from __future__ import annotations

import math
import numbers
from typing import Any


class G2ConSError(Exception):
    """Base class of every error this library raises on purpose."""


class InputError(G2ConSError, ValueError):
    """Bad chunks, queries or parameters (empty corpus, duplicate ids, huge chunk, ...)."""


class EmbeddingError(G2ConSError, ValueError):
    """An embedder returned the wrong shape, wrong dimension, or non-finite values."""


class PersistError(G2ConSError, OSError):
    """A persisted index directory is missing, partial, corrupted, foreign or of another version."""

__all__ = [
    "EmbeddingError",
    "G2ConSError",
    "InputError",
    "PersistError",
    "check_text",
    "non_negative_float",
    "non_negative_int",
    "normalize_id",
    "positive_int",
    "real",
    "unit_interval",
]


def real(name: str, value: Any) -> float:
    """A finite real number (int, float or numpy scalar; not bool, not str)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise InputError(f"{name} must be finite, got {value!r}")
    return out


def _integral(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if isinstance(value, numbers.Integral):
        return int(value)
    f = real(name, value)
    if not f.is_integer():
        raise InputError(f"{name} must be a whole number, got {value!r}")
    return int(f)


def positive_int(name: str, value: Any) -> int:
    """An integer >= 1 (a float with an integral value such as ``4000.0`` is accepted)."""
    out = _integral(name, value)
    if out < 1:
        raise InputError(f"{name} must be a positive integer, got {value!r}")
    return out


def non_negative_int(name: str, value: Any) -> int:
    """An integer >= 0."""
    out = _integral(name, value)
    if out < 0:
        raise InputError(f"{name} must be >= 0, got {value!r}")
    return out


def non_negative_float(name: str, value: Any) -> float:
    """A finite real >= 0."""
    out = real(name, value)
    if out < 0:
        raise InputError(f"{name} must be >= 0, got {value!r}")
    return out


def unit_interval(name: str, value: Any) -> float:
    """A finite real in [0, 1]."""
    out = real(name, value)
    if not 0.0 <= out <= 1.0:
        raise InputError(f"{name} must be in [0, 1], got {value!r}")
    return out


def check_text(what: str, text: Any) -> str:
    """A str that UTF-8 can encode (no lone surrogates such as ``"\\ud800"``)."""
    if not isinstance(text, str):
        raise InputError(f"{what}: text must be str, got {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InputError(
            f"{what}: text is not valid Unicode (lone surrogate {text[e.start : e.end]!r} at character {e.start}); "
            "fix the input, e.g. decode it with errors='replace'"
        ) from None
    return text


def normalize_id(value: Any, what: str = "chunk id") -> str:
    """Chunk ids are strings; an int id (not bool) becomes its decimal string, the same at build, add and
    remove. Anything else is refused."""
    if isinstance(value, str):
        if not value:
            raise InputError(f"{what} must not be empty")
        return check_text(what, value)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    raise InputError(f"{what} must be a str or int, got {type(value).__name__} {value!r}")
