"""Offline G2ConS demo: concept graph, core-chunk selection, concept-path retrieval and fusion. No LLM, no network.

    python examples/demo.py [--corpus C.jsonl --questions Q.jsonl] [--embedder wordllama|minilm] [--kappa 0.8]
                            [--out g2cons-demo] [--price-per-mtok 0.15] [--prompt-tokens 1736]

Default data: an attributed excerpt of MuSiQue (examples/data/README.md). The "host" path here is a stand-in
(BM25 over the kept core chunks only, i.e. what a host index built from the core chunks could see); it is NOT a
knowledge graph and measures no KG quality. The CR table at the end is a 25-question sanity check, not a
benchmark (see benchmarks/ for the real runs).

It writes what it shows into --out (default ``g2cons-demo/``): the concept graph (``graph/``, the DIR of
``g2cons query`` / ``show``), ``selection_report.json``, the retrieved and fused contexts (``context.md``) and the
sanity table (``recall.md``). An existing folder is replaced only if an earlier demo wrote it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from g2cons_plugins import G2ConSConfig, G2ConSIndex, HostItem
from g2cons_plugins.eval.evaluation import (
    BM25Units,
    answer_in_context,
    evaluate_retrieval,
    format_table,
    load_questions,
    read_jsonl,
)
from g2cons_plugins.hosts.pipelines.prices import DEFAULT_PRICE, EXTRACTION_PROMPT_TOKENS
from g2cons_plugins.storage.outputs import atomic_write_text, check_replaceable_folder, staged_folder

HERE = Path(__file__).parent / "data"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=HERE / "musique_excerpt_corpus.jsonl")
    ap.add_argument("--questions", type=Path, default=HERE / "musique_excerpt_questions.jsonl")
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--kappa", type=float, default=0.8)
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--out", type=Path, default=Path("g2cons-demo"), help="folder for what the demo shows")
    ap.add_argument("--price-per-mtok", type=float, default=DEFAULT_PRICE, help="USD per 1M input tokens")
    ap.add_argument(
        "--prompt-tokens",
        type=int,
        default=EXTRACTION_PROMPT_TOKENS["graphrag"],
        help="extraction prompt tokens sent with every chunk (default: MS GraphRAG's default prompt)",
    )
    args = ap.parse_args()
    check_replaceable_folder(args.out, "--out")  # before any work: never replace a folder the demo did not write
    logging.getLogger("g2cons_plugins").setLevel(logging.WARNING)  # the demo prints the graph statistics itself

    corpus, questions = read_jsonl(args.corpus), load_questions(args.questions)
    t0 = time.perf_counter()
    index = G2ConSIndex.build(corpus, embedder=args.embedder, config=G2ConSConfig(kappa=args.kappa))
    print(f"== 1. concept graph (no LLM), built in {time.perf_counter() - t0:.1f}s with {index.embedder.name}")
    print(index.stats)
    print(
        "   (isolated: concepts with no edge, i.e. in fewer than theta_co chunks together with any other concept or\n"
        "    not similar enough to one; most keywords of a small corpus are. They still lead to their chunks: the\n"
        "    query's concepts and vector pick the seed passages, edges only add bridged ones)"
    )

    rep = index.select(price_per_mtok=args.price_per_mtok, prompt_tokens_per_call=args.prompt_tokens)
    print(f"\n== 2. core-chunk selection, kappa = {args.kappa} of tokens ({rep.selector})")
    print(rep.summary())
    print(
        f"   priced as MS GraphRAG extraction calls: each kept chunk plus its {args.prompt_tokens:,}-token prompt, at "
        f"${args.price_per_mtok}/1M input tokens (gpt-4o-mini's list price; gleanings and output not counted)"
    )
    print("   (the dropped chunks stay in the concept graph and remain retrievable)")

    q = questions[0]
    print(f"\n== 3. concept-path retrieval, beta = {args.budget} tokens\nQ: {q['question']}  (gold: {q['answers'][0]})")
    items = index.retrieve(q["question"], beta=args.budget)
    for x in items[:8]:
        why = {k: v for k, v in x.reason.items() if k in ("via", "bridge_concepts", "hop", "seed_rank")}
        print(f"  [{x.parent_id}] {x.n_tokens:4d} tok  score {x.score:.3f}  {why}  {x.text[:70]!r}")
    print(f"  ... {len(items)} units, {sum(x.n_tokens for x in items)} tokens")
    held = answer_in_context(q["answers"], "\n".join(x.text for x in items))
    print(f"  the gold answer {q['answers'][0]!r} is {'in' if held else 'NOT in'} this context")

    kept = set(rep.kept_ids)
    bm25 = BM25Units(index)
    host = [
        HostItem(chunk_id=x.parent_id, text=x.text, score=x.score)
        for x in bm25.retrieve(q["question"], beta=10 * args.budget)
        if x.parent_id in kept
    ]
    fused = index.fuse(host, q["question"], beta=args.budget)
    by_src = {s: sum(f.n_tokens for f in fused if f.source == s) for s in ("both", "host", "concept")}
    rule = f"fusion rule {index.config.fusion!r}"  # lambda is the host share of the paper's ensemble only
    if index.config.fusion == "ensemble":
        rule += f", host share lambda = {index.config.lambda_}"
    print(f"\n== 4. fusion with a STAND-IN host (BM25 over kept chunks, not a KG); {rule}")
    print(f"  {len(fused)} items, {sum(by_src.values())} tokens <= beta {args.budget}; tokens by source: {by_src}")
    fused_held = answer_in_context(q["answers"], "\n".join(f.text for f in fused))
    print(f"  the gold answer is {'in' if fused_held else 'NOT in'} the fused context")

    print(f"\n== 5. sanity check on {len(questions)} questions (Context Recall %, not a benchmark)")
    rows = evaluate_retrieval(index, questions, ["dense", "concept", "concept-paper"], [args.budget])
    table = format_table(rows, ["method", "budget", "context_recall", "latency_ms_p50"])
    print(table)

    context = [f"# {q['question']}\n\ngold: {', '.join(q['answers'])}\n\n## concept path ({args.budget} tokens)\n"]
    context += [f"- [{x.parent_id}] score {x.score:.3f}: {x.text}" for x in items]
    context.append("\n## fused (stand-in host)\n")
    context += [f"- [{f.chunk_id}] {f.source}, {f.score:.3f}: {f.text}" for f in fused]
    with staged_folder(args.out, "demo", lambda: check_replaceable_folder(args.out, "--out")) as tmp:
        index.save(tmp / "graph")
        atomic_write_text(tmp / "selection_report.json", json.dumps(rep.to_dict(), indent=2))
        atomic_write_text(tmp / "context.md", "\n".join(context) + "\n")
        atomic_write_text(tmp / "recall.md", table + "\n")
    print(f"\nwrote {args.out}/: graph/ (try: g2cons query {args.out}/graph \"your question\"), selection_report.json,")
    print("      context.md (both contexts of question 1), recall.md")


if __name__ == "__main__":
    main()
