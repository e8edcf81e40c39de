"""LangChain adapter, day two: a selector and a retriever saved into one folder reload as one concept graph; the
reloaded app decides on new documents, retrieves them, forgets deleted ones, and a second reload agrees.

Flow (the guide's): ``selector.save(P)`` and ``retriever.save(P)``; ``CoreChunkSelector.load(P)`` and
``G2ConSRetriever.load(P, host=..., selector=sel2)`` share one graph; ``sel2.add_documents(docs)`` returns the
documents to extract, the retriever sees them at once; ``sel2.delete(ids)``; save and load again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytest.importorskip("langchain_g2cons")

from conftest import CORPUS  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_g2cons import ConceptGraphRetriever, CoreChunkSelector, G2ConSRetriever  # noqa: E402
from test_langchain_adapter import WordOverlapRetriever  # noqa: E402

from g2cons_plugins.errors import PersistError  # noqa: E402

NEW = [
    "Zorbulon Quaxitrine founded the Vantorian Lantern Guild in Ostravel.",
    "The Vantorian Lantern Guild moved its archive from Ostravel to Pellucid Harbour.",
]
QUERY = "Who founded the Vantorian Lantern Guild?"


def _zorbulon(docs: list[Document]) -> bool:
    return any("Zorbulon" in d.page_content for d in docs)


def test_save_load_add_retrieve_delete_load_again(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    sel = CoreChunkSelector(kappa=0.5, kappa_by="chunks", embedder="hash")
    kept = list(sel.transform_documents([Document(page_content=t) for _, t in CORPUS]))
    retriever = G2ConSRetriever(host=WordOverlapRetriever(docs=kept, k=3), index=sel.index, beta=300)
    sel.save(storage)
    retriever.save(storage)

    # day two: one graph for both
    sel2 = CoreChunkSelector.load(storage)
    assert (sel2.kappa, sel2.kappa_by, sel2.kept_ids) == (sel.kappa, sel.kappa_by, sel.kept_ids)
    assert sorted(d.id for d in sel2.documents) == sorted(d.id for d in sel.documents)
    host2 = WordOverlapRetriever(docs=kept, k=3)
    r2 = G2ConSRetriever.load(storage, host=host2, selector=sel2)
    assert r2.index is sel2.index and r2.beta == 300
    assert not _zorbulon(r2.invoke(QUERY))
    to_extract = sel2.add_documents([Document(page_content=t) for t in NEW])
    fresh = CoreChunkSelector(kappa=0.5, kappa_by="chunks", embedder="hash")
    fresh.transform_documents([Document(page_content=t) for _, t in CORPUS] + [Document(page_content=t) for t in NEW])
    assert [d.id for d in to_extract] == [i for i in fresh.report.kept_ids if i in {d.id for d in to_extract}]
    assert sel2.report.kept_ids == fresh.report.kept_ids  # the same rule as a first build of everything
    assert _zorbulon(r2.invoke(QUERY))  # the reloaded retriever sees the new documents
    new_ids = [d.id for d in sel2.documents if d.page_content in NEW]
    assert len(new_ids) == 2 and sel2.delete(new_ids)
    assert not _zorbulon(r2.invoke(QUERY))
    sel2.save(storage)

    # reload again: the delete stuck, the decisions too
    sel3 = CoreChunkSelector.load(storage)
    r3 = G2ConSRetriever.load(storage, host=host2)
    assert len(r3.index.chunks) == len(CORPUS) == len(sel3.documents)
    assert not _zorbulon(r3.invoke(QUERY)) and sel3.kept_ids == sel2.kept_ids
    assert not set(new_ids) & sel3.kept_ids
    assert ConceptGraphRetriever.load(storage / "g2cons_index").index.chunks  # the bare graph still loads


def test_load_names_the_missing_selector_file(tmp_path: Path) -> None:
    r = ConceptGraphRetriever.from_documents([Document(page_content=t) for _, t in CORPUS], embedder="hash")
    r.save(tmp_path / "only-retriever")
    with pytest.raises(PersistError, match="g2cons_selector.json"):
        CoreChunkSelector.load(tmp_path / "only-retriever")
