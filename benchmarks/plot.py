"""Plot Context Recall vs budget per method from one or more `g2cons eval --out` JSON files.

python benchmarks/plot.py benchmarks/results/musique_ketrag500_minilm.json --out benchmarks/results/cr_musique.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

COLORS = {"concept": "C1", "dense": "C4", "bm25": "C0", "keyword": "C5", "concept-paper": "C2", "concept-ppr": "C3"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    fig, axes = plt.subplots(1, len(args.results), figsize=(6 * len(args.results), 4.2), squeeze=False)
    for ax, path in zip(axes[0], args.results, strict=True):
        data = json.loads(path.read_text())
        methods = sorted({r["method"] for r in data["results"]})
        for m in methods:
            rows = sorted((r for r in data["results"] if r["method"] == m), key=lambda r: r["budget"])
            style = "-o" if m == "concept" else "--." if m.startswith("concept") else ":."
            xs, ys = [r["budget"] for r in rows], [r["context_recall"] for r in rows]
            ax.plot(xs, ys, style, label=m, color=COLORS.get(m))
        ax.set_xscale("log")
        ax.set_xlabel("budget beta (tokens)")
        ax.set_ylabel("Context Recall (%)")
        s = data["settings"]
        name = f"{Path(s['corpus']).parent.name}/{Path(s['corpus']).name.replace('_corpus.jsonl', '')}"
        ax.set_title(f"{name}, {s['embedder']}, n={s['n_questions']}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)


if __name__ == "__main__":
    main()
