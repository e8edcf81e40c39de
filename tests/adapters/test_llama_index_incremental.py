"""LlamaIndex adapter, incremental updates on a real ``PropertyGraphIndex``: ``insert``, ``insert_nodes``,
``delete_ref_doc`` and ``refresh_ref_docs`` keep the concept graph in sync and send only kept nodes to the
extractor (counted by the fake LLM); retrievers built from the selector see the change at once."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.retrievers.g2cons")

from llama_index.core import Document, PropertyGraphIndex  # noqa: E402
from llama_index.core.indices.property_graph import ImplicitPathExtractor, SimpleLLMPathExtractor  # noqa: E402
from llama_index.core.node_parser import SentenceSplitter  # noqa: E402
from llama_index.core.schema import MetadataMode  # noqa: E402
from llama_index.retrievers.g2cons import ConceptGraphRetriever, CoreChunkSelector, G2ConSRetriever  # noqa: E402
from test_llama_index_adapter import CountingTripletLLM, load_documents  # noqa: E402

NEW_TEXT = (
    "Zorbulon Quaxitrine founded the Vantorian Lantern Guild in Ostravel. The Vantorian Lantern Guild later moved "
    "its archive from Ostravel to Pellucid Harbour, where Zorbulon Quaxitrine wrote the Lantern Chronicle."
)
QUERY = "Who founded the Vantorian Lantern Guild?"


def _node_id(i: int, doc: Any) -> str:
    return f"{doc.id_}#{i}"  # deterministic ids (the default is uuid4): selection ties break by id


def _splitter() -> SentenceSplitter:
    return SentenceSplitter(chunk_size=96, chunk_overlap=0, id_func=_node_id)


@pytest.fixture()
def setup() -> dict[str, Any]:
    docs = load_documents(16)
    llm = CountingTripletLLM()
    sel = CoreChunkSelector(kappa=0.8, embedder="hash")
    pg = PropertyGraphIndex.from_documents(
        docs,
        transformations=[_splitter(), sel],
        kg_extractors=[SimpleLLMPathExtractor(llm=llm, max_paths_per_chunk=5), ImplicitPathExtractor()],
        llm=llm,
        embed_kg_nodes=False,
        use_async=False,
    )
    sel.track(pg)
    concept = ConceptGraphRetriever.from_defaults(selector=sel, beta=400)
    fused = G2ConSRetriever.from_defaults(index=pg, selector=sel, beta=600)
    return {"docs": docs, "llm": llm, "sel": sel, "pg": pg, "concept": concept, "fused": fused}


def _chunk_ids_of(sel: CoreChunkSelector, ref_doc_id: str) -> set[str]:
    return {c.id for c in sel.index.chunks if c.metadata["llama_index"]["ref_doc_id"] == ref_doc_id}


def _texts(results: Any) -> str:
    return "\n".join(r.node.get_content(metadata_mode=MetadataMode.NONE) for r in results)


def test_insert_adds_to_the_concept_graph_and_extracts_only_kept_nodes(setup) -> None:
    sel, pg, llm = setup["sel"], setup["pg"], setup["llm"]
    n_before, calls_before = len(sel.index.chunks), len(llm.extraction_texts())
    assert "Zorbulon" not in _texts(setup["concept"].retrieve(QUERY))
    new = Document(id_="new-doc", text=NEW_TEXT + " " + setup["docs"][0].text)
    pg.insert(new)  # re-runs the stored transformations: no "not in the concept graph" error
    ids = _chunk_ids_of(sel, "new-doc")
    assert ids and len(sel.index.chunks) == n_before + len(ids)
    kept_new = ids & sel.kept_ids
    assert 0 < len(kept_new) < len(ids)  # this corpus (fixed ids): 1 of 3 new nodes is kept
    assert ids == kept_new | (ids & sel.dropped_ids)
    # the extractor saw exactly the kept new nodes (one call each), and they are in the host graph
    assert len(llm.extraction_texts()) - calls_before == len(kept_new)
    assert kept_new <= set(pg.docstore.docs) and not (ids - kept_new) & set(pg.docstore.docs)
    # retrievers built from the selector see the inserted text at once
    assert "Zorbulon" in _texts(setup["concept"].retrieve(QUERY))
    assert "Zorbulon" in _texts(setup["fused"].retrieve(QUERY))


def test_insert_nodes_goes_through_the_tracked_selector(setup) -> None:
    sel, pg, llm = setup["sel"], setup["pg"], setup["llm"]
    nodes = _splitter()([Document(id_="nodes-doc", text=NEW_TEXT * 3)])
    calls_before = len(llm.extraction_texts())
    pg.insert_nodes(nodes)
    ids = {n.node_id for n in nodes}
    assert ids <= {c.id for c in sel.index.chunks}
    assert len(llm.extraction_texts()) - calls_before == len(ids & sel.kept_ids)


def test_delete_ref_doc_removes_kept_and_dropped_chunks(setup) -> None:
    sel, pg, docs = setup["sel"], setup["pg"], setup["docs"]
    victim = docs[3].id_
    ids = _chunk_ids_of(sel, victim)
    assert ids
    pg.delete_ref_doc(victim, delete_from_docstore=True)
    assert not _chunk_ids_of(sel, victim)
    assert not (ids & (sel.kept_ids | sel.dropped_ids))
    returned = {r.node.metadata["g2cons_chunk_id"] for r in setup["concept"].retrieve(docs[3].text[:200])}
    assert not returned & ids


def test_refresh_ref_docs_replaces_changed_documents(setup) -> None:
    sel, pg, docs, llm = setup["sel"], setup["pg"], setup["docs"], setup["llm"]
    old = {sel.index.chunk(i).text for i in _chunk_ids_of(sel, docs[5].id_)}
    changed = Document(id_=docs[5].id_, text=NEW_TEXT, metadata=docs[5].metadata)
    calls_before = len(llm.extraction_texts())
    refreshed = pg.refresh_ref_docs([docs[4], changed])
    assert refreshed == [False, True]
    now = _chunk_ids_of(sel, docs[5].id_)
    texts = {sel.index.chunk(i).text for i in now}
    assert now and not (texts & old)  # the old version left the concept graph, the new one is in it
    assert "Zorbulon" in " ".join(texts) and not old & {c.text for c in sel.index.chunks}
    assert len(llm.extraction_texts()) - calls_before == len(now & sel.kept_ids)
    assert "Zorbulon" in _texts(setup["concept"].retrieve(QUERY))


def test_untracked_index_still_inserts_and_the_selector_deletes_explicitly(setup) -> None:
    docs, llm = setup["docs"], setup["llm"]
    sel = CoreChunkSelector(kappa=0.5, embedder="hash")
    pg = PropertyGraphIndex.from_documents(
        docs[:6], transformations=[_splitter(), sel], kg_extractors=[SimpleLLMPathExtractor(llm=llm)], llm=llm,
        embed_kg_nodes=False, use_async=False,
    )
    pg.insert(Document(id_="x", text=NEW_TEXT))
    assert _chunk_ids_of(sel, "x")
    pg.delete_ref_doc("x")
    assert _chunk_ids_of(sel, "x")  # not tracked: the host forgot it, the concept graph did not
    assert sel.delete_ref_doc("x") and not _chunk_ids_of(sel, "x")


# ---------------------------------------------------------------------------------------------------- sub-retriever
@pytest.mark.parametrize("use_async", [False, True])
def test_concept_sub_retriever_inside_property_graph_as_retriever(setup, use_async: bool) -> None:
    from llama_index.core.indices.property_graph import BasePGRetriever, LLMSynonymRetriever
    from llama_index.retrievers.g2cons import ConceptGraphSubRetriever

    sel, pg, llm = setup["sel"], setup["pg"], setup["llm"]
    store = pg.property_graph_store
    sub = ConceptGraphSubRetriever(store, selector=sel, beta=400)
    assert isinstance(sub, BasePGRetriever)
    alone = pg.as_retriever(sub_retrievers=[sub], use_async=use_async).retrieve(QUERY)
    want = ConceptGraphRetriever.from_defaults(selector=sel, beta=400).retrieve(QUERY)
    assert [(n.node.node_id, n.score) for n in alone] == [(n.node.node_id, n.score) for n in want] and alone
    both = pg.as_retriever(
        sub_retrievers=[LLMSynonymRetriever(store, llm=llm, include_text=True), sub], use_async=use_async
    ).retrieve("Who was the first president of the American Psychological Association?")
    sources = {n.node.metadata.get("g2cons_source") for n in both}
    assert "concept" in sources and None in sources  # synonym (host) nodes and concept nodes side by side
    # the concept path covers chunks the selector kept out of the host graph
    many = ConceptGraphSubRetriever(store, selector=sel, beta=5000).retrieve(QUERY)
    assert {n.node.metadata["g2cons_chunk_id"] for n in many} & sel.dropped_ids
