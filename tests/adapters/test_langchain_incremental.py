"""LangChain adapter, incremental updates: ``add_documents`` / ``delete`` on both retrievers, and the selector's
``add_documents`` deciding on new documents by the same selection rule."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytest.importorskip("langchain_g2cons")

from conftest import CORPUS  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_g2cons import ConceptGraphRetriever, CoreChunkSelector, G2ConSRetriever  # noqa: E402
from test_langchain_adapter import WordOverlapRetriever  # noqa: E402

from g2cons_plugins.chunks import content_id  # noqa: E402
from g2cons_plugins.errors import InputError  # noqa: E402

NEW = [
    "Zorbulon Quaxitrine founded the Vantorian Lantern Guild in Ostravel.",
    "The Vantorian Lantern Guild moved its archive from Ostravel to Pellucid Harbour.",
    "Pellucid Harbour lies on the Ostravel coast.",
]
QUERY = "Who founded the Vantorian Lantern Guild?"


def docs(texts: list[str]) -> list[Document]:
    return [Document(page_content=t) for t in texts]


def base() -> list[Document]:
    return docs([t for _, t in CORPUS])


def test_concept_retriever_add_documents_and_delete() -> None:
    r = ConceptGraphRetriever.from_documents(base(), embedder="hash", beta=300)
    assert not any("Zorbulon" in d.page_content for d in r.invoke(QUERY))
    ids = r.add_documents(docs(NEW))
    assert ids == [content_id(t) for t in NEW]
    assert any("Zorbulon" in d.page_content for d in r.invoke(QUERY))
    # equal to a fresh build of the same documents
    fresh = ConceptGraphRetriever.from_documents(base() + docs(NEW), embedder="hash", beta=300)
    assert [(d.id, d.page_content) for d in r.invoke(QUERY)] == [(d.id, d.page_content) for d in fresh.invoke(QUERY)]
    # same text again: skipped; new text under a known id: replaced (upsert)
    assert r.add_documents(docs(NEW[:1])) == ids[:1] and len(r.index.chunks) == len(CORPUS) + 3
    r.add_documents([Document(id=ids[2], page_content="Pellucid Harbour is a quiet town.")])
    assert r.index.chunk(ids[2]).text == "Pellucid Harbour is a quiet town."
    assert r.delete(ids) is True and len(r.index.chunks) == len(CORPUS)
    assert not any("Zorbulon" in d.page_content for d in r.invoke(QUERY))
    assert r.delete(["no-such-id"]) is False
    with pytest.raises(InputError, match="ids"):
        r.delete()


def test_fused_retriever_add_documents_reaches_the_concept_path() -> None:
    sel = CoreChunkSelector(kappa=0.5, kappa_by="chunks", embedder="hash")
    kept = list(sel.transform_documents(base()))
    r = G2ConSRetriever(host=WordOverlapRetriever(docs=kept, k=3), index=sel.index, beta=300)
    r.add_documents(docs(NEW))
    got = r.invoke(QUERY)
    assert any("Zorbulon" in d.page_content and d.metadata["g2cons_source"] == "concept" for d in got)
    r.delete([content_id(t) for t in NEW])
    assert not any("Zorbulon" in d.page_content for d in r.invoke(QUERY))


def test_selector_add_documents_keeps_by_the_same_rule_and_delete() -> None:
    sel = CoreChunkSelector(kappa=0.5, kappa_by="chunks", embedder="hash")
    first = list(sel.transform_documents(base()))
    out = sel.add_documents(docs(NEW))
    fresh = CoreChunkSelector(kappa=0.5, kappa_by="chunks", embedder="hash")
    fresh.transform_documents(base() + docs(NEW))
    want = [content_id(t) for t in NEW if content_id(t) in set(fresh.report.kept_ids)]
    assert [d.id for d in out] == want and want
    assert sel.report.kept_ids == fresh.report.kept_ids
    assert sel.kept_ids == {d.id for d in first} | set(want)
    assert sel.add_documents(docs(NEW)) == []  # known: nothing new to extract
    assert len(sel.index.chunks) == len(CORPUS) + 3
    assert sel.delete([content_id(NEW[0])]) and len(sel.index.chunks) == len(CORPUS) + 2
    assert content_id(NEW[0]) not in sel.kept_ids
    # before any transform_documents, add_documents is the first selection
    other = CoreChunkSelector(kappa=0.5, kappa_by="chunks", embedder="hash")
    assert [d.id for d in other.add_documents(base())] == [d.id for d in first]
