"""Exceptions raised by g2cons_plugins. Every error names the offending input."""

from __future__ import annotations


class G2ConSError(Exception):
    """Base class of every error this library raises on purpose."""


class InputError(G2ConSError, ValueError):
    """Bad chunks, queries or parameters (empty corpus, duplicate ids, huge chunk, ...)."""


class EmbeddingError(G2ConSError, ValueError):
    """An embedder returned the wrong shape, wrong dimension, or non-finite values."""


class PersistError(G2ConSError, OSError):
    """A persisted index directory is missing, partial, corrupted, foreign or of another version."""
