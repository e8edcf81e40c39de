"""A precomputed LLM extraction replayed into a real ``PropertyGraphIndex`` (entry point ``replay``).

``g2cons eval --host replay:PATH`` and ``g2cons fuse --host replay:PATH`` use it: every kept chunk gets exactly the
entities and triples the LLM produced for it (read by :func:`g2cons_plugins.hosts.read_extraction`: our JSONL,
HippoRAG OpenIE JSON, MS GraphRAG output, a LightRAG working dir), so the host KG is what that LLM would have built
from the kept chunks, offline and at no cost. Retrieval is the host's own LLM-free sub-retrievers:
``VectorContextRetriever`` over the embedded entity nodes (the core index's embedder, wrapped as a LlamaIndex
``BaseEmbedding``) plus the adapter's ``NEREntityRetriever`` (spaCy NER on the query, matched to entity names),
or with ``retriever="graph-walk"`` the adapter's ``GraphWalkRetriever`` (HippoRAG 2's walk over the store, the
dropped chunks linked by the names they hold).

Nothing here calls an LLM; the label names the extraction's format, model and file.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from g2cons_plugins import G2ConSIndex, HostItem, SelectionReport
from g2cons_plugins.errors import InputError
from g2cons_plugins.hosts import HostBuildCost
from g2cons_plugins.hosts.registry import option_flag
from llama_index.core import PropertyGraphIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.graph_stores.types import (
    KG_NODES_KEY,
    KG_RELATIONS_KEY,
    KG_SOURCE_REL,
    EntityNode,
    Relation,
)
from llama_index.core.schema import BaseNode, TransformComponent

from .extractors import NEREntityRetriever, clean_entity
from .host import _mock_llm, _spacy_or_error, answer, chunk_nodes, graph_counts
from .prompts import default_prompt_tokens
from .selector import CoreChunkSelector

REPLAY_RELATION_PROPS = "g2cons_replayed"


class CoreEmbedding(BaseEmbedding):
    """A core embedder (``index.embedder``) as a LlamaIndex ``BaseEmbedding`` (queries through its query path)."""

    _core: Any = PrivateAttr()

    def __init__(self, core: Any, **kwargs: Any) -> None:
        super().__init__(model_name=str(getattr(core, "name", "g2cons")), **kwargs)
        self._core = core

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [v.tolist() for v in self._core.embed(texts)]

    def _get_query_embedding(self, query: str) -> list[float]:
        fn = getattr(self._core, "embed_queries", None) or self._core.embed
        return [float(x) for x in fn([query])[0]]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


class ReplayExtractor(TransformComponent):
    """``kg_extractors=[...]`` member that writes, for each node, the entities and triples a precomputed extraction
    holds for its id (``records``: chunk id -> list of (entities, triples)); no LLM call. Entities become
    ``EntityNode``s linked to their chunk (``KG_SOURCE_REL``), triples ``Relation``s labelled with the LLM's
    relation. A node with no record gets nothing (counted in ``missing``)."""

    _records: dict[str, tuple[tuple[str, ...], tuple[tuple[str, str, str], ...]]] = PrivateAttr()
    _missing: int = PrivateAttr(default=0)

    def __init__(
        self, records: dict[str, tuple[tuple[str, ...], tuple[tuple[str, str, str], ...]]], **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self._records = records
        self._missing = 0

    @classmethod
    def class_name(cls) -> str:
        """LlamaIndex class name."""
        return "G2ConSReplayExtractor"

    @property
    def missing(self) -> int:
        """Nodes seen that the extraction has no record for."""
        return self._missing

    def __call__(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> Sequence[BaseNode]:
        """Add the replayed entities and triples to each node's KG metadata (existing entries are kept)."""
        nodes = list(nodes)
        for node in nodes:
            rec = self._records.get(node.node_id)
            if rec is None:  # the extraction holds nothing for it: an empty KG entry (LlamaIndex needs one)
                self._missing += 1
                node.metadata.setdefault(KG_NODES_KEY, [])
                node.metadata.setdefault(KG_RELATIONS_KEY, [])
                continue
            entities, triples = rec
            kg_nodes = list(node.metadata.pop(KG_NODES_KEY, []))
            kg_rels = list(node.metadata.pop(KG_RELATIONS_KEY, []))
            by_name: dict[str, EntityNode] = {}

            def ent(name: str, by_name: dict[str, EntityNode] = by_name) -> EntityNode | None:
                name = clean_entity(name)
                if not name or not any(ch.isalnum() for ch in name):
                    return None
                if name not in by_name:
                    by_name[name] = EntityNode(name=name, label="entity")
                return by_name[name]

            for name in entities:
                ent(name)
            for s, r, o in triples:
                a, b = ent(s), ent(o)
                if a is not None and b is not None and r.strip():
                    kg_rels.append(Relation(label=r.strip(), source_id=a.id, target_id=b.id))
            kg_rels.extend(
                Relation(label=KG_SOURCE_REL, source_id=e.id, target_id=node.node_id) for e in by_name.values()
            )
            kg_nodes.extend(by_name.values())
            node.metadata[KG_NODES_KEY] = kg_nodes
            node.metadata[KG_RELATIONS_KEY] = kg_rels
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> Sequence[BaseNode]:
        """Same as ``__call__``."""
        return self.__call__(nodes, show_progress=show_progress, **kwargs)


class ReplayPropertyGraphHost:
    """``PropertyGraphIndex`` host KG built from a precomputed extraction of the kept chunks (``HostKG``).

    ``retriever``: ``"vector-ner"`` (default: LlamaIndex's ``VectorContextRetriever`` beside
    ``NEREntityRetriever``) or ``"graph-walk"`` (:class:`~llama_index.retrievers.g2cons.GraphWalkRetriever` over the
    store, its ``walk_top_k`` best chunks, the chunks the selection dropped given as ``extra_nodes``: what an app
    does with ``CoreChunkSelector`` in front of its extractor; ``--host-option retriever=graph-walk``;
    ``link_texts``: true, false or auto, the retriever's default; ``walk_dropped=false``: the store's chunks only).
    """

    def __init__(
        self,
        path: str | None = None,
        extraction: Any = None,
        model: str | None = None,
        format: str = "auto",
        prompt_tokens_per_call: int | None = None,
        similarity_top_k: int = 4,
        path_depth: int = 1,
        retriever_limit: int = 30,
        hops: int = 2,
        max_fanout: int = 50,
        retriever: str = "vector-ner",
        walk_top_k: int = 50,
        link_texts: bool | str | None = None,
        walk_dropped: bool | str = True,
    ) -> None:
        if retriever not in ("vector-ner", "graph-walk"):
            raise InputError(f"retriever must be 'vector-ner' or 'graph-walk', got {retriever!r}")
        try:  # --host-option walk_top_k=50 arrives as a string
            walk_top_k = int(walk_top_k)
        except (TypeError, ValueError):
            raise InputError(f"walk_top_k must be a positive int, got {walk_top_k!r}") from None
        if walk_top_k < 1:
            raise InputError(f"walk_top_k must be a positive int, got {walk_top_k!r}")
        if extraction is None:
            from g2cons_plugins.hosts import read_extraction

            if path is None:
                raise InputError("host replay needs a path: --host replay:PATH (JSONL, HippoRAG, GraphRAG, LightRAG)")
            extraction = read_extraction(path, format=format, model=model)
        self.extraction = extraction
        self.name = "replay"
        self.label = extraction.label()
        self.prompt_tokens_per_call = default_prompt_tokens(10) if prompt_tokens_per_call is None else int(
            prompt_tokens_per_call
        )
        self._top_k, self._depth = similarity_top_k, path_depth
        self._limit, self._hops, self._max_fanout = retriever_limit, hops, max_fanout
        self.retriever, self._walk_top_k = retriever, walk_top_k
        from g2cons_plugins.hosts.graph_walk import parse_link_texts  # scipy: only for a replay host

        self._link_texts = parse_link_texts(link_texts)
        self._walk_dropped = option_flag("walk_dropped", walk_dropped)
        self._selector: CoreChunkSelector | None = None
        self._aligned: Any = None
        self._aligned_for: int | None = None
        self._index: G2ConSIndex | None = None
        self._retriever: Any = None
        self.pg: PropertyGraphIndex | None = None

    def _align(self, index: G2ConSIndex) -> Any:
        from g2cons_plugins.hosts import align, chunk_aliases

        if self._aligned is None or self._aligned_for != id(index):
            chunks = index.stored.chunks
            self._aligned = align(self.extraction, {c.id: c.text for c in chunks}, chunk_aliases(chunks))
            self._aligned_for = id(index)
        return self._aligned

    def build(self, index: G2ConSIndex, selection: SelectionReport, show_progress: bool = False) -> HostBuildCost:
        """A ``PropertyGraphIndex`` over the kept chunks, each with the triples the extraction holds for it."""
        if self.retriever == "vector-ner":
            _spacy_or_error()
        ext = self._align(index).restrict(selection.kept_ids)
        frozen = ext.chunk_graphs()
        nodes = chunk_nodes(index)
        selector = CoreChunkSelector.from_index(index, selection, nodes)
        embed = CoreEmbedding(index.embedder)
        t0 = time.perf_counter()
        self.pg = PropertyGraphIndex(
            nodes=nodes,
            kg_extractors=[selector, ReplayExtractor(frozen)],
            llm=_mock_llm(),
            embed_model=embed,
            embed_kg_nodes=self.retriever == "vector-ner",  # the walk embeds its facts and names itself
            show_progress=show_progress,
        )
        seconds = time.perf_counter() - t0
        self._selector = selector
        kept_tokens = index.count_tokens([index.chunk(c).text for c in selection.kept_ids])
        out_tokens = index.count_tokens(
            ["\n".join(" | ".join(t) for t in trips) for _, trips in frozen.values()] or [""]
        )
        graph = self.pg.property_graph_store.graph  # type: ignore[attr-defined]
        self._index = index
        self._retriever = self._make_retriever(embed)
        return HostBuildCost(
            calls=len(selection.kept_ids),
            input_tokens=int(sum(kept_tokens)) + self.prompt_tokens_per_call * len(selection.kept_ids),
            output_tokens=int(sum(out_tokens)),
            chunks=len(selection.kept_ids),
            seconds=round(seconds, 3),
            llm=True,
            graph=graph_counts(graph),
        )

    def _make_retriever(self, embed: BaseEmbedding) -> Any:
        from llama_index.core.indices.property_graph import VectorContextRetriever

        assert self.pg is not None
        store = self.pg.property_graph_store
        if self.retriever == "graph-walk":
            from .graph_walk import GraphWalkRetriever

            walker = GraphWalkRetriever.from_index(  # as an app wires it: the selector's dropped nodes
                self.pg,
                self._selector if self._walk_dropped else None,
                embed_model=embed,
                similarity_top_k=self._walk_top_k,
                link_texts=self._link_texts,
            )
            return self.pg.as_retriever(sub_retrievers=[walker], include_text=True, use_async=False)
        subs = [
            VectorContextRetriever(
                store,
                include_text=True,
                embed_model=embed,
                vector_store=self.pg.vector_store,
                similarity_top_k=self._top_k,
                path_depth=self._depth,
            ),
            NEREntityRetriever(
                store, include_text=True, limit=self._limit, hops=self._hops, max_fanout=self._max_fanout
            ),
        ]
        return self.pg.as_retriever(sub_retrievers=subs, include_text=True, use_async=False)

    def retrieve(self, query: str) -> list[HostItem]:
        """The host KG retriever's results for ``query`` as core ``HostItem``s."""
        return answer(self._retriever, self._index, query)


def replay_host(path: str | None = None, **options: Any) -> ReplayPropertyGraphHost:
    """Entry point ``replay`` (``--host replay:PATH``)."""
    return ReplayPropertyGraphHost(path=path, **options)
