"""LlamaIndex adapter (``llama-index-retrievers-g2cons``): offline, with a counting rule-based fake LLM.

The fake LLM turns capitalised words into "(A, related to, B)" triplets. It exists to count extraction calls and
tokens and to give the host retriever a graph to walk; nothing here measures retrieval or answer quality.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core")
g2li = pytest.importorskip("llama_index.retrievers.g2cons")

from llama_index.core import Document, PropertyGraphIndex, Settings, StorageContext, load_index_from_storage  # noqa: E402
from llama_index.core.base.base_retriever import BaseRetriever  # noqa: E402
from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.bridge.pydantic import Field  # noqa: E402
from llama_index.core.callbacks import CallbackManager, TokenCountingHandler  # noqa: E402
from llama_index.core.chat_engine import CondensePlusContextChatEngine  # noqa: E402
from llama_index.core.indices.property_graph import ImplicitPathExtractor, SimpleLLMPathExtractor  # noqa: E402
from llama_index.core.ingestion import IngestionCache, IngestionPipeline  # noqa: E402
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata  # noqa: E402
from llama_index.core.llms.callbacks import llm_completion_callback  # noqa: E402
from llama_index.core.node_parser import SentenceSplitter  # noqa: E402
from llama_index.core.query_engine import RetrieverQueryEngine  # noqa: E402
from llama_index.core.schema import (  # noqa: E402
    BaseNode,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    TextNode,
    TransformComponent,
)
from llama_index.core.utils import get_tokenizer  # noqa: E402

from g2cons_plugins.errors import InputError  # noqa: E402
from g2cons_plugins.fusion.ensemble import fuse  # noqa: E402
from g2cons_plugins.retrieval.linked import before_linked  # noqa: E402

ConceptGraphRetriever = g2li.ConceptGraphRetriever
CoreChunkSelector = g2li.CoreChunkSelector
G2ConSRetriever = g2li.G2ConSRetriever

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "examples" / "data"
CAP = re.compile(r"\b[A-Z][a-z]{2,}\b")
QUESTION = "Who was the first president of the association which published Journal of Psychotherapy Integration?"


class CountingTripletLLM(CustomLLM):
    """Deterministic fake: extraction prompt -> triplets between capitalised words; synonym prompt -> the query's
    capitalised words; anything else -> a fixed labelled string. Records every prompt it receives."""

    prompts: list[str] = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="counting-triplet-fake", context_window=16384, num_output=256)

    def _answer(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if "KEYWORDS:" in prompt:
            query = prompt.split("QUERY:")[-1].split("----")[0]
            return "^".join(dict.fromkeys(CAP.findall(query)))
        if prompt.rstrip().endswith("Triplets:"):
            words = list(dict.fromkeys(CAP.findall(extracted_text(prompt))))[:6]
            return "\n".join(f"({a}, related to, {b})" for a, b in zip(words, words[1:], strict=False))
        return "offline fake answer (not an answer)"

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._answer(prompt))

    @llm_completion_callback()  # overridden: CustomLLM.acomplete calls complete, which counts every call twice
    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._answer(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        yield CompletionResponse(text=self._answer(prompt), delta=self._answer(prompt))

    def extraction_texts(self) -> list[str]:
        return [extracted_text(p) for p in self.prompts if p.rstrip().endswith("Triplets:")]


def extracted_text(prompt: str) -> str:
    return prompt.rsplit("\nText: ", 1)[-1].rsplit("\nTriplets:", 1)[0]


class HashLIEmbedding(BaseEmbedding):
    """A LlamaIndex embedding model backed by the core's deterministic hash embedder (to test Settings use)."""

    def _vec(self, text: str) -> list[float]:
        from g2cons_plugins import HashEmbedder

        return HashEmbedder(64).embed([text])[0].tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vec(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vec(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vec(text)


def load_documents(n: int) -> list[Document]:
    docs = []
    with (DATA / "musique_excerpt_corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            docs.append(Document(id_=row["id"], text=row["text"], metadata={"title": row["title"]}))
            if len(docs) >= n:
                break
    return docs


def split(docs: list[Document]) -> list[BaseNode]:
    return SentenceSplitter(chunk_size=96, chunk_overlap=0)(docs)


@pytest.fixture(autouse=True)
def _restore_settings() -> Any:
    saved = (Settings._llm, Settings._embed_model, Settings._callback_manager)
    yield
    Settings._llm, Settings._embed_model, Settings._callback_manager = saved


@pytest.fixture(scope="module")
def docs() -> list[Document]:
    return load_documents(40)


def build_pg(docs: list[Document], kappa: float | None, **selector_kw: Any) -> dict[str, Any]:
    tc = TokenCountingHandler()
    llm = CountingTripletLLM(callback_manager=CallbackManager([tc]))
    selector = CoreChunkSelector(kappa=kappa, embedder="hash", **selector_kw) if kappa is not None else None
    seen: list[BaseNode] = []

    class Spy(TransformComponent):  # records what reaches the selector
        def __call__(self, nodes: Any, **kwargs: Any) -> Any:
            seen.extend(nodes)
            return nodes

    transformations = [SentenceSplitter(chunk_size=96, chunk_overlap=0), Spy()] + ([selector] if selector else [])
    pg = PropertyGraphIndex.from_documents(
        docs,
        transformations=transformations,
        kg_extractors=[SimpleLLMPathExtractor(llm=llm, max_paths_per_chunk=5), ImplicitPathExtractor()],
        llm=llm,
        embed_kg_nodes=False,
    )
    return {"pg": pg, "llm": llm, "tc": tc, "selector": selector, "nodes": seen}


@pytest.fixture(scope="module")
def built(docs: list[Document]) -> dict[str, Any]:
    return build_pg(docs, kappa=0.5)


@pytest.fixture(scope="module")
def baseline(docs: list[Document]) -> dict[str, Any]:
    return build_pg(docs, kappa=None)


def run(retriever: BaseRetriever, query: str = QUESTION) -> list[tuple[str, float, str]]:
    return [
        (r.node.node_id, round(r.get_score(), 9), r.node.metadata["g2cons_source"]) for r in retriever.retrieve(query)
    ]


def llm_tokens(results: list[NodeWithScore], index: Any) -> int:
    return sum(index.count_tokens([r.node.get_content(metadata_mode=MetadataMode.LLM) for r in results]))


# ---------------------------------------------------------------------------------------------------- API
def test_public_api_and_namespace_layout() -> None:
    assert sorted(g2li.__all__) == [
        "ConceptGraphRetriever",
        "ConceptGraphSubRetriever",
        "CoreChunkSelector",
        "G2ConSRetriever",
        "GraphWalkRetriever",
    ]
    assert issubclass(CoreChunkSelector, TransformComponent)
    assert issubclass(ConceptGraphRetriever, BaseRetriever) and issubclass(G2ConSRetriever, BaseRetriever)
    pkg = ROOT / "adapters" / "llama-index-retrievers-g2cons"
    assert not (pkg / "llama_index" / "__init__.py").exists()
    assert not (pkg / "llama_index" / "retrievers" / "__init__.py").exists()
    import llama_index.core  # the namespace still resolves the host package

    assert llama_index.core.__version__


# ---------------------------------------------------------------------------------------------------- selection
def test_property_graph_build_sends_exactly_the_selected_nodes_to_the_extractor(built, baseline) -> None:
    sel, llm, tc, pg = built["selector"], built["llm"], built["tc"], built["pg"]
    nodes = built["nodes"]
    kept = set(sel.report.kept_ids)
    assert {n.node_id for n in nodes} == set(sel.report.kept_ids) | set(sel.report.dropped_ids)
    assert 0 < len(kept) < len(nodes)
    # the extractor saw each kept node's LLM text once, and nothing else
    want = sorted(n.get_content(metadata_mode=MetadataMode.LLM) for n in nodes if n.node_id in kept)
    assert sorted(llm.extraction_texts()) == want
    assert set(pg.docstore.docs) == kept
    # TokenCountingHandler: one event per real call (no async double count), tokens = the prompts' tokens
    tok = get_tokenizer()
    assert len(tc.llm_token_counts) == len(llm.prompts) == len(kept)
    assert tc.prompt_llm_token_count == sum(len(tok(p)) for p in llm.prompts)
    # without selection every node is extracted
    b_llm, b_tc = baseline["llm"], baseline["tc"]
    assert len(b_llm.extraction_texts()) == len(baseline["nodes"]) == len(nodes)
    assert len(b_tc.llm_token_counts) == len(nodes)
    assert tc.prompt_llm_token_count < b_tc.prompt_llm_token_count


def test_selector_accepts_and_ignores_from_documents_kwargs(docs) -> None:
    nodes = split(docs[:10])
    sel = CoreChunkSelector(kappa=0.5, embedder="hash")
    out = sel(nodes, kg_extractors=[ImplicitPathExtractor()], llm=object(), embed_kg_nodes=False, show_progress=True)
    assert [n.node_id for n in out] == [n.node_id for n in nodes if n.node_id in set(sel.report.kept_ids)]


def test_selector_writes_no_metadata_into_prompts_or_graph(built) -> None:
    pg, llm, nodes = built["pg"], built["llm"], built["nodes"]
    assert all(set(n.metadata) == {"title"} for n in nodes)
    assert all(set(n.metadata) <= {"title"} for n in pg.docstore.docs.values())
    assert not any("g2cons" in p for p in llm.prompts)
    graph = pg.property_graph_store.graph
    props = [k for n in graph.nodes.values() for k in n.properties] + [
        k for r in graph.relations.values() for k in r.properties
    ]
    assert props and not any(k.startswith("g2cons") for k in props)


def test_next_previous_do_not_dangle_to_dropped_nodes(built, docs) -> None:
    sel, pg = built["selector"], built["pg"]
    kept, dropped = set(sel.report.kept_ids), set(sel.report.dropped_ids)
    chain = [r for r in pg.property_graph_store.graph.relations.values() if r.label in ("NEXT", "PREVIOUS")]
    assert chain, "kept nodes of one document should still be chained"
    assert all(r.source_id in kept and r.target_id in kept for r in chain)
    assert not (set(pg.property_graph_store.graph.nodes) & dropped)
    # control: a plain "drop every other node" transformation leaves dangling edges (the trap is real)

    class EveryOther(TransformComponent):
        def __call__(self, nodes: Any, **kwargs: Any) -> Any:
            return list(nodes)[::2]

    llm = CountingTripletLLM()
    naive = PropertyGraphIndex.from_documents(
        docs[:10],
        transformations=[SentenceSplitter(chunk_size=96, chunk_overlap=0), EveryOther()],
        kg_extractors=[ImplicitPathExtractor()],
        llm=llm,
        embed_kg_nodes=False,
    )
    ids = set(naive.docstore.docs)
    rels = [r for r in naive.property_graph_store.graph.relations.values() if r.label in ("NEXT", "PREVIOUS")]
    assert any(r.target_id not in ids for r in rels)


def test_relinking_follows_the_chain_to_the_nearest_kept_node() -> None:
    nodes = SentenceSplitter(chunk_size=40, chunk_overlap=0)(load_documents(3))
    sel = CoreChunkSelector(kappa=0.4, embedder="hash")
    out = {n.node_id: n for n in sel(nodes)}
    order = [n.node_id for n in nodes]
    for nid, n in out.items():
        for rel in (NodeRelationship.NEXT, NodeRelationship.PREVIOUS):
            info = n.relationships.get(rel)
            if info is not None:
                assert info.node_id in out
                between = order[
                    min(order.index(nid), order.index(info.node_id)) + 1 : max(
                        order.index(nid), order.index(info.node_id)
                    )
                ]
                assert not set(between) & set(out)  # the nearest kept one, skipping dropped ones only
    assert all(n.relationships == m.relationships for m in nodes for n in [m] if n.node_id not in out)


def test_ingestion_cache_hit_skips_the_selector_but_the_graph_reloads(docs, tmp_path) -> None:
    cache = IngestionCache()
    first = CoreChunkSelector(kappa=0.5, embedder="hash", persist_dir=str(tmp_path))
    p1 = IngestionPipeline(transformations=[SentenceSplitter(chunk_size=96, chunk_overlap=0), first], cache=cache)
    out1 = p1.run(documents=docs[:12])
    second = CoreChunkSelector(kappa=0.5, embedder="hash", persist_dir=str(tmp_path))
    p2 = IngestionPipeline(transformations=[SentenceSplitter(chunk_size=96, chunk_overlap=0), second], cache=cache)
    out2 = p2.run(documents=docs[:12])
    assert [n.node_id for n in out2] == [n.node_id for n in out1]
    assert not second.fitted  # the cache hit skipped it ...
    assert second.report.kept_ids == first.report.kept_ids  # ... and the graph loads from persist_dir
    assert len(second.index.chunks) == len(first.index.chunks)
    # without persist_dir the missing graph is an explicit error, not a silent empty retriever
    for third in (CoreChunkSelector(kappa=0.5, embedder="hash"), CoreChunkSelector(kappa=0.5, embedder="hash")):
        splitter = SentenceSplitter(chunk_size=96, chunk_overlap=0)
        IngestionPipeline(transformations=[splitter, third], cache=cache).run(documents=docs[:12])
    assert not third.fitted
    with pytest.raises(InputError, match="cache hit"):
        third.index  # noqa: B018
    # a changed kappa misses the cache (it is part of the transformation hash)
    other = CoreChunkSelector(kappa=0.25, embedder="hash")
    IngestionPipeline(transformations=[SentenceSplitter(chunk_size=96, chunk_overlap=0), other], cache=cache).run(
        documents=docs[:12]
    )
    assert other.fitted


def test_num_workers_keeps_the_global_selection(docs) -> None:
    nodes = split(docs[:16])
    single = CoreChunkSelector(kappa=0.5, embedder="hash")
    want = [n.node_id for n in single(nodes)]
    # arun(num_workers=2) pickles the selector into worker processes and hands each a batch, like run(); run()
    # spawns fresh interpreters (~6 s of imports each), arun forks, so the test uses arun
    fitted = CoreChunkSelector(kappa=0.5, embedder="hash").fit(nodes)
    pipe = IngestionPipeline(transformations=[fitted], disable_cache=True)
    got = asyncio.run(pipe.arun(nodes=nodes, num_workers=2))
    assert sorted(n.node_id for n in got) == sorted(want)
    unfitted = CoreChunkSelector(kappa=0.5, embedder="hash")
    with pytest.raises(InputError, match="num_workers"):
        asyncio.run(IngestionPipeline(transformations=[unfitted], disable_cache=True).arun(nodes=nodes, num_workers=2))


def test_selector_adds_unseen_nodes_by_the_same_selection_rule(docs) -> None:
    first, more = split(docs[:6]), split(docs[6:10])
    sel = CoreChunkSelector(kappa=0.5, embedder="hash").fit(first)
    out = sel(more)  # unseen nodes: no error, they join the concept graph
    assert {c.id for c in sel.index.chunks} == {n.node_id for n in first + more}
    # the rule: a new node is kept iff the same selection over the whole corpus keeps it
    fresh = CoreChunkSelector(kappa=0.5, embedder="hash").fit(first + more)
    want = [n.node_id for n in more if n.node_id in set(fresh.report.kept_ids)]
    assert [n.node_id for n in out] == want
    assert sel.report.kept_ids == fresh.report.kept_ids  # the latest report is the full selection
    assert set(want) <= sel.kept_ids and not (set(want) & sel.dropped_ids)
    assert [n.node_id for n in sel(more)] == want  # known now: decided as before


# ---------------------------------------------------------------------------------------------------- retrieval
@pytest.fixture(scope="module")
def retriever(built) -> G2ConSRetriever:
    return G2ConSRetriever.from_defaults(
        index=built["pg"], selector=built["selector"], beta=600, lambda_=0.6, spill=False, fusion="ensemble"
    )


def test_g2cons_retriever_fits_beta_overlap_first_and_lambda(retriever) -> None:
    res = retriever.retrieve(QUESTION)
    sources = [r.node.metadata["g2cons_source"] for r in res]
    assert set(sources) <= {"host", "concept", "both"} and "both" in sources and "concept" in sources
    n_both = sources.count("both")
    assert sources[:n_both] == ["both"] * n_both  # overlap first
    idx, beta, lam = retriever.index, retriever.beta, retriever.lambda_
    assert llm_tokens(res, idx) <= beta
    host_t = llm_tokens([r for r in res if r.node.metadata["g2cons_source"] == "host"], idx)
    concept_t = llm_tokens([r for r in res if r.node.metadata["g2cons_source"] == "concept"], idx)
    assert host_t <= lam * beta and concept_t <= (1 - lam) * beta
    for r in res:  # g2cons keys are for the caller, not for the LLM
        assert "g2cons" not in r.node.get_content(metadata_mode=MetadataMode.LLM)


def test_fusion_defaults_come_from_the_config(built) -> None:
    r = G2ConSRetriever.from_defaults(index=built["pg"], selector=built["selector"], beta=600)
    assert (r.lambda_, r.spill) == (0.2, True)


def test_lambda_extremes_select_one_path(built) -> None:
    host_only = G2ConSRetriever.from_defaults(
        index=built["pg"], selector=built["selector"], beta=600, lambda_=1.0, spill=False, fusion="ensemble"
    )
    concept_only = G2ConSRetriever.from_defaults(
        index=built["pg"], selector=built["selector"], beta=600, lambda_=0.0, spill=False, fusion="ensemble"
    )
    assert "concept" not in {s for _, _, s in run(host_only)}
    assert "host" not in {s for _, _, s in run(concept_only)}


def test_fused_result_equals_the_core_ensemble(retriever) -> None:
    """The adapter only translates: same items, order, sources and scores as g2cons_plugins.fusion.ensemble.fuse on the
    same host nodes and concept items (the latter counted on their LLM-visible text, titles included)."""
    host = retriever.host_retriever.retrieve(QUESTION)
    concept, _ = retriever.concept_retriever.concept_path(QUESTION)
    raw = retriever.index.retrieve(QUESTION, beta=retriever.beta)
    ids = [c.unit_id for c in concept]
    assert ids == [r.unit_id for r in raw if r.unit_id in set(ids)]  # the core's order (its linked head) ...
    assert set(ids) == {r.unit_id for r in before_linked(raw)[: len(ids)]}  # ... what fits chosen in the order before
    raw_of = {r.unit_id: r for r in raw}
    assert all(c.n_tokens > raw_of[c.unit_id].n_tokens for c in concept)  # "title: ..." is counted
    hosts = [
        {"chunk_id": r.node.node_id, "text": r.node.get_content(metadata_mode=MetadataMode.LLM), "score": r.score}
        for r in host
    ]
    want = fuse(
        hosts, concept, retriever.beta, retriever.lambda_, tokenizer=retriever.index.tokenizer, spill=retriever.spill
    )
    got = retriever.retrieve(QUESTION)
    assert [(f.source, round(f.score, 9)) for f in want] == [
        (r.node.metadata["g2cons_source"], round(r.get_score(), 9)) for r in got
    ]
    assert [f.unit_id or f.chunk_id for f in want if f.source == "concept"] == [
        r.node.node_id for r in got if r.node.metadata["g2cons_source"] == "concept"
    ]


def test_host_and_concept_match_by_chunk_id_not_text(built) -> None:
    idx = built["selector"].index
    concept = ConceptGraphRetriever(idx, beta=400).retrieve(QUESTION)
    target = next(r.node.metadata["g2cons_chunk_id"] for r in concept)

    class OddTextHost(BaseRetriever):  # same chunk id, unrelated text: must still match
        def _retrieve(self, qb: QueryBundle) -> list[NodeWithScore]:
            return [NodeWithScore(node=TextNode(id_=target, text="completely different words"), score=0.3)]

    res = G2ConSRetriever(idx, OddTextHost(), beta=400).retrieve(QUESTION)
    both = [r for r in res if r.node.metadata["g2cons_source"] == "both"]
    assert [r.node.node_id for r in both] == [target]

    class SameTextOtherId(BaseRetriever):  # same text, foreign id: no match by text or hash
        def _retrieve(self, qb: QueryBundle) -> list[NodeWithScore]:
            return [NodeWithScore(node=TextNode(id_="foreign", text=concept[0].node.text), score=0.3)]

    res = G2ConSRetriever(idx, SameTextOtherId(), beta=400).retrieve(QUESTION)
    assert "both" not in {r.node.metadata["g2cons_source"] for r in res}


def test_triplet_host_matches_through_ref_doc_id(built) -> None:
    host = built["pg"].as_retriever(include_text=False)
    triplets = host.retrieve(QUESTION)
    assert triplets and all(t.node.node_id != t.node.ref_doc_id for t in triplets)
    r = G2ConSRetriever.from_defaults(host_retriever=host, selector=built["selector"], beta=600, fusion="ensemble")
    both = [x for x in r.retrieve(QUESTION) if x.node.metadata["g2cons_source"] == "both"]
    assert both
    assert all(x.node.ref_doc_id == x.node.metadata["g2cons_chunk_id"] for x in both)
    # score fusion (the default) matches the same triplet nodes to their chunks and places our units of them
    s = G2ConSRetriever.from_defaults(host_retriever=host, selector=built["selector"], beta=600)
    hosted = {t.node.ref_doc_id for t in triplets}
    res = s.retrieve(QUESTION)
    placed = [x.node.metadata for x in res]
    assert all(m["g2cons_chunk_id"] in hosted for m in placed if m["g2cons_source"] != "concept")
    assert any(x.node.metadata["g2cons_source"] == "both" for x in res)


def test_sync_equals_async_also_inside_a_running_loop(retriever) -> None:
    sync = run(retriever)

    async def main() -> tuple[list[Any], list[Any]]:
        res = await retriever.aretrieve(QUESTION)
        inner = run(retriever)  # sync call inside a running loop: no asyncio.run error
        return [(r.node.node_id, round(r.get_score(), 9), r.node.metadata["g2cons_source"]) for r in res], inner

    async_res, inner = asyncio.run(main())
    assert async_res == sync == inner


def test_persist_and_reload_give_the_same_results(built, retriever, tmp_path) -> None:
    pg, llm = built["pg"], built["llm"]
    pg.storage_context.persist(persist_dir=str(tmp_path))
    retriever.persist(tmp_path)
    built["selector"].persist(tmp_path)
    pg2 = load_index_from_storage(
        StorageContext.from_defaults(persist_dir=str(tmp_path)), llm=llm, embed_kg_nodes=False
    )
    again = G2ConSRetriever.from_persist_dir(tmp_path, index=pg2)
    assert (again.beta, again.lambda_, again.fusion) == (retriever.beta, retriever.lambda_, retriever.fusion)
    # the same host retriever for both (its sub-retrievers one after the other): what is compared is our side, the
    # reloaded selector, index and settings. Two retrievers over the original and the reloaded property graph may
    # rank the host's nodes differently (seen once in a full CI run: the first fused node at another host rank), and
    # run concurrently (LlamaIndex's default) a node two sub-retrievers return keeps whichever score came first.
    host = pg2.as_retriever(use_async=False)
    before = G2ConSRetriever.from_defaults(host_retriever=host, selector=built["selector"],
                                           beta=600, lambda_=0.6, spill=False, fusion="ensemble")  # fmt: skip
    again = G2ConSRetriever.from_persist_dir(tmp_path, host_retriever=host)
    assert run(again) == run(before) and run(again)
    sel = CoreChunkSelector.from_persist_dir(tmp_path)
    assert sel.report.kept_ids == built["selector"].report.kept_ids and sel.kappa == 0.5
    c1 = ConceptGraphRetriever(built["selector"].index, beta=300)
    c1.persist(tmp_path / "concept")
    c2 = ConceptGraphRetriever.from_persist_dir(tmp_path / "concept")
    assert [(r.node_id, r.score) for r in c1.retrieve(QUESTION)] == [
        (r.node_id, r.score) for r in c2.retrieve(QUESTION)
    ]


def test_concept_retriever_matches_the_core_and_covers_dropped_chunks(built) -> None:
    sel = built["selector"]
    idx = sel.index
    r = ConceptGraphRetriever.from_defaults(g2cons_index=idx, beta=800)
    res = r.retrieve(QUESTION)
    # titles render into the LLM text, so the adapter counts them: its list is the core's, cut to fit beta
    core_ids = [it.unit_id for it in idx.retrieve(QUESTION, beta=800)]
    ids = [x.node.node_id for x in res]
    assert ids == core_ids[: len(ids)] and ids
    assert llm_tokens(res, idx) <= 800
    for x in res:
        md = x.node.metadata
        assert md["g2cons_source"] == "concept" and "via" in md["g2cons_reason"] and md["title"]
        assert x.node.node_id in (md["g2cons_chunk_id"], md["g2cons_unit_id"])
    dropped = set(sel.report.dropped_ids)
    many = ConceptGraphRetriever(idx, beta=5000).retrieve(QUESTION)
    assert dropped & {x.node.metadata["g2cons_chunk_id"] for x in many}


def test_concept_retriever_without_metadata_equals_core_retrieve(docs) -> None:
    nodes = split([Document(id_=d.id_, text=d.text) for d in docs[:20]])
    r = ConceptGraphRetriever.from_defaults(nodes=nodes, embedder="hash", beta=500)
    assert [x.node.node_id for x in r.retrieve(QUESTION)] == [i.unit_id for i in r.index.retrieve(QUESTION, beta=500)]


# ---------------------------------------------------------------------------------------------------- host conventions
def test_query_engine_and_chat_engine_accept_the_retriever(built, retriever) -> None:
    llm = built["llm"]
    resp = RetrieverQueryEngine.from_args(retriever, llm=llm).query(QUESTION)
    assert resp.source_nodes and {n.node.metadata["g2cons_source"] for n in resp.source_nodes} <= {
        "host",
        "concept",
        "both",
    }
    chat = CondensePlusContextChatEngine.from_defaults(retriever=retriever, llm=llm)
    assert str(chat.chat(QUESTION))


def test_one_default_embedder_and_the_host_model_when_given(docs) -> None:
    nodes = split(docs[:8])
    # default: the core's "auto" (wordllama for English text, offline), never Settings.embed_model (OpenAI by
    # default: needs a key)
    pytest.importorskip("wordllama")
    sel = CoreChunkSelector(kappa=0.5)
    assert sel.core_embedder() == "auto"
    sel(nodes)
    assert sel.index.embedder.name.startswith("wordllama")
    assert Settings._embed_model is None  # nothing resolved on the global Settings
    # the host's model when passed explicitly
    Settings.embed_model = HashLIEmbedding(model_name="hash-li")
    sel = CoreChunkSelector(kappa=0.5, embedder=Settings.embed_model)
    sel(nodes)
    assert sel.index.embedder.name == "llamaindex-hash-li"
    r = ConceptGraphRetriever.from_defaults(nodes=nodes, embedder=Settings.embed_model, beta=300)
    assert r.index.embedder.name == "llamaindex-hash-li" and r.retrieve(QUESTION)


def test_errors_are_explicit() -> None:
    with pytest.raises(InputError):
        G2ConSRetriever.from_defaults(nodes=split(load_documents(2)), embedder="hash")  # no host
    with pytest.raises(InputError):
        ConceptGraphRetriever.from_defaults()
    assert CoreChunkSelector(kappa=0.5, embedder="hash")([]) == []


# ---------------------------------------------------------------------------------------------------- example
def test_quickstart_example_runs_offline() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["HF_HUB_OFFLINE"] = "1"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "llama_index_quickstart.py"), "--n-docs", "120"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "OFFLINE DETERMINISTIC EXTRACTOR" in out
    assert re.search(r"without selection: +\d+ extraction calls", out)
    assert re.search(r"with selection .*: +\d+ extraction calls", out)
    assert "g2cons_source" in out
