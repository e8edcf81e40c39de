"""Fit the build cost model of ``g2cons_plugins.cli.estimate`` on ``build_stages.py`` measurements.

Each stage's seconds, the peak resident memory and the disk size as ``intercept + slope x tokens`` (least squares
over the measured sizes of one tree, by default "after": the code here); prints the constants as the Python the
module holds, and each measured size against the prediction.

    python benchmarks/scale/fit_cost_model.py benchmarks/scale/results/build_stages.json \
        benchmarks/scale/results/build_stages_40k.json \
        --peaks benchmarks/scale/results/build_peaks_streaming.json

``--peaks``: the peak memory and disk are fitted on these streaming builds (``build_peaks.py``: the whole build and
its save) instead of the stage measurements (in-memory stages, up to 40k passages). The peak is the lower of two
lines (:func:`fit_peak`): small builds keep every array in memory (the derive spills only arrays of 16 MB or more),
large ones spill most of them, so memory grows steeply at first and then by a smaller slope. ``--hold-out N``:
leave the builds of N passages out of the fit and print the model's error on them (an out-of-sample check).
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


def fit_peak(x: np.ndarray, y: np.ndarray) -> tuple[tuple[float, float], ...]:
    """The peak memory as the lower of two lines, ``min(a1 + b1 t, a2 + b2 t)`` (concave: the steeper line holds for
    small builds, the flatter one for large builds), each fitted (:func:`fit`) on the sizes on its side of a split
    point; the split (at least two sizes a side) that gives the smallest largest relative error. One line where
    there are fewer than four sizes."""
    order = np.argsort(x)
    x, y = x[order], y[order]
    best: tuple[float, tuple[tuple[float, float], ...]] = (np.inf, (fit(x, y),))
    for k in range(2, len(x) - 1):
        lines = (fit(x[:k], y[:k]), fit(x[k:], y[k:]))
        pred = np.min([[a + b * t / 1e6 for t in x] for a, b in lines], axis=0)
        err = float(np.max(np.abs(pred / y - 1)))
        if err < best[0]:
            best = (err, lines)
    return best[1]


def peak_of(lines: tuple[tuple[float, float], ...], tokens: float) -> float:
    """The model's peak for ``tokens``: the lowest of its lines (``g2cons_plugins.cli.estimate``)."""
    return min(a + b * tokens / 1e6 for a, b in lines)


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
    ap.add_argument("--hold-out", type=int, nargs="*", default=[], help="passages of builds left out of the fit")
    args = ap.parse_args()
    rows = [r for f in args.measurements for r in json.loads(f.read_text())["rows"] if r["tree"] == args.tree]
    rows.sort(key=lambda r: r["tokens"])
    m = model(rows)
    every = sorted((r for f in args.peaks for r in json.loads(f.read_text())["rows"]), key=lambda r: r["tokens"])
    peaks = [r for r in every if r["n"] not in args.hold_out]
    if peaks:
        x = np.array([r["tokens"] for r in peaks], dtype=np.float64)
        m["PEAK_MB"] = fit_peak(x, np.array([r["peak_mb"] for r in peaks]))
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
            peak, disk = peak_of((m["PEAK_MB"],), r["tokens"]), line("DISK_MB", t)
            cells += [f"{r['peak_mb']:,.0f} / {peak:,.0f} ({peak / r['peak_mb'] - 1:+.0%})",
                      f"{r['disk_mb']:.1f} / {disk:.1f} ({disk / r['disk_mb'] - 1:+.0%})"]  # fmt: skip
        print("| " + " | ".join(cells) + " |")
    if peaks:
        print("\n| passages | tokens | peak MB (build, save) measured / model | disk MB measured / model |")
        print("|---|---|---|---|")
        for r in every:
            t = r["tokens"] / 1e6
            peak, disk = peak_of(m["PEAK_MB"], r["tokens"]), line("DISK_MB", t)
            held = " (held out)" if r["n"] in args.hold_out else ""
            print(
                f"| {r['n']:,}{held} | {r['tokens']:,} | {r['peak_mb']:,.0f} ({r['build_peak_mb']:,.0f}, "
                f"{r['save_peak_mb']:,.0f}) / {peak:,.0f} ({peak / r['peak_mb'] - 1:+.0%}) | "
                f"{r['disk_mb']:,.0f} / {disk:,.0f} ({disk / r['disk_mb'] - 1:+.0%}) |"
            )
        for n in (3_000_000, 10_000_000):
            t = n * x.max() / max(r["n"] for r in peaks)  # tokens per passage of the largest build
            print(f"{n:,} passages (~{t / 1e6:,.0f}M tokens): peak {peak_of(m['PEAK_MB'], t):,.0f} MB, "
                  f"disk {line('DISK_MB', t / 1e6):,.0f} MB")

if __name__ == "__main__":
    main()
