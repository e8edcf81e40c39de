"""Query latency of saved indexes in turns: each round runs ``bench.py``'s load job (a fresh process: load, 10
warm-up questions, then ``--queries`` real MuSiQue questions, query embedding included, wall time) once per index,
so a slow minute of the machine hits every index of that round. Prints and writes each index's p50 per round, the
median of those, and each index's ratio to the first one per round and its median.

    nice -n 10 python benchmarks/scale/query_rounds.py --index 10k=/tmp/idx_10000 --index 80k_hnsw=/tmp/idx_80000 \\
        --index 80k_pq=/tmp/idx_80000_pq --rounds 5 --out benchmarks/scale/results/query_rounds_80k.json

An index saved before ``ann_kind`` existed loads with its HNSW graph; one saved by this version at 80k passages
has the product-quantised scan (``ann_kind="auto"``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent / "bench.py"


def _load_job(path: str, queries: int) -> dict[str, Any]:
    res = subprocess.run(
        [sys.executable, str(BENCH), "--job", "load", "--path", path, "--queries", str(queries)],
        capture_output=True, text=True,
    )
    if res.returncode != 0:
        raise RuntimeError(f"load job on {path} failed:\n{res.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", action="append", required=True, metavar="NAME=PATH", help="repeat; the first: base")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    named = [tuple(x.split("=", 1)) for x in args.index]
    if any(len(x) != 2 for x in named):
        raise SystemExit("--index takes NAME=PATH")
    p50: dict[str, list[float]] = {name: [] for name, _ in named}
    kinds: dict[str, str] = {}
    os.sync()
    for r in range(args.rounds):
        for name, path in named:
            job = _load_job(path, args.queries)
            p50[name].append(float(job["query_p50_ms"]))
            kinds[name] = str(job.get("unit_index"))
        print(f"round {r + 1}: " + ", ".join(f"{n} {p50[n][-1]:.2f} ms" for n, _ in named), flush=True)
    base = named[0][0]
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(), "rounds": args.rounds,
        "queries": args.queries, "loadavg_1min_after": round(os.getloadavg()[0], 2),
        "indexes": {
            name: {
                "path": path, "unit_index": kinds[name], "p50_ms": p50[name],
                "median_p50_ms": round(statistics.median(p50[name]), 2),
                "ratio_to_base": [round(a / b, 2) for a, b in zip(p50[name], p50[base], strict=True)],
                "median_ratio_to_base": round(
                    statistics.median(a / b for a, b in zip(p50[name], p50[base], strict=True)), 2
                ),
            }
            for name, path in named
        },
    }
    print(json.dumps(result, indent=1))
    if args.out:
        from g2cons_plugins.storage.outputs import atomic_write_text

        atomic_write_text(args.out, json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
