"""How deep the ranking asks the unit index on the default query path: latency against agreement with the exact path.

    OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/scale/ann_rank_depth.py --index /tmp/mem/idx_100000 \\
        --exact IDS.json --out benchmarks/scale/results/ann_rank_depth_100k.json

``retrieval.filling.eager_depth`` (units sorted eagerly for a budget: ``factor`` x beta / median unit tokens + 32)
sets how many candidates
one search of the unit index asks for (x 2 by ``UnitANN.OVERFETCH``). For each factor, 200 MuSiQue questions with
the default ``retrieve`` (10 warm-up): the query thread's CPU ms (p50 / p95) and the mean share of the exact path's
units (``IDS.json``, written by ``query_parts.py --exact --check``) that the result holds.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
DATA = Path(os.environ.get("G2CONS_DATA", "/work/shared/data"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", required=True)
    ap.add_argument("--exact", required=True)
    ap.add_argument("--factors", default="3,2,1.5")
    ap.add_argument("--out")
    args = ap.parse_args()
    from g2cons_plugins import G2ConSIndex
    from g2cons_plugins.retrieval import filling

    idx = G2ConSIndex.load(args.index)
    exact = json.loads(Path(args.exact).read_text(encoding="utf-8"))
    with open(DATA / "musique/ketrag500_questions.jsonl", encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for line in f if line.strip()][:210]
    real = filling.EAGER_FACTOR
    rows = []
    for factor in [float(x) for x in args.factors.split(",")]:
        filling.EAGER_FACTOR = factor  # type: ignore[assignment]  # eager_depth: factor x beta / median + 32
        for q in questions[:10]:
            idx.retrieve(q)
        cpu, share = [], []
        for q, want in zip(questions[10:], exact, strict=False):
            c = time.thread_time()
            got = [r.unit_id for r in idx.retrieve(q)]
            cpu.append(1000 * (time.thread_time() - c))
            share.append(len(set(got) & set(want)) / max(len(want), 1))
        rows.append({"factor": factor, "cpu_p50_ms": round(float(np.percentile(cpu, 50)), 2),
                     "cpu_p95_ms": round(float(np.percentile(cpu, 95)), 2),
                     "share_of_exact": round(float(np.mean(share)), 4)})
        print(json.dumps(rows[-1]), flush=True)
    filling.EAGER_FACTOR = real
    out = {"index": args.index, "n_units": len(idx.units), "rows": rows, "load_avg_1min": round(os.getloadavg()[0], 2)}
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
