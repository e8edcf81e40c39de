"""Development sweep of concept-path variants (lexical seeds, hybrid scores, seeds, bridge bonus) against
dense, BM25 and the hybrids on one corpus, sharing one build. Prints a Markdown table of CR (and recall@5 where
gold passages exist) per variant and budget, and writes JSON.

    python benchmarks/default_vs_baselines/concept_variants.py \
        --corpus C --questions Q --embedder wordllama --out sweep.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.embedders import CachedEmbedder, get_embedder
from g2cons_plugins.eval.evaluation import evaluate_retrieval, load_questions, passage_recall, read_jsonl

# absolute settings (independent of the current defaults)
_DENSE = {"lexical_weight": 0.0, "lexical_seeds": 0, "n_seed_units": 3, "bridge_bonus": 0.2, "hybrid_seeds": True,
          "score_scale": "cosine"}
RIVALS = ["dense", "bm25", "hybrid", "hybrid-weighted"]
VARIANTS: dict[str, dict[str, Any]] = {
    "concept": {},  # the current default
    "ppr": {"strategy": "ppr"},  # TERAG-style personalised PageRank fused with dense
    "no-names": {"entity_weight": 0.0},  # the default before names (entity_weight) had a say in the head
    "names1": {"entity_weight": 1.0},
    "names3": {"entity_weight": 3.0},
    "names2-h0": {"entity_weight": 2.0, "entity_head_share": 0.0},
    "names2-h1": {"entity_weight": 2.0, "entity_head_share": 1.0},
    "bridge-dense": _DENSE,  # the bridge on cosines alone (concept-dense)
    "lexseed1": {**_DENSE, "lexical_seeds": 1},
    "lexseed2": {**_DENSE, "lexical_seeds": 2},
    "lexseed3": {**_DENSE, "lexical_seeds": 3},
    "lexseed2+hyb0.1": {**_DENSE, "lexical_seeds": 2, "lexical_weight": 0.1},
    "lexseed2+bonus0.3": {**_DENSE, "lexical_seeds": 2, "bridge_bonus": 0.3},
    "hyb0.1": {**_DENSE, "lexical_weight": 0.1},
    "hyb0.2": {**_DENSE, "lexical_weight": 0.2},
    "hyb0.3": {**_DENSE, "lexical_weight": 0.3},
    "hyb0.2-denseseeds": {**_DENSE, "lexical_weight": 0.2, "hybrid_seeds": False},
    "hyb0.3-denseseeds": {**_DENSE, "lexical_weight": 0.3, "hybrid_seeds": False},
    "hyb0.2+lexseed2": {**_DENSE, "lexical_weight": 0.2, "lexical_seeds": 2},
    "hyb0.3+lexseed2": {**_DENSE, "lexical_weight": 0.3, "lexical_seeds": 2},
    "hyb0.2+seeds5": {**_DENSE, "lexical_weight": 0.2, "n_seed_units": 5},
    "hyb0.2+bonus0.3": {**_DENSE, "lexical_weight": 0.2, "bridge_bonus": 0.3},
    "lexseed1+spread": {**_DENSE, "lexical_seeds": 1, "score_scale": "spread"},
    "lexseed1+spread+hyb0.075": {**_DENSE, "lexical_seeds": 1, "score_scale": "spread", "lexical_weight": 0.075},
    "lexseed1+spread+hyb0.1": {**_DENSE, "lexical_seeds": 1, "score_scale": "spread", "lexical_weight": 0.1},
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--budgets", default="1000,2000")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--per-question", default=None, help="JSONL of per-question hits and recall@k")
    ap.add_argument("--index-cache", default=None, help="a saved index: loaded when present, else built and saved")
    a = ap.parse_args()
    budgets = [int(b) for b in a.budgets.split(",")]
    questions = load_questions(a.questions)
    base = _base(a)
    rows: list[dict[str, Any]] = []
    pq: list[dict[str, Any]] = []
    rows += evaluate_retrieval(base, questions, RIVALS, budgets, per_question=pq)
    recall = {r["method"]: r for r in passage_recall(base, questions, RIVALS, per_question=pq)}
    for name in a.variants.split(","):
        cfg: G2ConSConfig = base.config.with_(**VARIANTS[name])
        idx = G2ConSIndex(base.stored, base.embedder, cfg, base.tokenizer)
        t0 = time.perf_counter()
        mine: list[dict[str, Any]] = []
        for r in evaluate_retrieval(idx, questions, ["concept"], budgets, per_question=mine):
            r["method"] = name
            rows.append(r)
        for r in passage_recall(idx, questions, ["concept"], per_question=mine):
            recall[name] = {**r, "method": name}
        pq += [{**r, "method": name} for r in mine]
        print(f"{name}: {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    _table(rows, recall, budgets)
    if a.out:
        Path(a.out).write_text(json.dumps({"rows": rows, "recall": list(recall.values()), "args": vars(a)}, indent=1))
    if a.per_question:
        Path(a.per_question).write_text("".join(json.dumps(r) + "\n" for r in pq))
    return 0


def _base(a: argparse.Namespace) -> G2ConSIndex:
    """The default build of the corpus (from ``--index-cache`` when saved there before)."""
    if a.index_cache and Path(a.index_cache).exists():
        return G2ConSIndex.load(a.index_cache, embedder=CachedEmbedder(get_embedder(a.embedder), cache_dir=a.cache_dir))
    base = G2ConSIndex.build(read_jsonl(a.corpus), embedder=a.embedder, cache_dir=a.cache_dir)
    if a.index_cache:
        base.save(a.index_cache)
    return base


def _table(rows: list[dict[str, Any]], recall: dict[str, dict[str, Any]], budgets: list[int]) -> None:
    """Markdown: CR per budget (and its margin over the best rival), recall@2 / @5 (and the recall@2 margin)."""
    methods = list(dict.fromkeys(r["method"] for r in rows))
    cr = {(r["method"], r["budget"]): r["context_recall"] for r in rows}
    best = {b: max(cr[(m, b)] for m in RIVALS) for b in budgets}
    best2 = max((recall[m]["recall@2"] for m in RIVALS if m in recall), default=None)
    head = ["method", *(f"CR@{b}" for b in budgets), *(f"+best@{b}" for b in budgets), "recall@2", "+best r@2",
            "recall@5", "p50 ms @" + str(budgets[-1])]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    lat = {(r["method"], r["budget"]): r["latency_ms_p50"] for r in rows}
    for m in methods:
        r2, r5 = recall.get(m, {}).get("recall@2"), recall.get(m, {}).get("recall@5", "")
        d2 = "" if r2 is None or best2 is None else f"{r2 - best2:+.1f}"
        vals = [m, *(str(cr[(m, b)]) for b in budgets), *(f"{cr[(m, b)] - best[b]:+.1f}" for b in budgets),
                "" if r2 is None else str(r2), d2, str(r5), str(lat[(m, budgets[-1])])]
        print("| " + " | ".join(vals) + " |")


if __name__ == "__main__":
    raise SystemExit(main())
