"""GraphWalkRetriever over a PropertyGraphIndex's own KG: a multi-hop answer reached only through an entity bridge,
as a sub-retriever and standalone, an insert seen on the next query, a store that only has the abstract API, and
the G2ConS fusion retriever with it as host."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from g2cons_plugins.errors import InputError
from llama_index.core import PropertyGraphIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.graph_stores.types import (
    KG_NODES_KEY,
    KG_RELATIONS_KEY,
    EntityNode,
    LabelledNode,
    PropertyGraphStore,
    Relation,
    Triplet,
)
from llama_index.core.llms import MockLLM
from llama_index.core.schema import BaseNode, MetadataMode, QueryBundle, TextNode, TransformComponent

from llama_index.retrievers.g2cons import GraphWalkRetriever

DIM = 256
_VOCAB: dict[str, int] = {}


def bow(text: str) -> list[float]:
    """Deterministic bag of words: each word of 3+ letters its own axis."""
    v = np.zeros(DIM, np.float32)
    for w in re.findall(r"[a-z0-9]{3,}", text.lower()):
        v[_VOCAB.setdefault(w, len(_VOCAB))] += 1.0
    return v.tolist()


class BowEmbedding(BaseEmbedding):
    def _get_text_embedding(self, text: str) -> list[float]:
        return bow(text)

    def _get_query_embedding(self, query: str) -> list[float]:
        return bow(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return bow(query)


CHUNKS: dict[str, tuple[str, list[tuple[str, str, str]]]] = {
    "alice": ("Alice Smith was born in Springfield in 1950.", [("Alice Smith", "born in", "Springfield")]),
    "answer": ("Springfield governs Freedonia.", [("Springfield", "governs", "Freedonia")]),
    "d1": ("Alice Cooper is a country singer with a capital idea.", [("Cooper", "sings", "rock songs")]),
    "d2": ("The capital where Bob Smith lived is Strelsau.", [("Bob Smith", "lived in", "Strelsau")]),
    "d3": ("Which country has the most rivers? Brazil, whose capital is Brasilia.", [("Brazil", "has", "rivers")]),
    "d4": ("Carol was born in Paris, the capital.", [("Carol", "lives in", "Paris")]),
    "d5": ("The Smith family owns a farm in the country.", [("Smith family", "owns", "farm")]),
}
QUESTION = "Which country has the capital where Alice Smith was born?"


class TableExtractor(TransformComponent):
    """A deterministic KG extractor: each chunk's triples from a table keyed by its text (no LLM)."""

    table: dict[str, list[tuple[str, str, str]]]

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        for node in nodes:
            ents: dict[str, EntityNode] = {}
            rels = []
            for s, r, o in self.table.get(node.get_content(), []):
                a, b = ents.setdefault(s, EntityNode(name=s)), ents.setdefault(o, EntityNode(name=o))
                rels.append(Relation(label=r, source_id=a.id, target_id=b.id))
            node.metadata[KG_NODES_KEY] = list(ents.values())
            node.metadata[KG_RELATIONS_KEY] = rels
        return nodes


def build(chunks: dict[str, tuple[str, list[tuple[str, str, str]]]] = CHUNKS) -> PropertyGraphIndex:
    extractor = TableExtractor(table={text: triples for text, triples in chunks.values()})
    nodes = [TextNode(id_=cid, text=text) for cid, (text, _) in chunks.items()]
    return PropertyGraphIndex(
        nodes=nodes, kg_extractors=[extractor], embed_model=BowEmbedding(), llm=MockLLM(), use_async=False
    )


def ids(results: Sequence[Any]) -> list[str]:
    return [r.node.node_id for r in results]


def test_walk_reaches_the_answer_only_through_the_entity_bridge() -> None:
    index = build()
    walker = GraphWalkRetriever(index.property_graph_store, embed_model=BowEmbedding(), similarity_top_k=3, top_facts=1)
    got = walker.retrieve(QUESTION)
    assert ids(got)[:2] == ["alice", "answer"]  # the answer shares no word with the question
    assert got[0].node.get_content() == CHUNKS["alice"][0]  # the chunk itself, no triplet preamble
    assert walker.walk.stats()["facts"] == len(CHUNKS) and walker.walk.stats()["chunks"] == len(CHUNKS)
    # the same store without the bridge entity: the answer is no longer reached
    broken = dict(CHUNKS, answer=("Springfield governs Freedonia.", [("Shelbyville", "governs", "Freedonia")]))
    other = GraphWalkRetriever(build(broken).property_graph_store, embed_model=BowEmbedding(), top_facts=1)
    assert "answer" not in ids(other.retrieve(QUESTION))[:2]


def test_as_a_sub_retriever_of_the_index() -> None:
    index = build()
    walker = GraphWalkRetriever(index.property_graph_store, embed_model=BowEmbedding(), similarity_top_k=2, top_facts=1)
    retriever = index.as_retriever(sub_retrievers=[walker], use_async=False)
    assert set(ids(retriever.retrieve(QUESTION))) == {"alice", "answer"}


def test_an_insert_is_walked_on_the_next_query() -> None:
    index = build()
    walker = GraphWalkRetriever(index.property_graph_store, embed_model=BowEmbedding(), similarity_top_k=3, top_facts=1)
    before = walker.walk
    assert "freedonia_fact" not in ids(walker.retrieve(QUESTION))
    text, triple = "Its parliament sits in Fredville.", ("Freedonia", "parliament in", "Fredville")
    index._kg_extractors[0].table[text] = [triple]  # type: ignore[attr-defined]
    index.insert_nodes([TextNode(id_="freedonia_fact", text=text)])
    got = ids(walker.retrieve("Where does the parliament of Freedonia sit?"))
    assert walker.walk is not before and "freedonia_fact" in got


class AbstractOnlyStore(PropertyGraphStore):
    """A store with only the abstract API (no in-memory ``graph``), unfiltered ``get_triplets()`` empty, like
    ``SimplePropertyGraphStore``'s: the retriever must go through ``get`` / ``get_triplets(ids=...)``."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def get(self, properties: dict | None = None, ids: list[str] | None = None) -> list[LabelledNode]:
        return self._inner.get(properties=properties, ids=ids)

    def get_triplets(
        self,
        entity_names: list[str] | None = None,
        relation_names: list[str] | None = None,
        properties: dict | None = None,
        ids: list[str] | None = None,
    ) -> list[Triplet]:
        return self._inner.get_triplets(entity_names, relation_names, properties, ids)

    def get_rel_map(self, graph_nodes: Any, depth: int = 2, limit: int = 30, ignore_rels: Any = None) -> list[Triplet]:
        return self._inner.get_rel_map(graph_nodes, depth, limit, ignore_rels)

    def upsert_nodes(self, nodes: Any) -> None:
        self._inner.upsert_nodes(nodes)

    def upsert_relations(self, relations: Any) -> None:
        self._inner.upsert_relations(relations)

    def delete(self, entity_names: Any = None, relation_names: Any = None, properties: Any = None, ids: Any = None):
        self._inner.delete(entity_names, relation_names, properties, ids)

    def structured_query(self, query: str, param_map: Any = None) -> Any:
        raise NotImplementedError

    def vector_query(self, query: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def test_a_store_with_only_the_abstract_api_gives_the_same_walk() -> None:
    index = build()
    simple = GraphWalkRetriever(index.property_graph_store, embed_model=BowEmbedding(), top_facts=1)
    generic = GraphWalkRetriever(AbstractOnlyStore(index.property_graph_store), embed_model=BowEmbedding(), top_facts=1)
    assert generic.auto_refresh is False and simple.auto_refresh is True
    a, b = simple.retrieve(QUESTION), generic.retrieve(QUESTION)
    assert ids(a) == ids(b) and [r.score for r in a] == pytest.approx([r.score for r in b])
    assert generic.walk.facts == simple.walk.facts


def test_standalone_async_and_query_embedding() -> None:
    import asyncio

    walker = GraphWalkRetriever(build().property_graph_store, embed_model=BowEmbedding(), similarity_top_k=2)
    assert ids(asyncio.run(walker.aretrieve(QUESTION)))[0] == "alice"
    given = QueryBundle(query_str="ignored words", embedding=bow(QUESTION))
    assert ids(walker.retrieve(given))[0] == "alice"


def test_bad_arguments_are_named() -> None:
    store = build().property_graph_store
    with pytest.raises(InputError, match="similarity_top_k"):
        GraphWalkRetriever(store, embed_model=BowEmbedding(), similarity_top_k=0)
    with pytest.raises(InputError, match="graph_store"):
        GraphWalkRetriever(object(), embed_model=BowEmbedding())  # type: ignore[arg-type]
    with pytest.raises(InputError, match="damping"):
        GraphWalkRetriever(store, embed_model=BowEmbedding(), damping=1.5)
    empty = GraphWalkRetriever(
        PropertyGraphIndex(nodes=[], llm=MockLLM(), embed_model=BowEmbedding()).property_graph_store
    )
    with pytest.raises(InputError, match="no chunk"):
        empty.retrieve(QUESTION)


def test_as_the_host_of_the_g2cons_fusion_retriever() -> None:
    from llama_index.retrievers.g2cons import G2ConSRetriever

    index = build()
    walker = GraphWalkRetriever(index.property_graph_store, embed_model=BowEmbedding(), similarity_top_k=3, top_facts=1)
    chunks = [TextNode(id_=cid, text=text) for cid, (text, _) in CHUNKS.items()]
    fused = G2ConSRetriever.from_defaults(host_retriever=walker, nodes=chunks, embedder="hash", beta=200)
    got = fused.retrieve(QUESTION)
    hosted = [r.node.node_id for r in got if r.node.metadata.get("g2cons_source") in ("host", "both")]
    assert hosted and set(hosted) <= set(ids(walker.retrieve(QUESTION)))  # the walk's chunk ids are the index's
    assert set(ids(got)) <= set(CHUNKS)


def test_structure_relations_are_not_facts_and_source_links_are_mentions() -> None:
    from llama_index.core.graph_stores.types import KG_SOURCE_REL
    from llama_index.core.indices.property_graph import ImplicitPathExtractor
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo

    from llama_index.retrievers.g2cons.graph_walk import store_records

    extractor = TableExtractor(table={text: triples for text, triples in CHUNKS.values()})
    nodes = [TextNode(id_=cid, text=text) for cid, (text, _) in CHUNKS.items()]
    for a, b in zip(nodes[:-1], nodes[1:], strict=True):  # NEXT / PREVIOUS links as a splitter writes
        a.relationships[NodeRelationship.NEXT] = RelatedNodeInfo(node_id=b.node_id)
        b.relationships[NodeRelationship.PREVIOUS] = RelatedNodeInfo(node_id=a.node_id)
    for n in nodes:
        n.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id="the-document")
    index = PropertyGraphIndex(
        nodes=nodes,
        kg_extractors=[extractor, ImplicitPathExtractor()],
        embed_model=BowEmbedding(),
        llm=MockLLM(),
        use_async=False,
    )
    store = index.property_graph_store
    store.upsert_relations([Relation(label=KG_SOURCE_REL, source_id="Freedonia", target_id="d5")])  # a mention
    records, vectors, skipped = store_records(store)
    by_id = {r.chunk_id: r for r in records}
    assert sorted(by_id) == sorted(CHUNKS) and skipped == 0  # no record for the document placeholder
    assert all(list(by_id[c].triples) == sorted(CHUNKS[c][1]) for c in CHUNKS)  # NEXT / SOURCE are not facts
    assert list(by_id["d5"].entities) == ["Freedonia"] and set(vectors) == set(CHUNKS)
    walker = GraphWalkRetriever(store, embed_model=BowEmbedding(), similarity_top_k=2, top_facts=1)
    assert ids(walker.retrieve(QUESTION)) == ["alice", "answer"]
    assert walker.walk.stats()["facts"] == len(CHUNKS)


def test_a_dropped_chunk_given_as_an_extra_node_is_walked_through_the_names_it_holds() -> None:
    # the selector dropped "answer" before the extractor: the store holds the other six chunks and their KG only
    kept = {cid: v for cid, v in CHUNKS.items() if cid != "answer"}
    store = build(kept).property_graph_store
    dropped = TextNode(id_="answer", text=CHUNKS["answer"][0], metadata={"file_name": "f.txt"})
    walker = GraphWalkRetriever(
        store, embed_model=BowEmbedding(), similarity_top_k=3, top_facts=1, extra_nodes=[dropped]
    )
    got = walker.retrieve(QUESTION)
    assert walker.settings.link_texts is None and walker.walk.linked  # automatic: 6 of 7 chunks hold triples
    assert ids(got)[:2] == ["alice", "answer"]  # alice smith -> springfield -> the chunk that names it
    assert got[1].node.get_content() == dropped.text and got[1].node.metadata == {"file_name": "f.txt"}
    assert walker.walk.stats()["chunks"] == len(CHUNKS) and walker.walk.stats()["facts"] == len(kept)
    # HippoRAG 2's graph (no links): the dropped chunk has only its dense prior, and shares no word with the question
    plain = GraphWalkRetriever(
        store, embed_model=BowEmbedding(), top_facts=1, extra_nodes=[dropped], link_texts=False
    )
    assert not plain.walk.linked and "answer" not in ids(plain.retrieve(QUESTION))[:3]
    # without the extra node the store's chunks are all there is
    assert "answer" not in ids(GraphWalkRetriever(store, embed_model=BowEmbedding(), top_facts=1).retrieve(QUESTION))


def test_extra_nodes_added_later_rebuild_the_walk_and_a_stored_chunk_stays_the_stores() -> None:
    index = build()
    store = index.property_graph_store
    walker = GraphWalkRetriever(store, embed_model=BowEmbedding(), similarity_top_k=10, top_facts=1)
    before = walker.walk
    twin = TextNode(id_="alice", text="A different text under a stored id.")
    walker.add_extra_nodes([twin, TextNode(id_="late", text="Freedonia exports cheese.")])
    got = {r.node.node_id: r.node for r in walker.retrieve(QUESTION)}
    assert walker.walk is not before and walker.walk.stats()["chunks"] == len(CHUNKS) + 1
    assert got["alice"].get_content() == CHUNKS["alice"][0]  # the store's chunk, not the extra node of its id
    with pytest.raises(InputError, match="extra_nodes must be a list"):
        walker.add_extra_nodes(twin)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"extra_nodes\[0\] \(node 'blank'\) has no text"):
        GraphWalkRetriever(store, embed_model=BowEmbedding(), extra_nodes=[TextNode(id_="blank", text=" ")])
    with pytest.raises(InputError, match="extra_nodes\\[1\\]: expected a LlamaIndex node"):
        GraphWalkRetriever(store, embed_model=BowEmbedding(), extra_nodes=[twin, "text"])  # type: ignore[list-item]


def test_the_selectors_dropped_nodes_are_the_original_nodes_and_complete_the_walk() -> None:
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo

    from llama_index.retrievers.g2cons import CoreChunkSelector

    nodes = []
    for cid, (text, _) in CHUNKS.items():
        node = TextNode(id_=cid, text=text, metadata={"title": cid.upper()}, excluded_llm_metadata_keys=["title"])
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=f"doc-{cid}")
        nodes.append(node)
    selector = CoreChunkSelector(kappa=0.5, embedder="hash").fit(nodes)
    dropped = selector.dropped_nodes()
    assert dropped and [n.node_id for n in dropped] == [n.node_id for n in nodes if n.node_id in selector.dropped_ids]
    for got in dropped:
        orig = next(n for n in nodes if n.node_id == got.node_id)
        assert got.text == orig.text and got.metadata == orig.metadata and got.ref_doc_id == orig.ref_doc_id
        assert got.excluded_llm_metadata_keys == ["title"]
        assert got.get_content(metadata_mode=MetadataMode.LLM) == orig.get_content(metadata_mode=MetadataMode.LLM)
    extractor = TableExtractor(table={text: triples for text, triples in CHUNKS.values()})
    index = PropertyGraphIndex(
        nodes=selector(nodes), kg_extractors=[extractor], embed_model=BowEmbedding(), llm=MockLLM(), use_async=False
    )
    walker = GraphWalkRetriever.from_index(index, selector, top_facts=1)
    assert isinstance(walker.embed_model, BowEmbedding) and walker.settings.top_facts == 1  # the index's model
    assert sorted(walker.walk.chunk_ids) == sorted(CHUNKS)  # kept from the store, dropped from the selector
    assert walker.walk.stats()["facts"] == len(selector.kept_ids)  # only the kept chunks were extracted
    assert sorted(GraphWalkRetriever.from_index(index).walk.chunk_ids) == sorted(selector.kept_ids)
    with pytest.raises(InputError, match="not both"):
        GraphWalkRetriever.from_index(index, selector, extra_nodes=dropped)
    with pytest.raises(InputError, match="index must be a PropertyGraphIndex"):
        GraphWalkRetriever.from_index(index.property_graph_store)
