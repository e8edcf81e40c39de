"""g2cons-plugins: G2ConS (concept graph, core-chunk selection, dual-path retrieval) without an LLM or a host
framework. Adapters for LlamaIndex and LangChain live in their own distributions and call this package."""

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
from .fusion import Fusion, fuse_report
from .fusion.ensemble import FusedItem, HostItem, fuse
from .graph import GraphStats
from .index import G2ConSIndex
from .retrieval import RetrievedItem
from .selection import SelectionReport

__version__ = "0.1.0"

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
