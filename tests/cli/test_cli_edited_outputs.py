"""A single-file output the user edited is never overwritten: g2cons replaces a file only while its SHA-256 is the
one g2cons recorded when it wrote it (``g2cons_plugins.storage.outputs.write_output_file``), whatever its stamp says.
The refusal names the file and says how to proceed; the edit stays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from g2cons_plugins.cli import main
from g2cons_plugins.storage.outputs import remembered_digest, state_dir

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "data" / "musique_excerpt_corpus.jsonl"
QUESTIONS = ROOT / "examples" / "data" / "musique_excerpt_questions.jsonl"
HASH = ["--embedder", "hash", "--quiet"]
QUESTION = "What country was the author of Brand a citizen of?"


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("graph")
    rows = [json.loads(x) for x in CORPUS.read_text(encoding="utf-8").splitlines() if x.strip()][:30]
    src = root / "c.jsonl"
    src.write_text("".join(json.dumps({"id": f"d{i}", "text": r["text"]}) + "\n" for i, r in enumerate(rows)))
    assert main(["build", str(src), "--graph", str(root / "g"), *HASH]) == 0
    return root / "g"


def _cases(graph: Path, home: Path) -> list[tuple[list[str], list[str]]]:
    """(command, the files it writes into ``home``)."""
    ev = ["eval", "--corpus", str(CORPUS), "--questions", str(QUESTIONS), "--methods", "dense", "--budgets", "300"]
    return [
        (["export", str(graph), "--format", "json", "--out", str(home / "ex.json")], ["ex.json"]),
        (["export", str(graph), "--format", "graphml", "--out", str(home / "g.graphml")], ["g.graphml"]),
        (["export", str(graph), "--format", "gexf", "--out", str(home / "g.gexf")], ["g.gexf"]),
        (["export", str(graph), "--format", "csv", "--out", str(home / "e.csv")], ["e.csv", "e.nodes.csv"]),
        (["select", str(graph), "--out", str(home / "report.json"), "--kappa", "0.5"], ["report.json"]),
        (["show", str(graph), QUESTION, "--out", str(home / "view.html"), "--budget", "600"], ["view.html"]),
        (
            [*ev, "--limit", "2", "--out", str(home / "r.json"), "--per-question", str(home / "q.jsonl"), *HASH],
            ["r.json", "q.jsonl"],
        ),
    ]


def _edit(path: Path) -> bytes:
    """Change a value inside the file and keep its start (and so any stamp g2cons put there)."""
    data = path.read_bytes()
    cut = max(len(data) // 2, 1)
    edited = data[:cut] + b"EDITED" + data[cut:]
    path.write_bytes(edited)
    return edited


CASE_IDS = ["json", "graphml", "gexf", "csv", "select-report", "show-html", "eval"]


@pytest.mark.parametrize("case", range(len(CASE_IDS)), ids=CASE_IDS)
def test_an_edited_output_is_refused_and_kept(
    graph: Path, tmp_path: Path, case: int, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    argv, files = _cases(graph, home)[case]
    assert main(argv) == 0
    assert main(argv) == 0, "an unchanged output of g2cons is replaced on rerun"
    for name in files:
        assert remembered_digest(home / name) is not None
        edited = _edit(home / name)
        capsys.readouterr()
        assert main(argv) == 2, name
        err = capsys.readouterr().err
        assert str(home / name) in err and "changed since g2cons wrote it" in err
        assert "delete or move it yourself, or give another" in err  # how to proceed
        assert (home / name).read_bytes() == edited  # the edit is kept
        (home / name).unlink()  # the user's way out: the next run writes it anew
        assert main(argv) == 0
    assert not list(state_dir().glob("*.tmp-*"))


def test_a_stamped_file_g2cons_has_no_record_of_is_refused(
    graph: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file carrying g2cons's stamp that g2cons did not write here (an edited copy, another machine's) is kept."""
    out = tmp_path / "ex.json"
    mine = json.dumps({"g2cons_output": "export", "nodes": ["my own"], "edges": []}).encode()
    out.write_bytes(mine)
    assert main(["export", str(graph), "--format", "json", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(out) in err and "no record of writing this content here" in err
    assert out.read_bytes() == mine


def test_an_edited_eval_report_folder_is_refused(
    graph: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    rep = tmp_path / "rep"
    argv = ["eval", "--corpus", str(CORPUS), "--questions", str(QUESTIONS), "--methods", "dense"]
    argv += ["--budgets", "300", "--limit", "2", "--report", str(rep), *HASH]
    assert main(argv) == 0
    assert main(argv) == 0
    md = rep / "report.md"
    md.write_text(md.read_text(encoding="utf-8") + "\nmy notes\n", encoding="utf-8")
    capsys.readouterr()
    assert main(argv) == 2
    assert "report.md" in capsys.readouterr().err
    assert md.read_text(encoding="utf-8").endswith("my notes\n")
