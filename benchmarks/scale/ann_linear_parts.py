"""What a query on the ANN path still does over every unit, timed at a given unit count (no index needed).

    OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/scale/ann_linear_parts.py --units 1500000 \\
        --out benchmarks/scale/results/ann_linear_parts_1m.json

At 1M passages (~1.5M units) the ANN path no longer scans the unit vectors; what stays linear in the unit count is
the BM25 array of ``LexicalIndex.scores`` (zeros + the query words' postings, here 60k postings), its non-zero
units (``HybridScores``: a boolean mask then ``flatnonzero``; the float ``flatnonzero`` it replaced is timed too)
and ``_bridge``'s ``flatnonzero(lexical > 0)``. The exact scan the index replaces is timed for comparison. Median
of 30 runs (5 for the scan), milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np


def _ms(fn: Callable[[], object], runs: int = 30) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return round(1000 * float(np.median(times)), 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--units", type=int, default=1_500_000)
    ap.add_argument("--postings", type=int, default=60_000)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    n = args.units
    rng = np.random.default_rng(0)
    rows = np.unique(rng.integers(0, n, args.postings))
    vals = rng.random(len(rows))

    def bm25() -> np.ndarray:
        out = np.zeros(n)
        out[rows] += vals
        return out

    lex = bm25()
    V = rng.standard_normal((n, args.dim)).astype(np.float32)
    q = rng.standard_normal(args.dim).astype(np.float32)
    res = {
        "units": n,
        "postings": len(rows),
        "bm25_array_ms": _ms(bm25),
        "hits_by_mask_ms": _ms(lambda: np.flatnonzero(lex != 0)),
        "hits_float_flatnonzero_ms": _ms(lambda: np.flatnonzero(lex)),
        "bridge_hits_ms": _ms(lambda: np.flatnonzero(lex > 0)),
        "exact_scan_ms": _ms(lambda: V @ q, runs=5),
        "load_avg_1min_after": round(os.getloadavg()[0], 2),
    }
    Path(args.out).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
