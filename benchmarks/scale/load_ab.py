"""Load time of saved indexes under two code trees, side by side: each load in a fresh process, the pairs
interleaved (A, B, A, B, ...), so a slow minute of the machine hits both.

    python benchmarks/scale/load_ab.py --a /tmp/before /tmp/idx1m --b . /tmp/idx1m_v3 --rounds 2 \\
        --out benchmarks/scale/results/load_1m_ab.json

``--a CODE INDEX``: a checkout of the library (put first on ``sys.path``) and an index saved by it (an index saved
by an older format is read by newer code too). Prints and writes the seconds of ``G2ConSIndex.load`` and the
resident memory after it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

JOB = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import g2cons_plugins
from g2cons_plugins import G2ConSIndex
t = time.perf_counter()
idx = G2ConSIndex.load(sys.argv[2])
dt = time.perf_counter() - t
rss = int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
print(json.dumps({"load_s": round(dt, 2), "rss_mb": round(rss), "units": len(idx.units),
                  "code": g2cons_plugins.__file__}))
"""


def one(code: Path, index: Path) -> dict[str, Any]:
    res = subprocess.run([sys.executable, "-c", JOB, str(code.resolve()), str(index)], capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"load of {index} with {code} failed:\n{res.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    if not out["code"].startswith(str(code.resolve())):
        raise RuntimeError(f"imported {out['code']}, not the tree {code}")
    return out


def commit(code: Path) -> str:
    res = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=code)
    return res.stdout.strip() or "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", nargs=2, type=Path, required=True, metavar=("CODE", "INDEX"))
    ap.add_argument("--b", nargs=2, type=Path, required=True, metavar=("CODE", "INDEX"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    runs: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}
    for _ in range(args.rounds):
        for key in ("a", "b"):
            code, index = getattr(args, key)
            runs[key].append(one(code, index))
            print(key, json.dumps(runs[key][-1]), flush=True)
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "cpus": os.cpu_count(),
        "loadavg_1min_after": round(os.getloadavg()[0], 2),
        **{
            key: {
                "code_commit": commit(getattr(args, key)[0]),
                "index": str(getattr(args, key)[1]),
                "load_s": [r["load_s"] for r in runs[key]],
                "rss_mb_after_load": runs[key][-1]["rss_mb"],
                "units": runs[key][-1]["units"],
            }
            for key in ("a", "b")
        },
    }
    print(json.dumps(result, indent=1))
    if args.out:
        tmp = args.out.with_name(f".{args.out.name}.tmp")
        tmp.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
