"""Memory probe: one process builds an index of ``--n`` generated passages (given as a generator), answers
``--queries`` real questions, then adds 1% more passages in one call and ``--single`` more one at a time, as an
application that builds and serves in the same process would. Prints and writes the peak resident set per phase
(sampled every 20 ms, :class:`bench.PeakRSS`), the process-wide peak (``ru_maxrss``) and, after each phase, the
anonymous and file-backed parts of the resident set (``RssAnon`` / ``RssFile``: file pages are clean maps of the
index's own columns, which the kernel can drop; anonymous memory it cannot).

    nice -n 5 python benchmarks/scale/probe.py --n 80000 --out benchmarks/scale/results/probe_80k.json

The issue's target: a peak of at most 600 MB at 80k passages (wordllama).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402
from bench import PeakRSS, _rss_parts, _ru_maxrss_mb  # noqa: E402


def probe(n: int, embedder: str, n_queries: int, single: int, seed: int) -> dict[str, Any]:
    from g2cons_plugins import G2ConSIndex

    mem = PeakRSS()
    phases: list[dict[str, Any]] = []

    def phase(name: str, t0: float) -> None:
        phases.append({"phase": name, "s": round(time.perf_counter() - t0, 2), "peak_mb": mem.phase(), **_rss_parts()})
        print(phases[-1], flush=True)

    t = time.perf_counter()
    phase("start", t)
    t = time.perf_counter()
    idx = G2ConSIndex.build(corpus.passages(n, seed), embedder=embedder)
    phase("build", t)
    with open(corpus.DATA / "musique/ketrag500_questions.jsonl", encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for line in f if line.strip()][:n_queries]
    t = time.perf_counter()
    for q in questions:
        idx.retrieve(q)
    phase("queries", t)
    delta = max(1, n // 100)
    rows = list(corpus.passages(delta + single, seed, start=n))
    t = time.perf_counter()
    idx.add(rows[:delta])
    phase("add 1%", t)
    t = time.perf_counter()
    for row in rows[delta:]:
        idx.add([row])
    phase(f"add {single} one at a time", t)
    t = time.perf_counter()
    for q in questions[:10]:
        idx.retrieve(q)
    phase("queries after adds", t)
    return {
        "n_passages": n,
        "embedder": embedder,
        "phases": phases,
        "peak_mb": max(p["peak_mb"] for p in phases),
        "ru_maxrss_mb": _ru_maxrss_mb(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=80_000)
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--single", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    out = probe(args.n, args.embedder, args.queries, args.single, args.seed)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE)
    out.update(commit=commit.stdout.strip(), cpus=os.cpu_count(), python=platform.python_version(),
               loadavg_1min_after=round(os.getloadavg()[0], 2))
    print(f"peak {out['peak_mb']:.0f} MB (ru_maxrss {out['ru_maxrss_mb']:.0f} MB)")
    if args.out:
        args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
