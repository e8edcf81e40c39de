"""Peak memory of reading a LightRAG GraphML (``graph_chunk_entity_relation.graphml``), streamed as
``g2cons_plugins.hosts.replay._graphml`` reads it now, against the whole-file parse it replaced (the file's bytes
and ``ElementTree.fromstring``'s tree held at once, then the node and edge lists built from the tree).

Generates a GraphML shaped like LightRAG's (nodes with entity_id, entity_type, description, source_id; edges with
weight, description, keywords, source_id), then reads it in a fresh process per method and reports the peak RSS
(``ru_maxrss``) minus the process's RSS before reading, and that as a multiple of the file's size.

    python benchmarks/hostile/graphml_memory.py --nodes 1000000 --out benchmarks/hostile/graphml_memory.md
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

SEP = "<SEP>"


def generate(path: Path, n_nodes: int, edges_per_node: float = 1.0) -> None:
    """A LightRAG-shaped GraphML with ``n_nodes`` nodes and about ``edges_per_node`` x as many edges."""
    head = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n'
        '<key id="d0" for="node" attr.name="entity_id" attr.type="string"/>\n'
        '<key id="d1" for="node" attr.name="entity_type" attr.type="string"/>\n'
        '<key id="d2" for="node" attr.name="description" attr.type="string"/>\n'
        '<key id="d3" for="node" attr.name="source_id" attr.type="string"/>\n'
        '<key id="d4" for="edge" attr.name="weight" attr.type="double"/>\n'
        '<key id="d5" for="edge" attr.name="description" attr.type="string"/>\n'
        '<key id="d6" for="edge" attr.name="keywords" attr.type="string"/>\n'
        '<key id="d7" for="edge" attr.name="source_id" attr.type="string"/>\n'
        '<graph edgedefault="undirected">\n'
    )
    n_edges = int(n_nodes * edges_per_node)
    with path.open("w", encoding="utf-8") as fh:
        fh.write(head)
        for i in range(n_nodes):
            fh.write(
                f'<node id="E{i}"><data key="d0">E{i}</data><data key="d1">person</data>'
                f'<data key="d2">e{i}</data><data key="d3">chunk-{i % 5000}</data></node>\n'
            )
        for j in range(n_edges):
            a, b = j % n_nodes, (j * 7 + 1) % n_nodes
            fh.write(
                f'<edge source="E{a}" target="E{b}"><data key="d4">1.0</data><data key="d5">r</data>'
                f'<data key="d6">k</data><data key="d7">chunk-{j % 5000}</data></edge>\n'
            )
        fh.write("</graph>\n</graphml>\n")


def whole_file(file: Path) -> tuple[list[Any], list[Any]]:
    """The reading this replaced: the bytes and the whole element tree at once."""
    data = file.read_bytes()
    root = ET.fromstring(data)
    ns = root.tag[: root.tag.index("}") + 1] if root.tag.startswith("{") else ""
    keys = {k.get("id"): k.get("attr.name") or k.get("id") or "" for k in root.iter(f"{ns}key")}

    def attrs(el: ET.Element) -> dict[str, str]:
        return {keys.get(d.get("key"), d.get("key") or ""): d.text or "" for d in el.findall(f"{ns}data")}

    nodes = [(n.get("id"), attrs(n)) for n in root.iter(f"{ns}node")]
    edges = [(e.get("source"), e.get("target"), attrs(e)) for e in root.iter(f"{ns}edge")]
    return nodes, edges


def _rss_kb() -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))


def measure(method: str, file: Path) -> dict[str, Any]:
    """In this process: read ``file`` with ``method`` and report the memory it took."""
    from g2cons_plugins.hosts.replay import _graphml

    read = {"streamed": _graphml, "whole-file": whole_file}[method]
    base = _rss_kb()
    t0 = time.perf_counter()
    nodes, edges = read(file)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {
        "method": method,
        "nodes": len(nodes),
        "edges": len(edges),
        "seconds": round(seconds, 1),
        "peak_rss_mb": round(peak / 1024, 1),
        "peak_over_start_mb": round((peak - base) / 1024, 1),
        "held_after_mb": round((_rss_kb() - base) / 1024, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--out", type=Path, default=None, help="write a Markdown table here (and print it)")
    ap.add_argument("--measure", nargs=2, metavar=("METHOD", "FILE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], Path(args.measure[1]))))
        return
    with tempfile.TemporaryDirectory() as d:
        file = Path(d) / "graph_chunk_entity_relation.graphml"
        generate(file, args.nodes)
        size_mb = file.stat().st_size / 1e6
        rows = []
        for method in ("whole-file", "streamed"):
            done = subprocess.run(
                [sys.executable, __file__, "--measure", method, str(file)], capture_output=True, text=True, check=True
            )
            row = json.loads(done.stdout)
            row["ratio_to_file"] = round(row["peak_over_start_mb"] / size_mb, 1)
            rows.append(row)
    lines = [
        f"GraphML: {args.nodes:,} nodes, {rows[0]['edges']:,} edges, {size_mb:.1f} MB "
        f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs)",
        "",
        "| method | peak RSS over start (MB) | x file size | RSS after, result held (MB) | seconds |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {r['method']} | {r['peak_over_start_mb']:,} | {r['ratio_to_file']} | {r['held_after_mb']:,} | "
            f"{r['seconds']} |"
            for r in rows
        ),
        "",
        "Each method in a fresh process; RSS from /proc and ru_maxrss. The result (node and edge lists with their "
        "data) is what the streamed read holds at its peak; the whole-file parse also held the file's bytes and "
        "its element tree (freed on return, but kept by the process's heap, hence its RSS after). Seconds are "
        "wall time on shared CPUs.",
        "",
        "Command: `python benchmarks/hostile/graphml_memory.py --nodes "
        f"{args.nodes}" + (f" --out {args.out}`" if args.out else "`"),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out is not None:
        from g2cons_plugins.storage.outputs import atomic_write_text

        atomic_write_text(args.out, text)


if __name__ == "__main__":
    main()
