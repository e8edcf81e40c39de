"""The complementarity report of ``g2cons eval --host``: per budget, the questions only the host hits, only the
concept path, both, the union and the fused context, counted from the per-question hits."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from g2cons_plugins import HostItem
from g2cons_plugins.cli import main
from g2cons_plugins.errors import InputError
from g2cons_plugins.eval.report import COMPLEMENTARITY_COLUMNS, complementarity, complementarity_table
from g2cons_plugins.hosts import HostBuildCost


def _row(budget: int, hits: str) -> dict[str, Any]:
    return {"budget": budget, "hits": hits, "context_recall": 100.0 * hits.count("1") / len(hits)}


def test_counts_and_shares_per_budget() -> None:
    concept = [_row(1000, "110010"), _row(2000, "111010")]
    host = [_row(1000, "101000"), _row(2000, "101001")]
    fused = [_row(1000, "100011"), _row(2000, "111011")]
    rows = complementarity(concept, host, fused, kappa=0.5)
    assert [r["budget"] for r in rows] == [1000, 2000]
    r = rows[0]
    # concept 110010, host 101000: host-only q2, concept-only q1 and q4, both q0, union q0 q1 q2 q4
    assert (r["host_only"], r["concept_only"], r["both"], r["union"]) == (1, 2, 1, 4)
    # fused 100011: misses q1 and q2 of the union, finds q5 that neither path has
    assert (r["fused"], r["fused_missed"], r["fused_beyond"]) == (3, 2, 1)
    assert r["n_questions"] == 6 and r["kappa"] == 0.5
    assert r["host_only_pct"] == pytest.approx(16.67) and r["union_pct"] == pytest.approx(66.67)
    r = rows[1]
    assert (r["host_only"], r["concept_only"], r["both"], r["union"], r["fused"]) == (1, 2, 2, 5, 5)
    assert r["union"] == r["host_only"] + r["concept_only"] + r["both"]
    table = complementarity_table(rows)
    assert table.splitlines()[0] == "| " + " | ".join(COMPLEMENTARITY_COLUMNS) + " |"
    assert "| 0.5 | 1000 | 6 | 1 (16.67%) | 2 (33.33%) | 1 (16.67%) | 4 (66.67%) | 3 (50%) |" in table


def test_budgets_missing_from_a_path_are_left_out_and_bad_hits_named() -> None:
    rows = complementarity([_row(1000, "10"), _row(2000, "11")], [_row(2000, "01")], [_row(2000, "11")])
    assert [r["budget"] for r in rows] == [2000]
    with pytest.raises(InputError, match="host row at budget 1000 has no per-question hits"):
        complementarity([_row(1000, "10")], [{"budget": 1000}], [_row(1000, "10")])
    with pytest.raises(InputError, match="different lengths at budget 1000"):
        complementarity([_row(1000, "10")], [_row(1000, "101")], [_row(1000, "10")])


class _AnswerHost:
    """A host that returns the kept chunks holding one fixed answer, whatever the question."""

    name = "answer-host"
    label = "test host: returns the chunks that hold 'Baltic Sea'"
    prompt_tokens_per_call = 0

    def __init__(self) -> None:
        self.index: Any = None
        self.kept: list[str] = []

    def build(self, index: Any, selection: Any, show_progress: bool = False) -> HostBuildCost:
        self.index, self.kept = index, list(selection.kept_ids)
        return HostBuildCost(len(self.kept), 10 * len(self.kept), 0, len(self.kept), 0.0, True, {})

    def retrieve(self, query: str) -> list[HostItem]:
        return [HostItem(chunk_id=c) for c in self.kept if "Baltic Sea" in self.index.chunk(c).text]


def test_eval_prints_and_stores_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = types.ModuleType("complementarity_test_host")
    mod.make = lambda: _AnswerHost()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "complementarity_test_host", mod)
    corpus = tmp_path / "corpus.jsonl"
    texts = {
        "c1": "Marie Curie was born in Warsaw, the capital of Poland.",
        "c2": "The Vistula river flows north into the Baltic Sea.",
        "c3": "Henri Becquerel discovered radioactivity in 1896 in Paris.",
        "c4": "Pierre Curie worked with Marie Curie in Paris on radium.",
    }
    corpus.write_text("".join(json.dumps({"id": k, "text": v, "title": k}) + "\n" for k, v in texts.items()))
    questions = tmp_path / "questions.jsonl"
    qs = [
        {"question": "Which sea does the Vistula flow into?", "answers": ["Baltic Sea"]},
        {"question": "Where was Marie Curie born?", "answers": ["Warsaw"]},
        {"question": "What is the capital of France?", "answers": ["Lyon"]},
    ]
    questions.write_text("".join(json.dumps(q) + "\n" for q in qs))
    out = tmp_path / "out.json"
    rc = main(
        ["eval", "--corpus", str(corpus), "--questions", str(questions), "--methods", "concept", "--budgets", "1,400",
         "--embedder", "hash", "--host", "complementarity_test_host:make", "--host-kappas", "1.0", "--host-kappa",
         "1.0", "--lambdas", "0.5", "--quiet", "--out", str(out), "--report", str(tmp_path / "report")]
    )  # fmt: skip
    assert rc == 0
    printed = capsys.readouterr().out
    assert "What each path adds at kappa 1 (questions hit)" in printed
    assert "| " + " | ".join(COMPLEMENTARITY_COLUMNS) + " |" in printed
    report = (tmp_path / "report" / "report.md").read_text()
    assert "What each path adds at kappa 1" in report and "| 0 (0%) |" in report
    data = json.loads(out.read_text())
    rows = {r["budget"]: r for r in data["host"]["complementarity"]}
    assert set(rows) == {1, 400}
    main_rows = {(r["method"], r["budget"]): r for r in data["results"]}
    concept = {r["budget"]: r["hits"] for r in data["host"]["concept"]}
    for b, r in rows.items():
        host, fused = main_rows[("host-kg", b)]["hits"], main_rows[("fused", b)]["hits"]
        # the counts are those of this run's per-question hits (not a copy of one row's CR)
        assert r["host_only"] == sum(h == "1" and c == "0" for h, c in zip(host, concept[b], strict=True))
        assert r["union"] == sum("1" in (h, c) for h, c in zip(host, concept[b], strict=True))
        assert r["fused"] == fused.count("1")
        assert r["n_questions"] == 3 and r["kappa"] == 1.0
    # in 1 token nothing fits; at 400 the host finds the Baltic Sea question, no path the one about Lyon
    assert rows[1]["union"] == 0
    assert rows[400]["both"] + rows[400]["host_only"] == 1 and rows[400]["union"] <= 2
