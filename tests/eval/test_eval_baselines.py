"""Hybrid baselines (RRF and weighted dense + BM25), passage recall@k, per-question records and the paired test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.cli import main
from g2cons_plugins.errors import InputError
from g2cons_plugins.eval.evaluation import (
    METHODS,
    BM25Units,
    _method_fn,
    evaluate_retrieval,
    paired_test,
    passage_recall,
    rrf_scores,
    weighted_scores,
)

QUESTIONS = [
    {"id": "q1", "question": "Where was Marie Curie born?", "answers": ["Warsaw"], "supporting_passage_ids": ["c1"]},
    {
        "id": "q2",
        "question": "Which river flows into the Baltic Sea?",
        "answers": ["Vistula"],
        "supporting_passage_ids": ["c7", "c12"],
    },
    {"id": "q3", "question": "Who discovered radioactivity?", "answers": ["Henri Becquerel"]},
]


@pytest.fixture(scope="module")
def index(corpus: list[dict[str, str]]) -> G2ConSIndex:
    return G2ConSIndex.build(corpus, embedder="hash", config=G2ConSConfig(unit_tokens=40))


def test_rrf_is_reciprocal_rank_sum() -> None:
    dense = np.array([0.9, 0.1, 0.5])
    lexical = np.array([0.0, 3.0, 1.0])
    got = rrf_scores(dense, lexical, k=60)
    # ranks (1-based): dense 1,3,2; lexical 3,1,2
    want = [1 / 61 + 1 / 63, 1 / 63 + 1 / 61, 1 / 62 + 1 / 62]
    assert got == pytest.approx(want)
    # a unit first in both lists beats every other
    assert np.argmax(rrf_scores(np.array([1.0, 0.0, 0.2]), np.array([5.0, 0.0, 1.0]))) == 0


def test_weighted_hybrid_interpolates_normalised_scores() -> None:
    dense = np.array([0.2, 0.6, 1.0])
    lexical = np.array([10.0, 0.0, 5.0])
    assert weighted_scores(dense, lexical, 1.0) == pytest.approx([0.0, 0.5, 1.0])
    assert weighted_scores(dense, lexical, 0.0) == pytest.approx([1.0, 0.0, 0.5])
    assert weighted_scores(dense, np.zeros(3), 0.5) == pytest.approx([0.0, 0.25, 0.5])  # constant side adds 0


def test_hybrid_ranks_fuse_dense_and_bm25(index: G2ConSIndex) -> None:
    assert {"hybrid", "hybrid-weighted"} <= set(METHODS)
    cache: dict[str, Any] = {}
    q = QUESTIONS[0]["question"]
    qv = index.embedder.embed([q])[0]
    items = _method_fn("hybrid", index, cache)(q, qv, 10_000)
    assert items and {x.reason["via"] for x in items} == {"hybrid-rrf"}
    assert sum(x.n_tokens for x in items) <= 10_000
    bm = cache["bm25"]
    assert isinstance(bm, BM25Units)
    fused = rrf_scores(index.stored.unit_vecs @ qv, bm.scores(q))
    want = [index.stored.units[u].id for u in np.lexsort((np.arange(len(fused)), -fused))]
    assert [x.unit_id for x in items] == want[: len(items)]
    w = _method_fn("hybrid-weighted", index, cache)(q, qv, 200)
    assert w and sum(x.n_tokens for x in w) <= 200 and w[0].reason["via"] == "hybrid-weighted"


def test_passage_recall_at_k_matches_ranking(index: G2ConSIndex) -> None:
    records: list[dict[str, Any]] = []
    rows = passage_recall(index, QUESTIONS, ["dense", "bm25"], ks=(1, 2, 10), per_question=records)
    assert [r["method"] for r in rows] == ["dense", "bm25"]
    for r in rows:
        assert r["n_with_support"] == 2  # q3 has no gold ids
        assert 0 <= r["recall@1"] <= r["recall@2"] <= r["recall@10"] <= 100
    # recompute bm25 recall@1 by hand: first distinct passage of the BM25 ranking
    bm = BM25Units(index)
    shares = []
    for q in QUESTIONS[:2]:
        s = bm.scores(q["question"])
        first = index.stored.units[int(np.lexsort((np.arange(len(s)), -s))[0])].parent_id
        shares.append(float(first in q["supporting_passage_ids"]) / len(q["supporting_passage_ids"]))
    assert rows[1]["recall@1"] == pytest.approx(100 * np.mean(shares))
    assert {r["budget"] for r in records} == {"rank"} and len(records) == 4
    assert passage_recall(index, [QUESTIONS[2]], ["dense"]) == []  # no gold ids: no rows


def test_per_question_records_and_paired_test(index: G2ConSIndex) -> None:
    records: list[dict[str, Any]] = []
    rows = evaluate_retrieval(index, QUESTIONS, ["dense", "hybrid"], [60, 400], per_question=records)
    assert len(records) == 2 * 2 * len(QUESTIONS)
    for r in rows:  # CR of each row is the mean of its per-question hits
        hits = [x["hit"] for x in records if x["method"] == r["method"] and x["budget"] == r["budget"]]
        assert r["context_recall"] == pytest.approx(100 * sum(hits) / len(hits))
    t = paired_test(records, "hybrid", "dense", 400)
    assert t["n"] == len(QUESTIONS) and t["wins"] + t["losses"] <= t["n"] and 0 <= t["p_value"] <= 1
    same = paired_test(records, "dense", "dense", 60)
    assert same["wins"] == same["losses"] == 0 and same["p_value"] == 1.0
    synthetic = [{"question_id": i, "method": m, "budget": 1, "hit": m == "a"} for i in range(10) for m in ("a", "b")]
    t = paired_test(synthetic, "a", "b", 1)
    assert (t["wins"], t["losses"], t["mean_diff"]) == (10, 0, 100.0) and t["p_value"] < 0.01
    with pytest.raises(InputError, match="no common questions"):
        paired_test(records, "dense", "nope", 60)


def test_eval_cli_per_question_and_recall(tmp_path: Path, corpus: list[dict[str, str]]) -> None:
    cpath, qpath = tmp_path / "c.jsonl", tmp_path / "q.jsonl"
    cpath.write_text("".join(json.dumps(c) + "\n" for c in corpus))
    qpath.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    out, pq, rep = tmp_path / "r.json", tmp_path / "pq.jsonl", tmp_path / "rep"
    args = ["eval", "--corpus", str(cpath), "--questions", str(qpath), "--methods", "dense,bm25,hybrid,concept"]
    args += ["--budgets", "100,300", "--embedder", "hash", "--quiet", "--out", str(out), "--per-question", str(pq)]
    assert main([*args, "--report", str(rep)]) == 0
    data = json.loads(out.read_text())
    assert [r["method"] for r in data["recall"]] == ["dense", "bm25", "hybrid", "concept"]
    assert {(p["b"], p["budget"]) for p in data["paired"]} >= {("hybrid", 100), ("bm25", "rank")}
    lines = [json.loads(x) for x in pq.read_text().splitlines()]
    assert len(lines) == 4 * 2 * 3 + 4 * 2  # per budget all questions, plus recall records for gold questions
    text = (rep / "report.md").read_text()
    assert "recall@5" in text and "All gold passages found" in text
    assert main([*args]) == 0  # rerun may replace its own per-question file
    (tmp_path / "user.jsonl").write_text('{"mine": 1}\n')
    bad = [*args[:-2], "--per-question", str(tmp_path / "user.jsonl")]
    assert main(bad) != 0
    assert (tmp_path / "user.jsonl").read_text() == '{"mine": 1}\n'


def test_concept_dense_is_the_bridge_without_lexical_scores(index: G2ConSIndex) -> None:
    cache: dict[str, Any] = {}
    q = QUESTIONS[1]["question"]
    qv = index.embedder.embed([q])[0]
    _method_fn("concept-dense", index, cache)(q, qv, 300)
    cfg = cache["concept-dense"].config
    assert cfg.retrieval.lexical_weight == 0.0 and cfg.retrieval.lexical_seeds == 0 and cfg.strategy == "bridge"
    assert index.config.retrieval.lexical_seeds == 1  # the default: one BM25 seed

