"""``g2cons export`` / :func:`g2cons_plugins.storage.export.to_networkx`, ``--version``, ``fuse`` with id-only host
items, and ``add``/``remove`` by path (issue 13 items 2-3)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import networkx as nx
import pytest

from g2cons_plugins import G2ConSIndex
from g2cons_plugins.cli import main
from g2cons_plugins.storage.export import to_networkx

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "data" / "musique_excerpt_corpus.jsonl"
HASH = ["--embedder", "hash", "--quiet"]


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("g")
    src = root / "input"
    src.mkdir()
    rows = [json.loads(x) for x in CORPUS.read_text(encoding="utf-8").splitlines() if x.strip()][:60]
    for i, r in enumerate(rows):
        (src / f"p{i:02d}.txt").write_text(f"{r['title']}\n{r['text']}\n", encoding="utf-8")
    assert main(["build", str(src), "--graph", str(root / "g"), *HASH]) == 0
    return root / "g"


def test_to_networkx_counts_and_attributes_equal_the_index(graph: Path) -> None:
    index = G2ConSIndex.load(graph)
    g = to_networkx(index)
    assert g.number_of_nodes() == index.stats.n_concepts and g.number_of_edges() == index.stats.n_edges
    dv = index.derived
    i = int(dv.pagerank.argmax())
    top = g.nodes[dv.vocab[i]]
    assert top["pagerank"] == pytest.approx(float(dv.pagerank[i])) and top["df"] == int(dv.df[i])
    for u, v, a in g.edges(data=True):
        du, dv_ = g.nodes[u]["df"], g.nodes[v]["df"]
        assert a["dice"] == pytest.approx(2 * a["co"] / (du + dv_), rel=1e-5)  # r = 2 Co / (|T_i| + |T_j|)


@pytest.mark.parametrize("fmt", ["graphml", "gexf", "json", "csv"])
def test_export_formats_load_with_the_same_counts(graph: Path, tmp_path: Path, fmt: str) -> None:
    stats = G2ConSIndex.load(graph).stats
    out = tmp_path / f"g.{fmt}"
    assert main(["export", str(graph), "--format", fmt, "--out", str(out)]) == 0
    if fmt == "graphml":
        g = nx.read_graphml(out)
    elif fmt == "gexf":
        g = nx.read_gexf(out)
    elif fmt == "json":
        g = nx.node_link_graph(json.loads(out.read_text(encoding="utf-8")), edges="edges")
    else:
        g = nx.Graph()
        with (tmp_path / "g.nodes.csv").open(encoding="utf-8") as fh:
            g.add_nodes_from(r["id"] for r in csv.DictReader(fh))
        with out.open(encoding="utf-8") as fh:
            g.add_edges_from((r["source"], r["target"]) for r in csv.DictReader(fh))
    assert g.number_of_nodes() == stats.n_concepts and g.number_of_edges() == stats.n_edges


def test_export_with_chunks_marks_kept_and_dropped(graph: Path, tmp_path: Path) -> None:
    index = G2ConSIndex.load(graph)
    out = tmp_path / "g.graphml"
    assert main(["export", str(graph), "--out", str(out), "--chunks", "--kappa", "0.5"]) == 0
    g = nx.read_graphml(out)
    chunk_nodes = {n: a for n, a in g.nodes(data=True) if a["kind"] == "chunk"}
    assert len(chunk_nodes) == len(index.chunks)
    kept = {n.removeprefix("chunk:") for n, a in chunk_nodes.items() if a["kept"]}
    assert kept == set(index.select(kappa=0.5).kept_ids)
    assert main(["export", str(graph), "--out", str(graph / "x.graphml")]) == 2  # never into the graph folder
    (tmp_path / "mine.graphml").write_text("<mine/>", encoding="utf-8")
    assert main(["export", str(graph), "--out", str(tmp_path / "mine.graphml")]) == 2  # not ours to overwrite
    assert (tmp_path / "mine.graphml").read_text(encoding="utf-8") == "<mine/>"


def test_version_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    from g2cons_plugins import __version__

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"g2cons {__version__}"
    for cmd in ("eval", "build", "select", "query", "export"):
        with pytest.raises(SystemExit) as e:
            main([cmd, "--help"])
        assert e.value.code == 0 and f"usage: g2cons {cmd}" in capsys.readouterr().out


def test_fuse_resolves_id_only_items_and_warns_about_unknown(
    graph: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    host = tmp_path / "host.json"
    host.write_text(json.dumps([{"chunk_id": "p05.txt"}, {"chunk_id": "nope.txt", "score": 0.5}]), encoding="utf-8")
    args = ["fuse", str(graph), "Who founded the APA?", "--host", str(host), "--budget", "3000", "--json"]
    assert main(args) == 0
    cap = capsys.readouterr()
    fused = json.loads(cap.out)
    item = next(f for f in fused if f["chunk_id"] == "p05.txt")
    assert item["source"] in ("host", "both") and item["text"] == (graph.parent / "input" / "p05.txt").read_text()
    assert "nope.txt" in cap.err and "left out" in cap.err
    assert "host items: 2 given, 1 contributed, 1 left out" in cap.err  # the count names both items given


def test_add_same_named_files_from_two_folders_and_remove_by_path(
    graph: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    g = tmp_path / "g"
    shutil.copytree(graph, g)
    monkeypatch.chdir(tmp_path)
    for folder, text in (("a", "Alpha report about the Vienna Circle."), ("b", "Beta report about Kyoto temples.")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "report.txt").write_text(text, encoding="utf-8")
    assert main(["add", "g", "a/report.txt", "./b/report.txt", "--quiet"]) == 0
    ids = {c.id for c in G2ConSIndex.load(g).chunks}
    assert {"a/report.txt", "b/report.txt"} <= ids
    assert main(["remove", "g", "a/report.txt"]) == 0
    ids = {c.id for c in G2ConSIndex.load(g).chunks}
    assert "a/report.txt" not in ids and "b/report.txt" in ids
    capsys.readouterr()
    assert main(["add", "g", "b/report.txt", "b/./report.txt"]) == 2
    assert "given twice" in capsys.readouterr().err


def test_add_and_remove_save_a_trickle_log_unless_refresh(
    graph: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a graph where small changes trickle, ``add`` / ``remove`` save the updates' log (format version 6; the
    next load replays it and keeps the drift until a refresh); ``--refresh`` saves the exact state (version 5)."""
    import shutil

    from g2cons_plugins.engine import update as upd

    monkeypatch.setattr(upd, "MIN_CHUNKS", 10)
    monkeypatch.setattr(upd, "MAX_SHARE", 0.5)
    g = tmp_path / "g"
    shutil.copytree(graph, g)
    (tmp_path / "new.txt").write_text("The Lantern Guild was founded in Ostravel by Mira Quell.", encoding="utf-8")

    def version() -> int:
        return int(json.loads((g / "CURRENT").read_text(encoding="utf-8"))["version"])

    assert main(["add", str(g), str(tmp_path / "new.txt"), "--quiet"]) == 0
    assert version() == 6 and not G2ConSIndex.load(g).refreshed
    assert main(["remove", str(g), "p03.txt"]) == 0
    loaded = G2ConSIndex.load(g)
    assert version() == 6 and "p03.txt" not in {c.id for c in loaded.chunks}
    assert [op.kind for op in loaded.snapshot.pending.ops] == ["add", "remove"]  # type: ignore[union-attr]
    assert main(["remove", str(g), "p04.txt", "--refresh"]) == 0
    assert version() == 5 and G2ConSIndex.load(g).refreshed
