"""g2cons-plugins: G2ConS (concept graph, core-chunk selection, dual-path retrieval) without an LLM or a host
framework. Adapters for LlamaIndex and LangChain live in their own distributions and call this package.

The package reads as the method, in the paper's order: :mod:`.text` and :mod:`.chunks` (the corpus),
:mod:`.concepts` (the concept step), :mod:`.graph` (edges, PageRank), :mod:`.build` (one derive in that order),
:mod:`.snapshot` (one read-only version of an index), :mod:`.selection` (the core kappa share), :mod:`.retrieval`
(the concept path), :mod:`.fusion` (host KG + concept path under beta), and :mod:`.index` (the public facade).
The update engine, array layouts, storage, embedders, hosts, the evaluation harness and the CLI are subpackages.

Public names are loaded on first use (PEP 562), so ``import g2cons_plugins.selection`` loads only what selection
needs."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .chunks import Chunk, Unit, content_id, make_chunks
    from .config import G2ConSConfig
    from .embedders import (
        CachedEmbedder,
        CallableEmbedder,
        Embedder,
        HashEmbedder,
        MiniLMEmbedder,
        OpenAIEmbedder,
        WordLlamaEmbedder,
        get_embedder,
    )
    from .errors import EmbeddingError, G2ConSError, InputError, PersistError
    from .fusion import FusedItem, Fusion, HostItem, fuse, fuse_report
    from .graph import GraphStats
    from .index import G2ConSIndex
    from .retrieval import RetrievedItem
    from .selection import SelectionReport

__version__ = "0.1.0"

# public name -> the module that defines it
_WHERE = {
    **dict.fromkeys(("Chunk", "Unit", "content_id", "make_chunks"), ".chunks"),
    "G2ConSConfig": ".config",
    **dict.fromkeys(
        (
            "CachedEmbedder",
            "CallableEmbedder",
            "Embedder",
            "HashEmbedder",
            "MiniLMEmbedder",
            "OpenAIEmbedder",
            "WordLlamaEmbedder",
            "get_embedder",
        ),
        ".embedders",
    ),
    **dict.fromkeys(("EmbeddingError", "G2ConSError", "InputError", "PersistError"), ".errors"),
    **dict.fromkeys(("Fusion", "FusedItem", "HostItem", "fuse", "fuse_report"), ".fusion"),
    "GraphStats": ".graph",
    "G2ConSIndex": ".index",
    "RetrievedItem": ".retrieval",
    "SelectionReport": ".selection",
}

# the public names, literal so that linters and IDEs see them (the keys of _WHERE, sorted)
__all__ = [
    "CachedEmbedder",
    "CallableEmbedder",
    "Chunk",
    "Embedder",
    "EmbeddingError",
    "FusedItem",
    "Fusion",
    "G2ConSConfig",
    "G2ConSError",
    "G2ConSIndex",
    "GraphStats",
    "HashEmbedder",
    "HostItem",
    "InputError",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "PersistError",
    "RetrievedItem",
    "SelectionReport",
    "Unit",
    "WordLlamaEmbedder",
    "content_id",
    "fuse",
    "fuse_report",
    "get_embedder",
    "make_chunks",
]


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (then cached in this module's namespace)."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
