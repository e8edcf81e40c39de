"""``ConceptGraphSubRetriever``: the concept path as a ``PropertyGraphIndex`` sub-retriever.

LlamaIndex users combine graph retrievers with ``index.as_retriever(sub_retrievers=[...])``: ``PGRetriever`` runs
every sub-retriever (concurrently by default) and concatenates their nodes, de-duplicated by text. This class is a
``BasePGRetriever``, so it fits there next to ``LLMSynonymRetriever`` / ``VectorContextRetriever``::

    retriever = index.as_retriever(sub_retrievers=[
        LLMSynonymRetriever(index.property_graph_store, llm=llm),
        ConceptGraphSubRetriever(index.property_graph_store, selector=selector, beta=2000),
    ])

``PGRetriever`` has no token budget and does not match host and concept results by chunk; use
:class:`~llama_index.retrievers.g2cons.G2ConSRetriever` for the budgeted, overlap-first fusion of the paper.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from llama_index.core.graph_stores.types import PropertyGraphStore
from llama_index.core.indices.property_graph.sub_retrievers.base import BasePGRetriever
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle

from .concept import ConceptGraphRetriever
from .selector import CoreChunkSelector


class ConceptGraphSubRetriever(BasePGRetriever):
    """The G2ConS concept path (``ConceptGraphRetriever``) as a ``BasePGRetriever``.

    Args:
        graph_store: the index's ``property_graph_store`` (kept for the ``BasePGRetriever`` contract; the concept
            path reads the concept graph, which also covers the chunks the selector dropped).
        g2cons_index, selector, nodes, embedder, config: where the concept graph comes from (as in
            ``ConceptGraphRetriever.from_defaults``; a ``selector`` shares its graph, inserts included).
        beta, strategy, similarity_top_k: as in ``ConceptGraphRetriever``.
        include_text: accepted for the contract; concept nodes are source text already (nothing is prepended).
    """

    def __init__(
        self,
        graph_store: PropertyGraphStore | None = None,
        g2cons_index: G2ConSIndex | None = None,
        selector: CoreChunkSelector | None = None,
        nodes: Sequence[BaseNode] | None = None,
        embedder: Any = None,
        config: G2ConSConfig | None = None,
        beta: int | None = None,
        strategy: str | None = None,
        similarity_top_k: int | None = None,
        include_text: bool = True,
        **kwargs: Any,
    ) -> None:
        self._concept = ConceptGraphRetriever.from_defaults(
            g2cons_index=g2cons_index,
            selector=selector,
            nodes=nodes,
            embedder=embedder,
            config=config,
            beta=beta,
            strategy=strategy,
            similarity_top_k=similarity_top_k,
        )
        super().__init__(graph_store=graph_store, include_text=include_text, **kwargs)  # type: ignore[arg-type]

    @property
    def concept_retriever(self) -> ConceptGraphRetriever:
        """The wrapped concept-path retriever (settings, ``persist``)."""
        return self._concept

    def retrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """The concept path's nodes (``metadata["g2cons_source"] == "concept"``)."""
        return self._concept._retrieve(query_bundle)

    async def aretrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Same, in a worker thread (CPU-bound)."""
        return await asyncio.to_thread(self._concept._retrieve, query_bundle)

    def add_source_text(self, nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        """Concept nodes are chunk text already: returned unchanged."""
        return nodes

    async def async_add_source_text(self, nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        """Concept nodes are chunk text already: returned unchanged."""
        return nodes
