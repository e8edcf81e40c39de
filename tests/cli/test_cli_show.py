"""``g2cons show`` (concept path picture) and ``g2cons select --plot``: real images, self-contained HTML."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from g2cons_plugins import G2ConSIndex
from g2cons_plugins.cli import main

pytest.importorskip("matplotlib")
ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "data" / "musique_excerpt_corpus.jsonl"
HASH = ["--embedder", "hash", "--quiet"]
QUESTION = "What country was the author of Brand a citizen of?"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("show")
    src = root / "input"
    src.mkdir()
    rows = [json.loads(x) for x in CORPUS.read_text(encoding="utf-8").splitlines() if x.strip()][:80]
    for i, r in enumerate(rows):
        (src / f"p{i:02d}.txt").write_text(f"{r['title']}\n{r['text']}\n", encoding="utf-8")
    assert main(["build", str(src), "--graph", str(root / "g"), *HASH]) == 0
    return root


def test_show_png_and_self_contained_html(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    g = project / "g"
    assert main(["show", str(g), QUESTION, "--out", str(tmp_path / "v.png"), "--budget", "1500"]) == 0
    assert (tmp_path / "v.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()
    assert main(["show", str(g), QUESTION, "--out", str(tmp_path / "v.html"), "--budget", "1500"]) == 0
    printed = capsys.readouterr().out
    page = (tmp_path / "v.html").read_text(encoding="utf-8")
    assert "<svg" in page and "<script" not in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']https?:""", page)  # nothing fetched: works offline
    items = G2ConSIndex.load(g).retrieve(QUESTION, beta=1500)
    assert page.count("<tr>") == len(items) + 1 and f"{len(items)} units" in printed
    assert "What country was the author of Brand" in page


def test_show_refuses_bad_paths(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    g = project / "g"
    assert main(["show", str(g), QUESTION, "--out", str(g / "v.html")]) == 2
    assert main(["show", str(g), QUESTION, "--out", str(tmp_path / "v.txt")]) == 2
    (tmp_path / "mine.png").write_bytes(b"mine")
    assert main(["show", str(g), QUESTION, "--out", str(tmp_path / "mine.png")]) == 2
    assert (tmp_path / "mine.png").read_bytes() == b"mine"
    assert "--out" in capsys.readouterr().err


def test_select_plot(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "core"
    plot = tmp_path / "sel.html"
    assert (
        main(["select", str(project / "input"), "--out", str(out), "--kappa", "0.5", "--plot", str(plot), *HASH]) == 0
    )
    page = plot.read_text(encoding="utf-8")
    rep = json.loads(out.with_name("core.selection_report.json").read_text())
    assert "<svg" in page and page.count("<tr>") == rep["n_documents"] + 1 and rep["plot"] == str(plot)
    assert main(["select", str(project / "input"), "--dry-run", "--plot", str(project / "input" / "x.png"), *HASH]) == 2


def test_show_png_arrows_end_on_the_boxes() -> None:
    """Every arrow of the concept-path figure starts and ends at a box's edge, whatever the boxes' widths."""
    pytest.importorskip("matplotlib")
    from types import SimpleNamespace

    from g2cons_plugins.eval.plots import concept_path_figure, pyplot

    seed = SimpleNamespace(unit_id="s", parent_id="p1", text="A short seed", n_tokens=5, reason={"via": "seed"})
    far = SimpleNamespace(
        unit_id="b", parent_id="p2", text="A much longer unit text reached through the bridge concept " * 3,
        n_tokens=40, reason={"via": "bridge", "bridge_concepts": ["Ostravel"]},
    )  # fmt: skip
    fig = concept_path_figure("Q?", [seed, far], {"p1"}, {"s": {"Ostravel"}})
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    boxes = [t.get_bbox_patch().get_window_extent(renderer) for t in ax.texts if t.get_bbox_patch() is not None]
    arrows = [a for a in ax.texts if getattr(a, "arrow_patch", None) is not None]
    assert len(arrows) == 2
    for a in arrows:
        verts = a.arrow_patch.get_path().transformed(a.arrow_patch.get_transform()).vertices

        def gap(b: object, v: object) -> float:  # distance outside the box (0 inside)
            return max(b.x0 - v[0], v[0] - b.x1, b.y0 - v[1], v[1] - b.y1, 0.0)  # type: ignore[attr-defined,index]

        touched = [i for i, b in enumerate(boxes) if min(gap(b, v) for v in verts) < 6]
        assert len(touched) == 2, "an arrow must run from one box's edge to another's"
    pyplot().close(fig)
