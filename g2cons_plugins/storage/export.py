"""The concept graph as a networkx graph, and as GraphML, GEXF, JSON or CSV files (``g2cons export``).

Nodes are concepts (node id: the concept string) with ``kind="concept"``, ``pagerank``, ``df`` (|T_w|, chunks that
contain it), ``sentences`` (|S_w|), ``name_share`` (share of capitalised occurrences) and ``is_name`` (in the bridge
vocabulary of names). Edges are the concept graph's edges with ``weight`` = ``dice`` (r = 2 Co / (|T_i| + |T_j|)),
``co`` (Co, the co-occurrence count) and ``cosine``. So the node and edge counts equal ``index.stats``
(``n_concepts``, ``n_edges``).

With ``chunks=True`` every chunk is a node too (id ``"chunk:" + chunk id``, ``kind="chunk"``, ``n_tokens`` and,
when ``kept_ids`` is given, ``kept``), joined to the concepts it contains by ``kind="contains"`` edges.

GraphML and GEXF are XML 1.0, which cannot hold control characters (but tab, LF, CR): such a character in an id
or a value is written as ``\\xNN`` there (:func:`xml_safe`); JSON and CSV keep every id as it is.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable
from typing import Any

import networkx as nx

from ..errors import InputError
from .outputs import EXPORT_CSV_HEADERS, json_stamp, stamp_xml

FORMATS = ("graphml", "gexf", "json", "csv")


def to_networkx(index: Any, chunks: bool = False, kept_ids: Iterable[str] | None = None) -> nx.Graph:
    """The concept graph of a :class:`~g2cons_plugins.G2ConSIndex` (or a snapshot with ``.stored``/``.derived``)
    as an undirected ``networkx.Graph`` (see module doc)."""
    dv, st = index.derived, index.stored
    names = set(dv.names)
    g = nx.Graph()
    for i, w in enumerate(dv.vocab):
        g.add_node(
            w,
            kind="concept",
            pagerank=float(dv.pagerank[i]),
            df=int(dv.df[i]),
            sentences=int(dv.sentence_counts[i]),
            name_share=float(dv.name_share[i]),
            is_name=w in names,
        )
    e = dv.edges
    for r, c, co, dice, cos in zip(e.rows, e.cols, e.co, e.dice, e.cosine, strict=True):
        g.add_edge(
            dv.vocab[int(r)],
            dv.vocab[int(c)],
            kind="concept",
            weight=float(dice),
            dice=float(dice),
            co=int(co),
            cosine=float(cos),
        )
    if chunks:
        kept = None if kept_ids is None else set(kept_ids)
        inc = dv.chunk_inc.tocsr()
        for k, ch in enumerate(st.chunks):
            node = f"chunk:{ch.id}"
            attrs: dict[str, Any] = {"kind": "chunk", "n_tokens": int(st.chunk_tokens[k])}
            if kept is not None:
                attrs["kept"] = ch.id in kept
            g.add_node(node, **attrs)
            for j in inc.indices[inc.indptr[k] : inc.indptr[k + 1]]:
                g.add_edge(node, dv.vocab[int(j)], kind="contains", weight=1.0)
    return g


def _csv(rows: list[dict[str, Any]], fields: list[str]) -> bytes:
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue().encode("utf-8")


# characters XML 1.0 cannot hold, not even as character references: C0 controls but tab, LF, CR; surrogates;
# U+FFFE and U+FFFF
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(value: str) -> str:
    """``value`` with each character XML 1.0 cannot hold written as ``\\xNN`` / ``\\uNNNN`` (visible, reversible
    by eye), so GraphML and GEXF files stay well-formed."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", value)


def xml_safe(graph: nx.Graph) -> nx.Graph:
    """A copy of ``graph`` whose string node ids and string attribute values XML can hold (:func:`_xml_text`);
    ``graph`` itself when nothing needs it. Two ids that would become one are refused, naming both."""

    def bad(v: Any) -> bool:
        return isinstance(v, str) and _NOT_XML.search(v) is not None

    if not any(bad(n) or any(bad(v) for v in a.values()) for n, a in graph.nodes(data=True)) and not any(
        bad(v) for *_, a in graph.edges(data=True) for v in a.values()
    ):
        return graph
    mapping: dict[Any, Any] = {}
    seen: dict[Any, Any] = {}
    for n in graph.nodes:
        new = _xml_text(n) if isinstance(n, str) else n
        if new in seen and seen[new] != n:
            raise InputError(f"ids {seen[new]!r} and {n!r} both become {new!r} in XML; export as json or csv instead")
        seen[new] = n
        mapping[n] = new
    out = nx.relabel_nodes(graph, mapping, copy=True)
    for _, a in out.nodes(data=True):
        a.update({k: _xml_text(v) for k, v in a.items() if isinstance(v, str)})
    for *_, a in out.edges(data=True):
        a.update({k: _xml_text(v) for k, v in a.items() if isinstance(v, str)})
    return out


def serialize(graph: nx.Graph, fmt: str) -> dict[str, bytes]:
    """File contents for ``fmt``: ``{"": data}`` for one file; for ``csv`` ``{"": edges, ".nodes": nodes}``
    (the second written beside the first as ``STEM.nodes.csv``). GraphML/GEXF carry g2cons's stamp comment, JSON
    its stamp key first (``"g2cons_output": "export"``); the CSV headers are recognised as they are."""
    if fmt in ("graphml", "gexf"):
        graph = xml_safe(graph)
    if fmt == "graphml":
        buf = io.BytesIO()
        nx.write_graphml(graph, buf)
        return {"": stamp_xml(buf.getvalue(), "export")}
    if fmt == "gexf":
        buf = io.BytesIO()
        nx.write_gexf(graph, buf)
        return {"": stamp_xml(buf.getvalue(), "export")}
    if fmt == "json":
        data = {**json_stamp("export"), **nx.node_link_data(graph, edges="edges")}
        return {"": json.dumps(data, indent=1, ensure_ascii=False).encode("utf-8")}
    if fmt == "csv":
        edge_fields, node_fields = (h.decode("ascii").split(",") for h in EXPORT_CSV_HEADERS)
        nodes = [{"id": n, **a} for n, a in graph.nodes(data=True)]
        edges = [{"source": u, "target": v, **a} for u, v, a in graph.edges(data=True)]
        return {"": _csv(edges, edge_fields), ".nodes": _csv(nodes, node_fields)}
    raise InputError(f"unknown export format {fmt!r}; choose one of {FORMATS}")
