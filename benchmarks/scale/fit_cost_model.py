"""Fit the build cost model of ``g2cons_plugins.cli.estimate`` on ``build_stages.py`` measurements.

Each stage's seconds, the peak resident memory and the disk size as ``intercept + slope x tokens`` (least squares
over the measured sizes of one tree, by default "after": the code here); prints the constants as the Python the
module holds, and each measured size against the prediction.

    python benchmarks/scale/fit_cost_model.py benchmarks/scale/results/build_stages.json \
        benchmarks/scale/results/build_stages_40k.json \
        --peaks benchmarks/scale/results/build_peaks_streaming.json

``--peaks``: the peak memory and disk lines are fitted on these streaming builds (``build_peaks.py``: the whole
build and its save, 20k to 1M passages) instead of the stage measurements (in-memory stages, up to 40k passages).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

STAGES = ("read", "split", "sentences", "count", "embed", "terms", "derive", "unit_index", "save")


def fit(x: np.ndarray, y: np.ndarray, total: np.ndarray | None = None) -> tuple[float, float]:
    """Least-squares (intercept, slope per million) of ``y`` on ``x`` (tokens), each size weighted by 1 / ``total``
    (default ``y``): relative errors, so the small sizes count as much as the large ones."""
    w = 1.0 / np.maximum(total if total is not None else y, 1e-9)
    A = np.stack([np.ones_like(x), x / 1e6], axis=1) * w[:, None]
    (a, b), *_ = np.linalg.lstsq(A, y * w, rcond=None)
    return round(float(a), 4), round(float(b), 4)


def model(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The constants fitted on ``rows`` (see module doc)."""
    x = np.array([r["tokens"] for r in rows], dtype=np.float64)
    total = np.array([r["total_s"] for r in rows])  # each stage weighted as the build it is part of
    return {
        "CHARS_PER_TOKEN": round(float(sum(r["chars"] for r in rows) / x.sum()), 4),
        "STAGE_SECONDS": {s: fit(x, np.array([r["stages"][s]["s"] for r in rows]), total) for s in STAGES},
        "PEAK_MB": fit(x, np.array([r["peak_mb"] for r in rows])),
        "DISK_MB": fit(x, np.array([r["disk_mb"] for r in rows])),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("measurements", type=Path, nargs="+")
    ap.add_argument("--tree", default="after")
    ap.add_argument("--peaks", type=Path, nargs="*", default=[], help="build_peaks.py results (memory and disk)")
    args = ap.parse_args()
    rows = [r for f in args.measurements for r in json.loads(f.read_text())["rows"] if r["tree"] == args.tree]
    rows.sort(key=lambda r: r["tokens"])
    m = model(rows)
    peaks = sorted((r for f in args.peaks for r in json.loads(f.read_text())["rows"]), key=lambda r: r["tokens"])
    if peaks:
        x = np.array([r["tokens"] for r in peaks], dtype=np.float64)
        m["PEAK_MB"] = fit(x, np.array([r["peak_mb"] for r in peaks]))
        m["DISK_MB"] = fit(x, np.array([r["disk_mb"] for r in peaks]))
        m["FITTED_PEAK_UP_TO_TOKENS"] = int(x.max())
    for k, v in m.items():
        print(f"{k} = {v!r}")
    def line(name: str, t: float) -> float:
        return float(m[name][0] + m[name][1] * t)

    print("\n| passages | tokens | time s measured / model |" + ("" if peaks else " peak MB measured / model | disk MB "
          "measured / model |"))  # fmt: skip
    print("|---|---|---|" + ("" if peaks else "---|---|"))
    for r in rows:
        t = r["tokens"] / 1e6
        secs = sum(a + b * t for a, b in m["STAGE_SECONDS"].values())
        cells = [f"{r['n']:,}", f"{r['tokens']:,}", f"{r['total_s']:.1f} / {secs:.1f} ({secs / r['total_s'] - 1:+.0%})"]
        if not peaks:  # the memory and disk lines were fitted on these rows
            peak, disk = line("PEAK_MB", t), line("DISK_MB", t)
            cells += [f"{r['peak_mb']:,.0f} / {peak:,.0f} ({peak / r['peak_mb'] - 1:+.0%})",
                      f"{r['disk_mb']:.1f} / {disk:.1f} ({disk / r['disk_mb'] - 1:+.0%})"]  # fmt: skip
        print("| " + " | ".join(cells) + " |")
    if peaks:
        print("\n| passages | tokens | peak MB (build, save) measured / model | disk MB measured / model |")
        print("|---|---|---|---|")
        for r in peaks:
            t = r["tokens"] / 1e6
            peak, disk = line("PEAK_MB", t), line("DISK_MB", t)
            print(
                f"| {r['n']:,} | {r['tokens']:,} | {r['peak_mb']:,.0f} ({r['build_peak_mb']:,.0f}, "
                f"{r['save_peak_mb']:,.0f}) / {peak:,.0f} ({peak / r['peak_mb'] - 1:+.0%}) | "
                f"{r['disk_mb']:,.0f} / {disk:,.0f} ({disk / r['disk_mb'] - 1:+.0%}) |"
            )

if __name__ == "__main__":
    main()
