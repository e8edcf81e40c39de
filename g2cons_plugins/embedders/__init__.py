"""Text embedders: a small protocol, offline models (WordLlama, MiniLM int8 ONNX, multilingual e5), OpenAI, and a
disk cache.

Every embedder returns a float32 ``(n, dim)`` array with unit-length rows. Heavy dependencies are imported
lazily, so ``import g2cons_plugins.embedders`` costs only numpy.

- :mod:`.base` -- the :class:`Embedder` protocol, :func:`validate_embeddings` and what every embedder shares.
- :mod:`.wordllama` -- :class:`WordLlamaEmbedder`: static token embeddings, very fast, offline (``[wordllama]``).
- :mod:`.minilm` -- :class:`MiniLMEmbedder`: all-MiniLM-L6-v2, int8 ONNX on onnxruntime, no torch (``[minilm]``).
- :mod:`.multilingual` -- :class:`MultilingualE5Embedder`: multilingual-e5-small, 4-bit (``[multilingual]``).
- :mod:`.openai` -- :class:`OpenAIEmbedder`: the OpenAI embeddings API with batching and retries (``[openai]``).
- :mod:`.hash` -- :class:`HashEmbedder`: dependency-free hashed bag of words, for tests and examples.
- :mod:`.callable` -- :class:`CallableEmbedder`: wraps any ``list[str] -> array`` function.
- :mod:`.cache` -- :class:`CachedEmbedder`: memoises any embedder in memory and optionally on disk (SQLite).
- :mod:`.factory` -- :func:`get_embedder`: an embedder from a name or spec.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Embedder, validate_embeddings
    from .cache import CachedEmbedder
    from .callable import CallableEmbedder
    from .factory import EMBEDDER_NAMES, get_embedder
    from .hash import HashEmbedder
    from .minilm import MiniLMEmbedder
    from .multilingual import MultilingualE5Embedder
    from .openai import OpenAIEmbedder
    from .wordllama import WordLlamaEmbedder

_WHERE = {
    "CachedEmbedder": ".cache",
    "CallableEmbedder": ".callable",
    "EMBEDDER_NAMES": ".factory",
    "Embedder": ".base",
    "HashEmbedder": ".hash",
    "MiniLMEmbedder": ".minilm",
    "MultilingualE5Embedder": ".multilingual",
    "OpenAIEmbedder": ".openai",
    "WordLlamaEmbedder": ".wordllama",
    "get_embedder": ".factory",
    "validate_embeddings": ".base",
}

__all__ = [
    "Embedder",
    "validate_embeddings",
    "WordLlamaEmbedder",
    "MiniLMEmbedder",
    "MultilingualE5Embedder",
    "OpenAIEmbedder",
    "CallableEmbedder",
    "HashEmbedder",
    "CachedEmbedder",
    "get_embedder",
    "EMBEDDER_NAMES",
]



def __getattr__(name: str) -> Any:
    """A name of this package, imported from its module on first use (PEP 562): ``import
    g2cons_plugins.embedders`` loads no embedder module."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value
    return value
