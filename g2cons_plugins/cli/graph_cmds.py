"""``g2cons export`` (the concept graph of a saved index as GraphML, GEXF, JSON or CSV) and ``g2cons show`` (a
picture of the concept path for one question)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..hosts.pipelines.corpus_io import _check_writable, check_text
from ..storage.outputs import check_disjoint, check_replaceable_file, write_output_file
from ._common import FMT, positive, share


def _csv_nodes_path(out: Path) -> Path:
    return out.with_name(f"{out.stem}.nodes{out.suffix or '.csv'}")


def cmd_export(args: argparse.Namespace) -> int:
    from ..index import G2ConSIndex
    from ..storage.export import serialize, to_networkx

    out: Path = args.out
    targets = {"": out}
    if args.format == "csv":
        targets[".nodes"] = _csv_nodes_path(out)
    check_disjoint(
        {"DIR": args.graph}, {"--out": out, **({"nodes file": targets[".nodes"]} if ".nodes" in targets else {})}
    )
    for t in targets.values():
        check_replaceable_file(t, "--out")
    _check_writable(out.parent)
    index = G2ConSIndex.load(args.graph)
    kept = None
    if args.chunks and args.kappa is not None:
        kept = index.select(kappa=args.kappa).kept_ids
    g = to_networkx(index, chunks=args.chunks, kept_ids=kept)
    for key, data in serialize(g, args.format).items():
        write_output_file(targets[key], data, "export")
    n_concepts = sum(1 for _, a in g.nodes(data=True) if a.get("kind") == "concept")
    n_edges = sum(1 for *_, a in g.edges(data=True) if a.get("kind") == "concept")
    print(
        f"exported {n_concepts:,} concepts, {n_edges:,} concept edges"
        + (f", {g.number_of_nodes() - n_concepts:,} chunks" if args.chunks else "")
        + f" to {', '.join(str(t) for t in targets.values())} ({args.format})"
    )
    return 0


def register_export(sub: Any) -> None:
    """Add the ``export`` subcommand."""
    x = sub.add_parser(
        "export",
        help="write the concept graph of a saved graph as GraphML, GEXF, JSON or CSV",
        description="Concepts (PageRank, df, name flag) and their edges (Dice weight, co-occurrence, cosine); with "
        "--chunks also the chunks (kept/dropped with --kappa) and which concepts they contain.",
        epilog="examples:\n  g2cons export ragtest/g2cons/graph --format graphml --out concepts.graphml\n"
        "  g2cons export ragtest/g2cons/graph --format csv --out edges.csv      # + edges.nodes.csv\n"
        "  g2cons export ragtest/g2cons/graph --format gexf --out g.gexf --chunks --kappa 0.8",
        formatter_class=FMT,
    )
    x.add_argument("graph", type=Path, metavar="DIR")
    x.add_argument("--format", choices=["graphml", "gexf", "json", "csv"], default="graphml")
    x.add_argument("--out", type=Path, required=True, metavar="FILE")
    x.add_argument("--chunks", action="store_true", help="also chunk nodes, joined to the concepts they contain")
    x.add_argument("--kappa", type=share, default=None, help="with --chunks: mark chunks kept/dropped at this kappa")
    x.set_defaults(func=cmd_export)


def write_picture(fig: Any, out: Path, title: str, rows: list[dict[str, Any]], columns: list[str]) -> None:
    """Write ``fig`` as .png/.svg, or as a self-contained .html page with ``rows`` as a table (atomic, its SHA-256
    recorded: :func:`~g2cons_plugins.storage.outputs.write_output_file`)."""
    from ..eval.plots import html_page, save_figure

    suffix = out.suffix.lower()
    data = html_page(title, fig, rows, columns) if suffix in (".html", ".htm") else save_figure(fig, suffix[1:])
    write_output_file(out, data, "show")


def check_picture_path(out: Path, flag: str) -> None:
    if out.suffix.lower() not in (".html", ".htm", ".png", ".svg"):
        raise InputError(f"{flag} {out}: give a .html, .png or .svg file")
    if out.suffix.lower() == ".png":  # PNG needs matplotlib: say what to install before any work
        from ..eval.plots import require_matplotlib

        require_matplotlib(f"{flag} {out}")
    check_replaceable_file(out, flag)
    _check_writable(out.parent)


def cmd_show(args: argparse.Namespace) -> int:
    from ..eval.plots import concept_path_figure
    from ..index import G2ConSIndex

    check_text(args.question, "QUESTION", "the question")
    check_disjoint({"DIR": args.graph}, {"--out": args.out})
    check_picture_path(args.out, "--out")
    index = G2ConSIndex.load(args.graph)
    items = index.retrieve(args.question, beta=args.budget)
    by, selector = getattr(args, "kappa_by", None), getattr(args, "selector", None)  # the rule `select` used
    kept = set(index.select(kappa=args.kappa, kappa_by=by, selector=selector).kept_ids)
    row_of = {u.id: k for k, u in enumerate(index.stored.units)}
    inc = index.derived.unit_inc.tocsr()
    vocab = index.derived.vocab
    unit_concepts = {
        x.unit_id: {
            vocab[int(j)] for j in inc.indices[inc.indptr[row_of[x.unit_id]] : inc.indptr[row_of[x.unit_id] + 1]]
        }
        for x in items
        if x.reason.get("via") == "seed" and x.unit_id in row_of
    }
    fig = concept_path_figure(args.question, items, kept, unit_concepts)
    rows = [
        {
            "via": x.reason.get("via"),
            "chunk": x.parent_id,
            "kept": "kept" if x.parent_id in kept else "dropped",
            "tokens": x.n_tokens,
            "score": f"{x.score:.3f}",
            "bridge concepts": ", ".join(x.reason.get("bridge_concepts", [])),
            "text": x.text,
        }
        for x in items
    ]
    cols = ["via", "chunk", "kept", "tokens", "score", "bridge concepts", "text"]
    write_picture(fig, args.out, f"g2cons concept path: {args.question}", rows, cols)
    vias = {v: sum(x.reason.get("via") == v for x in items) for v in ("seed", "bridge", "dense")}
    print(
        f"{len(items)} units ({vias['seed']} seed, {vias['bridge']} via bridge concepts, {vias['dense']} dense), "
        f"{sum(x.n_tokens for x in items):,} tokens; {sum(x.parent_id in kept for x in items)} from kept chunks "
        f"(kappa {args.kappa:g}); wrote {args.out}"
    )
    return 0


def register_show(sub: Any) -> None:
    """Add the ``show`` subcommand."""
    v = sub.add_parser(
        "show",
        help="draw the concept path for a question (HTML, PNG or SVG)",
        description="Seed units, bridge concepts, the units reached through them and the dense fill for one "
        "question, each marked kept or dropped by the core selection at --kappa. HTML pages are self-contained "
        "(inline SVG, no script, work offline).",
        epilog='example:\n  g2cons show ragtest/g2cons/graph "What country was the author of Brand a citizen of?" '
        "--out view.html",
        formatter_class=FMT,
    )
    v.add_argument("graph", type=Path, metavar="DIR")
    v.add_argument("question")
    v.add_argument("--out", type=Path, required=True, metavar="FILE", help="view.html | view.png | view.svg")
    v.add_argument("--budget", type=positive, default=2000, help="token budget (default 2000)")
    v.add_argument(
        "--kappa",
        type=share,
        default=None,
        help="core selection that marks kept chunks (default: the kappa `select` used for this graph, else 0.8)",
    )
    v.set_defaults(func=cmd_show)
