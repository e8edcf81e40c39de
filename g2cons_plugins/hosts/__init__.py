"""Host KGs built elsewhere: precomputed LLM extractions (our JSONL, HippoRAG OpenIE, MS GraphRAG output, a LightRAG
working dir) read and aligned to our chunk ids, to be replayed as the host KG (see :mod:`.replay`), and a graph walk
over such a KG in the way HippoRAG 2 walks its graph, LLM-free at query time (:mod:`.graph_walk`: :class:`GraphWalk`
over generic records, :class:`GraphWalkHost`).

The evaluation harness's host registry, which was importable from this path before, lives in
:mod:`g2cons_plugins.eval.hosts`; its names still resolve here, with a :class:`DeprecationWarning`.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from .graph_walk import GraphRecord, GraphWalk, GraphWalkHost, GraphWalkSettings
from .replay import Extraction, ExtractionRecord, align, chunk_aliases, read_extraction
from .replay_host import ReplayHost

__all__ = [
    "Extraction",
    "ExtractionRecord",
    "GraphRecord",
    "GraphWalk",
    "GraphWalkHost",
    "GraphWalkSettings",
    "ReplayHost",
    "align",
    "chunk_aliases",
    "read_extraction",
]

_MOVED_TO = "g2cons_plugins.eval.hosts"


def __getattr__(name: str) -> Any:
    """A name of :mod:`g2cons_plugins.eval.hosts` asked of its old path (deprecated; imported only when asked)."""
    if not name.startswith("__"):
        moved = importlib.import_module(_MOVED_TO)
        if hasattr(moved, name):
            warnings.warn(
                f"g2cons_plugins.hosts.{name} moved to {_MOVED_TO}; import it from there (this path will go)",
                DeprecationWarning,
                stacklevel=2,
            )
            return getattr(moved, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
