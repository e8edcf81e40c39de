"""Peak resident memory and disk of a streaming build and its save, at several sizes: the measurements the build
cost model's memory and disk lines (``g2cons_plugins.cli.estimate``: ``PEAK_MB``, ``DISK_MB``) are fitted on.

Each size is ``bench.py --job build`` in a fresh process (generated passages given as a generator, wordllama, the
index saved to a temporary folder and deleted after): peak RSS of the build, of the save right after it, their
maximum (what ``g2cons build`` holds at most), the saved bytes and the seconds. Memory and disk do not depend on
how busy the machine is; the seconds do (they are not fitted here). ``--add FILE``: rows of an earlier run of this
script or of ``bench.py`` (a 1M build job's JSON) to merge in.

    nice -n 5 python benchmarks/scale/build_peaks.py --sizes 20000 50000 100000 200000 \\
        --out benchmarks/scale/results/build_peaks_streaming.json
    python benchmarks/scale/fit_cost_model.py --peaks benchmarks/scale/results/build_peaks_streaming.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def row_of(job: dict[str, Any]) -> dict[str, Any]:
    """A row of this benchmark from a ``bench.py --job build`` result."""
    return {
        "n": job["n_passages"],
        "tokens": job["n_tokens"],
        "build_peak_mb": job["peak_rss_build_mb"],
        "save_peak_mb": job["peak_rss_save_mb"],
        "peak_mb": max(job["peak_rss_build_mb"], job["peak_rss_save_mb"]),
        "disk_mb": round(job["save_bytes"] / 2**20, 1),
        "build_s": job["build_s"],
        "save_s": job["save_s"],
        "commit": job.get("commit", "?"),
    }


def run(n: int, embedder: str, seed: int, workdir: Path | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        cmd = [sys.executable, str(HERE / "bench.py"), "--job", "build", "--n", str(n), "--embedder", embedder,
               "--seed", str(seed), "--path", str(Path(tmp) / "index")]  # fmt: skip
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, env={**os.environ})
        shutil.rmtree(Path(tmp) / "index", ignore_errors=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[20_000, 50_000, 100_000, 200_000])
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--add", type=Path, nargs="*", default=[], help="earlier results (this script's or bench.py's)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()  # fmt: skip
    rows: list[dict[str, Any]] = []
    for f in a.add:
        data = json.loads(f.read_text(encoding="utf-8"))
        jobs = data.get("rows", [data])
        rows += [r if "peak_mb" in r else row_of(r) for r in jobs]
    for n in a.sizes:
        t0 = time.perf_counter()
        job = run(n, a.embedder, a.seed, a.workdir)
        job.setdefault("commit", commit)
        rows.append(row_of(job))
        print(f"{n:,} passages in {time.perf_counter() - t0:.0f} s: {rows[-1]}", file=sys.stderr, flush=True)
    rows.sort(key=lambda r: r["tokens"])
    meta = {"embedder": a.embedder, "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d"),
            "command": "python benchmarks/scale/build_peaks.py " + " ".join(sys.argv[1:])}  # fmt: skip
    tmp = a.out.with_suffix(".tmp")
    tmp.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, a.out)
    print("| passages | tokens | build peak MB | save peak MB | disk MB |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['n']:,} | {r['tokens']:,} | {r['build_peak_mb']:,.0f} | {r['save_peak_mb']:,.0f} | "
              f"{r['disk_mb']:,.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
