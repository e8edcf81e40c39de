"""Offline G2ConS demo: concept graph, core-chunk selection, concept-path retrieval and fusion. No LLM, no network.

    python examples/demo.py [--corpus C.jsonl --questions Q.jsonl] [--embedder wordllama|minilm] [--kappa 0.8]

Default data: an attributed excerpt of MuSiQue (examples/data/README.md). The "host" path here is a stand-in
(BM25 over the kept core chunks only, i.e. what a host index built from the core chunks could see); it is NOT a
knowledge graph and measures no KG quality. The CR table at the end is a 25-question sanity check, not a
benchmark (see benchmarks/ for the real runs).
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from g2cons_plugins import G2ConSConfig, G2ConSIndex, HostItem
from g2cons_plugins.eval.evaluation import (
    BM25Units,
    evaluate_retrieval,
    format_table,
    load_questions,
    read_jsonl,
)

HERE = Path(__file__).parent / "data"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=HERE / "musique_excerpt_corpus.jsonl")
    ap.add_argument("--questions", type=Path, default=HERE / "musique_excerpt_questions.jsonl")
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--kappa", type=float, default=0.8)
    ap.add_argument("--budget", type=int, default=2000)
    args = ap.parse_args()
    logging.getLogger("g2cons_plugins").setLevel(logging.WARNING)  # the demo prints the graph statistics itself

    corpus, questions = read_jsonl(args.corpus), load_questions(args.questions)
    t0 = time.perf_counter()
    index = G2ConSIndex.build(corpus, embedder=args.embedder, config=G2ConSConfig(kappa=args.kappa))
    print(f"== 1. concept graph (no LLM), built in {time.perf_counter() - t0:.1f}s with {index.embedder.name}")
    print(index.stats)

    rep = index.select(price_per_mtok=0.15)
    print(f"\n== 2. core-chunk selection, kappa = {args.kappa} of tokens ({rep.selector})")
    print(rep.summary())
    print("   (the dropped chunks stay in the concept graph and remain retrievable)")

    q = questions[0]
    print(f"\n== 3. concept-path retrieval, beta = {args.budget} tokens\nQ: {q['question']}  (gold: {q['answers'][0]})")
    items = index.retrieve(q["question"], beta=args.budget)
    for x in items[:8]:
        why = {k: v for k, v in x.reason.items() if k in ("via", "bridge_concepts", "hop", "seed_rank")}
        print(f"  [{x.parent_id}] {x.n_tokens:4d} tok  score {x.score:.3f}  {why}  {x.text[:70]!r}")
    print(f"  ... {len(items)} units, {sum(x.n_tokens for x in items)} tokens")

    kept = set(rep.kept_ids)
    bm25 = BM25Units(index)
    host = [
        HostItem(chunk_id=x.parent_id, text=x.text, score=x.score)
        for x in bm25.retrieve(q["question"], beta=10 * args.budget)
        if x.parent_id in kept
    ]
    fused = index.fuse(host, q["question"], beta=args.budget)
    by_src = {s: sum(f.n_tokens for f in fused if f.source == s) for s in ("both", "host", "concept")}
    print(f"\n== 4. fusion with a STAND-IN host (BM25 over kept chunks, not a KG), lambda = {index.config.lambda_}")
    print(f"  {len(fused)} items, {sum(by_src.values())} tokens <= beta {args.budget}; tokens by source: {by_src}")

    print(f"\n== 5. sanity check on {len(questions)} questions (Context Recall %, not a benchmark)")
    rows = evaluate_retrieval(index, questions, ["dense", "concept", "concept-paper"], [args.budget])
    print(format_table(rows, ["method", "budget", "context_recall", "latency_ms_p50"]))


if __name__ == "__main__":
    main()
