"""Host KGs: what a host KG is to the core, and the hosts the core ships.

- :mod:`.protocol` -- the :class:`HostKG` protocol and :class:`HostBuildCost` (what one KG build cost).
- :mod:`.registry` -- hosts by name (entry-point group ``g2cons_plugins.hosts``): :func:`load_host`,
  :func:`available_hosts`.
- :mod:`.replay` -- precomputed LLM extractions (our JSONL, HippoRAG OpenIE, MS GraphRAG output, a LightRAG
  working dir) read and aligned to our chunk ids; :mod:`.replay_host` replays one as the host KG.
- :mod:`.graph_walk` -- a graph walk over such a KG in the way HippoRAG 2 walks its graph, LLM-free at query time
  (:class:`GraphWalk` over generic records, :class:`GraphWalkHost`); :mod:`.hipporag_host` -- a real HippoRAG 2.
- :mod:`.entity_graph` -- LLM-free search over an entity-mention graph (the NER stand-in host's ranking).
- :mod:`.pipelines` -- what connects the method to the frameworks around it (corpus readers, host projects, what
  the adapters share).

Public names are imported on first use (PEP 562): ``import g2cons_plugins.hosts.pipelines.integration`` (the
adapters do) loads neither the graph walk (scipy) nor the extraction readers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .entity_graph import EntityGraphSearch, EntityHit
    from .graph_walk import GraphRecord, GraphWalk, GraphWalkHost, GraphWalkSettings, app_settings, links_pay
    from .protocol import HostBuildCost, HostKG
    from .registry import HOST_GROUP, available_hosts, load_host
    from .replay import Extraction, ExtractionRecord, align, chunk_aliases, read_extraction
    from .replay_host import ReplayHost

# public name -> the module that defines it
_WHERE = {
    **dict.fromkeys(("EntityGraphSearch", "EntityHit"), ".entity_graph"),
    **dict.fromkeys(
        ("GraphRecord", "GraphWalk", "GraphWalkHost", "GraphWalkSettings", "app_settings", "links_pay"), ".graph_walk"
    ),
    **dict.fromkeys(("HostBuildCost", "HostKG"), ".protocol"),
    **dict.fromkeys(("HOST_GROUP", "available_hosts", "load_host"), ".registry"),
    **dict.fromkeys(("Extraction", "ExtractionRecord", "align", "chunk_aliases", "read_extraction"), ".replay"),
    "ReplayHost": ".replay_host",
}

__all__ = [
    "EntityGraphSearch",
    "EntityHit",
    "Extraction",
    "ExtractionRecord",
    "GraphRecord",
    "GraphWalk",
    "GraphWalkHost",
    "GraphWalkSettings",
    "HOST_GROUP",
    "HostBuildCost",
    "HostKG",
    "ReplayHost",
    "align",
    "app_settings",
    "available_hosts",
    "chunk_aliases",
    "links_pay",
    "load_host",
    "read_extraction",
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
