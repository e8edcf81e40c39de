"""langchain-g2cons: G2ConS for LangChain.

- :class:`CoreChunkSelector` (``BaseDocumentTransformer``): keep the top kappa chunks before ``LLMGraphTransformer``;
  builds the concept graph over all chunks and gives every document a stable id.
- :class:`ConceptGraphRetriever` (``BaseRetriever``): the concept path alone.
- :class:`G2ConSRetriever` (``BaseRetriever``): any host retriever fused with the concept path under beta.
- :class:`GraphWalkRetriever` (``BaseRetriever``): HippoRAG 2's graph walk over ``GraphDocument``s (the KG you
  extracted), returning their source documents; a host for :class:`G2ConSRetriever`.
- :func:`graph_documents`: a precomputed LLM extraction (GraphRAG, LightRAG, HippoRAG, JSONL) as the
  ``GraphDocument``s ``LLMGraphTransformer`` would return for the kept documents, without another LLM call.

A thin adapter: every algorithm is in ``g2cons_plugins``; this package only translates ``Document``s.
"""

from ._convert import DEFAULT_ID_KEY, assign_ids
from .embeddings import as_core_embedder, embedder_name, token_length
from .graph_walk import GraphWalkRetriever
from .replay import graph_documents
from .retrievers import ConceptGraphRetriever, G2ConSRetriever
from .transformers import CoreChunkSelector

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_ID_KEY",
    "ConceptGraphRetriever",
    "CoreChunkSelector",
    "G2ConSRetriever",
    "GraphWalkRetriever",
    "as_core_embedder",
    "assign_ids",
    "embedder_name",
    "graph_documents",
    "token_length",
]
