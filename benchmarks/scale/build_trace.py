"""A build's stage seconds and its resident memory over time (anonymous / file pages, every 0.25 s): where the
peak is. Generated passages (``corpus.py``), wordllama.

    python benchmarks/scale/build_trace.py --n 300000 --out benchmarks/scale/results/trace.json
    python benchmarks/scale/build_trace.py --n 100000 --hnsw   # the unit graph from 1,000 units on
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402


def _rss_mb() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("RssAnon", "RssFile")):
                key, value = line.split(":")
                out[key] = int(value.split()[0]) // 1024
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, required=True, help="passages")
    ap.add_argument("--hnsw", action="store_true", help="the unit index as an HNSW graph from 1,000 units on")
    ap.add_argument("--out", type=Path, help="write the result here as JSON (default: print it)")
    args = ap.parse_args()
    from g2cons_plugins import G2ConSConfig, G2ConSIndex

    config = G2ConSConfig().with_(ann_kind="hnsw", ann_threshold=1000) if args.hnsw else G2ConSConfig()
    trace: list[tuple[float, dict[str, int]]] = []
    done = threading.Event()
    t0 = time.perf_counter()

    def sample() -> None:
        while not done.wait(0.25):
            trace.append((round(time.perf_counter() - t0, 2), _rss_mb()))

    threading.Thread(target=sample, daemon=True).start()
    idx = G2ConSIndex.build(corpus.passages(args.n, 0), embedder="wordllama", config=config)
    build_s = time.perf_counter() - t0
    done.set()
    at, peak = max(trace, key=lambda row: row[1]["RssAnon"] + row[1]["RssFile"])
    out: dict[str, Any] = {
        "n_passages": args.n,
        "unit_index": "hnsw from 1,000 units" if args.hnsw else "default",
        "n_units": len(idx.units),
        "build_s": round(build_s, 2),
        "stages_s": {k: round(v, 2) for k, v in idx.timings.items()},
        "peak_mb": peak["RssAnon"] + peak["RssFile"],
        "peak_at_s": at,
        "peak_parts_mb": peak,
        "trace": trace[:: max(1, len(trace) // 60)],
    }
    text = json.dumps(out, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
