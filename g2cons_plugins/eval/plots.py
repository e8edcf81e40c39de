"""Pictures of what G2ConS did (``g2cons show`` and ``g2cons select --plot``); matplotlib, imported lazily. Without
matplotlib the same figures are drawn as plain SVG (:class:`SvgFigure`), so HTML pages and .svg files work with
the core install; PNG needs matplotlib (:func:`require_matplotlib` says what to install).

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

from ..errors import InputError
from ..storage.outputs import STAMP, stamp_xml, xml_stamp

_COLORS = {"seed": "#1f77b4", "bridge": "#ff7f0e", "concept": "#2ca02c", "dense": "#7f7f7f"}


_NEED_MPL = (
    "PNG pictures need matplotlib: pip install matplotlib (or pip install 'g2cons-plugins[eval]'); "
    ".html and .svg work without it"
)


def have_matplotlib() -> bool:
    """True when matplotlib can be imported."""
    try:
        import matplotlib  # noqa: F401
        import matplotlib.pyplot  # noqa: F401
    except ImportError:
        return False
    return True


def require_matplotlib(what: str) -> None:
    """Fail (InputError naming ``what`` and what to install) when matplotlib is missing: for a PNG output."""
    if not have_matplotlib():
        raise InputError(f"{what}: {_NEED_MPL}")


def pyplot() -> Any:
    """``matplotlib.pyplot`` with the non-interactive Agg backend (InputError naming the extra when missing)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError(_NEED_MPL) from None
    return plt


class SvgFigure:
    """A figure drawn as plain SVG, without matplotlib (for HTML pages and .svg files)."""

    def __init__(self, svg: str) -> None:
        self.svg = svg


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _svg(width: float, height: float, body: list[str]) -> SvgFigure:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="sans-serif"><defs><marker id="arrow" '
        'viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M 0 0 L 10 5 L 0 10 z" fill="#999"/></marker></defs>'
        f'<rect width="{width:.0f}" height="{height:.0f}" fill="white"/>'
    )
    return SvgFigure(head + "".join(body) + "</svg>")


def _concept_path_svg(question: str, items: Sequence[Any], kept_chunks: set[str], unit_concepts: Any) -> SvgFigure:
    """:func:`concept_path_figure` as plain SVG: the same columns, boxes, borders and arrows."""
    seeds = [x for x in items if x.reason.get("via") == "seed"]
    bridged = [x for x in items if x.reason.get("via") == "bridge"]
    rest = [x for x in items if x.reason.get("via") not in ("seed", "bridge")]
    concepts: list[str] = []
    for x in bridged:
        for c in x.reason.get("bridge_concepts", []):
            if c not in concepts:
                concepts.append(c)
    cols, unit_w, concept_w, row_h, top = (170.0, 600.0, 1030.0), 320.0, 220.0, 64.0, 120.0
    rows = max(len(seeds), len(concepts), len(bridged), 1)
    out: list[str] = []
    used = sum(x.n_tokens for x in items)
    out.append(f'<text x="600" y="28" text-anchor="middle" font-size="15">{_esc(_short(question, 110))}</text>')
    out.append(
        f'<text x="600" y="50" text-anchor="middle" font-size="12" fill="#555">{len(items)} units, {used:,} tokens; '
        "solid border: chunk kept by the core selection, dashed: dropped</text>"
    )
    for x, name, color in ((cols[0], "seed units (query vector)", "seed"), (cols[1], "bridge concepts", "concept"),
                           (cols[2], "units reached via concepts", "bridge")):  # fmt: skip
        out.append(
            f'<text x="{x}" y="88" text-anchor="middle" font-size="13" font-weight="bold" '
            f'fill="{_COLORS[color]}">{name}</text>'
        )

    def unit_box(x: float, y: float, u: Any, color: str, width: float = unit_w, n: int = 44) -> None:
        kept = u.parent_id in kept_chunks
        dash = "" if kept else ' stroke-dasharray="6 4"'
        fill = color if kept else "white"
        out.append(
            f'<rect x="{x - width / 2}" y="{y - 24}" width="{width}" height="48" rx="6" fill="{fill}" '
            f'fill-opacity="{0.13 if kept else 1}" stroke="{color}" stroke-width="1.6"{dash}/>'
            f'<text x="{x}" y="{y - 5}" text-anchor="middle" font-size="11">{_esc(_short(u.text, n))}</text>'
            f'<text x="{x}" y="{y + 13}" text-anchor="middle" font-size="10" fill="#444">'
            f"[{_esc(u.parent_id)}] {u.n_tokens} tok</text>"
        )

    pos: dict[str, tuple[float, float]] = {}
    for i, u in enumerate(seeds):
        pos[u.unit_id] = (cols[0], top + i * row_h)
        unit_box(cols[0], top + i * row_h, u, _COLORS["seed"])
    for i, c in enumerate(concepts):
        y = top + i * row_h
        pos["c:" + c] = (cols[1], y)
        out.append(
            f'<rect x="{cols[1] - concept_w / 2}" y="{y - 16}" width="{concept_w}" height="32" rx="3" fill="#eaf6ea" '
            f'stroke="{_COLORS["concept"]}"/><text x="{cols[1]}" y="{y + 5}" text-anchor="middle" font-size="12" '
            f'font-weight="bold" fill="{_COLORS["concept"]}">{_esc(_short(c, 30))}</text>'
        )
    for i, u in enumerate(bridged):
        pos[u.unit_id] = (cols[2], top + i * row_h)
        unit_box(cols[2], top + i * row_h, u, _COLORS["bridge"])

    def arrow(a: tuple[float, float], b: tuple[float, float]) -> None:
        out.append(
            f'<line x1="{a[0]}" y1="{a[1]}" x2="{b[0]}" y2="{b[1]}" stroke="#999" stroke-width="1.2" '
            'marker-end="url(#arrow)"/>'
        )

    for u in bridged:  # bridge concept -> the unit it reached
        for c in u.reason.get("bridge_concepts", []):
            (x0, y0), (x1, y1) = pos["c:" + c], pos[u.unit_id]
            arrow((x0 + concept_w / 2, y0), (x1 - unit_w / 2, y1))
    for u in seeds:  # seed unit -> the bridge concepts it holds
        for c in concepts:
            if c in unit_concepts.get(u.unit_id, set()):
                (x0, y0), (x1, y1) = pos[u.unit_id], pos["c:" + c]
                arrow((x0 + unit_w / 2, y0), (x1 - concept_w / 2, y1))
    base = top + rows * row_h + 10
    if rest:
        out.append(
            f'<text x="20" y="{base}" font-size="13" font-weight="bold" fill="{_COLORS["dense"]}">dense fill</text>'
        )
    for i, u in enumerate(rest):
        unit_box(cols[i % 3], base + 40 + (i // 3) * row_h, u, _COLORS["dense"], n=40)
    height = base + 40 + ((len(rest) + 2) // 3) * row_h if rest else base
    return _svg(1200, height, out)


def _selection_svg(doc_tokens: Sequence[tuple[str, int, int]], curve: Sequence[tuple[float, float]], kappa: float,
                   top: int = 25) -> SvgFigure:  # fmt: skip
    """:func:`selection_figure` as plain SVG: stacked bars per document, coverage vs kappa."""
    docs = sorted(doc_tokens, key=lambda d: -(d[1] + d[2]))[:top]
    bar_h, y0, left, right = 18.0, 60.0, 240.0, 700.0
    height = max(360.0, y0 + bar_h * len(docs) + 60)
    biggest = max([d[1] + d[2] for d in docs] + [1])
    out = [
        f'<text x="{(left + right) / 2}" y="24" text-anchor="middle" font-size="13">tokens kept per document '
        f"(largest {len(docs)} of {len(doc_tokens)})</text>",
        f'<rect x="{left}" y="34" width="12" height="10" fill="#2ca02c"/><text x="{left + 16}" y="43" '
        'font-size="11">kept tokens</text>',
        f'<rect x="{left + 110}" y="34" width="12" height="10" fill="#d62728" fill-opacity="0.6"/>'
        f'<text x="{left + 126}" y="43" font-size="11">dropped tokens</text>',
    ]
    scale = (right - left) / biggest
    for i, (name, kept, dropped) in enumerate(docs):
        y = y0 + i * bar_h
        out.append(
            f'<text x="{left - 6}" y="{y + 13}" text-anchor="end" font-size="10">{_esc(_short(name, 34))}</text>'
            f'<rect x="{left}" y="{y + 2}" width="{kept * scale:.1f}" height="{bar_h - 4}" fill="#2ca02c">'
            f"<title>{kept:,} kept tokens</title></rect>"
            f'<rect x="{left + kept * scale:.1f}" y="{y + 2}" width="{dropped * scale:.1f}" height="{bar_h - 4}" '
            f'fill="#d62728" fill-opacity="0.6"><title>{dropped:,} dropped tokens</title></rect>'
        )
    gx0, gx1, gy0, gy1 = 800.0, 1160.0, 60.0, height - 50  # coverage plot: kappa 0..1 -> x, 0..100 % -> y

    def px(k: float) -> float:
        return gx0 + k * (gx1 - gx0)

    def py(c: float) -> float:
        return gy1 - c * (gy1 - gy0)

    out.append(
        f'<text x="{(gx0 + gx1) / 2}" y="24" text-anchor="middle" font-size="13">coverage vs kappa</text>'
        f'<rect x="{gx0}" y="{gy0}" width="{gx1 - gx0}" height="{gy1 - gy0}" fill="none" stroke="#333"/>'
    )
    for t in (0.0, 0.5, 1.0):
        out.append(
            f'<text x="{px(t)}" y="{gy1 + 16}" text-anchor="middle" font-size="10">{t:g}</text>'
            f'<text x="{gx0 - 6}" y="{py(t) + 4}" text-anchor="end" font-size="10">{100 * t:.0f}%</text>'
        )
    out.append(
        f'<text x="{(gx0 + gx1) / 2}" y="{gy1 + 34}" text-anchor="middle" font-size="11">x: kappa, y: concepts '
        "covered by the kept chunks</text>"
        f'<line x1="{px(kappa)}" y1="{gy0}" x2="{px(kappa)}" y2="{gy1}" stroke="#999" stroke-dasharray="5 4"/>'
        f'<text x="{px(kappa) + 4}" y="{gy0 + 14}" font-size="10" fill="#555">kappa = {kappa:g}</text>'
    )
    if curve:
        pts = " ".join(f"{px(k):.1f},{py(c):.1f}" for k, c in curve)
        out.append(f'<polyline points="{pts}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
        out += [
            f'<circle cx="{px(k):.1f}" cy="{py(c):.1f}" r="3.5" fill="#1f77b4"><title>kappa {k:g}: '
            f"{100 * c:.1f}%</title></circle>"
            for k, c in curve
        ]
    return _svg(1200, height, out)


def _short(text: str, n: int = 38) -> str:
    line = " ".join(text.split())
    return line if len(line) <= n else line[: n - 1] + "…"


def concept_path_figure(question: str, items: Sequence[Any], kept_chunks: set[str], unit_concepts: Any) -> Any:
    """The figure of one question's concept path (see module doc). ``unit_concepts``: unit id -> set of its
    concepts (joins seed units to the bridge concepts they hold). Plain SVG (:class:`SvgFigure`) when matplotlib
    is missing."""
    if not have_matplotlib():
        return _concept_path_svg(question, items, kept_chunks, unit_concepts)
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
    boxes: dict[str, Any] = {}  # key -> the Text artist (its box patch clips the arrows)

    def box(x: float, y: float, label: str, color: str, kept: bool | None) -> Any:
        style = "solid" if kept in (None, True) else "dashed"
        face = "white" if kept is False else color + "22"
        return ax.text(
            x, y, label, ha="center", va="center", fontsize=8, color="black",
            bbox={"boxstyle": "round,pad=0.3", "fc": face, "ec": color, "ls": style, "lw": 1.6},
        )  # fmt: skip

    def link(a: str, b: str) -> None:  # from box a's edge to box b's edge, whatever the boxes' widths
        src, dst = boxes[a], boxes[b]
        ax.annotate(
            "", dst.get_position(), src.get_position(),
            arrowprops={"arrowstyle": "->", "color": "#999", "patchA": src.get_bbox_patch(),
                        "patchB": dst.get_bbox_patch(), "shrinkA": 2, "shrinkB": 2},
        )  # fmt: skip

    for i, u in enumerate(seeds):
        text = f"{_short(u.text)}\n[{u.parent_id}] {u.n_tokens} tok"
        boxes[u.unit_id] = box(0.3, -i, text, _COLORS["seed"], u.parent_id in kept_chunks)
    for i, c in enumerate(concepts):
        boxes["c:" + c] = ax.text(
            1.5, -i, c, ha="center", va="center", fontsize=9, fontweight="bold", color=_COLORS["concept"],
            bbox={"boxstyle": "sawtooth,pad=0.3", "fc": "#eaf6ea", "ec": _COLORS["concept"]},
        )  # fmt: skip
    for i, u in enumerate(bridged):
        text = f"{_short(u.text)}\n[{u.parent_id}] {u.n_tokens} tok"
        boxes[u.unit_id] = box(2.7, -i, text, _COLORS["bridge"], u.parent_id in kept_chunks)
    for u in bridged:  # bridge concept -> the unit it reached
        for c in u.reason.get("bridge_concepts", []):
            link("c:" + c, u.unit_id)
    for u in seeds:  # seed unit -> the bridge concepts it holds
        for c in concepts:
            if c in unit_concepts.get(u.unit_id, set()):
                link(u.unit_id, "c:" + c)
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
    """Kept/dropped tokens per document (the ``top`` largest) and concept coverage vs kappa. Plain SVG
    (:class:`SvgFigure`) when matplotlib is missing."""
    if not have_matplotlib():
        return _selection_svg(doc_tokens, curve, kappa, top)
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
    SVG comment) so that a rerun recognises the file as its own output. An :class:`SvgFigure` gives SVG only."""
    if isinstance(fig, SvgFigure):
        if fmt != "svg":
            raise InputError(_NEED_MPL)
        return stamp_xml(('<?xml version="1.0" encoding="utf-8"?>\n' + fig.svg + "\n").encode("utf-8"), "show")
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
    svg = svg[svg.index("<svg") :]  # no XML declaration, no stamp comment inside the page
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
