"""``GraphWalkRetriever``: walk a ``PropertyGraphIndex``'s own KG the way HippoRAG 2 walks its graph.

A ``BasePGRetriever`` (it sits beside ``VectorContextRetriever`` / ``LLMSynonymRetriever`` in
``index.as_retriever(sub_retrievers=[...])``, or works alone) that reads the triplets and their source chunks from
the index's property graph store and returns the **chunk nodes** ranked by
:class:`g2cons_plugins.hosts.GraphWalk` (facts by embedding -> seed entities -> personalized PageRank over entities
and chunks, synonym edges by embedding, a dense chunk prior; no LLM at query time). The algorithm is the core's;
this module only translates the store into :class:`~g2cons_plugins.hosts.GraphRecord` s:

* one record per chunk node (``ChunkNode``: its id and text; its stored embedding, when the index embedded it with a
  model of the same dimension, is the chunk's dense vector, so nothing is embedded twice);
* each entity-entity triplet goes to the chunk named by its ``triplet_source_id`` (the key ``PropertyGraphIndex``
  writes on every extracted node and relation; the relation's first, then its subject's, then its object's);
* a ``SOURCE`` (or ``MENTIONS``) relation between an extracted entity (one with a ``triplet_source_id``) and a
  chunk is a mention (the entity is linked to that chunk, as ``mention_nodes=True`` uses); relations with a chunk
  at one end (``ImplicitPathExtractor``'s ``SOURCE`` / ``NEXT`` / ``PREVIOUS`` / ``PARENT`` / ``CHILD``) are not
  facts.

Chunks the store does not hold (``extra_nodes``: typically the nodes ``CoreChunkSelector`` dropped before the
extractor, so their KG was never paid for) are walked too: each is a chunk node with its dense prior and, as the
graph-walk host does, an edge to every KG entity its text names (``link_texts``, automatic: on once the extracted
chunks are a third of all; the core's :func:`~g2cons_plugins.hosts.app_settings`). On MuSiQue with the replayed
gpt-3.5 KG of half the chunks this is what lets the walk find the other half
(``benchmarks/dual_path/results/graph_walk_llamaindex_musique_train100.md``).

Reading the store uses only the generic ``PropertyGraphStore`` API: ``get()`` (every node), ``get_triplets()`` and,
for a store that returns nothing unfiltered (``SimplePropertyGraphStore`` does), ``get_triplets(ids=...)`` over the
entity ids in batches; ``get_llama_nodes(ids)`` turns the ranked chunk ids back into the index's nodes. The in-memory
``SimplePropertyGraphStore`` is read straight from its ``graph`` (one pass instead of a filter per id batch).
Tested with ``SimplePropertyGraphStore`` (built by ``PropertyGraphIndex``) and with a store that implements only the
abstract ``PropertyGraphStore`` API; database stores (Neo4j, Kuzu, ...) go through that same API but were not run
here (no server offline).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from g2cons_plugins.errors import InputError
from g2cons_plugins.hosts import GraphRecord, GraphWalk, GraphWalkSettings, app_settings
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.graph_stores.types import (
    KG_SOURCE_REL,
    TRIPLET_SOURCE_KEY,
    ChunkNode,
    LabelledNode,
    LabelledPropertyGraph,
    PropertyGraphStore,
    Triplet,
)
from llama_index.core.indices.property_graph.sub_retrievers.base import BasePGRetriever
from llama_index.core.schema import BaseNode, MetadataMode, NodeRelationship, NodeWithScore, QueryBundle, TextNode

if TYPE_CHECKING:
    from .selector import CoreChunkSelector

__all__ = ["GraphWalkRetriever", "store_records"]

_MENTION_LABELS = {KG_SOURCE_REL, "MENTIONS"}
_STRUCTURE_LABELS = {r.name for r in NodeRelationship}
_ID_BATCH = 500


def _is_chunk(node: LabelledNode, chunk_ids: set[str]) -> bool:
    return isinstance(node, ChunkNode) or node.id in chunk_ids


def _name(node: LabelledNode) -> str:
    name = getattr(node, "name", None)
    return name if isinstance(name, str) and name else node.id


def _all_triplets(store: PropertyGraphStore, entity_ids: Sequence[str]) -> list[Triplet]:
    graph = getattr(store, "graph", None)
    if isinstance(graph, LabelledPropertyGraph):  # SimplePropertyGraphStore: the whole graph in one pass
        return graph.get_triplets()
    got = list(store.get_triplets())
    if got:
        return got
    seen: set[tuple[str, str, str, Any]] = set()
    out: list[Triplet] = []
    for i in range(0, len(entity_ids), _ID_BATCH):
        for t in store.get_triplets(ids=list(entity_ids[i : i + _ID_BATCH])):
            key = (t[0].id, t[1].label, t[2].id, t[1].properties.get(TRIPLET_SOURCE_KEY))
            if key not in seen:
                seen.add(key)
                out.append(t)
    return out


def store_records(store: PropertyGraphStore) -> tuple[list[GraphRecord], dict[str, np.ndarray], int]:
    """The store's KG as one :class:`GraphRecord` per chunk, the chunks' stored embeddings, and the number of
    entity triplets skipped because no ``triplet_source_id`` names their chunk."""
    nodes = list(store.get())
    chunks = [n for n in nodes if isinstance(n, ChunkNode)]
    chunk_ids = {c.id for c in chunks}
    entity_ids = sorted(n.id for n in nodes if n.id not in chunk_ids)
    triples: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    mentions: dict[str, list[str]] = defaultdict(list)
    skipped = 0
    for s, r, o in _all_triplets(store, entity_ids):
        s_chunk, o_chunk = _is_chunk(s, chunk_ids), _is_chunk(o, chunk_ids)
        if s_chunk or o_chunk:
            chunk, entity = (s, o) if s_chunk else (o, s)
            # an extracted entity (it carries its chunk's id) linked to a chunk; not a structure link to a
            # placeholder such as ImplicitPathExtractor's chunk -> document SOURCE
            if r.label in _MENTION_LABELS and s_chunk != o_chunk and TRIPLET_SOURCE_KEY in entity.properties:
                mentions[chunk.id].append(_name(entity))
            continue
        if r.label in _STRUCTURE_LABELS and TRIPLET_SOURCE_KEY not in r.properties:
            continue  # a structure link to a placeholder (e.g. a chunk's document), not an extracted fact
        src = next(
            (x.properties.get(TRIPLET_SOURCE_KEY) for x in (r, s, o) if x.properties.get(TRIPLET_SOURCE_KEY)), None
        )
        if not isinstance(src, str):
            skipped += 1
            continue
        triples[src].append((_name(s), r.label, _name(o)))
    records: list[GraphRecord] = []
    vectors: dict[str, np.ndarray] = {}
    for c in sorted(chunks, key=lambda c: c.id):
        records.append(GraphRecord(c.id, c.text, sorted(triples.pop(c.id, [])), sorted(mentions.pop(c.id, []))))
        if c.embedding:
            vectors[c.id] = np.asarray(c.embedding, dtype=np.float32)
    for cid in sorted(set(triples) | set(mentions)):  # a source chunk the store holds no node for: a bridge only
        records.append(GraphRecord(cid, None, sorted(triples.get(cid, [])), sorted(mentions.get(cid, []))))
    return records, vectors, skipped


def _signature(store: PropertyGraphStore) -> tuple[int, ...]:
    graph = getattr(store, "graph", None)
    if isinstance(graph, LabelledPropertyGraph):
        return (len(graph.nodes), len(graph.relations), len(graph.triplets))
    return (len(store.get()),)


class GraphWalkRetriever(BasePGRetriever):
    """HippoRAG 2's graph walk over the property graph store's KG; returns the chunk nodes, best first.

    Args:
        graph_store: the index's ``property_graph_store`` (any ``PropertyGraphStore``).
        embed_model: embeds facts, entity names, chunks without a stored vector, and the query; default
            ``Settings.embed_model`` (give the index's, e.g. ``index._embed_model``, when it is not the global one).
        similarity_top_k: chunks returned per query.
        reuse_chunk_embeddings: use the chunk embeddings the index stored (when their dimension matches the
            model's); ``False``: embed every chunk text with ``embed_model``.
        auto_refresh: rebuild the walk when the store changed since the last build (nodes / relations counted at
            each query). Default: on for the in-memory ``SimplePropertyGraphStore`` (free), off for other stores
            (it reads every node): call :meth:`refresh` after inserting there, or pass ``True``.
        settings: :class:`g2cons_plugins.hosts.GraphWalkSettings` (default: HippoRAG 2's with ``link_texts``
            automatic); its fields may also be given as keywords (``damping=0.5``, ``link_texts=False``, ...).
        extra_nodes: chunk nodes the store does not hold, walked as chunks (their dense prior, and the KG
            entities their text names with ``link_texts``) and returned as themselves: e.g. the nodes
            ``CoreChunkSelector`` dropped, ``selector.dropped_nodes()``.
        include_text: accepted for the ``BasePGRetriever`` contract; the results are source chunks already.

    The walk is built on the first query (not in the constructor), so an empty index can take the retriever.
    """

    def __init__(
        self,
        graph_store: PropertyGraphStore,
        embed_model: BaseEmbedding | None = None,
        similarity_top_k: int = 10,
        reuse_chunk_embeddings: bool = True,
        auto_refresh: bool | None = None,
        settings: GraphWalkSettings | None = None,
        include_text: bool = True,
        extra_nodes: Sequence[BaseNode] | None = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(graph_store, PropertyGraphStore):
            raise InputError(f"graph_store must be a PropertyGraphStore, got {type(graph_store).__name__}")
        if isinstance(similarity_top_k, bool) or not isinstance(similarity_top_k, int) or similarity_top_k < 1:
            raise InputError(f"similarity_top_k must be a positive int, got {similarity_top_k!r}")
        fields = set(GraphWalkSettings.__dataclass_fields__)
        overrides = {k: kwargs.pop(k) for k in list(kwargs) if k in fields}
        self.settings = app_settings(settings, **overrides)
        self._embed_model_arg = embed_model
        self.similarity_top_k = similarity_top_k
        self.reuse_chunk_embeddings = reuse_chunk_embeddings
        in_memory = isinstance(getattr(graph_store, "graph", None), LabelledPropertyGraph)
        self.auto_refresh = in_memory if auto_refresh is None else bool(auto_refresh)
        self._walk: GraphWalk | None = None
        self._built_at: tuple[int, ...] | None = None
        self.skipped_triplets = 0
        self._extra: dict[str, BaseNode] = {}
        self.add_extra_nodes(extra_nodes if extra_nodes is not None else ())
        super().__init__(graph_store=graph_store, include_text=include_text, **kwargs)

    @classmethod
    def from_index(cls, index: Any, selector: CoreChunkSelector | None = None, **kwargs: Any) -> GraphWalkRetriever:
        """The walker over a ``PropertyGraphIndex``: its ``property_graph_store``, its embed model (unless
        ``embed_model=`` is given) and, with the ``CoreChunkSelector`` that ran before its extractor, the nodes the
        selector dropped as ``extra_nodes`` (``selector.dropped_nodes()``; after later inserts the selector drops,
        ``add_extra_nodes(selector.dropped_nodes())``). ``kwargs``: the constructor's."""
        store = getattr(index, "property_graph_store", None)
        if not isinstance(store, PropertyGraphStore):
            raise InputError(f"index must be a PropertyGraphIndex, got {type(index).__name__}")
        if selector is not None:
            if "extra_nodes" in kwargs:
                raise InputError("give selector= (its dropped nodes are the extra nodes) or extra_nodes=, not both")
            kwargs["extra_nodes"] = selector.dropped_nodes()
        kwargs.setdefault("embed_model", getattr(index, "_embed_model", None))  # None when it embeds nothing
        return cls(store, **kwargs)

    # ------------------------------------------------------------------ build
    @property
    def embed_model(self) -> BaseEmbedding:
        """The embedding model (the one given, else ``Settings.embed_model`` at first use)."""
        if self._embed_model_arg is None:
            from llama_index.core import Settings

            self._embed_model_arg = Settings.embed_model
        return self._embed_model_arg

    def _embed_fn(self) -> Callable[[Sequence[str]], np.ndarray]:
        model = self.embed_model
        return lambda texts: np.asarray(model.get_text_embedding_batch(list(texts)), dtype=np.float32)

    def add_extra_nodes(self, nodes: Sequence[BaseNode]) -> None:
        """Walk these chunk nodes too (see ``extra_nodes``; a node the store holds is read from the store); the walk
        is rebuilt on the next query."""
        if isinstance(nodes, (str, bytes, BaseNode)) or not isinstance(nodes, Sequence):
            raise InputError("extra_nodes must be a list of nodes (BaseNode)")
        for n, node in enumerate(nodes):
            if not isinstance(node, BaseNode):
                raise InputError(f"extra_nodes[{n}]: expected a LlamaIndex node, got {type(node).__name__}")
            if not node.get_content(metadata_mode=MetadataMode.NONE).strip():
                raise InputError(f"extra_nodes[{n}] (node {node.node_id!r}) has no text to walk")
        self._extra.update((node.node_id, node) for node in nodes)
        if nodes:
            self._walk = None

    def _records(self) -> tuple[list[GraphRecord], dict[str, np.ndarray], int]:
        """The store's records and vectors, plus a text-only record per extra node the store does not hold."""
        records, vectors, skipped = store_records(self._graph_store)
        held = {r.chunk_id for r in records}
        for cid, node in sorted(self._extra.items()):
            if cid not in held:
                records.append(GraphRecord(cid, node.get_content(metadata_mode=MetadataMode.NONE)))
                if node.embedding:
                    vectors[cid] = np.asarray(node.embedding, dtype=np.float32)
        return records, vectors, skipped

    def refresh(self) -> GraphWalk:
        """Read the store again and rebuild the walk (after inserts into a store ``auto_refresh`` does not watch)."""
        records, vectors, skipped = self._records()
        if not records:
            raise InputError("the property graph store holds no chunk and no triplet: nothing to walk")
        embed = self._embed_fn()
        prior: dict[str, np.ndarray] | None = None
        if self.reuse_chunk_embeddings and vectors:
            dim = int(embed(["dimension probe"]).shape[1])
            same = {cid: v for cid, v in vectors.items() if v.ndim == 1 and v.shape[0] == dim}
            missing = [r for r in records if r.text and r.chunk_id not in same]
            if missing:
                same.update(zip([r.chunk_id for r in missing], embed([r.text or "" for r in missing]), strict=True))
            prior = same
        self._built_at = _signature(self._graph_store)
        self._walk = GraphWalk.from_records(
            records, embed, query_fn=self.embed_model.get_query_embedding, settings=self.settings, passage_vectors=prior
        )
        self.skipped_triplets = skipped
        return self._walk

    @property
    def walk(self) -> GraphWalk:
        """The core walk over the store's KG (built on first use; rebuilt when ``auto_refresh`` sees a change)."""
        if self._walk is None or (self.auto_refresh and _signature(self._graph_store) != self._built_at):
            return self.refresh()
        return self._walk

    # ------------------------------------------------------------------ query
    def _query_vector(self, query_bundle: QueryBundle) -> np.ndarray:
        if query_bundle.embedding is not None:
            return np.asarray(query_bundle.embedding, dtype=np.float32)
        if query_bundle.custom_embedding_strs:
            return np.asarray(
                self.embed_model.get_agg_embedding_from_queries(query_bundle.custom_embedding_strs), np.float32
            )
        if not query_bundle.query_str.strip():
            raise InputError("query must be a non-empty string")
        return np.asarray(self.embed_model.get_query_embedding(query_bundle.query_str), dtype=np.float32)

    def retrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """The chunk nodes the walk ranks best (score: the walk's PageRank mass), ``similarity_top_k`` at most."""
        walk = self.walk
        ranked = walk.retrieve_vector(self._query_vector(query_bundle), self.similarity_top_k)
        found = {n.node_id: n for n in self._graph_store.get_llama_nodes([cid for cid, _ in ranked])}
        out = []
        for cid, score in ranked:
            node = found.get(cid) or self._extra.get(cid)
            if node is not None:  # a source id the store holds no chunk for is a bridge, not a result
                node = node if isinstance(node, TextNode) else TextNode(id_=cid, text=node.get_content())
                out.append(NodeWithScore(node=node, score=score))
        return out

    async def aretrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Same, in a worker thread (the walk is CPU-bound)."""
        return await asyncio.to_thread(self.retrieve_from_graph, query_bundle)

    def add_source_text(self, nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        """The results are source chunks already: returned unchanged."""
        return nodes

    async def async_add_source_text(self, nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        """The results are source chunks already: returned unchanged."""
        return nodes
