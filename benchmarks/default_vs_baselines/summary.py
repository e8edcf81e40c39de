"""Summary of the default-vs-baselines eval outputs: CR per set, method and budget, the concept path's margin over
the best cheap retriever (dense, BM25, the two hybrids), passage recall@2 and @5, and per set and budget the concept
path against the best rival with the paired sign test (from each run's ``*_per_question.jsonl``).

    python benchmarks/default_vs_baselines/summary.py benchmarks/default_vs_baselines/results/*.json \
        > benchmarks/default_vs_baselines/results/summary.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from g2cons_plugins.eval.evaluation import paired_test

METHODS = ("dense", "bm25", "hybrid", "hybrid-weighted", "keyword", "concept-dense", "concept")
RIVALS = ("dense", "bm25", "hybrid", "hybrid-weighted")


def main(paths: list[str]) -> int:
    cr_lines = [
        "| set | embedder | budgets | " + " | ".join(METHODS) + " | concept - best of dense/BM25/hybrids |",
        "|" + "---|" * (len(METHODS) + 4),
    ]
    rec_lines = ["| set | embedder | " + " | ".join(METHODS) + " |", "|" + "---|" * (len(METHODS) + 2)]
    rec2_lines = list(rec_lines)
    vs_lines = [
        "| set | budget | concept CR | best rival | its CR | concept - rival | wins / losses | sign-test p "
        "| concept recall@2 | best rival @2 | its recall@2 | concept - rival @2 | p @2 |",
        "|" + "---|" * 13,
    ]
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
            vals = [f"{rec[m]['recall@2']:g}" if m in rec else "-" for m in METHODS]
            rec2_lines.append(f"| {name} | {s['embedder']} | " + " | ".join(vals) + " |")
        pq = Path(p).with_name(f"{name}_per_question.jsonl")
        if pq.exists():
            vs_lines += _versus(name, budgets, cr, rec, [json.loads(x) for x in pq.read_text().splitlines() if x])
    print("## Context Recall (%) per budget\n")
    print("\n".join(cr_lines))
    print("\n## Concept path against the best rival per set and budget (paired sign test over the questions)\n")
    print("The rival is the best of dense, BM25 and the two hybrids at that budget (by CR; by recall@2 for the")
    print("recall columns); p: two-sided exact sign test over the questions where the two differ.\n")
    print("\n".join(vs_lines))
    print("\n## Passage recall@2 (%)\n")
    print("\n".join(rec2_lines))
    print("\n## Passage recall@5 (%)\n")
    print("\n".join(rec_lines))
    return 0


def _versus(
    name: str, budgets: list[int], cr: dict[tuple[str, int], float], rec: dict[str, Any], pq: list[dict[str, Any]]
) -> list[str]:
    """One row per budget: concept against the best rival by CR, and by recall@2 (where gold passages exist)."""
    rows = []
    r2_cells = ["-"] * 5
    have2 = [m for m in RIVALS if m in rec] and "concept" in rec
    if have2:
        best2 = max((m for m in RIVALS if m in rec), key=lambda m: rec[m]["recall@2"])
        t2 = paired_test(pq, "concept", best2, "rank", key="recall@2")
        c2, b2 = rec["concept"]["recall@2"], rec[best2]["recall@2"]
        r2_cells = [f"{c2:g}", best2, f"{b2:g}", f"{c2 - b2:+.2f}", _p(t2["p_value"])]
    for b in budgets:
        if ("concept", b) not in cr:
            continue
        best = max((m for m in RIVALS if (m, b) in cr), key=lambda m: cr[(m, b)])
        t = paired_test(pq, "concept", best, b)
        rows.append(
            f"| {name} | {b:,} | {cr[('concept', b)]:g} | {best} | {cr[(best, b)]:g} | "
            f"{cr[('concept', b)] - cr[(best, b)]:+.2f} | {t['wins']} / {t['losses']} | {_p(t['p_value'])} | "
            + " | ".join(r2_cells) + " |"
        )
    return rows


def _p(p: float) -> str:
    """A p-value as printed (paired_test rounds to 4 decimals: 0 means below 0.0001)."""
    return "<0.0001" if p < 0.0001 else f"{p:.4g}"


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
