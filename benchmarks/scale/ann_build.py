"""HNSW (usearch) build time, search latency and recall@k against the exact scan, per parameter setting.

    # wordllama: the unit vectors of a saved index (the 100k-passage generated corpus, ~150k units)
    nice -n 10 python benchmarks/scale/ann_build.py --index /tmp/ann_wt/idx100k --embedder wordllama \\
        --out benchmarks/scale/results/ann_build_wordllama
    # minilm: the sentence vectors of the shared embedding cache (real MuSiQue / HotpotQA / 2Wiki text)
    nice -n 10 python benchmarks/scale/ann_build.py --sqlite /tmp/dp/cache/minilm-l6-v2-int8/vectors.sqlite \\
        --embedder minilm --out benchmarks/scale/results/ann_build_minilm

Builds use ``--threads`` (2: the target machine's cores); searches are single-threaded, as a query runs. The
queries are the MuSiQue ketrag500 questions embedded with the same model (its query prefix where it has one).
For every setting (dtype f32 / f16 / i8, connectivity M, expansion_add) the graph is built once over the first
``--n`` vectors; ``build s / 100k`` is its build time scaled to 100,000 vectors. Each search asks for ``k``
(10: the seeds; 88: the units a 2k budget ranks) candidates with expansion_search ef, re-scores them exactly,
and reports p50 ms and the recall of the exact top k. Writes ``OUT.json`` and ``OUT.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

SETTINGS = [  # (dtype, connectivity, expansion_add)
    ("f32", 16, 128),
    ("f16", 16, 64),
    ("i8", 16, 64),
    ("f16", 8, 32),
    ("i8", 8, 32),
]
EFS = (64, 128, 256)
KS = (10, 88)


def _vectors(args: argparse.Namespace) -> np.ndarray:
    if args.index:
        from g2cons_plugins import G2ConSIndex

        V = np.asarray(G2ConSIndex.load(args.index).snapshot.stored.unit_vecs, dtype=np.float32)
    else:
        con = sqlite3.connect(f"file:{args.sqlite}?mode=ro", uri=True)
        V = np.stack([np.frombuffer(b, dtype=np.float32) for (b,) in con.execute("SELECT vec FROM vectors")])
    V = np.ascontiguousarray(V[: args.n])
    return V / np.maximum(np.linalg.norm(V, axis=1, keepdims=True), 1e-12)


def _queries(embedder: str, n: int) -> np.ndarray:
    from g2cons_plugins.embedders import get_embedder

    with open(corpus.DATA / "musique/ketrag500_questions.jsonl", encoding="utf-8") as f:
        qs = [json.loads(line)["question"] for line in f if line.strip()][:n]
    emb = get_embedder(embedder)
    embed = getattr(emb, "embed_queries", emb.embed)
    Q = np.asarray(embed(qs), dtype=np.float32)
    return Q / np.linalg.norm(Q, axis=1, keepdims=True)


def _one(V: np.ndarray, Q: np.ndarray, truth: dict[int, list[set[int]]], setting: tuple, threads: int) -> list[dict]:
    from usearch.index import Index

    dtype, m, ef_add = setting
    g = Index(ndim=V.shape[1], metric="ip", dtype=dtype, connectivity=m, expansion_add=ef_add)
    t, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    g.add(np.arange(len(V), dtype=np.uint64), V, threads=threads)
    build = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_SELF)
    build_cpu = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
    rows = []
    for ef in EFS:
        g.expansion_search = ef
        for k in KS:
            lat, rec = [], []
            for q, gold in zip(Q, truth[k], strict=True):
                t = time.perf_counter()
                cand = np.asarray(g.search(q, k, threads=1).keys, dtype=np.int64)
                s = V[cand] @ q
                top = cand[np.argsort(-s)[:k]]
                lat.append((time.perf_counter() - t) * 1000)
                rec.append(len(gold & set(top.tolist())) / k)
            rows.append({
                "dtype": dtype, "M": m, "ef_add": ef_add, "build_s": round(build, 1),
                "build_s_per_100k": round(build * 100_000 / len(V), 1),
                "build_cpu_s_per_100k": round(build_cpu * 100_000 / len(V), 1), "ef": ef, "k": k,
                "p50_ms": round(statistics.median(lat), 3), "recall": round(float(np.mean(rec)), 4),
                "recall_min": round(float(np.min(rec)), 3),
            })
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--index", help="a saved G2ConS index: its unit vectors")
    src.add_argument("--sqlite", help="an embedding cache (vectors.sqlite): its vectors")
    ap.add_argument("--embedder", required=True)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    V = _vectors(args)
    Q = _queries(args.embedder, args.queries)
    t = time.perf_counter()
    S = Q @ V.T
    exact_ms = (time.perf_counter() - t) * 1000 / len(Q)
    truth = {k: [set(np.argpartition(-s, k)[:k].tolist()) for s in S] for k in KS}
    rows = [r for setting in SETTINGS for r in _one(V, Q, truth, setting, args.threads)]
    out = {"vectors": args.index or args.sqlite, "embedder": args.embedder, "n": len(V), "dim": V.shape[1],
           "threads": args.threads, "exact_scan_ms_per_query": round(exact_ms, 2), "rows": rows}
    Path(args.out + ".json").write_text(json.dumps(out, indent=1), encoding="utf-8")
    lines = [f"HNSW build and search, {len(V):,} vectors x {V.shape[1]} ({args.embedder}), build threads "
             f"{args.threads}, {len(Q)} MuSiQue questions; exact scan {exact_ms:.2f} ms/query (batched); "
             f"1-min load average after: "
             f"{os.getloadavg()[0]:.2f} (cpu s: process CPU time of the build, all threads).", "",
             "| dtype | M | ef_add | build s | s/100k | cpu s/100k | ef | k | p50 ms | recall@k | min |",
             "|" + "---|" * 11]
    lines += [f"| {r['dtype']} | {r['M']} | {r['ef_add']} | {r['build_s']} | {r['build_s_per_100k']} | "
              f"{r['build_cpu_s_per_100k']} | {r['ef']} | "
              f"{r['k']} | {r['p50_ms']} | {r['recall']} | {r['recall_min']} |" for r in rows]
    Path(args.out + ".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
