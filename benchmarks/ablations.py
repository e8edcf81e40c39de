"""The paper's Table 4 ablations (A-D) of the paper-mode concept path, and the E2GraphRAG / TERAG strategies,
on one corpus, side by side. CR at several budgets.

    python benchmarks/ablations.py --embedder minilm --out benchmarks/results/ablations_musique_minilm.json
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.evaluation import evaluate_retrieval, format_table, load_questions, read_jsonl

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
VARIANTS: dict[str, dict[str, object]] = {
    "G2ConS paper walk": {"mode": "paper"},
    "A: sentence-level co-occurrence": {"mode": "paper", "cooccurrence": "sentence"},
    "B: no similarity filter": {"mode": "paper", "theta_sem": -1.0},
    "C: chunk-level concept vectors": {"mode": "paper", "vector_level": "chunk"},
    "D: naive reranking": {"mode": "paper", "rerank": "naive"},
    "default (bridge)": {},
    "e2 router (E2GraphRAG)": {"strategy": "e2"},
    "ppr (TERAG-style)": {"strategy": "ppr"},
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default="musique/ketrag500")
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--budgets", default="2000,4000,12000")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    corpus = read_jsonl(DATA / f"{args.set}_corpus.jsonl")
    qs = load_questions(DATA / f"{args.set}_questions.jsonl")
    base = G2ConSIndex.build(corpus, embedder=args.embedder, cache_dir=Path(__file__).parent / "cache")
    rows = []
    for name, change in VARIANTS.items():
        idx = G2ConSIndex(base.stored, base.embedder, G2ConSConfig(**change), base.tokenizer)  # type: ignore[arg-type]
        res = evaluate_retrieval(idx, qs, ["concept"], budgets)
        row: dict[str, object] = {"variant": name, "edges": idx.stats.n_edges}
        row.update({f"CR@{r['budget']}": r["context_recall"] for r in res})
        rows.append(row)
        print(row, flush=True)
    cols = ["variant", "edges"] + [f"CR@{b}" for b in budgets]
    print(format_table(rows, cols))
    if args.out:
        args.out.write_text(json.dumps({"set": args.set, "embedder": base.embedder.name, "rows": rows}, indent=2))
        args.out.with_suffix(".md").write_text(format_table(rows, cols) + "\n")


if __name__ == "__main__":
    main()
