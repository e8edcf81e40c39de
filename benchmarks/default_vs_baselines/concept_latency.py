"""Concept-path query latency (query embedding excluded) of the default and of the dense-seeded bridge, on one
corpus: p50 / p95 over the questions, after one warm-up pass (the BM25 table is built on first use). Each
query runs ``--repeat`` times and its fastest run counts (a shared machine's load only ever adds time).

    python benchmarks/default_vs_baselines/concept_latency.py \
        --corpus C --questions Q --embedder wordllama --cache-dir benchmarks/cache
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from g2cons_plugins import G2ConSIndex
from g2cons_plugins.eval.evaluation import embed_queries, load_questions, read_jsonl
from g2cons_plugins.retrieval import retrieve


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--budgets", default="1000,2000,4000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    base = G2ConSIndex.build(read_jsonl(a.corpus), embedder=a.embedder, cache_dir=a.cache_dir)
    qs = [q["question"] for q in load_questions(a.questions)]
    qv = embed_queries(base, qs)
    rows = []
    dense_bridge = {"lexical_seeds": 0, "lexical_weight": 0.0, "score_scale": "cosine"}  # the bridge on cosines alone
    for name, changes in (("concept (default)", {}), ("concept-dense", dense_bridge)):
        snap = G2ConSIndex(base.stored, base.embedder, base.config.with_(**changes), base.tokenizer).snapshot
        for b in (int(x) for x in a.budgets.split(",")):
            for q, v in zip(qs, qv, strict=True):  # warm-up
                retrieve(snap, q, beta=b, query_vector=v)
            ms = []
            for q, v in zip(qs, qv, strict=True):
                runs = []
                for _ in range(a.repeat):
                    t0 = time.perf_counter()
                    retrieve(snap, q, beta=b, query_vector=v)
                    runs.append(1000 * (time.perf_counter() - t0))
                ms.append(min(runs))
            rows.append({"method": name, "budget": b, "p50_ms": round(float(np.median(ms)), 3),
                         "p95_ms": round(float(np.percentile(ms, 95)), 3), "n": len(ms)})  # fmt: skip
            print(rows[-1])
    info = {"units": len(base.stored.units), "chunks": len(base.stored.chunks), "embedder": base.embedder.name}
    print(info)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as fh:
            json.dump({"rows": rows, "index": info, "cpu_count": os.cpu_count(), "repeat": a.repeat}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
