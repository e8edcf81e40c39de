"""Summary of ``g2cons eval --selection-downstream`` outputs across sets: host-KG and fused CR per selector, kappa
and budget, what each selector's host build costs (calls, input tokens), paired sign tests of the default
against every other selector (per set, and pooled over the sets' questions), and which selector wins where.

    python benchmarks/selection_downstream_summary.py \
        benchmarks/default_vs_baselines/results/selection_downstream_*.json \
        > benchmarks/default_vs_baselines/results/selection_downstream_summary.md

A file's set name is its stem without ``selection_downstream_``; a file whose stem ends in ``_chunks`` was run with
``--set kappa_by=chunks`` (equal calls per kappa) and is reported in its own section. Paired tests need the
per-question hits (``host_hits`` / ``fused_hits``) that the harness writes; older files without them get "-".
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from scipy.stats import binomtest

GOLD: dict[str, str] = {}  # set -> "supporting passages | their median tokens | the others' median tokens"
METRICS = (("host_cr", "host_hits", "host-KG CR"), ("fused_cr", "fused_hits", "fused CR"))


LABELS = {
    "hotpotqa_minilm": "HotpotQA train100",
    "musique_minilm": "MuSiQue train100",
    "musique_ketrag500_minilm": "MuSiQue ketrag500",
    "2wiki_ketrag500_minilm": "2Wiki ketrag500",
}


def _name(selector: str) -> str:
    return "default" if selector.startswith("default") else selector


def _gold_lengths(settings: dict[str, Any]) -> str:
    """Median tokens of the supporting passages and of the others (the corpus and questions the run used)."""
    import statistics

    from g2cons_plugins.eval.evaluation import load_questions, read_jsonl
    from g2cons_plugins.text import get_tokenizer

    corpus, questions = Path(settings["corpus"]), Path(settings["questions"])
    if not corpus.exists() or not questions.exists():
        return "- | - | -"
    gold = {g for q in load_questions(questions) for g in q.get("supporting_passage_ids") or []}
    tok = get_tokenizer()
    n = {c["id"]: len(tok.encode(c["text"])) for c in read_jsonl(corpus)}
    g = [v for k, v in n.items() if k in gold]
    o = [v for k, v in n.items() if k not in gold]
    med = f"{statistics.median(g):g}" if g else "-"
    return f"{len(g):,} | {med} | {statistics.median(o):g}"


def _load(paths: list[str]) -> dict[str, list[dict[str, Any]]]:
    sets: dict[str, list[dict[str, Any]]] = {}
    for p in paths:
        data = json.loads(Path(p).read_text(encoding="utf-8"))
        if not data.get("selection_downstream"):
            continue
        name = Path(p).stem.removeprefix("selection_downstream_")
        sets[name] = data["selection_downstream"]
        if not name.endswith("_chunks"):
            GOLD[name] = _gold_lengths(data["settings"])
    order = list(LABELS)
    return dict(
        sorted(
            sets.items(),
            key=lambda kv: (
                order.index(kv[0].removesuffix("_chunks")) if kv[0].removesuffix("_chunks") in order else len(order),
                kv[0],
            ),
        )
    )


def _sign(wins: int, losses: int) -> float:
    return float(binomtest(wins, wins + losses, 0.5).pvalue) if wins + losses else 1.0


def _paired(a: str, b: str) -> tuple[int, int]:
    """Questions a hits and b misses, and the reverse."""
    return sum(x == "1" and y == "0" for x, y in zip(a, b, strict=True)), sum(
        x == "0" and y == "1" for x, y in zip(a, b, strict=True)
    )


def _section(title: str, sets: dict[str, list[dict[str, Any]]]) -> list[str]:
    if not sets:
        return []
    names = list(sets)
    heads = [LABELS.get(s, s) for s in names]
    selectors = list(dict.fromkeys(_name(r["selector"]) for rows in sets.values() for r in rows))
    kappas = sorted({r["kappa"] for rows in sets.values() for r in rows})
    budgets = sorted({r["budget"] for rows in sets.values() for r in rows})
    at = {(s, r["kappa"], _name(r["selector"]), r["budget"]): r for s, rows in sets.items() for r in rows}
    bl = " / ".join(f"{b // 1000}k" if b % 1000 == 0 else str(b) for b in budgets)
    out = [f"## {title}", ""]
    for key, _, label in METRICS:
        out += [f"### {label} at {bl} tokens", "", "| kappa | selector | " + " | ".join(heads) + " | mean |"]
        out.append("|" + "---|" * (len(names) + 3))
        for k in kappas:
            for sel in selectors:
                cells, vals = [], []
                for s in names:
                    got = [at.get((s, k, sel, b)) for b in budgets]
                    cells.append(" / ".join(f"{r[key]:g}" if r else "-" for r in got))
                    vals += [r[key] for r in got if r]
                mean = f"{sum(vals) / len(vals):.1f}" if vals else "-"
                out.append(f"| {k:g} | {sel} | " + " | ".join(cells) + f" | {mean} |")
        out.append("")
    out += [
        "### Build cost: calls (kept chunks) / input-token share (chunk + prompt tokens per call) / chunk-token share",
        "",
        "| kappa | selector | " + " | ".join(heads) + " |",
        "|" + "---|" * (len(names) + 2),
    ]
    for k in kappas:
        for sel in selectors:
            cells = []
            for s in names:
                r = at.get((s, k, sel, budgets[0]))
                if r is None:
                    cells.append("-")
                    continue
                share = f"{r['input_share']:.3f}" if "input_share" in r else "-"
                cells.append(f"{r['kept_chunks']:,} / {share} / {r['kept_token_share']:.3f}")
            out.append(f"| {k:g} | {sel} | " + " | ".join(cells) + " |")
    out.append("")
    others = [s for s in selectors if s != "default"]
    for key, hits, label in METRICS:
        out += [
            f"### Paired: default minus each selector, {label} (points; wins/losses; exact sign-test p)",
            "",
            "| kappa | budget | vs | " + " | ".join(heads) + " | pooled over sets |",
            "|" + "---|" * (len(names) + 4),
        ]
        for k in kappas:
            for b in budgets:
                for sel in others:
                    cells = []
                    tw = tl = tn = 0
                    for s in names:
                        d, o = at.get((s, k, "default", b)), at.get((s, k, sel, b))
                        if not d or not o:
                            cells.append("-")
                            continue
                        diff = d[key] - o[key]
                        if hits in d and hits in o:
                            w, lo = _paired(d[hits], o[hits])
                            tw, tl, tn = tw + w, tl + lo, tn + len(d[hits])
                            cells.append(f"{diff:+.1f} ({w}/{lo}, p={_sign(w, lo):.2g})")
                        else:
                            cells.append(f"{diff:+.1f}")
                    pooled = f"{100.0 * (tw - tl) / tn:+.2f} ({tw}/{tl}, p={_sign(tw, tl):.2g})" if tn else "-"
                    out.append(f"| {k:g} | {b} | {sel} | " + " | ".join(cells) + f" | {pooled} |")
        out.append("")
    out += ["### Best selector per (set, kappa, budget) cell (ties count for each)", ""]
    out += ["| metric | " + " | ".join(selectors) + " | cells |", "|" + "---|" * (len(selectors) + 2)]
    for key, _, label in METRICS:
        wins: dict[str, int] = defaultdict(int)
        n = 0
        for s in names:
            for k in kappas:
                for b in budgets:
                    vals = {sel: at[(s, k, sel, b)][key] for sel in selectors if (s, k, sel, b) in at}
                    if not vals:
                        continue
                    n += 1
                    for sel, v in vals.items():
                        wins[sel] += v == max(vals.values())
        out.append(f"| {label} | " + " | ".join(str(wins[sel]) for sel in selectors) + f" | {n} |")
    out.append("")
    return out


def main(paths: list[str]) -> int:
    sets = _load(paths)
    by_tokens = {s: rows for s, rows in sets.items() if not s.endswith("_chunks")}
    by_chunks = {s.removesuffix("_chunks"): rows for s, rows in sets.items() if s.endswith("_chunks")}
    lines = ["# Selection judged downstream: summary", ""]
    lines += _section("kappa by tokens (the default: equal input tokens, chunk + prompt, per kappa)", by_tokens)
    lines += _section("kappa by chunks (--set kappa_by=chunks: equal calls per kappa)", by_chunks)
    lines += [
        "## Passage length: supporting passages (gold ids in the questions) against the rest, cl100k tokens",
        "",
        "| set | supporting passages | median tokens, supporting | median tokens, other |",
        "|---|---|---|---|",
    ]
    lines += [f"| {LABELS.get(s, s)} | {GOLD[s]} |" for s in by_tokens if s in GOLD]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
