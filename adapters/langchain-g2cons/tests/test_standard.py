"""Adapter-local: LangChain's standard retriever tests (``langchain-tests``) on both retrievers, plus the
incremental and persistence basics; offline (hash embedder, a word-overlap host stub)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_g2cons import ConceptGraphRetriever, CoreChunkSelector, G2ConSRetriever

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


class WordOverlap(BaseRetriever):
    """Host stand-in: documents ranked by words shared with the query."""

    docs: list[Document]
    k: int = 3

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        q = set(query.lower().split())
        order = sorted(self.docs, key=lambda d: -len(q & set(d.page_content.lower().split())))
        return [d.model_copy() for d in order[: self.k]]


_STATE: dict[str, Any] = {}


def selected() -> tuple[Any, list[Document]]:
    if not _STATE:
        sel = CoreChunkSelector(kappa=0.8, embedder="hash")
        _STATE["kept"] = list(sel.transform_documents([Document(page_content=t) for t in TEXTS]))
        _STATE["sel"] = sel
    return _STATE["sel"], _STATE["kept"]


class TestConceptGraphRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[ConceptGraphRetriever]:
        return ConceptGraphRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"index": selected()[0].index, "beta": 400}

    @property
    def retriever_query_example(self) -> str:
        return Q


class TestG2ConSRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[G2ConSRetriever]:
        return G2ConSRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        sel, kept = selected()
        return {"index": sel.index, "host": WordOverlap(docs=kept, k=4), "beta": 400}

    @property
    def retriever_query_example(self) -> str:
        return Q


def test_add_documents_delete_and_save_load(tmp_path: Path) -> None:
    r = ConceptGraphRetriever.from_documents([Document(page_content=t) for t in TEXTS[:-1]], embedder="hash", k=3)
    (new_id,) = r.add_documents([Document(page_content=TEXTS[-1])])
    assert any(d.id == new_id for d in r.invoke("Who was the daughter of Marie Curie?", k=8))
    r.save(tmp_path)
    again = ConceptGraphRetriever.load(tmp_path)
    assert again.settings() == r.settings() and again.invoke(Q) == r.invoke(Q)
    assert r.delete([new_id]) and not any(d.id == new_id for d in r.invoke(Q, k=8))
