"""Tiny and partly empty corpora: a one-chunk corpus keeps its chunk at any kappa > 0 (core and both adapters), and
an empty document either names its source in the error or, with ``skip_empty=True``, is skipped with a warning."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from conftest import CORPUS  # noqa: E402

from g2cons_plugins import G2ConSIndex  # noqa: E402
from g2cons_plugins.errors import InputError  # noqa: E402
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


def _li_docs() -> list:
    from llama_index.core import Document

    return [
        Document(text=CORPUS[0][1], id_="doc-a", metadata={"file_name": "a.txt"}),
        Document(text="", id_="doc-empty", metadata={"file_name": "empty.txt"}),
        Document(text=CORPUS[1][1], id_="doc-b", metadata={"file_name": "b.txt"}),
    ]


def test_llama_index_empty_document_is_named_or_skipped() -> None:
    li = pytest.importorskip("llama_index.retrievers.g2cons")
    from llama_index.core.node_parser import SentenceSplitter

    nodes = SentenceSplitter()(_li_docs())
    empty = [n for n in nodes if not n.text.strip()]
    assert empty  # a splitter makes one empty node, with a made-up id, of an empty document
    with pytest.raises(InputError, match=r"document 'doc-empty', file_name 'empty.txt'.*skip_empty=True") as err:
        li.CoreChunkSelector(kappa=0.8, embedder="hash")(nodes)
    assert empty[0].node_id not in str(err.value)  # the splitter's id means nothing to the user
    selector = li.CoreChunkSelector.from_defaults(kappa=1.0, embedder="hash", skip_empty=True)
    with pytest.warns(UserWarning, match=r"skipped 1 empty node\(s\) \(document 'doc-empty', file_name 'empty.txt'"):
        kept = selector(nodes)
    assert len(kept) == 2 and empty[0].node_id not in selector.kept_ids | selector.dropped_ids
    assert len(selector.index.chunks) == 2
    with pytest.raises(InputError, match="doc-empty"):
        li.ConceptGraphRetriever.from_defaults(nodes=nodes, embedder="hash")
    with pytest.warns(UserWarning, match="skipped 1 empty"):
        r = li.ConceptGraphRetriever.from_defaults(nodes=nodes, embedder="hash", skip_empty=True)
    assert len(r.index.chunks) == 2


def test_llama_index_from_documents_with_an_empty_document() -> None:
    li = pytest.importorskip("llama_index.retrievers.g2cons")
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.node_parser import SentenceSplitter

    def build(selector: object) -> object:
        return VectorStoreIndex.from_documents(
            _li_docs(), transformations=[SentenceSplitter(), selector], embed_model=MockEmbedding(embed_dim=8)
        )

    with pytest.raises(InputError, match="doc-empty"):
        build(li.CoreChunkSelector(kappa=1.0, embedder="hash"))
    with pytest.warns(UserWarning, match="skipped 1 empty"):
        index = build(li.CoreChunkSelector(kappa=1.0, embedder="hash", skip_empty=True))
    assert len(index.docstore.docs) == 2


# ------------------------------------------------------------------------------------------------------- LangChain
def test_langchain_one_large_document_is_kept() -> None:
    lc = pytest.importorskip("langchain_g2cons")
    from langchain_core.documents import Document

    big = Document(page_content=(ONE + " ") * 150, metadata={"source": "big.txt"})  # ~0.2 MB, one chunk
    out = lc.CoreChunkSelector(kappa=0.8, embedder="hash").transform_documents([big])
    assert len(out) == 1 and out[0].page_content == big.page_content


def test_langchain_empty_document_is_named_or_skipped() -> None:
    lc = pytest.importorskip("langchain_g2cons")
    from langchain_core.documents import Document

    docs = [
        Document(page_content=CORPUS[0][1], metadata={"source": "a.txt"}),
        Document(page_content="  \n", metadata={"source": "empty.txt"}),
        Document(page_content=CORPUS[1][1], metadata={"source": "b.txt"}),
    ]
    with pytest.raises(InputError, match=r"document #1, source 'empty.txt' has no text.*skip_empty=True") as err:
        lc.CoreChunkSelector(kappa=0.8, embedder="hash").transform_documents(docs)
    assert "h:" not in str(err.value)  # not the content-hash id the user never saw
    selector = lc.CoreChunkSelector(kappa=1.0, embedder="hash", skip_empty=True)
    with pytest.warns(UserWarning, match=r"skipped 1 empty document\(s\) \(document #1, source 'empty.txt'\)"):
        out = selector.transform_documents(docs)
    assert [d.metadata["source"] for d in out] == ["a.txt", "b.txt"]
    with pytest.warns(UserWarning, match="skipped 1 empty"):
        assert selector.add_documents([Document(page_content=""), Document(page_content=CORPUS[2][1])])
    all_empty = pytest.raises(InputError, match="all 1 documents are empty")
    with pytest.warns(UserWarning, match="skipped 1 empty"), all_empty:
        lc.CoreChunkSelector(embedder="hash", skip_empty=True).transform_documents([Document(page_content="")])
    with pytest.raises(InputError, match="source 'empty.txt'"):
        lc.ConceptGraphRetriever.from_documents(docs, embedder="hash")
    with pytest.warns(UserWarning, match="skipped 1 empty"):
        r = lc.ConceptGraphRetriever.from_documents(docs, embedder="hash", skip_empty=True)
    with pytest.raises(InputError, match="document #0"):
        r.add_documents([Document(page_content=" ")])
