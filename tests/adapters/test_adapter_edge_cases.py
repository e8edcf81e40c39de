"""Adapter edge cases: the LangChain selector checks its arguments when it is made, and both concept retrievers
return scores that never increase down the list (a similarity cutoff drops a tail, never a result in the middle)."""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from conftest import CORPUS  # noqa: E402

from g2cons_plugins import G2ConSConfig, G2ConSIndex  # noqa: E402

QUERIES = [
    "Where was Marie Curie born?",
    "Who discovered radioactivity?",
    "Which river flows through Warsaw?",
    "Who won the Nobel Prize with Frederic Joliot?",
    "What borders Poland, Sweden and Finland?",
]
STRATEGIES = ["bridge", "paper", "ppr", "dense"]


# ----------------------------------------------------------------------------------- LangChain argument checks
@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"kappa": 1.5}, "kappa"),
        ({"kappa": -0.1}, "kappa"),
        ({"kappa": "most"}, "kappa"),
        ({"kappa_by": "pages"}, "kappa_by"),
        ({"price_per_mtok": -1.0}, "price_per_mtok"),
        ({"prompt_tokens_per_call": -3}, "prompt_tokens_per_call"),
    ],
)
def test_langchain_selector_checks_its_arguments_when_made(kwargs: dict[str, Any], name: str) -> None:
    lc = pytest.importorskip("langchain_g2cons")
    with pytest.raises(ValueError, match=rf"(?s)\b{name}\b.*{kwargs[name]!s}") as err:
        lc.CoreChunkSelector(embedder="hash", **kwargs)
    assert "CoreChunkSelector" in str(err.value)


def test_langchain_selector_keeps_valid_arguments_as_given(tmp_path: Path) -> None:
    lc = pytest.importorskip("langchain_g2cons")
    from langchain_core.embeddings import DeterministicFakeEmbedding

    cfg = G2ConSConfig(beta=500)
    sel = lc.CoreChunkSelector(
        1, kappa_by="chunks", embedder=DeterministicFakeEmbedding(size=8), config=cfg, cache_dir=tmp_path
    )
    assert (sel.kappa, sel.kappa_by, sel.config, sel.cache_dir) == (1.0, "chunks", cfg, tmp_path)
    assert sel.embedder.dim == 8
    params = inspect.signature(lc.CoreChunkSelector).parameters
    assert {"kappa", "kappa_by", "embedder", "skip_empty", "show_progress"} <= set(params)
    assert params["kappa"].default is None


# ------------------------------------------------------------------------------------------ monotone scores
@pytest.fixture(scope="module")
def index() -> G2ConSIndex:
    return G2ConSIndex.build([{"id": i, "text": t} for i, t in CORPUS], embedder="hash", config=G2ConSConfig())


def _non_increasing(xs: list[float]) -> bool:
    return all(a >= b for a, b in zip(xs, xs[1:], strict=False))


def test_the_core_order_is_not_by_score(index: G2ConSIndex) -> None:
    """The premise: the core's concept path (seed units first, then bridged ones) is not sorted by score."""
    assert not all(_non_increasing([it.score for it in index.retrieve(q, beta=400)]) for q in QUERIES)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_llama_index_concept_scores_never_increase(index: G2ConSIndex, strategy: str) -> None:
    li = pytest.importorskip("llama_index.retrievers.g2cons")
    from llama_index.core.postprocessor import SimilarityPostprocessor

    r = li.ConceptGraphRetriever(index, beta=400, strategy=strategy)
    for q in QUERIES:
        out = r.retrieve(q)
        core = index.retrieve(q, beta=400, strategy=strategy)
        assert [n.node.node_id for n in out] == [it.unit_id for it in core]  # the core's order, unchanged
        assert [n.node.metadata["g2cons_concept_score"] for n in out] == [it.score for it in core]
        scores = [n.score for n in out]
        assert _non_increasing(scores) and scores[0] == core[0].score
        for cutoff in sorted(set(scores)):
            kept = SimilarityPostprocessor(similarity_cutoff=cutoff).postprocess_nodes(out)
            assert kept == out[: len(kept)]  # a prefix: nothing dropped mid-list


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_langchain_concept_scores_never_increase(index: G2ConSIndex, strategy: str) -> None:
    lc = pytest.importorskip("langchain_g2cons")
    r = lc.ConceptGraphRetriever(index=index, beta=400, strategy=strategy)
    for q in QUERIES:
        docs = r.invoke(q)
        core = index.retrieve(q, beta=400, strategy=strategy)
        assert [d.metadata["g2cons_unit_id"] for d in docs] == [it.unit_id for it in core]
        assert [d.metadata["g2cons_concept_score"] for d in docs] == [it.score for it in core]
        scores = [d.metadata["relevance_score"] for d in docs]
        assert _non_increasing(scores) and scores[0] == core[0].score
        assert len(r.invoke(q, k=2)) == 2 and [d.metadata["relevance_score"] for d in r.invoke(q, k=2)] == scores[:2]


# ------------------------------------------------------------------------------------------ beta at construction
BAD_BETAS = [2.5, "x", 0, -5, True]


@pytest.mark.parametrize("beta", BAD_BETAS, ids=repr)
def test_llama_index_retrievers_check_beta_when_made(index: G2ConSIndex, beta: Any) -> None:
    li = pytest.importorskip("llama_index.retrievers.g2cons")
    with pytest.raises(ValueError, match=r"\bbeta\b") as err:
        li.ConceptGraphRetriever(index, beta=beta)
    assert repr(beta) in str(err.value)
    host = li.ConceptGraphRetriever(index, beta=100)
    with pytest.raises(ValueError, match=r"\bbeta\b"):
        li.G2ConSRetriever(index, host, beta=beta)
    with pytest.raises(ValueError, match=r"\bbeta\b"):
        host.concept_path("Where was Marie Curie born?", beta=beta)  # per-call override


@pytest.mark.parametrize("beta", BAD_BETAS, ids=repr)
def test_langchain_retrievers_check_beta_when_made(index: G2ConSIndex, beta: Any) -> None:
    lc = pytest.importorskip("langchain_g2cons")
    with pytest.raises(ValueError, match=r"\bbeta\b"):
        lc.ConceptGraphRetriever(index=index, beta=beta)
    host = lc.ConceptGraphRetriever(index=index, beta=100)
    with pytest.raises(ValueError, match=r"\bbeta\b"):
        lc.G2ConSRetriever(index=index, host=host, beta=beta)
    with pytest.raises(ValueError, match=r"\bbeta\b"):
        host.invoke("Where was Marie Curie born?", beta=beta)  # per-call override


def test_whole_number_betas_are_accepted(index: G2ConSIndex) -> None:
    li = pytest.importorskip("llama_index.retrievers.g2cons")
    lc = pytest.importorskip("langchain_g2cons")
    assert li.ConceptGraphRetriever(index, beta=300.0).beta == 300
    assert lc.ConceptGraphRetriever(index=index, beta=300).beta == 300
    assert li.ConceptGraphRetriever(index).beta == index.config.beta


# ------------------------------------------------------------------------------------------ errors that read well
def test_build_of_none_or_a_string_names_what_chunks_must_be() -> None:
    from g2cons_plugins.errors import InputError

    for bad, said in ((None, "got NoneType"), (7, "got int"), ("one text", "a single string (wrap it in a list)")):
        with pytest.raises(InputError, match=r"chunks must be a list") as err:
            G2ConSIndex.build(bad, embedder="hash")  # type: ignore[arg-type]
        assert said in str(err.value)


def test_an_empty_node_without_a_document_is_named_once() -> None:
    li = pytest.importorskip("llama_index.retrievers.g2cons")
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

    from g2cons_plugins.errors import InputError

    nodes = [TextNode(id_=i, text=t) for i, t in CORPUS[:4]] + [TextNode(id_="e", text="  ")]
    with pytest.raises(InputError) as err:
        li.CoreChunkSelector(embedder="hash")(nodes)
    assert "CoreChunkSelector: node 'e' (no ref_doc_id" in str(err.value) and "of node" not in str(err.value)
    doc_node = TextNode(id_="f", text="", relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id="d9")})
    with pytest.raises(InputError, match=r"CoreChunkSelector: a node of document 'd9' has no text"):
        li.CoreChunkSelector(embedder="hash")(nodes[:4] + [doc_node])
