"""G2ConS for LlamaIndex: select core chunks before a ``PropertyGraphIndex`` build, retrieve along the concept
graph, and fuse both paths under a token budget. All algorithms live in ``g2cons_plugins``."""

from .concept import ConceptGraphRetriever
from .fusion import G2ConSRetriever
from .graph_walk import GraphWalkRetriever
from .selector import CoreChunkSelector
from .sub_retriever import ConceptGraphSubRetriever

__all__ = [
    "ConceptGraphRetriever",
    "ConceptGraphSubRetriever",
    "CoreChunkSelector",
    "G2ConSRetriever",
    "GraphWalkRetriever",
]
