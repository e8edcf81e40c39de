"""Markdown + PNG report of ``g2cons eval`` results (``--report DIR``): the CR table and plot, selection against
random controls, settings. Plots need matplotlib (``pip install "g2cons-plugins[eval]"``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import InputError
from .evaluation import RESULT_COLUMNS, SELECTION_COLUMNS, format_table

COLORS = {"concept": "C1", "dense": "C4", "bm25": "C0", "keyword": "C5", "concept-paper": "C2", "concept-ppr": "C3"}


def _plt() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise InputError('plots need matplotlib: pip install "g2cons-plugins[eval]"') from e
    return plt


def plot_cr(results: Sequence[dict[str, Any]], out: Path) -> None:
    """CR vs budget, one panel per result set (``{"results": [...], "settings": {...}}``)."""
    plt = _plt()
    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4.2), squeeze=False)
    for ax, data in zip(axes[0], results, strict=True):
        for m in sorted({r["method"] for r in data["results"]}):
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
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_selection(selection: Sequence[dict[str, Any]], out: Path) -> None:
    """Answer coverage of each selector against uniform and length-matched random, per kappa."""
    plt = _plt()
    kappas = sorted({r["kappa"] for r in selection})
    fig, axes = plt.subplots(1, len(kappas), figsize=(5.5 * len(kappas), 3.8), squeeze=False)
    for ax, kappa in zip(axes[0], kappas, strict=True):
        rows = [r for r in selection if r["kappa"] == kappa]
        xs = range(len(rows))
        ax.bar([x - 0.27 for x in xs], [r["answer_coverage"] for r in rows], 0.27, label="selector")
        ax.bar(
            xs,
            [r["length_matched_answer_mean"] for r in rows],
            0.27,
            yerr=[r["length_matched_answer_std"] for r in rows],
            label="length-matched random",
        )
        ax.bar(
            [x + 0.27 for x in xs],
            [r["random_answer_mean"] for r in rows],
            0.27,
            yerr=[r["random_answer_std"] for r in rows],
            label="uniform random",
        )
        ax.set_xticks(list(xs), [r["selector"] for r in rows], rotation=20, fontsize=8)
        ax.set_ylabel("answer coverage of kept chunks (%)")
        ax.set_title(f"kappa = {kappa} (by tokens)")
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def write_report(data: dict[str, Any], directory: Path, command: str = "") -> Path:
    """Write ``report.md`` (+ ``results.json``, ``cr.png``, ``selection.png``) into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "results.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
    plot_cr([data], directory / "cr.png")
    s = data["settings"]
    lines = [
        "# g2cons eval report",
        "",
        f"Corpus `{s['corpus']}`, {s['n_questions']} questions, embedder `{s['embedder']}`, tokenizer "
        f"`{s['tokenizer']}`. Every row below was measured in this run.",
        "",
    ]
    if command:
        lines += ["Command:", "", f"    {command}", ""]
    lines += [
        "## Context Recall",
        "",
        format_table(data["results"], RESULT_COLUMNS),
        "",
        "![CR vs budget](cr.png)",
        "",
    ]
    if data.get("selection"):
        plot_selection(data["selection"], directory / "selection.png")
        lines += [
            "## Core-chunk selection (answer coverage of the kept chunks, kappa by tokens)",
            "",
            format_table(data["selection"], SELECTION_COLUMNS),
            "",
            "![selection vs random](selection.png)",
            "",
        ]
    lines += [
        "## Graph and settings",
        "",
        "```json",
        json.dumps({k: s[k] for k in ("graph", "config")}, indent=2),
        "```",
        "",
    ]
    path = directory / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
