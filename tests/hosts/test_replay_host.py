"""Replayed extractions as the host KG: the core ReplayHost, ``g2cons fuse --host replay:PATH``, host chunks of
GraphRAG size in the CLI, ``load_host("NAME:PATH")`` and the LlamaIndex PropertyGraphIndex replay host."""

from __future__ import annotations

import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from pathlib import Path

import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.cli import main
from g2cons_plugins.errors import InputError
from g2cons_plugins.hosts import ReplayHost, load_host

TRIPLES = {
    "c1": (["Marie Curie", "Warsaw"], [["Marie Curie", "born in", "Warsaw"]]),
    "c2": (["Warsaw", "Poland"], [["Warsaw", "capital of", "Poland"]]),
    "c16": (["Nobel Prize in Physics", "Marie Curie"], [["Marie Curie", "shared", "Nobel Prize in Physics"]]),
    "c17": (["Henri Becquerel", "radioactivity"], [["Henri Becquerel", "discovered", "radioactivity"]]),
    "c14": (["Helsinki", "Finland"], [["Helsinki", "capital of", "Finland"], ["bad triple"]]),
}


@pytest.fixture(scope="module")
def extraction(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("kg") / "kg.jsonl"
    rows = [{"id": k, "entities": e, "triples": t, "model": "test-llm"} for k, (e, t) in TRIPLES.items()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def index(corpus: list[dict[str, str]]) -> G2ConSIndex:
    return G2ConSIndex.build(corpus, embedder="hash", config=G2ConSConfig(unit_tokens=None))


def test_replay_host_holds_only_what_the_kept_chunks_produced(index: G2ConSIndex, extraction: Path) -> None:
    host = ReplayHost(str(extraction))
    assert "test-llm" in host.label and "replayed" in host.label.lower()
    full = index.select(kappa=1.0)
    cost = host.build(index, full)
    assert cost.graph["chunks"] == len(TRIPLES) and cost.calls == len(index.chunks)
    got = [h.chunk_id for h in host.retrieve("Where was Marie Curie born?")]
    assert got[:1] in (["c1"], ["c16"]) and {"c1", "c16"} <= set(got)
    assert "c2" in got  # hop 2: Warsaw, the triple neighbour of Marie Curie
    kept = [c for c in full.kept_ids if c != "c1"]
    host.build(index, index.select(kappa=1.0).__class__(**{**full.__dict__, "kept_ids": kept}))
    assert "c1" not in [h.chunk_id for h in host.retrieve("Where was Marie Curie born?")]
    assert host.retrieve("What is the capital of Finland?")[0].chunk_id == "c14"


def test_load_host_name_colon_path(extraction: Path) -> None:
    host = load_host(f"replay-core:{extraction}")
    assert host.name == "replay-core"
    with pytest.raises(InputError, match="give a path"):
        load_host("replay-core:")
    with pytest.raises(InputError):
        load_host(f"replay-core:{extraction.parent / 'missing.jsonl'}")


def test_cli_fuse_with_the_graph_you_already_built(
    tmp_path: Path, corpus: list[dict[str, str]], extraction: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    G2ConSIndex.build(corpus, embedder="hash").save(tmp_path / "g")
    assert main(["fuse", str(tmp_path / "g"), "Where was Marie Curie born?", "--host", f"replay:{extraction}"]) == 0
    err = capsys.readouterr().err
    assert "test-llm" in err and "host items:" in err and "contributed" in err


def test_cli_fuse_places_graphrag_sized_host_chunks(
    tmp_path: Path, corpus: list[dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    filler = "The council discussed the harbour budget, the bridge repairs and the winter market at length. "
    big = filler * 60 + "Marie Curie was born in Warsaw. " + filler * 40
    idx = G2ConSIndex.build([*corpus, {"id": "unit-1200", "text": big}], embedder="hash")
    n = idx.count_tokens([big])[0]
    assert 1000 < n < 2400  # a GraphRAG / LightRAG text unit is 1,200 tokens
    idx.save(tmp_path / "g")
    host = tmp_path / "host.json"
    host.write_text(json.dumps([{"chunk_id": "unit-1200"}]), encoding="utf-8")
    for beta in (1000, 2000, 4000):
        assert main(["fuse", str(tmp_path / "g"), "Where was Marie Curie born?", "--host", str(host),
                     "--budget", str(beta), "--json"]) == 0  # fmt: skip
        cap = capsys.readouterr()
        rows = json.loads(cap.out)
        assert sum(r["n_tokens"] for r in rows) <= beta
        assert any(r["chunk_id"] == "unit-1200" and r["source"] in ("host", "both") for r in rows), beta
        assert "1 given, 1 contributed" in cap.err
        # the paper's ensemble cannot place it in lambda x beta, and says so instead of dropping it silently
        assert main(["fuse", str(tmp_path / "g"), "Where was Marie Curie born?", "--host", str(host),
                     "--budget", str(beta), "--fusion", "ensemble"]) == 0  # fmt: skip
        err = capsys.readouterr().err
        placed = "1 given, 1 contributed" in err
        assert placed or ("1 given, 0 contributed" in err and "not placed: 1 (did not fit the host share" in err)
        assert placed == (beta == 4000)  # 0.4 x beta < its ~1,500 tokens at 1k and 2k


def test_llama_index_replay_host_builds_a_property_graph(index: G2ConSIndex, extraction: Path) -> None:
    pytest.importorskip("llama_index.retrievers.g2cons")
    pytest.importorskip("spacy")
    from llama_index.core.graph_stores.types import EntityNode

    host = load_host(f"replay:{extraction}")
    assert host.name == "replay" and "test-llm" in host.label
    sel = index.select(kappa=1.0)
    cost = host.build(index, sel)
    graph = host.pg.property_graph_store.graph  # type: ignore[attr-defined]
    names = {n.name for n in graph.nodes.values() if isinstance(n, EntityNode)}
    assert {"Marie Curie", "Warsaw", "Helsinki"} <= names and cost.graph["relations"] >= 5
    items = host.retrieve("Where was Marie Curie born?")
    assert items and {"c1", "c16"} & {h.chunk_id for h in items}


def test_llama_index_replay_host_walks_the_dropped_chunks_with_the_graph_walk_retriever(
    index: G2ConSIndex, extraction: Path
) -> None:
    pytest.importorskip("llama_index.retrievers.g2cons")
    from dataclasses import replace

    full = index.select(kappa=1.0)
    kept = [c for c in full.kept_ids if c != "c1"]  # c1 ("Marie Curie was born in Warsaw") dropped: no KG for it
    sel = replace(full, kept_ids=kept, dropped_ids=["c1"])
    q = "Where was Marie Curie born?"
    walked = {}
    for link in ("auto", "true", "false"):
        host = load_host(f"replay:{extraction}", retriever="graph-walk", walk_top_k=3, link_texts=link)
        host.build(index, sel)
        walker = host._retriever.sub_retrievers[0]
        assert type(walker).__name__ == "GraphWalkRetriever" and walker.walk.stats()["chunks"] == len(index.chunks)
        walked[link] = ([h.chunk_id for h in host.retrieve(q)], walker.walk)
    # automatic: only 4 of the 20 chunks hold triples (under a third), so no links, as with link_texts=false
    assert not walked["auto"][1].linked and not walked["false"][1].linked and walked["true"][1].linked
    on = walked["true"][1]
    row = len(on.entities) + on.chunk_ids.index("c1")  # its text names c16's "Marie Curie" and c2's "Warsaw"
    assert {on.entities[e] for e in on._adjacency[row].indices} == {"marie curie", "warsaw"}
    assert walked["false"][1]._adjacency[row].nnz == 0
    assert "c1" in walked["true"][0]  # the dropped chunk is walked to from her fact
    store_only = load_host(f"replay:{extraction}", retriever="graph-walk", walk_dropped="false", link_texts="true")
    store_only.build(index, sel)
    assert "c1" not in {h.chunk_id for h in store_only.retrieve(q)}  # the store holds the kept chunks only
    for bad, match in (
        ({"retriever": "walk"}, "retriever must be"),
        ({"walk_top_k": "many"}, "walk_top_k"),
        ({"walk_top_k": 0}, "walk_top_k"),
        ({"link_texts": "sometimes"}, "link_texts must be"),
        ({"walk_dropped": "maybe"}, "walk_dropped must be"),
    ):
        with pytest.raises(InputError, match=match):
            load_host(f"replay:{extraction}", **bad)


def test_packed_chunks_get_the_records_of_the_passages_they_hold(
    corpus: list[dict[str, str]], extraction: Path
) -> None:
    from g2cons_plugins.chunks import make_chunks, pack_chunks
    from g2cons_plugins.text import get_tokenizer

    packed = pack_chunks(make_chunks(corpus), 120, get_tokenizer())  # a few passages per chunk, GraphRAG-style
    idx = G2ConSIndex.build(packed, embedder="hash")
    host = ReplayHost(str(extraction))
    cost = host.build(idx, idx.select(kappa=1.0))
    holders = {c.id for c in packed if set(c.metadata["source_ids"]) & set(TRIPLES)}
    assert cost.graph["chunks"] == len(holders) > 1
    got = host.retrieve("Where was Marie Curie born?")
    pack_of_c1 = next(c.id for c in packed if "c1" in c.metadata["source_ids"])
    assert pack_of_c1 in {h.chunk_id for h in got}


def test_langchain_graph_documents_from_a_replayed_extraction(
    corpus: list[dict[str, str]], extraction: Path
) -> None:
    pytest.importorskip("langchain_community")
    from langchain_core.documents import Document
    from langchain_g2cons import CoreChunkSelector, graph_documents

    docs = [Document(id=r["id"], page_content=r["text"]) for r in corpus]
    kept = CoreChunkSelector(kappa=0.5, embedder="hash").transform_documents(docs)
    kept_ids = {d.id for d in kept}
    with pytest.warns(UserWarning, match="have no record"):
        gdocs = graph_documents(extraction, kept)
    assert {g.source.id for g in gdocs} == kept_ids & set(TRIPLES)
    for g in gdocs:
        ents, triples = TRIPLES[g.source.id]
        assert {n.id for n in g.nodes} >= set(ents)
        assert len(g.relationships) == sum(len(t) == 3 for t in triples)
