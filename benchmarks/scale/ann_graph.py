"""The unit index's graph build (ef_add) against the search's over-fetch: default ``retrieve`` latency and its
agreement with the exact path, on one saved index.

    OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/scale/ann_graph.py --index /tmp/idx_80000 \\
        --expansion-add 64,128,256 --overfetch 2,1.5,1.25,1 --out benchmarks/scale/results/ann_graph_80k

For every ``--expansion-add`` value an HNSW graph (the index's quantization and M) is built over the index's unit
vectors, in memory (the saved graph is used where its ef_add is asked for); for every over-fetch
(``UnitANN.OVERFETCH``: a search visits ``max(overfetch x k, ef)`` candidates) the ``--queries`` MuSiQue questions
(``ketrag500_questions.jsonl``, after 10 warm-up questions) run through the default ``retrieve``. The settings take
turns within each of ``--rounds`` rounds (the machine's speed drifts between runs: a comparison holds within one
run), and each setting's p50 is the median of its rounds' p50s of the query thread's CPU time (query embedding
included). Agreement: the mean share of the exact path's retrieved units (no unit index) that the setting's
context holds. Writes ``OUT.json`` and ``OUT.md``.
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
    ap.add_argument("--expansion-add", default="64,128,256", help="HNSW ef_add values, comma-separated")
    ap.add_argument("--overfetch", default="2,1.5,1.25,1", help="over-fetch factors, comma-separated")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    from g2cons_plugins import G2ConSIndex
    from g2cons_plugins.arrays import unit_hnsw as vi

    idx = G2ConSIndex.load(args.index)
    snap = idx.snapshot
    if snap.unit_ann is None:
        raise SystemExit(f"{args.index}: no unit index (fewer units than ann_threshold)")
    saved = snap.unit_ann if isinstance(snap.unit_ann, vi.UnitANN) else None  # else the scan: every graph is built
    base = saved.params if saved is not None else vi.unit_ann_params(snap.config)
    with open(corpus.DATA / "musique/ketrag500_questions.jsonl", encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for line in f if line.strip()][: args.queries + 10]
    warm, timed = questions[:10], questions[10:]
    exact = G2ConSIndex.from_snapshot(dataclasses.replace(snap, unit_ann=None))
    reference = [[r.unit_id for r in exact.retrieve(q)] for q in timed]

    graphs: dict[int, Any] = {}
    build_s: dict[int, float] = {}
    for ef_add in [int(x) for x in _floats(args.expansion_add)]:
        if saved is not None and ef_add == saved.params.expansion_add:
            graphs[ef_add], build_s[ef_add] = idx, float("nan")
            continue
        params = dataclasses.replace(base, expansion_add=ef_add)
        t = time.perf_counter()
        ann = vi.build_unit_ann(snap.stored.unit_vecs, params)
        build_s[ef_add] = time.perf_counter() - t
        graphs[ef_add] = G2ConSIndex.from_snapshot(dataclasses.replace(snap, unit_ann=ann))
    settings = [(e, o) for e in graphs for o in _floats(args.overfetch)]
    p50s: dict[tuple[int, float], list[float]] = {s: [] for s in settings}
    agreement: dict[tuple[int, float], float] = {}
    default_overfetch = vi.UnitANN.OVERFETCH
    try:
        for _ in range(args.rounds):
            for s in settings:
                ix = graphs[s[0]]
                vi.UnitANN.OVERFETCH = s[1]
                for q in warm:
                    ix.retrieve(q)
                lat, got = [], []
                for q in timed:
                    t = time.thread_time()
                    res = ix.retrieve(q)
                    lat.append((time.thread_time() - t) * 1000)
                    got.append({r.unit_id for r in res})
                p50s[s].append(statistics.median(lat))
                shares = [len(g & set(r)) / max(len(r), 1) for g, r in zip(got, reference, strict=True)]
                agreement[s] = float(np.mean(shares))
    finally:
        vi.UnitANN.OVERFETCH = default_overfetch
    rows = [
        {
            "expansion_add": e, "overfetch": o, "graph_build_s": None if np.isnan(build_s[e]) else round(build_s[e], 1),
            "p50_ms": round(statistics.median(p50s[(e, o)]), 2), "round_p50s_ms": [round(x, 2) for x in p50s[(e, o)]],
            "agreement": round(agreement[(e, o)], 4),
        }
        for e, o in settings
    ]
    p = base
    out = {
        "index": args.index, "n_units": len(snap.stored.units), "quantization": p.quantization, "M": p.connectivity,
        "saved_expansion_add": p.expansion_add, "queries": len(timed), "rounds": args.rounds,
        "load_avg_1min_after": round(os.getloadavg()[0], 2), "rows": rows,
    }
    Path(args.out + ".json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    lines = [
        f"Unit index graph vs over-fetch: {out['n_units']:,} units, {p.quantization}, M {p.connectivity}, "
        f"{len(timed)} MuSiQue questions, default `retrieve`, {args.rounds} rounds taking turns; 1-min load "
        f"average after: {out['load_avg_1min_after']}. p50: median of the rounds' p50 query-thread CPU ms.",
        "",
        "| ef_add | over-fetch | graph build s (2 threads) | p50 ms | rounds' p50 ms | agreement with exact |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['expansion_add']} | {r['overfetch']} | {'saved' if r['graph_build_s'] is None else r['graph_build_s']} "
        f"| {r['p50_ms']} | {' / '.join(map(str, r['round_p50s_ms']))} | {r['agreement']} |"
        for r in rows
    ]
    Path(args.out + ".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
