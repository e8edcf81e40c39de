"""Where a default ``retrieve`` spends its time on a saved index: per-part and end-to-end latency.

    nice -n 10 python benchmarks/scale/query_parts.py --index /tmp/mem/idx_100000 --out PATH.json
    flock /tmp/scale1m.lock nice -n 10 python benchmarks/scale/query_parts.py --index /tmp/scale1m/index \\
        --out PATH.json

Loads the index, runs 10 warm-up questions, then times ``--queries`` (200) real MuSiQue questions
(``ketrag500_questions.jsonl``, as ``bench.py``'s ``job_load``) with the default ``retrieve`` twice: once plain
(end-to-end p50 / p95, query embedding included) and once with the named parts wrapped in timers (each part's
p50 / p95 over the queries of its inclusive time per query, milliseconds; the parts nest: ``bridge`` holds
``names`` and ``ranked``, ``ranked`` holds the later ``dense_top`` / ``hybrid_top`` calls). ``--profile N``
prints a cProfile of N queries. ``--check FILE``: also writes the unit ids of every query's result (to compare
two commits' outputs: ``--compare A B`` prints how many queries differ and the mean share of B's units that A
holds); ``--exact``: the same queries with the vector index off (an exact scan of every unit), for ``--check``;
``--overfetch F``: the unit index search visits ``max(F x k, ef)`` candidates instead of ``UnitANN.OVERFETCH`` x k.
The end-to-end loop runs ``--rounds`` times (3) and the median of the rounds' p50 / p95 is reported (the machine
is shared: a round can be slowed by other work), as wall time and as the query thread's CPU time
(``end_to_end_cpu_ms``: with ``OPENBLAS_NUM_THREADS=1`` a query runs on one thread, so this is its cost without
the waits for a core that other processes cause). The parts are timed in thread CPU time.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import json
import os
import pstats
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402
import numpy as np  # noqa: E402

PARTS: dict[str, tuple[str, str]] = {  # part -> (module, attribute path)
    "embed": ("g2cons_plugins.snapshot", "Snapshot.embed_query"),
    "check_query": ("g2cons_plugins.retrieval", "check_query"),
    "spread": ("g2cons_plugins.retrieval.scores", "score_spread"),
    "bm25_scores": ("g2cons_plugins.retrieval.lexical", "LexicalIndex.scores"),
    "bm25_postings": ("g2cons_plugins.retrieval.lexical", "LexicalIndex.postings"),
    "hybrid_init": ("g2cons_plugins.retrieval.scores", "HybridScores.__init__"),
    "ann_search": ("g2cons_plugins.arrays.unit_hnsw", "UnitANN.search"),
    "dense_top": ("g2cons_plugins.retrieval.scores", "DenseScores.top"),
    "hybrid_top": ("g2cons_plugins.retrieval.scores", "HybridScores.top"),
    "bridge": ("g2cons_plugins.retrieval.bridge", "walk"),
    "names": ("g2cons_plugins.retrieval.bridge", "name_head"),
    "name_matches": ("g2cons_plugins.retrieval.entities", "_found"),
    "ranked": ("g2cons_plugins.retrieval.bridge", "ranked"),
}


def _wrap(acc: dict[str, float], name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    depth = [0]

    @functools.wraps(fn)
    def timed(*a: Any, **kw: Any) -> Any:
        depth[0] += 1
        t = time.thread_time()
        try:
            return fn(*a, **kw)
        finally:
            depth[0] -= 1
            if depth[0] == 0:  # recursion / self-calls (HybridScores.top -> DenseScores.top) count once
                acc[name] += time.thread_time() - t

    return timed


def _install(acc: dict[str, float]) -> None:
    import importlib

    for name, (mod, path) in PARTS.items():
        obj: Any = importlib.import_module(mod)
        *owner, attr = path.split(".")
        for part in owner:
            obj = getattr(obj, part)
        if hasattr(obj, attr):
            setattr(obj, attr, _wrap(acc, name, getattr(obj, attr)))


def _pct(xs: list[float]) -> dict[str, float]:
    return {"p50": round(float(np.percentile(xs, 50)), 2), "p95": round(float(np.percentile(xs, 95)), 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--out")
    ap.add_argument("--profile", type=int, default=0)
    ap.add_argument("--check")
    ap.add_argument("--no-parts", action="store_true")
    ap.add_argument("--exact", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compare", nargs=2)
    ap.add_argument("--overfetch", type=float, help="UnitANN.OVERFETCH for this run (candidates per unit asked)")
    args = ap.parse_args()
    if args.compare:
        a, b = (json.loads(Path(p).read_text()) for p in args.compare)
        diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        share = np.mean([len(set(x) & set(y)) / max(len(y), 1) for x, y in zip(a, b, strict=True)])
        print(f"{len(a)} queries, {len(diff)} differ: {diff[:20]}; mean share of B's units in A: {share:.4f}")
        return
    from g2cons_plugins import G2ConSIndex

    t0 = time.perf_counter()
    idx = G2ConSIndex.load(args.index)
    load_s = time.perf_counter() - t0
    if args.overfetch is not None:
        from g2cons_plugins.arrays.unit_hnsw import UnitANN

        UnitANN.OVERFETCH = args.overfetch  # type: ignore[assignment]
    if args.exact:
        import dataclasses

        idx = G2ConSIndex.from_snapshot(dataclasses.replace(idx.snapshot, unit_ann=None))
    with open(corpus.DATA / "musique/ketrag500_questions.jsonl", encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for line in f if line.strip()][: args.queries + 10]
    for q in questions[:10]:
        idx.retrieve(q)
    rounds, cpu_rounds = [], []
    for _ in range(max(args.rounds, 1)):
        lat, cpu, ids = [], [], []
        for q in questions[10:]:
            t, c = time.perf_counter(), time.thread_time()
            res = idx.retrieve(q)
            cpu.append(1000 * (time.thread_time() - c))
            lat.append(1000 * (time.perf_counter() - t))
            ids.append([r.unit_id for r in res])
        rounds.append(_pct(lat))
        cpu_rounds.append(_pct(cpu))
    out: dict[str, Any] = {"index": args.index, "n_units": len(idx.units), "load_s": round(load_s, 1)}
    out["end_to_end_ms"] = {k: float(np.median([r[k] for r in rounds])) for k in ("p50", "p95")}
    out["end_to_end_cpu_ms"] = {k: float(np.median([r[k] for r in cpu_rounds])) for k in ("p50", "p95")}
    out["rounds_ms"] = rounds
    if args.check:
        Path(args.check).write_text(json.dumps(ids), encoding="utf-8")
    if not args.no_parts:
        acc: dict[str, float] = defaultdict(float)
        _install(acc)
        per: dict[str, list[float]] = defaultdict(list)
        for q in questions[10:]:
            acc.clear()
            idx.retrieve(q)
            for name in PARTS:
                per[name].append(1000 * acc.get(name, 0.0))
        out["parts_ms"] = {name: _pct(per[name]) for name in PARTS}
    out["load_avg_1min_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(out, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        for q in questions[10 : 10 + args.profile]:
            idx.retrieve(q)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
