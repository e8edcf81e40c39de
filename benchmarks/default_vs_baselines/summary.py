"""Summary of the default-vs-baselines eval outputs: CR per set, method and budget, the concept path's margin over
the best cheap retriever (dense, BM25, the two hybrids), and passage recall@5.

    python benchmarks/default_vs_baselines/summary.py benchmarks/default_vs_baselines/results/*.json \
        > benchmarks/default_vs_baselines/results/summary.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

METHODS = ("dense", "bm25", "hybrid", "hybrid-weighted", "keyword", "concept-dense", "concept")
RIVALS = ("dense", "bm25", "hybrid", "hybrid-weighted")


def main(paths: list[str]) -> int:
    cr_lines = [
        "| set | embedder | budgets | " + " | ".join(METHODS) + " | concept - best of dense/BM25/hybrids |",
        "|" + "---|" * (len(METHODS) + 4),
    ]
    rec_lines = ["| set | embedder | " + " | ".join(METHODS) + " |", "|" + "---|" * (len(METHODS) + 2)]
    for p in paths:
        data = json.loads(Path(p).read_text(encoding="utf-8"))
        if "results" not in data or "settings" not in data or "selection_downstream" in data:
            continue
        s = data["settings"]
        name = Path(p).stem
        budgets = sorted({r["budget"] for r in data["results"]})
        cr = {(r["method"], r["budget"]): r["context_recall"] for r in data["results"]}
        cells = [" / ".join(f"{cr[(m, b)]:g}" if (m, b) in cr else "-" for b in budgets) for m in METHODS]
        margins = []
        for b in budgets:
            best = max(cr.get((m, b), 0.0) for m in RIVALS)
            margins.append(f"{cr.get(('concept', b), 0.0) - best:+.2f}")
        bl = " / ".join(f"{b:,}" for b in budgets)
        cr_lines.append(f"| {name} | {s['embedder']} | {bl} | " + " | ".join(cells) + f" | {' / '.join(margins)} |")
        rec = {r["method"]: r for r in data.get("recall") or []}
        if rec:
            vals = [f"{rec[m]['recall@5']:g}" if m in rec else "-" for m in METHODS]
            rec_lines.append(f"| {name} | {s['embedder']} | " + " | ".join(vals) + " |")
    print("## Context Recall (%) per budget\n")
    print("\n".join(cr_lines))
    print("\n## Passage recall@5 (%)\n")
    print("\n".join(rec_lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
