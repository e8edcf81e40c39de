"""GraphWalkRetriever over LangChain graph documents built by hand: a multi-hop answer reached only through an
entity bridge, documents added later, documents without a graph document, the standard retriever tests, and the
G2ConS fusion retriever with it as host."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from g2cons_plugins.errors import InputError
from langchain_community.graphs.graph_document import GraphDocument, Node, Relationship
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_g2cons import GraphWalkRetriever

DIM = 256
_VOCAB: dict[str, int] = {}


def bow(text: str) -> list[float]:
    """Deterministic bag of words: each word of 3+ letters its own axis."""
    v = np.zeros(DIM, np.float32)
    for w in re.findall(r"[a-z0-9]{3,}", text.lower()):
        v[_VOCAB.setdefault(w, len(_VOCAB))] += 1.0
    return v.tolist()


class BowEmbeddings(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [bow(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return bow(text)


CHUNKS: dict[str, tuple[str, list[tuple[str, str, str]]]] = {
    "alice": ("Alice Smith was born in Springfield in 1950.", [("Alice Smith", "BORN_IN", "Springfield")]),
    "answer": ("Springfield governs Freedonia.", [("Springfield", "GOVERNS", "Freedonia")]),
    "d1": ("Alice Cooper is a country singer with a capital idea.", [("Cooper", "SINGS", "rock songs")]),
    "d2": ("The capital where Bob Smith lived is Strelsau.", [("Bob Smith", "LIVED_IN", "Strelsau")]),
    "d3": ("Which country has the most rivers? Brazil, whose capital is Brasilia.", [("Brazil", "HAS", "rivers")]),
    "d4": ("Carol was born in Paris, the capital.", [("Carol", "LIVES_IN", "Paris")]),
    "d5": ("The Smith family owns a farm in the country.", [("Smith family", "OWNS", "farm")]),
}
QUESTION = "Which country has the capital where Alice Smith was born?"


def graph_document(cid: str, text: str, triples: list[tuple[str, str, str]]) -> GraphDocument:
    """What LLMGraphTransformer returns for one document, written by hand."""
    nodes = {n: Node(id=n, type="Entity") for s, _, o in triples for n in (s, o)}
    rels = [Relationship(source=nodes[s], target=nodes[o], type=r) for s, r, o in triples]
    return GraphDocument(nodes=list(nodes.values()), relationships=rels, source=Document(id=cid, page_content=text))


def graph_documents(chunks: dict[str, tuple[str, list[tuple[str, str, str]]]] = CHUNKS) -> list[GraphDocument]:
    return [graph_document(cid, text, triples) for cid, (text, triples) in chunks.items()]


def ids(docs: list[Document]) -> list[str]:
    return [d.id or "" for d in docs]


def test_walk_reaches_the_answer_only_through_the_entity_bridge() -> None:
    r = GraphWalkRetriever.from_graph_documents(graph_documents(), BowEmbeddings(), k=3, top_facts=1)
    got = r.invoke(QUESTION)
    assert ids(got)[:2] == ["alice", "answer"]  # the answer shares no word with the question
    assert got[1].page_content == CHUNKS["answer"][0] and got[0].metadata["relevance_score"] > 0
    assert r.walk.stats()["facts"] == len(CHUNKS) and ("springfield", "governs", "freedonia") in r.walk.facts
    broken = dict(CHUNKS, answer=("Springfield governs Freedonia.", [("Shelbyville", "GOVERNS", "Freedonia")]))
    other = GraphWalkRetriever.from_graph_documents(graph_documents(broken), BowEmbeddings(), k=3, top_facts=1)
    assert "answer" not in ids(other.invoke(QUESTION))[:2]


def test_added_graph_documents_are_walked_on_the_next_query() -> None:
    r = GraphWalkRetriever.from_graph_documents(graph_documents(), BowEmbeddings(), k=3)
    q = "Where does the parliament of Freedonia sit?"
    assert "new" not in ids(r.invoke(q))
    before = r.walk
    r.add_graph_documents(
        [graph_document("new", "Its parliament sits in Fredville.", [("Freedonia", "PARLIAMENT_IN", "Fredville")])]
    )
    assert "new" in ids(r.invoke(q)) and r.walk is not before
    with pytest.raises(InputError, match="source"):
        r.add_graph_documents([object()])


def test_documents_without_a_graph_document_are_dense_only_nodes() -> None:
    extra = Document(page_content="Alice Smith has a capital country house.", metadata={"g2cons_id": "extra"})
    r = GraphWalkRetriever.from_graph_documents(graph_documents(), BowEmbeddings(), documents=[extra], k=8)
    got = r.invoke(QUESTION)
    assert "extra" in ids(got) and r.walk.stats()["chunks"] == len(CHUNKS) + 1
    assert got[ids(got).index("extra")].metadata["g2cons_id"] == "extra"


def test_bad_input_is_named() -> None:
    with pytest.raises(InputError, match="unknown graph walk settings"):
        GraphWalkRetriever.from_graph_documents(graph_documents(), BowEmbeddings(), dampin=0.5)
    with pytest.raises(InputError, match="damping"):
        GraphWalkRetriever.from_graph_documents(graph_documents(), BowEmbeddings(), damping=2.0)
    with pytest.raises(InputError, match="nothing to walk"):
        GraphWalkRetriever(embeddings=BowEmbeddings()).invoke(QUESTION)
    with pytest.raises(InputError, match="k must be"):
        GraphWalkRetriever.from_graph_documents(graph_documents(), BowEmbeddings()).invoke(QUESTION, k=0)


def test_as_the_host_of_the_g2cons_fusion_retriever() -> None:
    from langchain_g2cons import ConceptGraphRetriever, G2ConSRetriever

    walker = GraphWalkRetriever.from_graph_documents(graph_documents(), BowEmbeddings(), k=3, top_facts=1)
    docs = [Document(id=cid, page_content=text) for cid, (text, _) in CHUNKS.items()]
    index = ConceptGraphRetriever.from_documents(docs, embedder="hash").index
    got = G2ConSRetriever(index=index, host=walker, beta=200).invoke(QUESTION)
    hosted = [d.id for d in got if d.metadata.get("g2cons_source") in ("host", "both")]
    assert hosted and set(hosted) <= set(ids(walker.invoke(QUESTION)))  # the walk's ids are the index's chunk ids


class TestGraphWalkRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[GraphWalkRetriever]:
        return GraphWalkRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"graph_documents": graph_documents(), "embeddings": BowEmbeddings()}

    @property
    def retriever_query_example(self) -> str:
        return QUESTION


def test_a_document_without_a_graph_document_is_linked_by_the_names_it_holds() -> None:
    # the selector dropped "answer" before LLMGraphTransformer: it comes as a plain document
    kept = graph_documents({cid: v for cid, v in CHUNKS.items() if cid != "answer"})
    dropped = Document(id="answer", page_content=CHUNKS["answer"][0])
    r = GraphWalkRetriever.from_graph_documents(kept, BowEmbeddings(), documents=[dropped], k=3, top_facts=1)
    assert r.settings.link_texts is None and GraphWalkRetriever(embeddings=BowEmbeddings()).settings.link_texts is None
    assert ids(r.invoke(QUESTION))[:2] == ["alice", "answer"] and r.walk.linked  # through "Springfield"
    plain = GraphWalkRetriever.from_graph_documents(
        kept, BowEmbeddings(), documents=[dropped], k=3, top_facts=1, link_texts=False
    )
    assert "answer" not in ids(plain.invoke(QUESTION)) and not plain.walk.linked  # its dense prior alone: no word


def test_the_selectors_dropped_documents_complete_the_walk() -> None:
    from langchain_g2cons import CoreChunkSelector

    docs = [Document(id=cid, page_content=text, metadata={"title": cid}) for cid, (text, _) in CHUNKS.items()]
    selector = CoreChunkSelector(kappa=0.5, kappa_by="chunks", embedder="hash")
    with pytest.raises(RuntimeError, match="transform_documents first"):
        selector.dropped_documents()
    kept = selector.transform_documents(docs)
    dropped = selector.dropped_documents()
    assert dropped and {d.id for d in kept} | {d.id for d in dropped} == set(CHUNKS)
    assert not {d.id for d in kept} & {d.id for d in dropped}
    assert [(d.id, d.page_content, d.metadata["title"]) for d in dropped] == [
        (d.id, d.page_content, d.id) for d in docs if d.id not in {k.id for k in kept}
    ]
    graph_docs = [graph_document(str(d.id), d.page_content, CHUNKS[str(d.id)][1]) for d in kept]
    walker = GraphWalkRetriever.from_graph_documents(graph_docs, BowEmbeddings(), documents=dropped)
    assert sorted(walker.walk.chunk_ids) == sorted(CHUNKS) and walker.walk.stats()["facts"] == len(kept)
