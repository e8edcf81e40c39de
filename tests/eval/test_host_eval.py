"""Host-KG plug-ins, the entity-mention search behind the LLM-free host retriever, and the kappa x lambda sweep
(core only: a deterministic fake host stands in for a framework)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from g2cons_plugins import G2ConSIndex, HostItem
from g2cons_plugins.errors import InputError
from g2cons_plugins.eval.host_eval import evaluate_host
from g2cons_plugins.hosts import HostBuildCost, HostKG, available_hosts, load_host
from g2cons_plugins.hosts.entity_graph import EntityGraphSearch
from g2cons_plugins.selection import SelectionReport

MENTIONS = {
    "a": ["Green", "Steve Hillage"],  # question entity + bridge
    "b": ["Steve Hillage", "Miquette Giraudy"],  # reached through the bridge only: hop 2
    "c": ["Green"],
    "d": ["Hub"],
    "e": ["Hub", "Steve Hillage"],
}
TEXTS = {
    "a": "Green is an album by Steve Hillage.",
    "b": "Steve Hillage is married to Miquette Giraudy, his spouse.",
    "c": "Green is a colour.",
    "d": "Hub text.",
    "e": "Hub text about Steve Hillage.",
}


def test_entity_search_hop1_then_hop2_and_ranking() -> None:
    s = EntityGraphSearch(MENTIONS, TEXTS, hops=1)
    assert [h.chunk_id for h in s.search("Who is the spouse of the Green performer?", ["Green"])] == ["a", "c"]
    s2 = EntityGraphSearch(MENTIONS, TEXTS, hops=2)
    hits = s2.search("Who is the spouse of the Green performer?", ["green", "Nobody"])
    ids = [h.chunk_id for h in hits]
    assert set(ids) == {"a", "b", "c", "e"}  # b and e reached through "Steve Hillage"; d shares nothing
    b = next(h for h in hits if h.chunk_id == "b")
    assert b.hop == 2 and b.bridges == ("Steve Hillage",) and b.entities == ()
    # seeds held count entity_weight each; "spouse" (a query word) lifts b above e at hop 2
    assert ids.index("b") < ids.index("e")
    assert all(h.hop == 1 for h in hits[:2])
    assert s2.search("anything", ["Unknown"]) == []
    assert len(s2.search("Green spouse", ["Green"], limit=2)) == 2


def test_entity_search_skips_hub_entities() -> None:
    mentions = {f"h{i}": ["Hub"] for i in range(5)} | {"q": ["Query", "Hub"]}
    texts = {k: "x" for k in mentions}
    assert {h.chunk_id for h in EntityGraphSearch(mentions, texts, max_fanout=3).search("x", ["Query"])} == {"q"}
    assert len(EntityGraphSearch(mentions, texts, max_fanout=10).search("x", ["Query"])) == 6


def test_entity_search_bad_input() -> None:
    with pytest.raises(InputError, match="hops"):
        EntityGraphSearch(MENTIONS, TEXTS, hops=3)
    with pytest.raises(InputError, match="no text"):
        EntityGraphSearch({"zz": ["X"]}, {})


def test_load_host_errors_name_the_problem() -> None:
    with pytest.raises(InputError, match="unknown host 'nope'"):
        load_host("nope")
    with pytest.raises(InputError, match="cannot load host"):
        load_host("no_such_module_xyz:factory")
    with pytest.raises(InputError, match="does not implement HostKG"):
        load_host("builtins:dict")
    names = available_hosts()
    assert names == sorted(names) and "nope" not in names


def test_load_host_module_factory_passes_options(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    mod = types.ModuleType("fake_host_plugin")
    mod.make = lambda **kw: GoldHost(kw["questions"])  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_host_plugin", mod)
    host = load_host("fake_host_plugin:make", questions=[{"question": "q", "answers": ["a"]}])
    assert isinstance(host, GoldHost) and host.answers == {"q": ["a"]}


class GoldHost:
    """Returns, for each question, the chunks whose text holds its answer (an oracle), built over kept chunks."""

    name = "gold"
    label = "test oracle host"
    prompt_tokens_per_call = 50

    def __init__(self, questions: Sequence[dict[str, Any]]) -> None:
        self.answers = {q["question"]: q["answers"] for q in questions}
        self.builds: list[SelectionReport] = []
        self.kept: set[str] = set()
        self.index: G2ConSIndex | None = None

    def build(self, index: G2ConSIndex, selection: SelectionReport, show_progress: bool = False) -> HostBuildCost:
        self.builds.append(selection)
        self.index, self.kept = index, set(selection.kept_ids)
        tokens = sum(index.count_tokens([index.chunk(c).text for c in selection.kept_ids]))
        tokens += self.prompt_tokens_per_call * len(self.kept)  # an extractor sends its prompt with every chunk
        return HostBuildCost(len(self.kept), tokens, 7 * len(self.kept), len(self.kept), 0.0, True, {"entities": 1})

    def retrieve(self, query: str) -> list[HostItem]:
        assert self.index is not None
        out = []
        for c in self.index.stored.chunks:
            if c.id in self.kept and any(a.lower() in c.text.lower() for a in self.answers[query]):
                out.append(HostItem(chunk_id=c.id, text=c.text))
        return out


def test_evaluate_host_sweep_with_an_oracle_host(corpus: list[dict[str, str]]) -> None:
    index = G2ConSIndex.build(corpus, embedder="hash")
    questions = [
        {"question": "Where was Marie Curie born?", "answers": ["Warsaw"], "supporting_passage_ids": ["c1"]},
        {"question": "Which sea does the Vistula flow into?", "answers": ["Baltic Sea"]},
        {"question": "Who discovered radioactivity?", "answers": ["Henri Becquerel"]},
    ]
    host = GoldHost(questions)
    assert isinstance(host, HostKG)
    res = evaluate_host(index, questions, host, [0.5, 1.0], [0.0, 1.0], [5, 400], price_in_per_mtok=1.0)
    assert [b.kappa for b in host.builds] == [0.5, 1.0]
    builds = {b["kappa"]: b for b in res["builds"]}
    assert builds[1.0]["share_of_full_input_tokens"] == pytest.approx(1.0, abs=1e-3)
    # kappa by tokens is a share of the extraction input, prompt included (the prompt is 50 of ~70 tokens here)
    assert 0.4 < builds[0.5]["share_of_full_input_tokens"] <= 0.5
    assert res["full_build"]["prompt_tokens_per_call"] == 50
    assert builds[0.5]["kept_chunks"] < builds[1.0]["kept_chunks"]
    assert builds[1.0]["usd"] == pytest.approx(
        (builds[1.0]["input_tokens"] + 0.6 * builds[1.0]["output_tokens"]) / 1e6, abs=1e-4
    )
    row = {(r["kappa"], r["method"], r["budget"], r["lambda"], r["spill"]): r for r in res["sweep"]}
    concept = {r["budget"]: r["context_recall"] for r in res["concept"]}
    # the oracle over every chunk finds every answer; lambda 1 (host only, hard caps) equals the host alone
    assert row[(1.0, "host", 400, None, None)]["context_recall"] == 100.0
    assert row[(1.0, "fused", 400, 1.0, False)]["context_recall"] == 100.0
    assert row[(1.0, "host", 400, None, None)]["support_recall"] == 100.0
    # lambda 0 with hard caps: the host gets no budget; only items both paths found can differ from concept
    assert row[(1.0, "fused", 400, 0.0, False)]["context_recall"] >= concept[400]
    # beta is a hard budget for the host too: no passage fits in 5 tokens
    assert row[(1.0, "host", 5, None, None)]["context_recall"] == 0.0
    # at kappa 0.5 the oracle only knows the kept chunks: it can only lose answers
    assert (
        row[(0.5, "host", 400, None, None)]["context_recall"] <= row[(1.0, "host", 400, None, None)]["context_recall"]
    )
    # spill only adds to the hard-caps context
    for lam in (0.0, 1.0):
        assert (
            row[(1.0, "fused", 400, lam, True)]["context_recall"]
            >= row[(1.0, "fused", 400, lam, False)]["context_recall"]
        )
    # fused latency includes the host's
    assert (
        row[(1.0, "fused", 400, 1.0, True)]["latency_ms_p50"] >= row[(1.0, "host", 400, None, None)]["latency_ms_p50"]
    )
    with pytest.raises(InputError, match="in \\[0, 1\\]"):
        evaluate_host(index, questions, host, [1.5], [0.0], [400])


def test_host_pivot_and_kept_contexts(corpus: list[dict[str, str]]) -> None:
    from g2cons_plugins.eval.report import host_pivot

    index = G2ConSIndex.build(corpus, embedder="hash")
    questions = [{"question": "Where was Marie Curie born?", "answers": ["Warsaw"]}]
    res = evaluate_host(index, questions, GoldHost(questions), [1.0], [0.0, 0.5], [400], keep=(1.0, 0.5, True))
    assert set(res["contexts"]) == {("host-kg", 400), ("fused", 400)}
    assert "Warsaw" in res["contexts"][("host-kg", 400)][0]
    res["main"] = {"kappa": 1.0, "lambda": 0.5, "spill": True}
    rows, cols = host_pivot(res)
    assert cols == [
        "kappa", "budget", "spill", "host", "concept", "novel@0", "novel@0.5", "share@0", "share@0.5", "score@0.6",
        "fused@0", "fused@0.5",
    ]  # fmt: skip
    assert [(r["kappa"], r["budget"], r["spill"]) for r in rows] == [(1.0, 400, False), (1.0, 400, True)]
    want = {(x["spill"], x["lambda"]): x["context_recall"] for x in res["sweep"] if x["method"] == "fused"}
    score = [x["context_recall"] for x in res["sweep"] if x["method"] == "fused-score"]
    share = {x["lambda"]: x["context_recall"] for x in res["sweep"] if x["method"] == "fused-share"}
    novel = {x["lambda"]: x["context_recall"] for x in res["sweep"] if x["method"] == "fused-novel"}
    assert len(score) == 1 and set(share) == {0.0, 0.5} and set(novel) == {0.0, 0.5}
    for r in rows:
        assert r["host"] == 100.0 and r["fused@0.5"] == want[(r["spill"], 0.5)] and r["score@0.6"] == score[0]
        assert r["share@0.5"] == share[0.5] and r["novel@0.5"] == novel[0.5]


def test_report_verdicts_say_where_fusion_wins_and_where_not() -> None:
    from g2cons_plugins.eval.report import cr_pivot, verdicts

    rows = [
        {"method": m, "budget": b, "context_recall": v}
        for m, b, v in [
            ("dense", 1000, 50.0), ("concept", 1000, 60.0), ("fused", 1000, 59.0),
            ("dense", 2000, 61.0), ("concept", 2000, 65.0), ("fused", 2000, 66.5), ("host-kg", 2000, 70.0),
        ]
    ]  # fmt: skip
    lines = verdicts({"results": rows})
    assert "- fused 59.0 is BELOW every other method (concept 60.0) by -1.0 points at beta 1000" in lines
    assert "- fused 66.5 is BELOW its better path (host-kg 70.0) by -3.5 points at beta 2000" in lines
    assert "- concept 65.0 is above dense (dense 61.0) by +4.0 points at beta 2000" in lines
    assert "- fused 59.0 is BELOW its better path (concept 60.0) by -1.0 points at beta 1000" in lines
    tie = verdicts({"results": [{"method": "fused", "budget": 5, "context_recall": 1.0},
                                {"method": "concept", "budget": 5, "context_recall": 1.0}]})  # fmt: skip
    assert "- fused 1.0 ties its better path (concept 1.0) at beta 5" in tie
    table, cols = cr_pivot(rows)
    assert cols == ["method", "1000", "2000"]
    assert {r["method"]: r.get("2000") for r in table}["host-kg"] == 70.0
    assert {r["method"]: r.get("1000") for r in table}["host-kg"] is None


def test_selection_downstream_builds_one_host_kg_per_selector(corpus: list[dict[str, str]]) -> None:
    from g2cons_plugins.eval.host_eval import DOWNSTREAM_SELECTORS, selection_downstream

    index = G2ConSIndex.build(corpus, embedder="hash")
    questions = [
        {"question": "Where was Marie Curie born?", "answers": ["Warsaw"]},
        {"question": "Who discovered radioactivity?", "answers": ["Henri Becquerel"]},
    ]
    host = GoldHost(questions)
    rows = selection_downstream(index, questions, host, kappas=[0.5, 1.0], budgets=[400])
    assert len(host.builds) == 2 * len(DOWNSTREAM_SELECTORS) and len(rows) == 2 * len(DOWNSTREAM_SELECTORS)
    assert [b.selector for b in host.builds[:4]] == ["coverage", "length-matched-random", "shortest", "uniform"]
    default = host.builds[0]
    matched = host.builds[1]
    assert len(matched.kept_ids) == len(default.kept_ids)  # the same number of chunks, random ones
    tokens = dict(zip([c.id for c in index.stored.chunks], index.stored.chunk_tokens.tolist(), strict=True))
    for r, b in zip(rows, host.builds, strict=True):
        assert 0 <= r["host_cr"] <= 100 and 0 <= r["fused_cr"] <= 100
        # cost of the build: one call per kept chunk, its tokens plus the host's prompt
        assert r["calls"] == len(b.kept_ids)
        assert r["input_tokens"] == sum(tokens[c] for c in b.kept_ids) + 50 * len(b.kept_ids)
        # per-question hits agree with the rate
        assert len(r["host_hits"]) == len(questions) and set(r["host_hits"] + r["fused_hits"]) <= {"0", "1"}
        assert r["host_cr"] == 100.0 * r["host_hits"].count("1") / len(questions)
        assert r["fused_cr"] == 100.0 * r["fused_hits"].count("1") / len(questions)
        if r["kappa"] == 1.0:  # everything kept: the oracle host finds every answer
            assert r["host_cr"] == 100.0 and r["kept_token_share"] == 1.0 and r["input_share"] == 1.0
    with pytest.raises(InputError, match="downstream selectors"):
        selection_downstream(index, questions, host, selectors=["best"])
    # any selector of selection.SELECTORS can be judged
    host2 = GoldHost(questions)
    rows = selection_downstream(index, questions, host2, kappas=[0.5], budgets=[400], selectors=["concept_coverage"])
    assert [b.selector for b in host2.builds] == ["concept_coverage"] and rows[0]["selector"] == "concept_coverage"
