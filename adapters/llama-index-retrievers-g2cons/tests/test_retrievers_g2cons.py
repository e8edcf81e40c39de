"""Adapter-local tests of llama-index-retrievers-g2cons (run from this folder: ``python -m pytest tests``).

Offline: the core's deterministic ``hash`` embedder and a fixed host stub; nothing here measures quality.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.indices.property_graph import BasePGRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode, TransformComponent

import llama_index.retrievers.g2cons as pkg
from llama_index.retrievers.g2cons import (
    ConceptGraphRetriever,
    ConceptGraphSubRetriever,
    CoreChunkSelector,
    G2ConSRetriever,
)

TEXTS = [
    "Marie Curie was born in Warsaw. Marie Curie studied physics in Paris at the Sorbonne.",
    "Pierre Curie married Marie Curie in Paris. Pierre Curie worked on magnetism and crystals.",
    "Warsaw is the capital of Poland. Warsaw lies on the Vistula river.",
    "The Sorbonne is a university in Paris. The Sorbonne was founded in the 13th century.",
    "Marie Curie and Pierre Curie discovered polonium and radium in Paris.",
    "Polonium was named after Poland, the homeland of Marie Curie.",
    "The Vistula is the longest river in Poland. The Vistula flows into the Baltic Sea.",
    "Irene Joliot-Curie was the daughter of Marie Curie and Pierre Curie.",
]
Q = "Where was Marie Curie born?"


def nodes() -> list[TextNode]:
    return [TextNode(id_=f"n{i}", text=t) for i, t in enumerate(TEXTS)]


class Fixed(BaseRetriever):
    def __init__(self, items: list[TextNode]) -> None:
        self._items = items
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=n, score=1.0) for n in self._items]


@pytest.fixture()
def selector() -> CoreChunkSelector:
    sel = CoreChunkSelector(kappa=0.5, kappa_by="chunks", embedder="hash")
    sel(nodes()[:-1])
    return sel


def test_public_api() -> None:
    assert sorted(pkg.__all__) == sorted(
        [
            "ConceptGraphRetriever",
            "ConceptGraphSubRetriever",
            "CoreChunkSelector",
            "G2ConSRetriever",
            "GraphWalkRetriever",
        ]
    )
    assert issubclass(CoreChunkSelector, TransformComponent)
    assert issubclass(ConceptGraphRetriever, BaseRetriever) and issubclass(G2ConSRetriever, BaseRetriever)
    assert issubclass(ConceptGraphSubRetriever, BasePGRetriever)


def test_selector_keeps_half_and_adds_unseen_nodes(selector: CoreChunkSelector) -> None:
    assert len(selector.kept_ids) == 4 and len(selector.dropped_ids) == 3
    out = selector(nodes())  # one unseen node: added and decided, no error
    assert {c.id for c in selector.index.chunks} == {f"n{i}" for i in range(len(TEXTS))}
    assert {n.node_id for n in out} == set(selector.kept_ids) & {n.node_id for n in nodes()}
    assert selector.delete_nodes(["n7"]) == ["n7"] and len(selector.index.chunks) == len(TEXTS) - 1


def test_concept_and_fused_retrievers(selector: CoreChunkSelector) -> None:
    concept = ConceptGraphRetriever.from_defaults(selector=selector, beta=80, similarity_top_k=2)
    res = concept.retrieve(Q)
    assert 0 < len(res) <= 2 and all(r.score is not None and r.score > 0 for r in res)
    fused = G2ConSRetriever.from_defaults(host_retriever=Fixed(nodes()[:2]), selector=selector, beta=120)
    got = fused.retrieve(Q)
    assert got and {r.node.metadata["g2cons_source"] for r in got} <= {"host", "concept", "both"}


def test_persist_and_pickle_round_trip(selector: CoreChunkSelector, tmp_path: Path) -> None:
    r = G2ConSRetriever(selector.index, Fixed(nodes()[:2]), beta=150, lambda_=0.7, spill=False, similarity_top_k=3)
    r.persist(tmp_path)
    again = G2ConSRetriever.from_persist_dir(tmp_path, host_retriever=Fixed(nodes()[:2]))
    assert again.settings() == r.settings()
    assert [(n.node.node_id, n.score) for n in again.retrieve(Q)] == [(n.node.node_id, n.score) for n in r.retrieve(Q)]
    copy = pickle.loads(pickle.dumps(r))
    assert [n.node.node_id for n in copy.retrieve(Q)] == [n.node.node_id for n in r.retrieve(Q)]


def test_errors_name_the_parameter() -> None:
    with pytest.raises(Exception, match="g2cons_index"):
        ConceptGraphRetriever(object())  # type: ignore[arg-type]
    with pytest.raises(Exception, match="similarity_top_k"):
        ConceptGraphRetriever.from_defaults(nodes=nodes(), embedder="hash", similarity_top_k=0)
    assert CoreChunkSelector(kappa=0.5, embedder="hash")([]) == []
