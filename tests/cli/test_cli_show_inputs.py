"""``show`` and ``select --plot`` draw HTML and SVG without matplotlib (PNG names what to install, before any work);
``show`` marks chunks with the kappa ``select`` used; input folders name the files they skip (PDF, PNG) and a
UTF-16 file is called UTF-16, not binary; money prints with significant digits below a cent."""

from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from g2cons_plugins.cli import main
from g2cons_plugins.storage.outputs import recognised_output
from g2cons_plugins.text import format_usd

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "data" / "musique_excerpt_corpus.jsonl"
HASH = ["--embedder", "hash", "--quiet"]
QUESTION = "What country was the author of Brand a citizen of?"


def _rows(n: int) -> list[dict[str, str]]:
    return [json.loads(x) for x in CORPUS.read_text(encoding="utf-8").splitlines() if x.strip()][:n]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("show_inputs")
    src = root / "input"
    src.mkdir()
    for i, r in enumerate(_rows(60)):
        (src / f"p{i:02d}.txt").write_text(f"{r['title']}\n{r['text']}\n", encoding="utf-8")
    assert main(["select", str(src), "--out", str(root / "core"), "--kappa", "0.3", *HASH]) == 0
    assert main(["build", str(src), "--graph", str(root / "built"), *HASH]) == 0
    return root


@pytest.fixture
def no_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)


def test_show_html_and_svg_without_matplotlib(
    project: Path, tmp_path: Path, no_matplotlib: None, capsys: pytest.CaptureFixture[str]
) -> None:
    g = project / "core.g2cons"
    out = tmp_path / "v.html"
    assert main(["show", str(g), QUESTION, "--out", str(out), "--budget", "1500"]) == 0, capsys.readouterr().err
    page = out.read_text(encoding="utf-8")
    n_items = int(re.search(r"^(\d+) units", capsys.readouterr().out).group(1))  # type: ignore[union-attr]
    assert "<svg" in page and "<script" not in page.lower() and page.count("<tr>") == n_items + 1
    assert "What country was the author of Brand" in page and recognised_output(out)
    ET.fromstring(page[page.index("<svg") : page.index("</svg>") + 6])  # the inline SVG is well-formed
    svg = tmp_path / "v.svg"
    assert main(["show", str(g), QUESTION, "--out", str(svg), "--budget", "1500"]) == 0
    assert ET.parse(svg).getroot().tag.endswith("svg") and recognised_output(svg)
    assert main(["show", str(g), QUESTION, "--out", str(svg), "--budget", "1500"]) == 0  # ours: replaced
    capsys.readouterr()
    assert main(["show", str(g), QUESTION, "--out", str(tmp_path / "v.png")]) == 2
    err = capsys.readouterr().err
    assert "v.png" in err and "pip install matplotlib" in err and not (tmp_path / "v.png").exists()
    plot = tmp_path / "sel.html"
    src = project / "input"
    assert main(["select", str(src), "--out", str(tmp_path / "c"), "--kappa", "0.5", "--plot", str(plot), *HASH]) == 0
    page = plot.read_text(encoding="utf-8")
    assert "<svg" in page and page.count("<tr>") == 61 and "coverage vs kappa" in page


def test_show_marks_chunks_with_the_kappa_select_used(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    out = str(tmp_path / "v.html")
    assert main(["show", str(project / "core.g2cons"), QUESTION, "--out", out]) == 0
    assert "(kappa 0.3)" in capsys.readouterr().out  # what `select --kappa 0.3` used
    assert main(["show", str(project / "core.g2cons"), QUESTION, "--out", out, "--kappa", "0.9"]) == 0
    assert "(kappa 0.9)" in capsys.readouterr().out
    assert main(["show", str(project / "built"), QUESTION, "--out", out]) == 0
    assert "(kappa 0.8)" in capsys.readouterr().out  # a graph no selection was saved with: the default
    # the saved selector and kappa_by are used too: a forged sidecar naming an unknown selector is refused by name
    side = project / "core.g2cons" / "g2cons_input.json"
    original = side.read_text(encoding="utf-8")
    data = json.loads(original)
    data["selection"]["selector"] = "oracle"
    side.write_text(json.dumps(data), encoding="utf-8")
    try:
        assert main(["show", str(project / "core.g2cons"), QUESTION, "--out", out]) == 2
        assert "selection.selector must be one of" in capsys.readouterr().err
    finally:
        side.write_text(original, encoding="utf-8")  # the project fixture is shared


def test_files_an_input_folder_skips_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in"
    src.mkdir()
    for i, r in enumerate(_rows(6)):
        (src / f"p{i}.txt").write_text(r["text"], encoding="utf-8")
    (src / "report.pdf").write_bytes(b"%PDF-1.7\n")
    (src / "sub").mkdir()
    (src / "sub" / "scan.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    with pytest.warns(
        UserWarning, match=r"2 file\(s\) skipped, only \.txt/\.md files are read: report\.pdf, sub/scan\.png"
    ):
        assert main(["select", str(src), "--dry-run", *HASH]) == 0
    only = tmp_path / "pdfs"
    only.mkdir()
    (only / "a.pdf").write_bytes(b"%PDF-1.7\n")
    capsys.readouterr()
    assert main(["select", str(only), "--dry-run", *HASH]) == 2
    assert "1 other file(s), not read: a.pdf" in capsys.readouterr().err


def test_utf16_file_is_named_utf16_not_binary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in"
    src.mkdir()
    for i, r in enumerate(_rows(5)):
        (src / f"p{i}.txt").write_text(r["text"], encoding="utf-16")  # with a byte order mark
    assert main(["select", str(src), "--dry-run", *HASH]) == 2
    err = capsys.readouterr().err
    assert "UTF-16 text" in err and "re-save it as UTF-8" in err and "binary" not in err, err
    out = tmp_path / "core"
    assert main(["select", str(src), "--encoding", "utf-16", "--kappa", "1", "--out", str(out), *HASH]) == 0
    assert sorted(p.read_text(encoding="utf-16") for p in out.glob("*.txt")) == sorted(r["text"] for r in _rows(5))


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        (0.0, "$0.00"),
        (0.0002, "$0.0002"),
        (0.000154, "$0.00015"),
        (0.0099, "$0.0099"),
        (0.5, "$0.50"),
        (1234.5678, "$1,234.57"),
    ],
)
def test_money_format(amount: float, text: str) -> None:
    assert format_usd(amount) == text


def test_cli_prints_small_savings_with_significant_digits(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    assert (
        main(["select", str(project / "built"), "--kappa", "0.9", "--price-per-mtok", "0.15", "--out", str(out)]) == 0
    )
    printed = capsys.readouterr().out
    usd = json.loads(out.read_text(encoding="utf-8"))["usd_avoided"]
    assert 0 < usd < 0.005 and f"{format_usd(usd)} at $0.15/1M" in printed and "$0.00 at" not in printed
