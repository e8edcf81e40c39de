"""LlamaIndex adapter, day two: an app persisted beside its ``StorageContext``, reloaded in a new process-like
setting, sees the documents it inserts and forgets the ones it deletes, through one shared concept graph.

The flow is the guide's: persist the host index and the retriever into one folder; reload the host with
``load_index_from_storage`` and the retriever with ``G2ConSRetriever.from_persist_dir(P, index=index2)`` (the
selector saved beside it is loaded once and tracks ``index2``) or with ``selector=sel2``; insert a document,
retrieve it, delete it, reload again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.retrievers.g2cons")

from llama_index.core import Document, PropertyGraphIndex, StorageContext, load_index_from_storage  # noqa: E402
from llama_index.core.indices.property_graph import SimpleLLMPathExtractor  # noqa: E402
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
    return f"{doc.id_}#{i}"


def _splitter() -> SentenceSplitter:
    return SentenceSplitter(chunk_size=96, chunk_overlap=0, id_func=_node_id)


def _texts(results: Any) -> str:
    return "\n".join(r.node.get_content(metadata_mode=MetadataMode.NONE) for r in results)


def _extractors(llm: Any) -> list[Any]:
    return [SimpleLLMPathExtractor(llm=llm, max_paths_per_chunk=5)]


def _reload(storage: Path, llm: Any) -> Any:
    return load_index_from_storage(
        StorageContext.from_defaults(persist_dir=str(storage)),
        llm=llm,
        kg_extractors=_extractors(llm),
        embed_kg_nodes=False,
        transformations=[_splitter()],
        use_async=False,
    )


@pytest.fixture()
def day_one(tmp_path: Path) -> dict[str, Any]:
    """Day one: build, query, persist host and retriever into one folder."""
    llm = CountingTripletLLM()
    sel = CoreChunkSelector(kappa=0.8, embedder="hash")
    pg = PropertyGraphIndex.from_documents(
        load_documents(12),
        transformations=[_splitter(), sel],
        kg_extractors=_extractors(llm),
        llm=llm,
        embed_kg_nodes=False,
        use_async=False,
    )
    sel.track(pg)
    retriever = G2ConSRetriever.from_defaults(index=pg, selector=sel, beta=600)
    storage = tmp_path / "storage"
    pg.storage_context.persist(persist_dir=str(storage))
    retriever.persist(storage)
    return {"storage": storage, "llm": llm, "n_chunks": len(sel.index.chunks), "beta": retriever.beta}


def _day_two(storage: Path, llm: Any, retriever: Any, index2: Any, sel: CoreChunkSelector, n_chunks: int) -> None:
    assert retriever.index is sel.index  # one concept graph, shared
    assert len(sel.index.chunks) == n_chunks
    assert "Zorbulon" not in _texts(retriever.retrieve(QUERY))
    calls = len(llm.extraction_texts())
    index2.insert(Document(id_="day-two-doc", text=NEW_TEXT))
    new_ids = {c.id for c in sel.index.chunks if c.metadata["llama_index"]["ref_doc_id"] == "day-two-doc"}
    assert new_ids and len(sel.index.chunks) == n_chunks + len(new_ids)
    assert len(llm.extraction_texts()) - calls == len(new_ids & sel.kept_ids)  # only kept nodes extracted
    assert "Zorbulon" in _texts(retriever.retrieve(QUERY))  # the reloaded retriever sees the insert
    index2.delete_ref_doc("day-two-doc", delete_from_docstore=True)
    assert "Zorbulon" not in _texts(retriever.retrieve(QUERY))
    assert len(sel.index.chunks) == n_chunks
    # reload again: the delete was saved (the loaded selector persists to the folder it came from)
    index2.storage_context.persist(persist_dir=str(storage))
    index3 = _reload(storage, llm)
    sel3 = CoreChunkSelector.from_persist_dir(storage, fresh=True)  # from disk, not the live selector
    again = G2ConSRetriever.from_persist_dir(storage, index=index3, selector=sel3)
    assert sel3 is not sel and again.index is sel3.index and len(again.index.chunks) == n_chunks
    assert "Zorbulon" not in _texts(again.retrieve(QUERY)) and sel3.kept_ids == sel.kept_ids


def test_from_persist_dir_loads_the_selector_saved_beside_it_and_tracks_the_index(day_one) -> None:
    storage, llm = day_one["storage"], day_one["llm"]
    assert (storage / "g2cons_selector.json").is_file()  # retriever.persist saved its selector too
    index2 = _reload(storage, llm)
    retriever = G2ConSRetriever.from_persist_dir(storage, index=index2)
    assert retriever.beta == day_one["beta"]
    sel = retriever.selector
    assert isinstance(sel, CoreChunkSelector)
    _day_two(storage, llm, retriever, index2, sel, day_one["n_chunks"])


def test_from_persist_dir_with_the_users_selector_shares_its_graph(day_one) -> None:
    storage, llm = day_one["storage"], day_one["llm"]
    index2 = _reload(storage, llm)
    sel2 = CoreChunkSelector.from_persist_dir(storage)
    retriever = G2ConSRetriever.from_persist_dir(storage, index=index2, selector=sel2)
    assert retriever.selector is sel2 and retriever.index is sel2.index
    concept = ConceptGraphRetriever.from_defaults(selector=sel2)
    assert concept.index is sel2.index and concept.selector is sel2
    _day_two(storage, llm, retriever, index2, sel2, day_one["n_chunks"])



def test_concept_retriever_persists_its_selector_and_reloads_one_graph(day_one, tmp_path: Path) -> None:
    sel = CoreChunkSelector.from_persist_dir(day_one["storage"])
    concept = ConceptGraphRetriever.from_defaults(selector=sel, beta=300)
    concept.persist(tmp_path / "concept")
    back = ConceptGraphRetriever.from_persist_dir(tmp_path / "concept")
    assert back.beta == 300 and back.selector is not None and back.index is back.selector.index
    assert back.selector.kept_ids == sel.kept_ids


def test_the_issues_two_loads_share_one_selector(day_one) -> None:
    """The reload as first written: the retriever from the folder, and the selector from the same folder tracking
    the reloaded index. Both are one selector, so the insert reaches the graph the retriever reads."""
    storage, llm = day_one["storage"], day_one["llm"]
    index2 = _reload(storage, llm)
    retriever = G2ConSRetriever.from_persist_dir(storage, index=index2)
    sel2 = CoreChunkSelector.from_persist_dir(storage)
    sel2.track(index2)
    assert sel2 is retriever.selector
    _day_two(storage, llm, retriever, index2, sel2, day_one["n_chunks"])
    assert CoreChunkSelector.from_persist_dir(storage, fresh=True) is not sel2  # a new read when asked


def test_a_save_by_another_selector_is_read_again(day_one) -> None:
    storage = day_one["storage"]
    first = CoreChunkSelector.from_persist_dir(storage)
    assert CoreChunkSelector.from_persist_dir(storage) is first  # one selector per folder
    other = CoreChunkSelector.from_persist_dir(storage, fresh=True)  # now the live one
    first.kappa = 0.3
    first.persist(storage)  # a save the live one did not make
    again = CoreChunkSelector.from_persist_dir(storage)
    assert again is not other and again.kappa == 0.3
