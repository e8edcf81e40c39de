"""LangChain adapter (adapters/langchain-g2cons): offline tests with the hash embedder and fake models.

The fakes (hash embeddings, FakeListChatModel, a toy host retriever) test plumbing and invariants only; nothing here
measures retrieval or answer quality.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_g2cons")

import langchain_g2cons  # noqa: E402
from conftest import CORPUS  # noqa: E402
from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import BaseDocumentTransformer, Document  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.language_models import FakeListChatModel  # noqa: E402
from langchain_core.output_parsers import StrOutputParser  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.runnables import RunnablePassthrough  # noqa: E402
from langchain_g2cons import (  # noqa: E402
    ConceptGraphRetriever,
    CoreChunkSelector,
    G2ConSRetriever,
    as_core_embedder,
    token_length,
)

from g2cons_plugins import HashEmbedder, HostItem  # noqa: E402
from g2cons_plugins.chunks import content_id  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
QUERIES = ["Where was Marie Curie born?", "Which river flows into the Baltic Sea?", "Who discovered radioactivity?"]


# ----------------------------------------------------------------------------------------------- offline guard
@pytest.fixture(autouse=True)
def _no_network() -> Iterator[None]:
    """Block inet sockets (pytest-socket) for every test here; unix sockets stay (asyncio's self-pipe)."""
    try:
        import pytest_socket
    except ImportError:  # pragma: no cover - then HF_HUB_OFFLINE is the only guard
        yield
        return
    pytest_socket.disable_socket(allow_unix_socket=True)
    try:
        yield
    finally:
        pytest_socket.enable_socket()


@pytest.mark.filterwarnings("ignore:A test tried to use socket.socket")
def test_network_is_blocked_here() -> None:
    pytest_socket = pytest.importorskip("pytest_socket")
    import socket

    with pytest.raises(pytest_socket.SocketBlockedError):
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)


# ----------------------------------------------------------------------------------------------- helpers
def split_like_docs() -> list[Document]:
    """Documents as a text splitter leaves them: no ``Document.id``."""
    return [Document(page_content=t, metadata={"source": cid}) for cid, t in CORPUS]


class HashEmbeddings(Embeddings):
    """A LangChain Embeddings over the core's hash embedder (deterministic, offline)."""

    def __init__(self, dim: int = 64) -> None:
        self._e = HashEmbedder(dim)
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return self._e.embed(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class ListRetriever(BaseRetriever):
    """Host stand-in: returns fixed documents (a copy of each) whatever the query; ``k`` caps the count."""

    docs: list[Document]
    k: int = 4

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [d.model_copy(deep=True) for d in self.docs[: self.k]]


class WordOverlapRetriever(BaseRetriever):
    """Host stand-in: documents ranked by shared lowercase words with the query (ties by position)."""

    docs: list[Document]
    k: int = 4

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        q = set(query.lower().replace("?", "").split())
        score = [len(q & set(d.page_content.lower().replace(".", "").split())) for d in self.docs]
        order = sorted(range(len(self.docs)), key=lambda i: (-score[i], i))[: self.k]
        return [self.docs[i].model_copy(deep=True) for i in order]


@pytest.fixture(scope="module")
def selected() -> tuple[CoreChunkSelector, list[Document], list[Document]]:
    docs = split_like_docs()
    selector = CoreChunkSelector(kappa=0.5, kappa_by="chunks", embedder="hash")
    kept = list(selector.transform_documents(docs))
    return selector, docs, kept


@pytest.fixture(scope="module")
def fused_retriever(selected: Any) -> G2ConSRetriever:
    selector, _, kept = selected
    host = WordOverlapRetriever(docs=kept, k=5)
    return G2ConSRetriever(host=host, index=selector.index, beta=150, lambda_=0.6)


# ----------------------------------------------------------------------------------------------- public API
def test_public_api() -> None:
    assert {"CoreChunkSelector", "ConceptGraphRetriever", "G2ConSRetriever"} <= set(langchain_g2cons.__all__)
    for name in langchain_g2cons.__all__:
        assert hasattr(langchain_g2cons, name)
    assert issubclass(CoreChunkSelector, BaseDocumentTransformer)
    assert issubclass(ConceptGraphRetriever, BaseRetriever)
    assert issubclass(G2ConSRetriever, BaseRetriever)


# ----------------------------------------------------------------------------------------------- selector
def test_selector_keeps_exactly_the_selected_documents(selected: Any) -> None:
    selector, docs, kept = selected
    rep = selector.report
    assert len(kept) == math.ceil(0.5 * len(docs)) == len(rep.kept_ids)
    assert [d.id for d in kept] == [d.id for d in selector.documents if d.id in set(rep.kept_ids)]  # input order
    assert {d.id for d in kept} == set(rep.kept_ids)
    assert set(rep.dropped_ids) == {d.id for d in selector.documents} - set(rep.kept_ids)
    by_text = {d.page_content: d for d in docs}
    for d in kept:
        assert d.id == d.metadata["g2cons_id"] == content_id(d.page_content)  # the documented id rule
        assert d.metadata["source"] == by_text[d.page_content].metadata["source"]  # metadata kept
    assert all(d.id is None and "g2cons_id" not in d.metadata for d in docs)  # inputs not mutated
    assert len(selector.index.chunks) == len(docs)  # the concept graph covers every document


def test_selector_ids_are_stable_and_respect_given_ids() -> None:
    docs = split_like_docs()
    a = CoreChunkSelector(kappa=1.0, embedder="hash").transform_documents(docs)
    b = CoreChunkSelector(kappa=1.0, embedder="hash").transform_documents(split_like_docs())
    assert [d.id for d in a] == [d.id for d in b]
    given = [Document(id=f"doc-{i}", page_content=d.page_content) for i, d in enumerate(docs[:6])]
    repeat = Document(page_content=docs[0].page_content, metadata={"source": "copy"})
    out = CoreChunkSelector(kappa=1.0, embedder="hash").transform_documents([*given, docs[0], repeat])
    assert [d.id for d in out[:6]] == [f"doc-{i}" for i in range(6)]
    assert [d.id for d in out[6:]] == [content_id(docs[0].page_content), content_id(docs[0].page_content) + "#2"]


def test_selector_kwargs_and_async_match_sync(selected: Any) -> None:
    selector, docs, kept = selected
    other = CoreChunkSelector(kappa=0.5, kappa_by="chunks", embedder="hash")
    akept = asyncio.run(other.atransform_documents(docs))
    assert [(d.id, d.page_content, d.metadata) for d in akept] == [(d.id, d.page_content, d.metadata) for d in kept]
    fewer = other.transform_documents(docs, kappa=0.2)
    assert len(fewer) == math.ceil(0.2 * len(docs)) and {d.id for d in fewer} <= {d.id for d in selector.documents}


class CountingTransformer(BaseDocumentTransformer):
    """Stands in for an extraction step: one 'call' per document it sees."""

    def __init__(self) -> None:
        self.seen: list[str | None] = []

    def transform_documents(self, documents: Any, **kwargs: Any) -> list[Document]:
        self.seen.extend(d.id for d in documents)
        return list(documents)


def test_downstream_transformer_sees_only_core_documents(selected: Any) -> None:
    selector, docs, _ = selected
    for kappa in (1.0, 0.5, 0.2):
        counter = CountingTransformer()
        sel = CoreChunkSelector(kappa=kappa, kappa_by="chunks", embedder="hash")
        counter.transform_documents(sel.transform_documents(docs))
        assert len(counter.seen) == math.ceil(kappa * len(docs))
        assert counter.seen == [d.id for d in sel.documents if d.id in set(sel.report.kept_ids)]


class ChatCallCounter(BaseCallbackHandler):
    def __init__(self) -> None:
        self.texts: list[str] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.texts.append(str(messages[0][-1].content).rsplit("Text: ", 1)[-1])


def test_llm_graph_transformer_calls_only_for_core_documents(selected: Any) -> None:
    pytest.importorskip("json_repair")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "langchain-experimental is being sunset"
        graph_transformers = pytest.importorskip("langchain_experimental.graph_transformers")
    _, docs, _ = selected
    triple = json.dumps([{"head": "A", "head_type": "X", "relation": "R", "tail": "B", "tail_type": "X"}])
    for kappa in (1.0, 0.5):
        sel = CoreChunkSelector(kappa=kappa, kappa_by="chunks", embedder="hash")
        core = list(sel.transform_documents(docs))
        counter = ChatCallCounter()
        fake = FakeListChatModel(responses=[triple])
        graph = graph_transformers.LLMGraphTransformer(llm=fake).convert_to_graph_documents(
            core, {"callbacks": [counter]}
        )
        assert len(counter.texts) == len(core) == math.ceil(kappa * len(docs))  # one fake call per core document
        assert sorted(counter.texts) == sorted(d.page_content for d in core)  # ... and only for those
        assert [g.source.id for g in graph] == [d.id for d in core]  # provenance keeps the stable ids


# ----------------------------------------------------------------------------------------------- concept retriever
def test_concept_retriever_translates_the_core(selected: Any) -> None:
    selector, _, _ = selected
    for beta in (40, 120, 400):
        r = selector.as_retriever(beta=beta)
        for q in QUERIES:
            docs = r.invoke(q)
            core = selector.index.retrieve(q, beta=beta)
            assert [(d.id, d.metadata["g2cons_unit_id"]) for d in docs] == [(c.parent_id, c.unit_id) for c in core]
            assert [d.metadata["g2cons_concept_score"] for d in docs] == pytest.approx([c.score for c in core])
            assert sum(d.metadata["g2cons_n_tokens"] for d in docs) <= beta
            assert all(d.metadata["g2cons_id"] == d.id and "g2cons_reason" in d.metadata for d in docs)
    assert len(selector.as_retriever(k=2).invoke(QUERIES[0])) == 2
    assert len(selector.as_retriever().invoke(QUERIES[0], k=1)) == 1


def test_langchain_embeddings_as_core_embedder_and_save_load(tmp_path: Path) -> None:
    emb = HashEmbeddings()
    core_emb = as_core_embedder(emb)
    assert core_emb.dim == 64 and core_emb.name == "langchain-HashEmbeddings"
    r = ConceptGraphRetriever.from_documents(split_like_docs(), embedder=emb, beta=200)
    before = r.invoke(QUERIES[0])
    assert before and emb.calls > 1
    r.save(tmp_path / "g")
    loaded = ConceptGraphRetriever.load(tmp_path / "g", embedder=HashEmbeddings(), beta=200)
    assert loaded.invoke(QUERIES[0]) == before


def test_token_length_is_the_core_tokenizer(selected: Any) -> None:
    selector, docs, _ = selected
    texts = [d.page_content for d in docs]
    assert [token_length()(t) for t in texts] == selector.index.count_tokens(texts)
    splitters = pytest.importorskip("langchain_text_splitters")
    sp = splitters.RecursiveCharacterTextSplitter(chunk_size=12, chunk_overlap=0, length_function=token_length())
    chunks = sp.split_documents(docs[:3])
    assert len(chunks) > 3 and all(c.id is None for c in chunks)  # the reason the selector assigns ids


# ----------------------------------------------------------------------------------------------- fused retriever
def test_fused_retriever_equals_core_fuse(selected: Any) -> None:
    selector, _, kept = selected
    host = WordOverlapRetriever(docs=kept, k=5)
    for beta in (60, 150, 400):
        for lam in (0.0, 0.3, 0.6, 1.0):
            r = G2ConSRetriever(host=host, index=selector.index, beta=beta, lambda_=lam)
            for q in QUERIES:
                docs = r.invoke(q)
                items = [HostItem(chunk_id=d.id, text=d.page_content) for d in host.invoke(q)]
                core = selector.index.fuse(items, q, beta=beta, lambda_=lam)
                assert [(d.metadata["g2cons_source"], d.id, d.page_content) for d in docs] == [
                    (f.source, f.chunk_id, f.text) for f in core
                ]
                assert [d.metadata["relevance_score"] for d in docs] == pytest.approx([f.score for f in core])


def test_fused_retriever_default_spill_uses_the_free_budget(selected: Any) -> None:
    """Default (config) fusion: lambda 0.2 with spill, equal to the core's fuse with those values."""
    selector, _, kept = selected
    host = WordOverlapRetriever(docs=kept, k=6)
    r = G2ConSRetriever(host=host, index=selector.index, beta=400)
    for q in QUERIES:
        docs = r.invoke(q)
        items = [HostItem(chunk_id=d.id, text=d.page_content) for d in host.invoke(q)]
        core = selector.index.fuse(items, q, beta=400, lambda_=0.2, spill=True)
        assert [(d.metadata["g2cons_source"], d.id) for d in docs] == [(f.source, f.chunk_id) for f in core]


def test_fused_retriever_invariants(selected: Any) -> None:
    selector, _, kept = selected
    host = WordOverlapRetriever(docs=kept, k=6)
    for beta in (60, 150, 400):
        for lam in (0.0, 0.3, 0.6, 1.0):
            r = G2ConSRetriever(
                host=host, index=selector.index, beta=beta, lambda_=lam, spill=False, fusion="ensemble"
            )
            for q in QUERIES:
                docs = r.invoke(q)
                src = [d.metadata["g2cons_source"] for d in docs]
                tok = {
                    s: sum(d.metadata["g2cons_n_tokens"] for d in docs if d.metadata["g2cons_source"] == s) for s in src
                }
                assert sum(tok.values()) <= beta  # beta is a hard budget
                assert tok.get("host", 0) <= lam * beta + 1e-9  # lambda: host share
                assert tok.get("concept", 0) <= (1 - lam) * beta + 1e-9  # 1 - lambda: concept share
                assert src == sorted(src, key=lambda s: s != "both")  # overlapping items first
                for group in ("both", "rest"):
                    scores = [
                        d.metadata["relevance_score"]
                        for d in docs
                        if (d.metadata["g2cons_source"] == "both") == (group == "both")
                    ]
                    assert scores == sorted(scores, reverse=True)
                if lam == 1.0:
                    assert "concept" not in src
                if lam == 0.0:
                    assert "host" not in src


def test_fused_retriever_id_matching(selected: Any) -> None:
    selector, _, kept = selected
    q = QUERIES[0]
    top = selector.index.retrieve(q, beta=400)[0]
    chunk = selector.index.chunk(top.parent_id)
    variants = {
        "Document.id": Document(id=chunk.id, page_content="Summary written by the host: " + chunk.text),
        "metadata id_key": Document(page_content="host-side rewrite", metadata={"g2cons_id": chunk.id}),
        "text, no id": Document(page_content=chunk.text),
        "text, foreign id": Document(id="neo4j-node-17", page_content=chunk.text),
    }
    for how, hdoc in variants.items():
        r = G2ConSRetriever(host=ListRetriever(docs=[hdoc]), index=selector.index, beta=400, fusion="ensemble")
        docs = r.invoke(q)
        both = [d for d in docs if d.metadata["g2cons_source"] == "both"]
        assert len(both) == 1, how
        assert both[0].page_content == hdoc.page_content  # the host's text wins for an overlapping item
        assert both[0].metadata["g2cons_chunk_id"] == chunk.id
        assert [d.metadata["g2cons_source"] for d in docs].count("host") == 0, how
        # score fusion (default): the host item is matched to the same chunk and our units of it are placed
        docs = G2ConSRetriever(host=ListRetriever(docs=[hdoc]), index=selector.index, beta=400).invoke(q)
        hosted = [d for d in docs if d.metadata["g2cons_source"] != "concept"]
        assert hosted and all(d.metadata["g2cons_chunk_id"] == chunk.id for d in hosted), how
    unrelated = Document(id="neo4j-node-18", page_content="A text the concept path never returns.")
    docs = G2ConSRetriever(
        host=ListRetriever(docs=[unrelated]), index=selector.index, beta=400, fusion="ensemble"
    ).invoke(q)
    assert [(d.id, d.metadata["g2cons_source"]) for d in docs if d.metadata["g2cons_source"] != "concept"] == [
        ("neo4j-node-18", "host")
    ]


def test_host_documents_not_mutated(selected: Any) -> None:
    selector, _, kept = selected
    hdocs = [d.model_copy(update={"metadata": {**d.metadata, "relevance_score": 0.5}}) for d in kept[:3]]
    snapshot = [d.model_copy(deep=True) for d in hdocs]

    class Shared(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            return hdocs  # the same objects every time

    docs = G2ConSRetriever(host=Shared(), index=selector.index, beta=400).invoke(QUERIES[0])
    assert hdocs == snapshot
    host_side = [d for d in docs if d.metadata["g2cons_source"] != "concept"]
    assert host_side and all(d.metadata["g2cons_host_score"] == 0.5 for d in host_side)


def test_invoke_equals_ainvoke(selected: Any, fused_retriever: G2ConSRetriever) -> None:
    selector, _, _ = selected
    for r in (fused_retriever, selector.as_retriever(beta=150)):
        for q in QUERIES:
            assert asyncio.run(r.ainvoke(q)) == r.invoke(q)
        assert asyncio.run(r.ainvoke(QUERIES[0], k=2)) == r.invoke(QUERIES[0], k=2)


def test_ainvoke_runs_both_paths_concurrently(selected: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each path waits for the other to have started: only a concurrent run finishes without timing out."""
    selector, _, kept = selected
    host_started, concept_started = threading.Event(), threading.Event()
    waits: dict[str, bool] = {}

    class WaitingHost(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            raise AssertionError("the async path must use the host's ainvoke")

        async def _aget_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            host_started.set()
            waits["host"] = await asyncio.to_thread(concept_started.wait, 10)
            return kept[:2]

    real = G2ConSRetriever._concept

    def waiting_concept(self: G2ConSRetriever, query: str, beta: int | None) -> Any:
        concept_started.set()
        waits["concept"] = host_started.wait(10)
        return real(self, query, beta)

    monkeypatch.setattr(G2ConSRetriever, "_concept", waiting_concept)
    r = G2ConSRetriever(host=WaitingHost(), index=selector.index, beta=150)
    docs = asyncio.run(r.ainvoke(QUERIES[0]))
    assert waits == {"host": True, "concept": True} and docs


def test_batch(fused_retriever: G2ConSRetriever) -> None:
    expected = [fused_retriever.invoke(q) for q in QUERIES]
    assert fused_retriever.batch(QUERIES) == expected
    assert asyncio.run(fused_retriever.abatch(QUERIES)) == expected


def test_lcel_chain_end_to_end_with_fakes(fused_retriever: G2ConSRetriever) -> None:
    """retriever | format_docs | prompt | FAKE chat model | parser: checks the wiring, not an answer."""
    prompts: list[str] = []

    class PromptSpy(BaseCallbackHandler):
        def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
            prompts.append("\n".join(str(m.content) for m in messages[0]))

    def format_docs(docs: list[Document]) -> str:
        return "\n\n".join(f"[{d.metadata['g2cons_source']}] {d.page_content}" for d in docs)

    prompt = ChatPromptTemplate.from_messages([("system", "Context:\n{context}"), ("human", "{question}")])
    llm = FakeListChatModel(responses=["fake answer"])
    chain = (
        {"context": fused_retriever | format_docs, "question": RunnablePassthrough()} | prompt | llm | StrOutputParser()
    )
    q = QUERIES[0]
    assert chain.invoke(q, {"callbacks": [PromptSpy()]}) == "fake answer"
    assert asyncio.run(chain.ainvoke(q, {"callbacks": [PromptSpy()]})) == "fake answer"
    docs = fused_retriever.invoke(q)
    assert len(prompts) == 2 and prompts[0] == prompts[1]
    assert all(d.page_content in prompts[0] for d in docs) and q in prompts[0]


# LangChain's standard retriever tests (langchain-tests) run from the adapter: adapters/langchain-g2cons/tests


# ----------------------------------------------------------------------------------------------- example
def test_quickstart_example_runs_offline() -> None:
    for mod in ("langchain_text_splitters", "json_repair", "wordllama"):
        pytest.importorskip(mod)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pytest.importorskip("langchain_experimental")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["HF_HUB_OFFLINE"] = "1"
    # the subprocess is not under pytest-socket; HF_HUB_OFFLINE and the fake models keep it offline
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "langchain_quickstart.py")],  # as documented: wordllama
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "FAKE models" in out.stdout
    assert "extraction calls made" in out.stdout and "saved" in out.stdout
    assert "G2ConSRetriever" in out.stdout and "A: [FAKE chat model" in out.stdout
