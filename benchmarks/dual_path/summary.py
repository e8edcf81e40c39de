"""Every target cell of the dual-path benchmark from ``g2cons eval --host ... --out`` files (run.sh).

For each file (one corpus / packing / host): per kappa and budget, Context Recall of the concept path alone, the
host KG alone, the default fusion (score fusion at the config's host weight), the paper's ensemble at lambda 0.4
with spill and the best ensemble lambda of the sweep; the difference default - concept with an exact two-sided
sign test on the questions where the two differ; recall@5 of the context's head where gold passages exist.

    python benchmarks/dual_path/summary.py benchmarks/dual_path/results/*.json > benchmarks/dual_path/results/summary.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from scipy.stats import binomtest


def sign_p(a: str, b: str) -> float:
    """Two-sided exact sign test on paired 0/1 hits (questions where they differ)."""
    wins = sum(x == "1" and y == "0" for x, y in zip(a, b, strict=True))
    losses = sum(x == "0" and y == "1" for x, y in zip(a, b, strict=True))
    return 1.0 if wins + losses == 0 else float(binomtest(wins, wins + losses).pvalue)


def table(data: dict[str, Any], name: str) -> list[str]:
    host = data["host"]
    main = host["main"]
    w = main.get("host_weight", 0.2)
    concept = {r["budget"]: r for r in host["concept"]}
    sweep = host["sweep"]
    kappas = sorted({r["kappa"] for r in sweep})
    budgets = sorted(concept)
    s = data["settings"]
    out = [
        f"## {name}",
        "",
        f"{host['host']['label']}; corpus {s['corpus']} (pack {s.get('pack_tokens') or 'none'}), "
        f"{s['n_questions']} questions, embedder {s['embedder']}. Default fusion: score, host weight {w:g}.",
        "",
        "| kappa | budget | concept | host alone | **fused (default)** | default - concept (sign p) "
        "| ensemble 0.4 spill | best ensemble lambda | r@5 concept / fused |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for k in kappas:
        for b in budgets:
            rows = [r for r in sweep if r["kappa"] == k and r["budget"] == b]
            h = next(r for r in rows if r["method"] == "host")
            f = next(r for r in rows if r["method"] == "fused-score" and r["host_weight"] == w)
            ens = [r for r in rows if r["method"] == "fused" and r["spill"]]
            e04 = next((r for r in ens if r["lambda"] == 0.4), None)
            best = max(ens, key=lambda r: (r["context_recall"], -r["lambda"])) if ens else None
            c = concept[b]
            d = f["context_recall"] - c["context_recall"]
            p = sign_p(f["hits"], c["hits"]) if f.get("hits") and c.get("hits") else float("nan")
            r5 = (
                f"{c['recall_at_5']:.1f} / {f['recall_at_5']:.1f}" if "recall_at_5" in f and "recall_at_5" in c else "-"
            )
            out.append(
                f"| {k:g} | {b} | {c['context_recall']:.1f} | {h['context_recall']:.1f} "
                f"| **{f['context_recall']:.1f}** "
                f"| {d:+.1f} (p {p:.2f}) | {e04['context_recall'] if e04 else float('nan'):.1f} "
                f"| {best['context_recall'] if best else float('nan'):.1f} (lambda {best['lambda'] if best else '-'}) "
                f"| {r5} |"
            )
    out += ["", *targets(sweep, concept, w, kappas, budgets), ""]
    builds = {x["kappa"]: x for x in host["builds"]}
    out += ["", "| kappa | kept chunks | extraction input tokens (share of full) | graph entities / relations |",
            "|---|---|---|---|"]  # fmt: skip
    for k in kappas:
        x = builds[k]
        out.append(
            f"| {k:g} | {x['kept_chunks']} | {x['input_tokens']:,} ({100 * x['share_of_full_input_tokens']:.0f}%) "
            f"| {x.get('graph_entities', '-')} / {x.get('graph_relations', '-')} |"
        )
    return out + [""]


def targets(sweep: list[dict[str, Any]], concept: dict[int, Any], w: float, kappas: list[float], budgets: list[int]):
    """The dual-path targets, met or missed, for one file."""

    def cr(method: str, k: float, b: int) -> float:
        rows = [r for r in sweep if r["kappa"] == k and r["budget"] == b and r["method"] == method]
        if method == "fused-score":
            rows = [r for r in rows if r["host_weight"] == w]
        return float(rows[0]["context_recall"])

    def r5(k: float) -> float | None:
        rows = [
            r
            for r in sweep
            if r["kappa"] == k and r["method"] == "fused-score" and r["host_weight"] == w and r["budget"] == budgets[-1]
        ]
        return rows[0].get("recall_at_5") if rows else None

    below = [(k, b) for k in kappas for b in budgets if cr("fused-score", k, b) < concept[b]["context_recall"]]
    lines = ["Targets (default fusion):", ""]
    lines.append(
        "- fused >= concept alone in every (kappa, budget) cell: "
        + ("**met**" if not below else f"**missed** in {len(below)} cell(s): {below}")
    )
    plus3 = [
        (k, b, round(cr("fused-score", k, b) - concept[b]["context_recall"], 1))
        for k in kappas if k >= 0.5 for b in budgets if b >= 2000
    ]  # fmt: skip
    miss3 = [x for x in plus3 if x[2] < 3]
    lines.append(
        "- fused >= concept + 3 at 2k and 4k for kappa >= 0.5: "
        + (
            "**met**"
            if not miss3
            else f"**missed** in {len(miss3)} of {len(plus3)} cells (kappa, budget, delta): {miss3}"
        )
    )
    c5 = concept[budgets[-1]].get("recall_at_5")
    if c5 is not None:
        got = {k: r5(k) for k in kappas}
        ok = all(v is not None and v >= c5 + 3 for v in got.values())
        lines.append(
            f"- fused recall@5 >= concept + 3 (at beta {budgets[-1]}; concept {c5:.1f}): "
            f"{'**met**' if ok else '**missed**'}: {got}"
        )
    if 0.5 in kappas and 1.0 in kappas:
        for b in budgets:
            half, full_host, full_fused = cr("fused-score", 0.5, b), cr("host", 1.0, b), cr("fused-score", 1.0, b)
            ok = half >= full_host and half >= full_fused - 1
            lines.append(
                f"- beta {b}: G2ConS at kappa 0.5 {half:.1f} >= full-extraction host alone {full_host:.1f} and >= "
                f"fused at kappa 1.0 minus 1 ({full_fused - 1:.1f}): {'**met**' if ok else '**missed**'}"
            )
    return lines


def main(paths: list[str]) -> None:
    print("# Dual path: concept path, host KG and their fusion\n")
    for p in paths:
        data = json.loads(Path(p).read_text(encoding="utf-8"))
        if "host" not in data:
            continue
        print("\n".join(table(data, Path(p).stem)))


if __name__ == "__main__":
    main(sys.argv[1:])
