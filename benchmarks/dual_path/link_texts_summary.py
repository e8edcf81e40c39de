"""The graph-walk host with and without ``link_texts`` (chunks the selection dropped linked to the KG entities their
text names), from two ``g2cons eval --host graph-walk:...`` runs on the same set and, when given, the selection
research runs (``selection_candidate_research.py``) with and without the links.

    python benchmarks/dual_path/link_texts_summary.py \
        --on benchmarks/dual_path/results/graph_walk_musique_train100.json \
        --off benchmarks/dual_path/results/link_texts_off_musique_train100.json \
        --selection-on benchmarks/dual_path/results/selection_candidate_musique_linked.json \
        --selection-off benchmarks/dual_path/results/selection_candidate_musique.json \
        --selection-on benchmarks/dual_path/results/selection_candidate_musique_pack1200_linked.json \
        --selection-off benchmarks/dual_path/results/selection_candidate_musique_pack1200.json \
        --selection-always benchmarks/dual_path/results/selection_candidate_musique_linked_always.json \
        > benchmarks/dual_path/results/link_texts_musique_train100.md

Rows per kappa: the host alone (Context Recall at each budget, supporting-passage recall@5), the default fusion
(novel-first at the run's lambda, spill on) and the union (a question counts when either path alone finds it: an
oracle, not a rule). Selection rows: the mean CR of 1k / 2k / 4k of the host alone built on each selection, and
length-matched random's 10-seed mean.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _cells(run: dict[str, Any]) -> dict[float, dict[str, Any]]:
    """Per kappa: host CR and recall@5 by budget, fused CR by budget, union by budget."""
    host = run["host"]
    main = host["main"]
    concept = {c["budget"]: c["hits"] for c in host["concept"]}
    out: dict[float, dict[str, Any]] = {}
    for row in host["sweep"]:
        k, b = row["kappa"], row["budget"]
        cell = out.setdefault(k, {"host": {}, "r5": {}, "fused": {}, "union": {}})
        if row["method"] == "host":
            cell["host"][b] = row["context_recall"]
            cell["r5"][b] = row.get("recall_at_5")
            hits = row["hits"]
            cell["union"][b] = sum(h == "1" or c == "1" for h, c in zip(hits, concept[b], strict=True))
        elif row["method"] == f"fused-{main['fusion']}" and (row["lambda"], row["spill"]) in (
            (main["lambda"], main["spill"]),
            (main["lambda"], None),
        ):
            cell["fused"][b] = row["context_recall"]
    return out


def _fmt(d: dict[int, Any]) -> str:
    return " / ".join("-" if d.get(b) is None else f"{d[b]:g}" for b in sorted(d))


def _selection(path: Path) -> dict[float, dict[str, float]]:
    rows = _load(path)["rows"]
    out: dict[float, dict[str, float]] = {}
    for r in rows:
        if "host_cr_mean" in r:
            out.setdefault(r["kappa"], {})[r["selector"]] = r["host_cr_mean"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--on", type=Path, required=True, help="g2cons eval JSON, link_texts on (the host's default)")
    ap.add_argument("--off", type=Path, required=True, help="the same run with --host-option link_texts=false")
    ap.add_argument("--selection-on", type=Path, action="append", default=[])
    ap.add_argument("--selection-off", type=Path, action="append", default=[])
    ap.add_argument("--selection-always", type=Path, action="append", default=[], help="runs with --link-texts on")
    a = ap.parse_args()
    on, off = _cells(_load(a.on)), _cells(_load(a.off))
    print("# The graph-walk host with and without `link_texts`\n")
    print(f"Runs: `{a.on.name}` (on, the default) and `{a.off.name}` (`--host-option link_texts=false`).")
    print("Cells at beta 1k / 2k / 4k. Host alone: Context Recall, and recall@5 of the supporting passages at 4k;")
    print("fused: the default fusion; union: either path alone holds the answer.\n")
    print("| kappa | links | host alone CR | host recall@5 | fused (default) CR | union CR |")
    print("|---|---|---|---|---|---|")
    for k in sorted(on, reverse=True):
        for name, cells in (("off", off.get(k)), ("auto (on)", on[k])):
            if cells is None:
                continue
            r5 = cells["r5"].get(max(cells["r5"]))  # at the largest budget (the host's whole list)
            r5s = "-" if r5 is None else f"{r5:.1f}"
            row = [f"{k:g}", name, _fmt(cells["host"]), r5s, _fmt(cells["fused"]), _fmt(cells["union"])]
            print("| " + " | ".join(row) + " |")
    if a.selection_on:
        print("\n## Selection judged by this host (host alone, mean CR of 1k / 2k / 4k)\n")
        print("`auto` (the host's default) links when the selection keeps at least a third of the chunks: not at")
        print("kappa 0.2 (about a fifth of the chunks), whose rows are the `off` run's; `on`: linked at every kappa")
        print("(`--link-texts on`), the run that showed the links cost CR at kappa 0.2.\n")
        print("| run | kappa | links | coverage (default) | pagerank | knn_pagerank | length-matched random, "
              "10 seeds: mean (min..max) | coverage - random | oracle (gold first) |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|")
        runs = [[("off", off_), ("auto", on_)] for on_, off_ in zip(a.selection_on, a.selection_off, strict=True)]
        runs += [[("on", p)] for p in a.selection_always]
        for run in runs:
            for name, path in run:
                for k, sel in sorted(_selection(path).items()):
                    lmr = [v for s, v in sel.items() if s.startswith("lmr")]
                    m = statistics.mean(lmr)
                    print(
                        f"| `{path.stem}` | {k:g} | {name} | {sel['coverage']:.2f} | {sel['pagerank']:.2f} | "
                        f"{sel['knn_pagerank']:.2f} | {m:.2f} ({min(lmr):.2f}..{max(lmr):.2f}) | "
                        f"{sel['coverage'] - m:+.2f} | {sel.get('oracle_gold', float('nan')):.2f} |"
                    )


if __name__ == "__main__":
    main()
