"""Summary of benchmarks/dual_path/fusion_compare.sh: per run, kappa and budget, Context Recall (and supporting-passage
recall@5) of the concept path alone, the host alone, score fusion (the default before share fusion), novel-first
fusion (the default) and share fusion (the default before it) per lambda and the paper's ensemble at lambda 0.4 with
spill, all from the same run (a run made before novel-first fusion was swept has no novel columns).

Usage: python benchmarks/dual_path/fusion_summary.py benchmarks/dual_path/results/fusion_*.json > summary.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _fmt(row: dict[str, Any] | None) -> str:
    if row is None:
        return "-"
    r5 = row.get("recall_at_5")
    cr = float(row["context_recall"])
    return (f"{cr:.0f}" if cr.is_integer() else f"{cr:.1f}") + (f" / {r5:.1f}" if r5 is not None else "")


def summarize(path: Path) -> list[str]:
    """The Markdown lines of one ``g2cons eval --host`` output."""
    data = json.loads(path.read_text(encoding="utf-8"))
    host = data["host"]
    st = data["settings"]
    concept = {r["budget"]: r for r in host["concept"]}
    sweep = host["sweep"]
    lambdas = sorted({r["lambda"] for r in sweep if r["method"] == "fused-share"})
    novels = sorted({r["lambda"] for r in sweep if r["method"] == "fused-novel"})
    default = st["config"].get("lambda_")
    rule = st["config"].get("fusion", "share")
    lines = [
        f"## {path.stem}",
        "",
        f"host: {host['host']['name']} ({st['corpus']}, pack {st['pack_tokens']}, {st['n_questions']} questions, "
        f"embedder {st['embedder']}); cells: Context Recall / supporting-passage recall@5; "
        f"{rule}@{default:g} is the run's config",
        "",
    ]
    head = ["kappa", "budget", "concept", "host", "score (old default)"]
    head += [f"novel@{lam:g}" for lam in novels]
    head += [f"share@{lam:g}" for lam in lambdas] + ["ensemble@0.4+spill"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for kappa in sorted({r["kappa"] for r in sweep}, reverse=True):
        for b in sorted(concept):
            row = [r for r in sweep if r["kappa"] == kappa and r["budget"] == b]
            cells = [f"{kappa:g}", str(b), _fmt(concept[b]), _fmt(_pick(row, "host")), _fmt(_pick(row, "fused-score"))]
            cells += [_fmt(_pick(row, "fused-novel", **{"lambda": lam})) for lam in novels]
            cells += [_fmt(_pick(row, "fused-share", **{"lambda": lam})) for lam in lambdas]
            cells.append(_fmt(_pick(row, "fused", **{"lambda": 0.4, "spill": True})))
            lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def _pick(rows: list[dict[str, Any]], method: str, **kw: Any) -> dict[str, Any] | None:
    """The first row of ``method`` whose fields equal ``kw``."""
    return next((r for r in rows if r["method"] == method and all(r.get(k) == v for k, v in kw.items())), None)


def main(argv: list[str]) -> int:
    print("# Fusion rules on the same runs (benchmarks/dual_path/fusion_compare.sh, fusion_novel.sh)\n")
    for p in argv:
        print("\n".join(summarize(Path(p))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
