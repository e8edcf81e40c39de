"""Build time on Ray Data (1 and 2 workers) against a local build, same corpus, same result.

    nice -n 10 python benchmarks/scale/ray_speedup.py --n 10000 --embedder wordllama \\
        --out benchmarks/scale/results/ray_speedup.json

Each configuration builds in its own process (Ray's start-up included in its time, reported apart); the unit
vectors of every Ray build are checked equal to the local build's. Each row records the tree it imported
(``tree``): to run an earlier commit, ``git archive <commit> g2cons_plugins | tar -x -C /tmp/before`` and run
this script from another folder with ``PYTHONPATH=/tmp/before``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

CHILD = r"""
import hashlib, json, sys, time
sys.path.insert(0, sys.argv[4])
import corpus
n, embedder, workers = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
docs = list(corpus.passages(n))
import g2cons_plugins
from g2cons_plugins import G2ConSIndex
ray_start = 0.0
kw = {}
if workers:
    import ray
    t = time.perf_counter()
    ray.init(num_cpus=max(workers, 2), include_dashboard=False)
    ray_start = time.perf_counter() - t
    kw = {"engine": "ray", "num_workers": workers}
t = time.perf_counter()
idx = G2ConSIndex.build(docs, embedder=embedder, **kw)
build = time.perf_counter() - t
digest = hashlib.sha256(idx.stored.unit_vecs.tobytes()).hexdigest()
print("RESULT " + json.dumps({"workers": workers, "build_s": round(build, 2), "ray_start_s": round(ray_start, 2),
      "stages_s": {k: round(v, 2) for k, v in idx.timings.items()}, "unit_vectors_sha256": digest,
      "tree": g2cons_plugins.__file__.rsplit("/", 2)[0]}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    here = str(Path(__file__).resolve().parent)
    rows = []
    for workers in (0, 1, 2):
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, str(args.n), args.embedder, str(workers), here],
            capture_output=True,
            text=True,
            check=True,
        )
        row = json.loads(next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))[7:])
        row["engine"] = "local" if workers == 0 else "ray"
        rows.append(row)
        print(json.dumps(row), flush=True)
    same = len({r["unit_vectors_sha256"] for r in rows}) == 1
    out = {
        "n": args.n,
        "embedder": args.embedder,
        "cpus": os.cpu_count(),
        "same_vectors": same,
        "rows": rows,
        "loadavg_1min": os.getloadavg()[0],
    }
    args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print("same unit vectors in every build:", same)


if __name__ == "__main__":
    main()
