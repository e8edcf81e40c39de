"""Does the approximate unit index (or float16 unit vectors) cost quality? Exact vs HNSW (usearch) retrieval on a
real multi-hop set; ``--variant float16``: exact float32 vectors vs the same vectors rounded to float16.

    nice -n 10 python benchmarks/scale/ann_quality.py --corpus ../shared/data/musique/ketrag500_corpus.jsonl \\
        --questions ../shared/data/musique/ketrag500_questions.jsonl --embedder wordllama \\
        --out benchmarks/scale/results/ann_quality_musique_wordllama.json
    (the same with ``--variant float16 --out benchmarks/scale/results/float16_quality_musique_wordllama.json``)

    # the saved, updated-in-place unit index (minilm, the shared cache), one run per graph setting
    nice -n 10 python benchmarks/scale/ann_quality.py --corpus ../shared/data/musique/ketrag500_corpus.jsonl \
        --questions ../shared/data/musique/ketrag500_questions.jsonl --embedder minilm --cache-dir /tmp/dp/cache \
        --quantization i8 --out benchmarks/scale/results/ann_quality_musique_minilm_i8.json

    # the product-quantised scan (ann_kind="pq"; "auto" also picks it below ann_pq_max_units)
    nice -n 10 python benchmarks/scale/ann_quality.py --corpus ../shared/data/musique/ketrag500_corpus.jsonl \
        --questions ../shared/data/musique/ketrag500_questions.jsonl --embedder minilm --kind pq \
        --out benchmarks/scale/results/ann_quality_musique_minilm_pq.json

One index is built; a second one shares its stored state but has ``ann_threshold=1`` (the unit index is forced
although the corpus is small; ``--kind`` picks which). For every question and budget it reports Context Recall of
both, and the recall of the ANN path's retrieved units against the exact path's (|ANN units & exact units| / |exact
units|), for the dense path and the default concept path. Target: unit recall >= 0.99 at the default
budgets, CR within 0.5.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from g2cons_plugins import G2ConSIndex  # noqa: E402
from g2cons_plugins.embedders import CachedEmbedder, get_embedder  # noqa: E402
from g2cons_plugins.eval.evaluation import answer_in_context, load_questions, read_jsonl  # noqa: E402
from g2cons_plugins.retrieval import retrieve  # noqa: E402
from g2cons_plugins.storage.outputs import atomic_write_text  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--cache-dir", default="benchmarks/cache")
    ap.add_argument("--budgets", default="1000,2000,4000")
    ap.add_argument("--out", required=True)
    ap.add_argument("--variant", choices=("ann", "float16"), default="ann", help="what the second index changes")
    ap.add_argument("--kind", choices=("auto", "pq", "hnsw"), default=None, help="ann_kind (the unit index's kind)")
    ap.add_argument("--quantization", choices=("f32", "f16", "i8"), default=None, help="ann_quantization")
    ap.add_argument("--connectivity", type=int, default=None, help="ann_connectivity (HNSW M)")
    ap.add_argument("--expansion-add", type=int, default=None, help="ann_expansion_add")
    ap.add_argument("--expansion-search", type=int, default=None, help="ann_expansion_search")
    args = ap.parse_args()

    rows = read_jsonl(args.corpus)
    docs = [{"id": r["id"], "text": f"{r.get('title') or ''}\n{r['text']}".strip()} for r in rows]
    questions = load_questions(args.questions)
    embedder = CachedEmbedder(get_embedder(args.embedder), cache_dir=args.cache_dir)
    exact = G2ConSIndex.build(docs, embedder=embedder)
    if args.variant == "ann":
        given = {"ann_kind": args.kind, "ann_quantization": args.quantization,
                 "ann_connectivity": args.connectivity, "ann_expansion_add": args.expansion_add,
                 "ann_expansion_search": args.expansion_search}
        cfg = exact.config.with_(ann_threshold=1, **{k: v for k, v in given.items() if v is not None})
        approx = G2ConSIndex(exact.stored, exact.embedder, cfg, exact.tokenizer)
    else:  # the unit vectors a float16 store would hold (the query vector stays float32)
        import dataclasses

        import numpy as np

        half = np.asarray(exact.stored.unit_vecs, dtype=np.float16).astype(np.float32)
        half.flags.writeable = False
        approx = G2ConSIndex(
            dataclasses.replace(exact.stored, unit_vecs=half), exact.embedder, exact.config, exact.tokenizer
        )
    qvecs = exact.embedder.embed([q["question"] for q in questions])
    budgets = [int(b) for b in args.budgets.split(",")]
    out: dict[str, Any] = {
        "corpus": args.corpus,
        "embedder": args.embedder,
        "variant": args.variant,
        "ann": {k: v for k, v in approx.config.to_dict().items() if k.startswith("ann_")},
        "n_units": len(exact.units),
        "n_questions": len(questions),
        "rows": [],
    }
    for strategy in ("dense", "bridge"):
        for beta in budgets:
            hit = {"exact": 0, "ann": 0}
            recalls, lat = [], {"exact": [], "ann": []}
            for q, v in zip(questions, qvecs, strict=True):
                got = {}
                for name, idx in (("exact", exact), ("ann", approx)):
                    t0 = time.perf_counter()
                    items = retrieve(idx, q["question"], beta=beta, strategy=strategy, query_vector=v)
                    lat[name].append(time.perf_counter() - t0)
                    got[name] = {x.unit_id for x in items}
                    hit[name] += answer_in_context(q["answers"], "\n".join(x.text for x in items))
                if got["exact"]:
                    recalls.append(len(got["exact"] & got["ann"]) / len(got["exact"]))
            row = {
                "strategy": strategy,
                "beta": beta,
                "cr_exact": round(100 * hit["exact"] / len(questions), 2),
                "cr_ann": round(100 * hit["ann"] / len(questions), 2),
                "unit_recall_mean": round(statistics.fmean(recalls), 4),
                "unit_recall_min": round(min(recalls), 4),
                "p50_ms_exact": round(1000 * statistics.median(lat["exact"]), 3),
                "p50_ms_ann": round(1000 * statistics.median(lat["ann"]), 3),
            }
            print(json.dumps(row), flush=True)
            out["rows"].append(row)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
