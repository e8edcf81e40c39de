"""The unit index's two kinds on one saved index: the HNSW graph against the product-quantised scan
(``ann_kind``), default ``retrieve`` latency, agreement with the exact path and the candidates' recall.

    OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/scale/unit_pq.py --index /tmp/idx_80000 \\
        --rerank 2,2.5,3 --out benchmarks/scale/results/unit_pq_80k

The index must have been saved with a unit index (above ``ann_threshold``). The HNSW graph is the saved one when
the index was saved with it, else built in memory (the config's ``ann_*`` parameters); the scan is built in memory
for each ``--rerank`` (a search passes on ``max(rerank x k, 256)`` candidates). The ``--queries`` MuSiQue questions
(``ketrag500_questions.jsonl``, after 10 warm-up questions) run through the default ``retrieve``; the settings take
turns within each of ``--rounds`` rounds (the machine's speed drifts: a comparison holds within one run), and each
setting's p50 is the median of its rounds' p50s of the query thread's CPU time (query embedding included), beside
the wall time's. Agreement: the mean share of the exact path's retrieved units (no unit index) that the setting's
context holds. Candidate recall: the share of the exact top 150 / 400 units by cosine among the candidates one
search for the default query's first ask returns. Writes ``OUT.json`` and ``OUT.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402
import numpy as np  # noqa: E402


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", required=True, help="a saved G2ConS index with a unit index (above ann_threshold)")
    ap.add_argument("--rerank", default="2,2.5,3", help="the scan's ann_pq_rerank values, comma-separated")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    from g2cons_plugins import G2ConSIndex
    from g2cons_plugins.arrays import unit_hnsw as vi
    from g2cons_plugins.arrays import unit_pq as upq
    from g2cons_plugins.retrieval.filling import eager_depth
    from g2cons_plugins.storage.outputs import atomic_write_text

    idx = G2ConSIndex.load(args.index)
    snap = idx.snapshot
    if snap.unit_ann is None:
        raise SystemExit(f"{args.index}: no unit index (fewer units than ann_threshold)")
    with open(corpus.DATA / "musique/ketrag500_questions.jsonl", encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for line in f if line.strip()][: args.queries + 10]
    warm, timed = questions[:10], questions[10:]
    exact = G2ConSIndex.from_snapshot(dataclasses.replace(snap, unit_ann=None))
    reference = [[r.unit_id for r in exact.retrieve(q)] for q in timed]

    vecs = np.asarray(snap.stored.unit_vecs)
    indexes: dict[str, Any] = {}
    build_s: dict[str, float | None] = {}
    if isinstance(snap.unit_ann, vi.UnitANN):
        indexes["hnsw"], build_s["hnsw"] = snap.unit_ann, None
    else:
        t = time.perf_counter()
        indexes["hnsw"] = vi.build_unit_ann(vecs, vi.unit_ann_params(snap.config))
        build_s["hnsw"] = time.perf_counter() - t
    for r in _floats(args.rerank):
        params = dataclasses.replace(upq.unit_pq_params(snap.config), rerank=r)
        t = time.perf_counter()
        indexes[f"pq {r:g}"] = upq.build_unit_pq(vecs, params)
        build_s[f"pq {r:g}"] = time.perf_counter() - t
    runs = {name: G2ConSIndex.from_snapshot(dataclasses.replace(snap, unit_ann=ann)) for name, ann in indexes.items()}

    # candidate recall of one search for the default query's first ask
    opt = snap.config.retrieval
    first = eager_depth(snap, snap.config.beta) + opt.n_seed_units * 2 + opt.lexical_seeds
    ask = first + max(32, first // 8)  # what HybridScores.expect reserves for the bridge strategy's first search
    qvecs = np.stack([np.asarray(snap.embed_query(q), np.float32) for q in timed])
    truth = np.argsort(-(qvecs @ vecs.T), axis=1, kind="stable")[:, :400]
    recall: dict[str, dict[str, float]] = {}
    for name, ann in indexes.items():
        got = [set(ann.search(q, ask).tolist()) for q in qvecs]
        shares = {k: [len(g & set(t[:k].tolist())) / k for g, t in zip(got, truth, strict=True)] for k in (150, 400)}
        recall[name] = {f"at_{k}": round(float(np.mean(v)), 4) for k, v in shares.items()}
        recall[name]["candidates"] = float(np.median([len(g) for g in got]))

    cpu: dict[str, list[float]] = {s: [] for s in runs}
    wall: dict[str, list[float]] = {s: [] for s in runs}
    agreement: dict[str, float] = {}
    for _ in range(args.rounds):
        for name, ix in runs.items():
            for q in warm:
                ix.retrieve(q)
            lat, lat_w, got = [], [], []
            for q in timed:
                t, tw = time.thread_time(), time.perf_counter()
                res = ix.retrieve(q)
                lat.append((time.thread_time() - t) * 1000)
                lat_w.append((time.perf_counter() - tw) * 1000)
                got.append({r.unit_id for r in res})
            cpu[name].append(statistics.median(lat))
            wall[name].append(statistics.median(lat_w))
            shares = [len(g & set(r)) / max(len(r), 1) for g, r in zip(got, reference, strict=True)]
            agreement[name] = float(np.mean(shares))
    rows = [
        {
            "index": name,
            "build_s": None if build_s[name] is None else round(build_s[name], 2),
            "p50_cpu_ms": round(statistics.median(cpu[name]), 2),
            "round_p50s_cpu_ms": [round(x, 2) for x in cpu[name]],
            "p50_wall_ms": round(statistics.median(wall[name]), 2),
            "agreement": round(agreement[name], 4),
            "recall": recall[name],
        }
        for name in runs
    ]
    out = {
        "index": args.index, "n_units": len(snap.stored.units), "dim": int(vecs.shape[1]), "first_ask": ask,
        "queries": len(timed), "rounds": args.rounds, "load_avg_1min_after": round(os.getloadavg()[0], 2),
        "rows": rows,
    }
    atomic_write_text(args.out + ".json", json.dumps(out, indent=1) + "\n")
    lines = [
        f"Unit index kinds: {out['n_units']:,} units x {out['dim']}, {len(timed)} MuSiQue questions, default "
        f"`retrieve`, {args.rounds} rounds taking turns; 1-min load average after: {out['load_avg_1min_after']}. "
        "p50: median of the rounds' p50s. Recall: the exact top 150 / 400 by cosine among one search's candidates "
        f"for the first ask ({ask} units).",
        "",
        "| index | build s | p50 ms (thread CPU) | rounds' p50 ms | p50 ms (wall) | agreement with exact | recall@150 "
        "| recall@400 | candidates |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['index']} | {'saved' if r['build_s'] is None else r['build_s']} | {r['p50_cpu_ms']} "
        f"| {' / '.join(map(str, r['round_p50s_cpu_ms']))} | {r['p50_wall_ms']} | {r['agreement']} "
        f"| {r['recall']['at_150']} | {r['recall']['at_400']} | {r['recall']['candidates']:g} |"
        for r in rows
    ]
    atomic_write_text(args.out + ".md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
