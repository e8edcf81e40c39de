"""Pictures of what G2ConS did (``g2cons show`` and ``g2cons select --plot``); matplotlib, imported lazily.

- :func:`concept_path_figure`: for one question, the retrieved units by how they were reached (seed units by the
  query vector, bridge concepts, units reached through them, dense fill), each marked by whether its chunk is kept
  or dropped by the core-chunk selection. Columns, left to right: seeds, bridge concepts, bridged units; the dense
  fill below. Deterministic layout (no force simulation).
- :func:`selection_figure`: tokens kept and dropped per document (largest documents first) and the share of
  concepts the kept chunks cover as kappa grows.
- :func:`html_page`: a self-contained HTML page (inline SVG, no script, no CDN) with the figure and a table.
"""

from __future__ import annotations

import html
import io
from collections.abc import Sequence
from typing import Any

from .errors import InputError
from .outputs import STAMP, stamp_xml, xml_stamp

_COLORS = {"seed": "#1f77b4", "bridge": "#ff7f0e", "concept": "#2ca02c", "dense": "#7f7f7f"}


def pyplot() -> Any:
    """``matplotlib.pyplot`` with the non-interactive Agg backend (InputError naming the extra when missing)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("pictures need matplotlib: pip install 'g2cons-plugins[eval]'") from None
    return plt


def _short(text: str, n: int = 38) -> str:
    line = " ".join(text.split())
    return line if len(line) <= n else line[: n - 1] + "…"


def concept_path_figure(question: str, items: Sequence[Any], kept_chunks: set[str], unit_concepts: Any) -> Any:
    """The figure of one question's concept path (see module doc). ``unit_concepts``: unit id -> set of its
    concepts (joins seed units to the bridge concepts they hold)."""
    plt = pyplot()
    seeds = [x for x in items if x.reason.get("via") == "seed"]
    bridged = [x for x in items if x.reason.get("via") == "bridge"]
    rest = [x for x in items if x.reason.get("via") not in ("seed", "bridge")]
    concepts: list[str] = []
    for x in bridged:
        for c in x.reason.get("bridge_concepts", []):
            if c not in concepts:
                concepts.append(c)
    rows = max(len(seeds), len(concepts), len(bridged), 1)
    fig_h = 1.2 + 0.42 * (rows + (1 + (len(rest) + 2) // 3 if rest else 0))
    fig, ax = plt.subplots(figsize=(13, max(fig_h, 3.0)))
    ax.set_xlim(-0.2, 3.2)
    ax.axis("off")
    pos: dict[str, tuple[float, float]] = {}

    def box(x: float, y: float, label: str, color: str, kept: bool | None) -> None:
        style = "solid" if kept in (None, True) else "dashed"
        face = "white" if kept is False else color + "22"
        ax.text(
            x, y, label, ha="center", va="center", fontsize=8, color="black",
            bbox={"boxstyle": "round,pad=0.3", "fc": face, "ec": color, "ls": style, "lw": 1.6},
        )  # fmt: skip

    for i, u in enumerate(seeds):
        pos[u.unit_id] = (0.3, -i)
        box(0.3, -i, f"{_short(u.text)}\n[{u.parent_id}] {u.n_tokens} tok", _COLORS["seed"], u.parent_id in kept_chunks)
    for i, c in enumerate(concepts):
        pos["c:" + c] = (1.5, -i)
        ax.text(1.5, -i, c, ha="center", va="center", fontsize=9, fontweight="bold", color=_COLORS["concept"],
                bbox={"boxstyle": "sawtooth,pad=0.3", "fc": "#eaf6ea", "ec": _COLORS["concept"]})  # fmt: skip
    for i, u in enumerate(bridged):
        pos[u.unit_id] = (2.7, -i)
        box(
            2.7,
            -i,
            f"{_short(u.text)}\n[{u.parent_id}] {u.n_tokens} tok",
            _COLORS["bridge"],
            u.parent_id in kept_chunks,
        )
    for u in bridged:  # bridge concept -> the unit it reached
        for c in u.reason.get("bridge_concepts", []):
            (x0, y0), (x1, y1) = pos["c:" + c], pos[u.unit_id]
            ax.annotate("", (x1 - 0.45, y1), (x0 + 0.25, y0), arrowprops={"arrowstyle": "->", "color": "#999"})
    for u in seeds:  # seed unit -> the bridge concepts it holds
        for c in concepts:
            if c in unit_concepts.get(u.unit_id, set()):
                (x0, y0), (x1, y1) = pos[u.unit_id], pos["c:" + c]
                ax.annotate("", (x1 - 0.25, y1), (x0 + 0.42, y0), arrowprops={"arrowstyle": "->", "color": "#999"})
    base = -rows - 0.6
    if rest:
        ax.text(-0.15, base, "dense fill", fontsize=9, color=_COLORS["dense"], fontweight="bold")
    for i, u in enumerate(rest):
        x, y = 0.3 + 1.2 * (i % 3), base - 0.9 - (i // 3)
        box(x, y, f"{_short(u.text, 30)}\n[{u.parent_id}]", _COLORS["dense"], u.parent_id in kept_chunks)
    ymin = (base - 1.5 - (len(rest) - 1) // 3) if rest else -rows
    ax.set_ylim(ymin, 1.2)
    for x, name, color in ((0.3, "seed units (query vector)", "seed"), (1.5, "bridge concepts", "concept"),
                           (2.7, "units reached via concepts", "bridge")):  # fmt: skip
        ax.text(x, 0.8, name, ha="center", fontsize=10, fontweight="bold", color=_COLORS[color])
    used = sum(x.n_tokens for x in items)
    ax.set_title(
        f"{_short(question, 100)}\n{len(items)} units, {used:,} tokens; solid border: chunk kept by the core "
        "selection, dashed: dropped",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def selection_figure(doc_tokens: Sequence[tuple[str, int, int]], curve: Sequence[tuple[float, float]], kappa: float,
                     top: int = 25) -> Any:  # fmt: skip
    """Kept/dropped tokens per document (the ``top`` largest) and concept coverage vs kappa."""
    plt = pyplot()
    docs = sorted(doc_tokens, key=lambda d: -(d[1] + d[2]))[:top]
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, max(4.0, 0.28 * len(docs) + 1.5)),
                               gridspec_kw={"width_ratios": [1.5, 1]})  # fmt: skip
    names = [_short(d[0], 30) for d in docs][::-1]
    kept = [d[1] for d in docs][::-1]
    dropped = [d[2] for d in docs][::-1]
    a.barh(names, kept, color="#2ca02c", label="kept tokens")
    a.barh(names, dropped, left=kept, color="#d62728", alpha=0.6, label="dropped tokens")
    a.set_xlabel("tokens")
    a.set_title(f"tokens kept per document (largest {len(docs)} of {len(doc_tokens)})", fontsize=10)
    a.legend(loc="lower right", fontsize=8)
    a.tick_params(axis="y", labelsize=7)
    ks, cov = zip(*curve, strict=True) if curve else ((), ())
    b.plot(ks, [100 * c for c in cov], marker="o", color="#1f77b4")
    b.axvline(kappa, color="#999", ls="--", label=f"kappa = {kappa:g}")
    b.set_xlabel("kappa (share of tokens kept)")
    b.set_ylabel("concepts covered by the kept chunks (%)")
    b.set_ylim(0, 101)
    b.set_title("coverage vs kappa", fontsize=10)
    b.legend(fontsize=8)
    b.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def save_figure(fig: Any, fmt: str) -> bytes:
    """The figure as ``png`` or ``svg`` bytes (and closes it), stamped as g2cons's (a PNG ``Software`` text, an
    SVG comment) so that a rerun recognises the file as its own output."""
    plt = pyplot()
    buf = io.BytesIO()
    meta = {"Date": None} if fmt == "svg" else {"Software": f"{STAMP} show"}
    fig.savefig(buf, format=fmt, dpi=110, metadata=meta)
    plt.close(fig)
    data = buf.getvalue()
    return stamp_xml(data, "show") if fmt == "svg" else data


def html_page(title: str, fig: Any, rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> bytes:
    """A self-contained page: the figure as inline SVG and a table of ``rows`` (escaped). No script, no CDN."""
    svg = save_figure(fig, "svg").decode("utf-8")
    svg = svg[svg.index("<svg") :]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(r.get(c, '')))}</td>" for c in columns) + "</tr>" for r in rows
    )
    page = (
        f"<!DOCTYPE html>\n{xml_stamp('show')}\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>body{{font-family:sans-serif;margin:1.5em}}"
        "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;"
        "vertical-align:top;text-align:left}svg{max-width:100%;height:auto}</style></head><body>"
        f"<h2>{html.escape(title)}</h2>{svg}<table><tr>{head}</tr>{body}</table></body></html>\n"
    )
    return page.encode("utf-8")
