"""Markdown + PNG report of ``g2cons eval`` results (``--report DIR``): the CR table and plot, selection against
random controls, settings. Plots need matplotlib (``pip install "g2cons-plugins[eval]"``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..storage.outputs import atomic_write_bytes, atomic_write_text
from .evaluation import RECALL_COLUMNS, RESULT_COLUMNS, SELECTION_COLUMNS, format_table
from .plots import pyplot, save_figure

__all__ = [
    "COLORS",
    "COMPLEMENTARITY_COLUMNS",
    "complementarity",
    "complementarity_table",
    "cr_pivot",
    "host_pivot",
    "plot_cr",
    "plot_host",
    "plot_latency",
    "plot_selection",
    "verdicts",
    "write_report",
]

COLORS = {"concept": "C1", "dense": "C4", "bm25": "C0", "keyword": "C5", "concept-paper": "C2", "concept-ppr": "C3"}


def _write_figure(fig: Any, out: Path) -> None:
    """Save ``fig`` as PNG atomically (a reader never sees half a file) and close it."""
    atomic_write_bytes(out, save_figure(fig, "png"))


def plot_cr(results: Sequence[dict[str, Any]], out: Path) -> None:
    """CR vs budget, one panel per result set (``{"results": [...], "settings": {...}}``)."""
    plt = pyplot()
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
    _write_figure(fig, out)


def plot_selection(selection: Sequence[dict[str, Any]], out: Path) -> None:
    """Answer coverage of each selector against uniform and length-matched random, per kappa."""
    plt = pyplot()
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
    _write_figure(fig, out)


COMPLEMENTARITY_COLUMNS = (
    "kappa",
    "budget",
    "n_questions",
    "host_only",
    "concept_only",
    "both",
    "union",
    "fused",
    "fused_missed",
    "fused_beyond",
)


def _hit_bits(row: dict[str, Any], what: str) -> list[bool]:
    hits = row.get("hits")
    if not isinstance(hits, str) or set(hits) - {"0", "1"}:
        raise InputError(f"complementarity: the {what} row at budget {row.get('budget')} has no per-question hits")
    return [c == "1" for c in hits]


def complementarity(
    concept_rows: Sequence[dict[str, Any]],
    host_rows: Sequence[dict[str, Any]],
    fused_rows: Sequence[dict[str, Any]],
    kappa: float | None = None,
) -> list[dict[str, Any]]:
    """What each path adds, per budget, from the per-question hits (``"hits"``: one 0/1 per question, complete
    recall: an answer string in the context) of the concept path, the host alone and the fused context: questions
    only the host hits (``host_only``), only the concept path (``concept_only``), ``both``, the ``union`` (what a
    perfect fusion of the two contexts could reach), ``fused``; ``fused_missed``: union questions the fused context
    misses, ``fused_beyond``: fused hits neither path alone has. Each count also as % of the questions
    (``<name>_pct``). A budget missing from one of the three is left out."""
    by = [{r["budget"]: r for r in rows} for rows in (concept_rows, host_rows, fused_rows)]
    out: list[dict[str, Any]] = []
    for b in sorted(set(by[0]) & set(by[1]) & set(by[2])):
        c, h, f = (_hit_bits(d[b], w) for d, w in zip(by, ("concept", "host", "fused"), strict=True))
        if not len(c) == len(h) == len(f):
            raise InputError(
                f"complementarity: per-question hits of different lengths at budget {b}: concept {len(c)}, "
                f"host {len(h)}, fused {len(f)}"
            )
        n = len(c)
        counts = {
            "host_only": sum(x and not y for x, y in zip(h, c, strict=True)),
            "concept_only": sum(y and not x for x, y in zip(h, c, strict=True)),
            "both": sum(x and y for x, y in zip(h, c, strict=True)),
            "union": sum(x or y for x, y in zip(h, c, strict=True)),
            "fused": sum(f),
            "fused_missed": sum((x or y) and not z for x, y, z in zip(h, c, f, strict=True)),
            "fused_beyond": sum(z and not (x or y) for x, y, z in zip(h, c, f, strict=True)),
        }
        row: dict[str, Any] = {"kappa": kappa, "budget": b, "n_questions": n, **counts}
        row.update({f"{k}_pct": round(100.0 * v / max(n, 1), 2) for k, v in counts.items()})
        out.append(row)
    return out


def complementarity_table(rows: Sequence[dict[str, Any]]) -> str:
    """The complementarity rows as a Markdown table, each count with its share of the questions."""
    shown = [
        {k: (f"{r[k]} ({r[f'{k}_pct']:g}%)" if f"{k}_pct" in r else r.get(k)) for k in COMPLEMENTARITY_COLUMNS}
        for r in rows
    ]
    return format_table(shown, COMPLEMENTARITY_COLUMNS)


def host_pivot(host: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The kappa x lambda sweep as rows (kappa, budget, spill) with host, concept and fused@lambda columns."""
    concept = {r["budget"]: r["context_recall"] for r in host["concept"]}
    lambdas = sorted({r["lambda"] for r in host["sweep"] if r["method"] == "fused"})
    weights = sorted({r["host_weight"] for r in host["sweep"] if r["method"] == "fused-score"})
    shares = sorted({r["lambda"] for r in host["sweep"] if r["method"] == "fused-share"})
    novels = sorted({r["lambda"] for r in host["sweep"] if r["method"] == "fused-novel"})
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in host["sweep"]:
        no_spill = ("host", "fused-score", "fused-share", "fused-novel")
        for spill in (False, True) if r["method"] in no_spill else (r["spill"],):
            key = (r["kappa"], r["budget"], spill)
            row = rows.setdefault(
                key, {"kappa": r["kappa"], "budget": r["budget"], "spill": spill, "concept": concept[r["budget"]]}
            )
            if r["method"] == "host":
                col = "host"
            elif r["method"] == "fused":
                col = f"fused@{r['lambda']:g}"
            elif r["method"] == "fused-share":
                col = f"share@{r['lambda']:g}"
            elif r["method"] == "fused-novel":
                col = f"novel@{r['lambda']:g}"
            else:
                col = f"score@{r['host_weight']:g}"
            row[col] = r["context_recall"]
    cols = ["kappa", "budget", "spill", "host", "concept"] + [f"novel@{lam:g}" for lam in novels]
    cols += [f"share@{lam:g}" for lam in shares]
    cols += [f"score@{w:g}" for w in weights]
    cols += [f"fused@{lam:g}" for lam in lambdas]
    return [rows[k] for k in sorted(rows)], cols


def plot_host(host: dict[str, Any], directory: Path) -> tuple[Path, Path]:
    """``kappa_frontier.png`` (KG build tokens vs CR of host and fused) and ``lambda_curve.png`` (CR vs lambda)."""
    plt = pyplot()
    main = host["main"]
    share = {b["kappa"]: b["share_of_full_input_tokens"] for b in host["builds"]}
    budgets = sorted({r["budget"] for r in host["sweep"]})
    concept = {r["budget"]: r["context_recall"] for r in host["concept"]}
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for j, b in enumerate(budgets):
        h = sorted((r for r in host["sweep"] if r["method"] == "host" and r["budget"] == b), key=lambda r: r["kappa"])
        score = main.get("fusion") == "score"
        shared = main.get("fusion") in ("share", "novel")
        f = sorted(
            (
                r
                for r in host["sweep"]
                if r["budget"] == b and (
                    (shared and r["method"] == f"fused-{main['fusion']}" and r["lambda"] == main["lambda"])
                    or (score and r["method"] == "fused-score" and r["host_weight"] == main["host_weight"])
                    or (not score and not shared and r["method"] == "fused" and r["lambda"] == main["lambda"]
                        and r["spill"] == main["spill"])
                )
            ),
            key=lambda r: r["kappa"],
        )  # fmt: skip
        what = f"score fusion, host weight {main['host_weight']:g}" if score else f"lambda {main['lambda']:g}"
        ax.plot([share[r["kappa"]] for r in f], [r["context_recall"] for r in f], "-o", color=f"C{j}",
                label=f"fused ({what}) @{b}")  # fmt: skip
        ax.plot(
            [share[r["kappa"]] for r in h], [r["context_recall"] for r in h], ":s", color=f"C{j}", label=f"host @{b}"
        )
        ax.axhline(concept[b], color=f"C{j}", lw=0.8, ls="--", label=f"concept alone @{b}")
    frontier = _finish(
        plt,
        fig,
        ax,
        "KG build input tokens, share of the full build (kappa)",
        f"kappa frontier ({host['host']['name']})",
        directory / "kappa_frontier.png",
    )

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for j, b in enumerate(budgets):
        for spill, style in ((True, "-o"), (False, "--.")):
            rows = sorted(
                (r for r in host["sweep"] if r["method"] == "fused" and r["budget"] == b and r["spill"] == spill
                 and r["kappa"] == main["kappa"]),
                key=lambda r: r["lambda"],
            )  # fmt: skip
            ax.plot([r["lambda"] for r in rows], [r["context_recall"] for r in rows], style, color=f"C{j}",
                    label=f"@{b} ensemble, {'spill' if spill else 'hard caps'}")  # fmt: skip
        if main.get("fusion") in ("share", "novel"):  # the config's lambda rule, swept over the same lambdas
            rows = sorted(
                (r for r in host["sweep"] if r["method"] == f"fused-{main['fusion']}" and r["budget"] == b
                 and r["kappa"] == main["kappa"]),
                key=lambda r: r["lambda"],
            )  # fmt: skip
            ax.plot([r["lambda"] for r in rows], [r["context_recall"] for r in rows], "-s", lw=2.2, color=f"C{j}",
                    label=f"@{b} {main['fusion']} (the config's rule)")  # fmt: skip
        ax.axhline(concept[b], color=f"C{j}", lw=0.8, ls=":")
    curve = _finish(
        plt,
        fig,
        ax,
        "lambda (the host's part of beta, as each rule reads it)",
        f"fusion lambda curve, kappa {main['kappa']:g} (dotted: concept alone)",
        directory / "lambda_curve.png",
    )
    return frontier, curve


def _finish(plt: Any, fig: Any, ax: Any, xlabel: str, title: str, path: Path) -> Path:
    """Label a Context Recall plot, save it as ``path`` and close it."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Context Recall (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    _write_figure(fig, path)
    return path


def plot_latency(results: Sequence[dict[str, Any]], out: Path) -> None:
    """Query latency p50/p95 per method at the smallest budget (host rows: host retrieval alone)."""
    plt = pyplot()
    beta = min(r["budget"] for r in results)
    rows = [r for r in results if r["budget"] == beta and r.get("latency_ms_p50") is not None]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["latency_ms_p50"] for r in rows], 0.4, label="p50")
    ax.bar([x + 0.2 for x in xs], [r["latency_ms_p95"] for r in rows], 0.4, label="p95")
    ax.set_xticks(list(xs), [r["method"] for r in rows], rotation=20, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("ms per query (excl. query embedding)")
    ax.set_title(f"query latency at beta {beta}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    _write_figure(fig, out)


def cr_pivot(results: Sequence[dict[str, Any]], key: str = "context_recall") -> tuple[list[dict[str, Any]], list[str]]:
    """One row per method, one column per budget."""
    budgets = sorted({r["budget"] for r in results})
    rows: dict[str, dict[str, Any]] = {}
    for r in results:
        rows.setdefault(r["method"], {"method": r["method"]})[str(r["budget"])] = r.get(key)
    return list(rows.values()), ["method", *map(str, budgets)]


def verdicts(data: dict[str, Any]) -> list[str]:
    """Plain statements of where G2ConS wins and where it does not, computed from this run's rows."""
    res = data["results"]
    cr = {(r["method"], r["budget"]): r["context_recall"] for r in res}
    budgets = sorted({r["budget"] for r in res})
    out = []

    def versus(a: str, others: Sequence[str], b: int, label: str) -> str | None:
        rivals = [(cr[(m, b)], m) for m in others if (m, b) in cr and m != a]
        if (a, b) not in cr or not rivals:
            return None
        best, who = max(rivals)
        d = cr[(a, b)] - best
        if d == 0:
            return f"{a} {cr[(a, b)]:.1f} ties {label} ({who} {best:.1f}) at beta {b}"
        word = "above" if d > 0 else "BELOW"
        return f"{a} {cr[(a, b)]:.1f} is {word} {label} ({who} {best:.1f}) by {d:+.1f} points at beta {b}"

    singles = [m for m in dict.fromkeys(r["method"] for r in res) if m != "fused"]
    for b in budgets:
        checks = [
            ("fused", ["concept", "host-kg"], "its better path"),
            ("fused", singles, "every other method"),
            ("concept", ["dense"], "dense"),
        ]
        for a, others, label in checks:
            line = versus(a, others, b, label)
            if line:
                out.append(f"- {line}")
    for r in data.get("selection") or []:
        if r["selector"] == "coverage":
            d = r["answer_coverage"] - r["length_matched_answer_mean"]
            out.append(
                f"- selection (coverage) at kappa {r['kappa']:g}: answer coverage {r['answer_coverage']:.1f} vs "
                f"length-matched random {r['length_matched_answer_mean']:.1f} +- {r['length_matched_answer_std']:.1f}"
                f" ({d:+.1f})"
            )
    host = data.get("host")
    if host:
        for b in host["builds"]:
            out.append(
                f"- KG build at kappa {b['kappa']:g}: {b['calls']:,} calls, input tokens "
                f"{b['share_of_full_input_tokens']:.1%} of the full build"
            )
    return out


def _head_lines(s: dict[str, Any], command: str) -> list[str]:
    """Title, corpus and settings line, and the command that produced the report."""
    lines = [
        "# g2cons eval report",
        "",
        f"Corpus `{s['corpus']}`, {s['n_questions']} questions, embedder `{s['embedder']}`, tokenizer "
        f"`{s['tokenizer']}`. Every row below was measured in this run.",
        "",
    ]
    if command:
        lines += ["Command:", "", f"    {command}", ""]
    return lines


def _cr_lines(data: dict[str, Any]) -> list[str]:
    """The verdicts, the CR pivot per method and budget, every row, and supporting-passage recall if measured."""
    pivot_cr, cols_cr = cr_pivot(data["results"])
    lines = ["## Verdicts (computed from the rows below)", "", *verdicts(data), ""]
    lines += [
        "## Context Recall (%) per method and budget beta",
        "",
        format_table(pivot_cr, cols_cr),
        "",
        "![CR vs budget](cr.png)",
        "",
        "All rows, with query latency (ms, query embedding excluded):",
        "",
        format_table(data["results"], RESULT_COLUMNS),
        "",
    ]
    if any("support_recall" in r for r in data["results"]):
        pivot_sp, cols_sp = cr_pivot(data["results"], "support_recall")
        lines += ["Supporting-passage recall (%):", "", format_table(pivot_sp, cols_sp), ""]
        pivot_all, cols_all = cr_pivot(data["results"], "support_all_found")
        lines += ["All gold passages found (% of questions):", "", format_table(pivot_all, cols_all), ""]
    return lines


def _recall_lines(data: dict[str, Any]) -> list[str]:
    """Passage recall@k (HippoRAG 2 protocol), if measured."""
    if not data.get("recall"):
        return []
    return [
        "## Passage recall@k (%, HippoRAG 2 protocol: first k distinct passages of each method's ranking)",
        "",
        format_table(data["recall"], RECALL_COLUMNS),
        "",
    ]


def _paired_lines(data: dict[str, Any]) -> list[str]:
    """Paired comparisons of concept against each method (exact sign test), if measured."""
    if not data.get("paired"):
        return []
    return [
        "## Paired comparisons (concept vs each method, same questions; exact sign test on discordant pairs)",
        "",
        "`mean_diff`: concept minus the other, points (CR hits per budget, or recall@5 at `rank`).",
        "",
        format_table(data["paired"], ("a", "b", "budget", "key", "n", "mean_diff", "wins", "losses", "p_value")),
        "",
    ]


def _host_lines(host: dict[str, Any], directory: Path) -> list[str]:
    """The host KG path and fused G2ConS: build costs, CR per kappa / budget / rule, what each path adds, plots."""
    from .host_eval import HOST_BUILD_COLUMNS

    frontier, curve = plot_host(host, directory)
    fb = host["full_build"]
    m = host["main"]
    pivot, cols = host_pivot(host)
    lines = [
        f"## Host KG path and fused G2ConS: {host['host']['name']}",
        "",
        f"**{host['host']['label']}.** The main table's `host-kg` and `fused` rows are kappa {m['kappa']:g}, "
        f"lambda {m['lambda']:g}, {'spill' if m['spill'] else 'hard caps'}. Latency: `host-kg` is the host "
        "retrieval; `fused` is host retrieval + concept path + fusion (query embedding excluded, as for every "
        "row). The host returns at most its retriever's limit of chunks, which can leave large budgets unfilled.",
        "",
        f"Full build (kappa 1): {fb['calls']:,} extraction calls, {fb['input_tokens']:,} input tokens. USD at "
        f"{host['prices_usd_per_mtok']['input']} / {host['prices_usd_per_mtok']['output']} per 1M input / "
        "output tokens.",
        "",
        format_table(host["builds"], HOST_BUILD_COLUMNS),
        "",
        "Context Recall (%) per kappa, budget and budget rule (hard caps: the paper's; spill: unused share "
        "goes to the other path, so a spill context holds the hard-caps context and more). `fused@L`: lambda L "
        "(host share of beta; items both paths found come first, with the host's text, at any lambda).",
        "",
        format_table(pivot, cols),
        "",
    ]
    if host.get("complementarity"):
        lines += [
            f"What each path adds at kappa {m['kappa']:g} (questions hit, complete recall): `host_only` / "
            "`concept_only`: hit by that path alone; `union`: by either (what a fusion of the two could reach); "
            "`fused`: by the fused context; `fused_missed`: union questions the fused context misses; "
            "`fused_beyond`: fused hits neither path has alone.",
            "",
            complementarity_table(host["complementarity"]),
            "",
        ]
    lines += [
        f"![kappa frontier]({frontier.name})",
        "",
        f"![lambda curve]({curve.name})",
        "",
    ]
    return lines


def _answer_lines(data: dict[str, Any]) -> list[str]:
    """EM / F1 of the answering model, if measured."""
    if not data.get("answers"):
        return []
    a = data["answers"]
    return [
        f"## EM / F1 (answering model `{a['model']}`, budget {a['budget']})",
        "",
        format_table(a["rows"], ("method", "budget", "em", "f1", "n", "calls", "input_tokens", "output_tokens")),
        "",
    ]


def _downstream_lines(data: dict[str, Any]) -> list[str]:
    """Selection judged downstream (host KG over each selector's kept chunks), if measured."""
    if not data.get("selection_downstream"):
        return []
    from .host_eval import DOWNSTREAM_COLUMNS

    return [
        "## Selection judged downstream (host KG built from each selector's kept chunks; fused with the concept"
        " path at the index's lambda and spill)",
        "",
        format_table(data["selection_downstream"], DOWNSTREAM_COLUMNS),
        "",
    ]


def _selection_lines(data: dict[str, Any], directory: Path) -> list[str]:
    """Core-chunk selection against random controls (table and ``selection.png``), if measured."""
    if not data.get("selection"):
        return []
    plot_selection(data["selection"], directory / "selection.png")
    return [
        "## Core-chunk selection (answer coverage of the kept chunks, kappa by tokens)",
        "",
        format_table(data["selection"], SELECTION_COLUMNS),
        "",
        "![selection vs random](selection.png)",
        "",
    ]


def _settings_lines(s: dict[str, Any]) -> list[str]:
    """The graph, config, build timings, peak RSS and host settings as JSON."""
    return [
        "## Graph and settings",
        "",
        "```json",
        json.dumps({k: s.get(k) for k in ("graph", "config", "build_timings", "peak_rss_mb", "host")}, indent=2),
        "```",
        "",
    ]


def write_report(data: dict[str, Any], directory: Path, command: str = "") -> Path:
    """Write ``report.md`` (+ ``results.json``, ``cr.png``, ``latency.png``, ``selection.png``, and with a host
    ``kappa_frontier.png`` / ``lambda_curve.png``) into ``directory``: one section after another."""
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write_text(directory / "results.json", json.dumps(data, indent=2))
    plot_cr([data], directory / "cr.png")
    s = data["settings"]
    lines = _head_lines(s, command) + _cr_lines(data) + _recall_lines(data) + _paired_lines(data)
    plot_latency(data["results"], directory / "latency.png")
    lines += ["![latency](latency.png)", ""]
    if data.get("host"):
        lines += _host_lines(data["host"], directory)
    lines += _answer_lines(data) + _downstream_lines(data) + _selection_lines(data, directory) + _settings_lines(s)
    path = directory / "report.md"
    atomic_write_text(path, "\n".join(lines))
    return path
