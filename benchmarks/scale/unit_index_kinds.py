"""Candidate generators for the unit index on one saved index's unit vectors: how many of the exact top 150 / 400
units (by cosine) a search's candidates hold, and what a search costs (thread CPU, median over the questions).

    OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/scale/unit_index_kinds.py --index /tmp/idx_80000 \\
        --out benchmarks/scale/results/unit_index_kinds_80k

Rows: the HNSW graph (usearch, i8; M 16 and 32, ef = the candidates), IVF partitions (faiss IVF-flat and IVF-SQ8,
256 lists, 16-64 probed), and the product-quantised scan (faiss fast scan, 4-bit codes of 2 and 4 dimensions, the
best ``R`` re-scored). Every row passes on 640 candidates (the default query's first search with the graph) except
the scan's, which re-scores ``R`` and keeps 640. ``--tile`` also times the scan alone over the codes repeated 1x,
4x and 12x (the scan is linear in the units; the limit ``ann_pq_max_units`` comes from there). The questions are
the MuSiQue ``ketrag500`` ones, embedded by the index's embedder. Writes ``OUT.json`` and ``OUT.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402
import numpy as np  # noqa: E402

KEEP = 640


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", required=True)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    import faiss
    from usearch.index import Index

    from g2cons_plugins import G2ConSIndex
    from g2cons_plugins.storage.outputs import atomic_write_text

    faiss.omp_set_num_threads(1)
    snap = G2ConSIndex.load(args.index).snapshot
    vecs = np.ascontiguousarray(np.asarray(snap.stored.unit_vecs, dtype=np.float32))
    n, dim = vecs.shape
    with open(corpus.DATA / "musique/ketrag500_questions.jsonl", encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for line in f if line.strip()][: args.queries]
    qv = np.stack([np.asarray(snap.embed_query(q), np.float32) for q in questions])
    truth = np.argsort(-(qv @ vecs.T), axis=1, kind="stable")[:, :400]

    def measure(name: str, build_s: float, search: Callable[[np.ndarray], np.ndarray]) -> dict[str, Any]:
        times, found = [], []
        for q in qv:
            t = time.thread_time()
            found.append(set(np.asarray(search(q)).tolist()))
            times.append(time.thread_time() - t)
        row = {"index": name, "build_s": round(build_s, 1), "search_ms": round(float(np.median(times)) * 1000, 3)}
        for k in (150, 400):
            row[f"recall_at_{k}"] = round(
                float(np.mean([len(g & set(t[:k].tolist())) / k for g, t in zip(found, truth, strict=True)])), 4
            )
        print(json.dumps(row), flush=True)
        return row

    def rescored(cand: np.ndarray, q: np.ndarray) -> np.ndarray:
        cand = cand[cand >= 0]
        return cand[np.argsort(-(vecs[cand] @ q), kind="stable")[:KEEP]]

    rows = []
    for m in (16, 32):
        t = time.perf_counter()
        graph = Index(ndim=dim, metric="ip", dtype="i8", connectivity=m, expansion_add=128)
        graph.add(np.arange(n, dtype=np.uint64), vecs, threads=2)
        graph.expansion_search = KEEP
        rows.append(measure(f"HNSW i8 M {m}, ef {KEEP}", time.perf_counter() - t,
                            lambda q, g=graph: np.asarray(g.search(q, KEEP, threads=1).keys, dtype=np.int64)))
    for kind in ("flat", "sq8"):
        t = time.perf_counter()
        coarse = faiss.IndexFlatIP(dim)
        if kind == "flat":
            ivf = faiss.IndexIVFFlat(coarse, dim, 256, faiss.METRIC_INNER_PRODUCT)
        else:
            ivf = faiss.IndexIVFScalarQuantizer(coarse, dim, 256, faiss.ScalarQuantizer.QT_8bit,
                                                faiss.METRIC_INNER_PRODUCT)
        ivf.train(vecs[:: max(1, n // 25_600)])
        ivf.add(vecs)
        build_s = time.perf_counter() - t
        for probes in (16, 32, 64):
            ivf.nprobe = probes
            rows.append(measure(f"IVF-{kind} 256 lists, {probes} probed", build_s,
                                lambda q, ix=ivf: ix.search(q[None], KEEP)[1][0]))
    from g2cons_plugins.arrays.unit_pq import UnitPQ, UnitPQParams, build_unit_pq

    for dims in (2, 4):
        t = time.perf_counter()
        pq = build_unit_pq(vecs, UnitPQParams(dims_per_code=dims, rerank=1.0, min_candidates=1))
        build_s = time.perf_counter() - t
        for r in (640, 850, 1280):
            rows.append(measure(f"PQ scan, {dims} dims a code, best {r} re-scored", build_s,
                                lambda q, p=pq, r=r: rescored(p.search(q, r), q)))
    tiles = []
    pq = build_unit_pq(vecs, UnitPQParams())
    for times_n in (1, 4, 12):
        big = UnitPQ(pq.centroids, np.tile(np.asarray(pq.codes), (times_n, 1)), UnitPQParams(rerank=1.0))
        spent = []
        for q in qv[:50]:
            t = time.thread_time()
            big.search(q, 850)
            spent.append(time.thread_time() - t)
        tiles.append({"units": len(big), "scan_ms": round(float(np.median(spent)) * 1000, 3)})
        print(json.dumps(tiles[-1]), flush=True)
    out = {"index": args.index, "n_units": n, "dim": dim, "queries": len(questions), "keep": KEEP,
           "load_avg_1min_after": round(os.getloadavg()[0], 2), "rows": rows, "scan_by_size": tiles}
    atomic_write_text(args.out + ".json", json.dumps(out, indent=1) + "\n")
    lines = [
        f"Candidate generators: {n:,} units x {dim}, {len(questions)} MuSiQue questions; {KEEP} candidates passed "
        f"on; search: median thread CPU ms (one thread); 1-min load average after: {out['load_avg_1min_after']}.",
        "",
        "| index | build s | search ms | exact top 150 held | exact top 400 held |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {r['index']} | {r['build_s']} | {r['search_ms']} | {r['recall_at_150']} | {r['recall_at_400']} |"
              for r in rows]
    lines += ["", "| units (the codes repeated) | scan for 850 candidates, ms |", "|---|---|"]
    lines += [f"| {t['units']:,} | {t['scan_ms']} |" for t in tiles]
    atomic_write_text(args.out + ".md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
