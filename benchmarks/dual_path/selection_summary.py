"""Host-alone CR of every candidate selection against length-matched random (the mean of its three seeds), per
setting (``selection_candidates.py`` outputs), and the mean of the differences over the settings.

    python benchmarks/dual_path/selection_summary.py benchmarks/dual_path/results/selection_candidates_musique*.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(paths: list[str]) -> None:
    cells: dict[str, dict[str, float]] = {}
    settings: list[str] = []
    for p in paths:
        data = json.loads(Path(p).read_text())
        pack = data["pack_tokens"]
        for kappa in sorted({r["kappa"] for r in data["rows"]}):
            rows = [r for r in data["rows"] if r["kappa"] == kappa]
            lmr = [r["host_cr_mean"] for r in rows if r["selector"].startswith("lmr")]
            key = f"k{kappa:g}" + (f" pack{pack}" if pack else "")
            settings.append(key)
            base = sum(lmr) / len(lmr)
            cells.setdefault("length-matched random (3 seeds)", {})[key] = base
            for r in rows:
                if not r["selector"].startswith("lmr"):
                    cells.setdefault(r["selector"], {})[key] = r["host_cr_mean"]
    print("# Selection candidates: host-alone CR (mean of 1k / 2k / 4k), graph-walk host, MuSiQue train100\n")
    print("Cell: CR (difference from length-matched random, the mean of seeds 0..2). Equal extraction input tokens.\n")
    print("| selector | " + " | ".join(settings) + " | mean diff | settings above random |")
    print("|---|" + "---|" * (len(settings) + 2))
    base = cells["length-matched random (3 seeds)"]
    for name, row in cells.items():
        diffs = [row[s] - base[s] for s in settings if s in row]
        shown = [f"{row[s]:.1f} ({row[s] - base[s]:+.1f})" if s in row else "-" for s in settings]
        above = sum(d > 0 for d in diffs)
        print(f"| {name} | " + " | ".join(shown) + f" | {sum(diffs) / len(diffs):+.2f} | {above}/{len(diffs)} |")


if __name__ == "__main__":
    main(sys.argv[1:])
