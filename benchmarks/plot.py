"""Plot Context Recall vs budget per method from one or more `g2cons eval --out` JSON files.

python benchmarks/plot.py benchmarks/results/musique_ketrag500_minilm.json --out benchmarks/results/cr.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from g2cons_plugins.eval.report import plot_cr


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    plot_cr([json.loads(p.read_text()) for p in args.results], args.out)


if __name__ == "__main__":
    main()
