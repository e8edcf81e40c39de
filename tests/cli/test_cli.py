"""The g2cons command line and the offline demo, on the bundled MuSiQue excerpt."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from g2cons_plugins import G2ConSIndex
from g2cons_plugins.cli import main
from g2cons_plugins.eval.evaluation import answer_in_context, load_questions, normalize_answer, read_jsonl

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "data" / "musique_excerpt_corpus.jsonl"
QUESTIONS = ROOT / "examples" / "data" / "musique_excerpt_questions.jsonl"


def test_normalize_answer_is_squad() -> None:
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("an Apple a day") == "apple day"
    assert answer_in_context(["G. Stanley Hall"], "... founded by g stanley hall in 1892")
    assert answer_in_context(["Hall"], "a hallway")  # plain substring semantics, as the papers define CR


def test_eval_writes_contract_and_cr_matches_manual(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    rc = main(
        [
            "eval",
            "--corpus",
            str(CORPUS),
            "--questions",
            str(QUESTIONS),
            "--methods",
            "dense,concept",
            "--budgets",
            "300,1000",
            "--embedder",
            "hash",
            "--limit",
            "10",
            "--quiet",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    data = json.loads(out.read_text())
    assert {(r["method"], r["budget"]) for r in data["results"]} == {
        (m, b) for m in ("dense", "concept") for b in (300, 1000)
    }
    for r in data["results"]:
        assert 0 <= r["context_recall"] <= 100 and r["n_questions"] == 10 and "support_recall" in r
    assert data["settings"]["embedder"] == "hash-64" and data["settings"]["config"]["beta"] == 12000
    # recompute dense CR@1000 by hand
    idx = G2ConSIndex.build(read_jsonl(CORPUS), embedder="hash")
    qs = load_questions(QUESTIONS)[:10]
    hits = sum(
        answer_in_context(
            q["answers"], "\n".join(x.text for x in idx.retrieve(q["question"], beta=1000, strategy="dense"))
        )
        for q in qs
    )
    row = next(r for r in data["results"] if r["method"] == "dense" and r["budget"] == 1000)
    assert row["context_recall"] == pytest.approx(100 * hits / 10)
    assert "| dense | 300 |" in capsys.readouterr().out


def test_eval_bad_input_exits_nonzero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--corpus", str(CORPUS), "--questions", str(QUESTIONS), "--methods", "magic", "--quiet"]) == 2
    assert "unknown methods ['magic']" in capsys.readouterr().err
    assert main(["eval", "--corpus", str(tmp_path / "none.jsonl"), "--questions", str(QUESTIONS), "--quiet"]) == 2
    assert "file not found" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "text": "ok"}\nnot json\n')
    assert main(["eval", "--corpus", str(bad), "--questions", str(QUESTIONS), "--quiet"]) == 2
    assert "bad.jsonl:2: not valid JSON" in capsys.readouterr().err


def test_build_query_select_roundtrip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph = tmp_path / "g"
    assert main(["build", str(CORPUS), "--graph", str(graph), "--embedder", "hash", "--quiet"]) == 0
    capsys.readouterr()
    assert (
        main(["query", str(graph), "Who founded the American Psychological Association?", "--budget", "500", "--json"])
        == 0
    )
    items = json.loads(capsys.readouterr().out)
    assert items and sum(i["n_tokens"] for i in items) <= 500 and all("reason" in i for i in items)
    rep = tmp_path / "sel.json"
    assert main(["select", str(graph), "--kappa", "0.5", "--out", str(rep)]) == 0
    report = json.loads(rep.read_text())
    assert report["kept_tokens"] <= 0.5 * report["total_tokens"] and report["n_kept"] + report["n_dropped"] == 400
    assert main(["query", str(tmp_path / "missing"), "q"]) == 2


def test_offline_demo_runs_and_respects_budget(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py"), "--budget", "1500"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        cwd=tmp_path,
    )
    out = res.stdout
    assert "== 1. concept graph" in out and "kept" in out and "STAND-IN host" in out
    line = next(x for x in out.splitlines() if "<= beta 1500" in x)
    used = int(line.split(" tokens <= beta")[0].split(",")[-1].strip())
    assert used <= 1500
    # what it says: isolated concepts explained, the prompt priced, the gold answer found or not, lambda only
    # under the rule that uses it, and the files it wrote (a user can open them afterwards)
    assert "(isolated: concepts with no edge" in out
    assert "1,736-token prompt" in out and "$0.15/1M input tokens" in out
    assert "the gold answer 'G. Stanley Hall' is in this context" in out and "in the fused context" in out
    fusion_line = next(x for x in out.splitlines() if x.startswith("== 4."))
    assert ("lambda" in fusion_line) == ("'ensemble'" in fusion_line)
    demo = tmp_path / "g2cons-demo"
    report = json.loads((demo / "selection_report.json").read_text(encoding="utf-8"))
    assert report["prompt_tokens_per_call"] == 1736 and report["price_per_mtok"] == 0.15
    assert "G. Stanley Hall" in (demo / "context.md").read_text(encoding="utf-8")
    assert "context_recall" in (demo / "recall.md").read_text(encoding="utf-8")
    assert G2ConSIndex.load(demo / "graph").chunks
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("a user's file", encoding="utf-8")
    bad = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py"), "--out", "mine"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert bad.returncode != 0 and "not an earlier g2cons output" in bad.stderr
    assert (tmp_path / "mine" / "notes.txt").read_text(encoding="utf-8") == "a user's file"


def test_eval_report_writes_markdown_and_plots(tmp_path: Path) -> None:
    rep = tmp_path / "report"
    rc = main(
        [
            "eval",
            "--corpus",
            str(CORPUS),
            "--questions",
            str(QUESTIONS),
            "--methods",
            "dense,concept",
            "--budgets",
            "500,1000",
            "--embedder",
            "hash",
            "--limit",
            "8",
            "--quiet",
            "--selection",
            "--kappas",
            "0.5",
            "--report",
            str(rep),
        ]
    )
    assert rc == 0
    text = (rep / "report.md").read_text()
    data = json.loads((rep / "results.json").read_text())
    for r in data["results"]:  # every measured row is in the report's table
        assert f"| {r['method']} | {r['budget']} | {r['context_recall']} |" in text
    assert "![CR vs budget](cr.png)" in text and "selection.png" in text
    for png in ("cr.png", "selection.png"):
        assert (rep / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_table4_ablations_are_eval_methods(corpus: list[dict[str, str]]) -> None:
    """ablation-A..D are the paper walk with one change each (Table 4), measured like any other method."""
    from g2cons_plugins.eval.evaluation import ABLATIONS, METHODS, _method_fn

    index = G2ConSIndex.build(corpus, embedder="hash")
    cache: dict[str, object] = {}
    qv = index.embedder.embed(["Marie Curie radium Paris"])[0]
    for name in ABLATIONS:
        assert name in METHODS
        _method_fn(name, index, cache)("Marie Curie radium Paris", qv, 300)
    paper = _method_fn("concept-paper", index, cache)
    assert paper("Marie Curie radium Paris", qv, 300)
    cfg = {k: v.config for k, v in cache.items()}  # type: ignore[attr-defined]
    assert all(c.mode == "paper" and c.strategy == "paper" for c in cfg.values())
    assert cfg["ablation-A"].graph.cooccurrence == "sentence" and cfg["ablation-B"].theta_sem == -1.0
    assert cfg["ablation-C"].graph.vector_level == "chunk" and cfg["ablation-D"].retrieval.rerank == "naive"
    # B keeps every co-occurring pair: at least as many edges as the paper walk's graph
    assert cache["ablation-B"].stats.n_edges >= cache["paper"].stats.n_edges  # type: ignore[attr-defined]
    items = _method_fn("ablation-D", index, cache)("Marie Curie radium Paris", qv, 300)
    assert items and {x.reason["via"] for x in items} == {"naive"}
