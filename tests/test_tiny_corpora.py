"""Tiny corpora: a one-chunk corpus keeps its chunk at any kappa > 0 (core and both adapters)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from conftest import CORPUS  # noqa: E402

from g2cons_plugins import G2ConSIndex  # noqa: E402
from g2cons_plugins.selection import take  # noqa: E402

ONE = " ".join(t for _, t in CORPUS)


# ------------------------------------------------------------------------------------------------------------ core
@pytest.mark.parametrize("kappa_by", ["tokens", "chunks"])
@pytest.mark.parametrize("kappa", [1e-6, 0.3, 0.8, 0.999])
def test_one_chunk_is_kept_at_any_positive_kappa(kappa_by: str, kappa: float) -> None:
    index = G2ConSIndex.build([{"id": "only", "text": ONE}], embedder="hash")
    report = index.select(kappa=kappa, kappa_by=kappa_by)
    assert report.kept_ids == ["only"] and report.dropped_ids == []
    assert index.select(kappa=0.0, kappa_by=kappa_by).kept_ids == []  # kappa 0 still keeps nothing


def test_a_tiny_kappa_keeps_the_top_ranked_chunk() -> None:
    index = G2ConSIndex.build([{"id": i, "text": t} for i, t in CORPUS], embedder="hash")
    for by in ("tokens", "chunks"):
        top = index.select(kappa=1.0, kappa_by="chunks").kept_ids[0]  # the rank order
        assert index.select(kappa=1e-6, kappa_by=by).kept_ids == [top]


def test_take_rounding() -> None:
    import numpy as np

    tokens = np.array([50, 10, 10])
    assert take([0, 1, 2], tokens, 0.1, "tokens") == [0]  # nothing fits in 7 tokens: the top-ranked chunk alone
    assert take([0, 1, 2], tokens, 0.3, "tokens") == [1, 2]  # 21 tokens: chunk 0 does not fit, 1 and 2 do
    assert take([0, 1, 2], tokens, 0.01, "chunks") == [0]  # ceil, never 0
    assert take([0, 1, 2], tokens, 0.34, "chunks") == [0, 1]
    assert take([], tokens[:0], 0.5, "tokens") == [] and take([0], tokens, 0.0, "chunks") == []


# ------------------------------------------------------------------------------------------------------- LlamaIndex
def test_llama_index_one_document_keeps_its_chunk() -> None:
    li = pytest.importorskip("llama_index.retrievers.g2cons")
    from llama_index.core import Document
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.node_parser import SentenceSplitter

    selector = li.CoreChunkSelector(kappa=0.8, embedder="hash")
    out = IngestionPipeline(transformations=[SentenceSplitter(chunk_size=4096), selector]).run(
        documents=[Document(text=ONE, id_="doc-1")]
    )
    assert len(out) == 1 and selector.kept_ids == {out[0].node_id}


# ------------------------------------------------------------------------------------------------------- LangChain
def test_langchain_one_large_document_is_kept() -> None:
    lc = pytest.importorskip("langchain_g2cons")
    from langchain_core.documents import Document

    big = Document(page_content=(ONE + " ") * 150, metadata={"source": "big.txt"})  # ~0.2 MB, one chunk
    out = lc.CoreChunkSelector(kappa=0.8, embedder="hash").transform_documents([big])
    assert len(out) == 1 and out[0].page_content == big.page_content
