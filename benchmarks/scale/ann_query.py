"""Query latency of the default ``retrieve`` with and without the unit index, on one saved index, and what the index
costs: build (all available cores), save, load (memory-mapped, not rebuilt), add 1% and remove 1% (in place).

    python -c "import sys; sys.path.insert(0, 'benchmarks/scale'); import corpus; from g2cons_plugins import \\
        G2ConSIndex; G2ConSIndex.build(list(corpus.passages(100000)), embedder='wordllama').save('/tmp/ann_wt/idx100k')"
    OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/scale/ann_query.py --index /tmp/ann_wt/idx100k \\
        --out benchmarks/scale/results/ann_query_100k_wordllama

The saved index is loaded twice: as saved (exact scan) and with ``ann_threshold=1`` (plus ``--quantization`` ...),
whose unit index is built, saved and loaded back. ``--queries`` MuSiQue ketrag500 questions (after 10 warm-up
ones) are retrieved with the default settings (strategy ``bridge`` with the hybrid term and lexical seeds, beta
12,000), query embedding included; p50 / p90 ms per path and the recall of the ANN path's retrieved units against
the exact path's. Then 1% of the chunks are added (new passages from the same generator) and removed again, on
both. Writes ``OUT.json`` and ``OUT.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402


def _timed(fn: Any) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, round(time.perf_counter() - t, 2)


def _latency(idx: Any, questions: list[str]) -> tuple[list[float], list[set[str]]]:
    for q in questions[:10]:
        idx.retrieve(q)
    lat, got = [], []
    for q in questions[10:]:
        t = time.perf_counter()
        items = idx.retrieve(q)
        lat.append((time.perf_counter() - t) * 1000)
        got.append({i.unit_id for i in items})
    return lat, got


def main() -> None:
    from g2cons_plugins import G2ConSIndex

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", required=True)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--quantization", default=None)
    ap.add_argument("--connectivity", type=int, default=None)
    ap.add_argument("--expansion-add", type=int, default=None)
    ap.add_argument("--expansion-search", type=int, default=None)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with open(corpus.DATA / "musique/ketrag500_questions.jsonl", encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for line in f if line.strip()][: args.queries + 10]
    exact, load_exact_s = _timed(lambda: G2ConSIndex.load(args.index))
    given = {"ann_quantization": args.quantization, "ann_connectivity": args.connectivity,
             "ann_expansion_add": args.expansion_add, "ann_expansion_search": args.expansion_search}
    cfg = exact.config.with_(ann_threshold=1, ann_kind="hnsw", **{k: v for k, v in given.items() if v is not None})
    built, build_s = _timed(lambda: G2ConSIndex(exact.stored, exact.embedder, cfg, exact.tokenizer,
                                                exact.snapshot.derived))
    n_units = len(exact.units)
    res: dict[str, Any] = {"index": args.index, "n_chunks": len(exact.chunks), "n_units": n_units,
                           "embedder": exact.embedder.name, "cores": len(os.sched_getaffinity(0)),
                           "ann": {k: v for k, v in cfg.to_dict().items() if k.startswith("ann_")},
                           "load_exact_s": load_exact_s, "ann_build_s": build_s}
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        _, res["save_with_ann_s"] = _timed(lambda: built.save(Path(tmp) / "idx"))
        ann, res["load_with_ann_s"] = _timed(lambda: G2ConSIndex.load(Path(tmp) / "idx"))
        assert ann.snapshot.unit_ann is not None and ann.snapshot.unit_ann._shared.view
        lat_e, got_e = _latency(exact, questions)
        lat_a, got_a = _latency(ann, questions)
        recall = [len(a & e) / len(e) for a, e in zip(got_a, got_e, strict=True) if e]
        for name, lat in (("exact", lat_e), ("ann", lat_a)):
            res[f"p50_ms_{name}"] = round(statistics.median(lat), 2)
            res[f"p90_ms_{name}"] = round(statistics.quantiles(lat, n=10)[-1], 2)
        res["unit_recall_mean"] = round(statistics.fmean(recall), 4)
        res["unit_recall_min"] = round(min(recall), 4)
        new = list(corpus.passages(len(exact.chunks) // 100, start=len(exact.chunks)))
        for name, idx in (("exact", exact), ("ann", ann)):
            _, res[f"add_1pct_s_{name}"] = _timed(lambda idx=idx: idx.add(new))
            _, res[f"remove_1pct_s_{name}"] = _timed(lambda idx=idx: idx.remove([c["id"] for c in new]))
        res["load_avg_1min_after"] = round(os.getloadavg()[0], 2)
    Path(args.out + ".json").write_text(json.dumps(res, indent=1), encoding="utf-8")
    lines = [f"Default retrieve at {res['n_chunks']:,} passages ({n_units:,} units, {res['embedder']}), "
             f"{args.queries} MuSiQue questions, query embedding included; {res['cores']} cores, 1-min load average "
             f"after: {res['load_avg_1min_after']} (other jobs shared the machine). Unit index: {res['ann']}.", "",
             "| | exact | ANN |", "|---|---|---|"]
    for label, key in (("query p50 ms", "p50_ms"), ("query p90 ms", "p90_ms"), ("add 1% s", "add_1pct_s"),
                       ("remove 1% s", "remove_1pct_s")):
        lines.append(f"| {label} | {res[key + '_exact']} | {res[key + '_ann']} |")
    lines += ["", f"ANN build {res['ann_build_s']} s, save (with the graph) {res['save_with_ann_s']} s, load "
              f"(graph memory-mapped) {res['load_with_ann_s']} s (exact index load {res['load_exact_s']} s); "
              f"unit recall of the ANN path's context against the exact one: mean {res['unit_recall_mean']}, "
              f"min {res['unit_recall_min']}."]
    Path(args.out + ".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
