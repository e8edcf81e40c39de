"""Single-file outputs (``select --out FILE``, its report, ``export``, ``show``, ``select --plot``, ``eval --out``)
write no marker into the user's folder: a rerun recognises g2cons's own earlier file by its SHA-256 (recorded in
g2cons's state folder, or listed in the selection report); an edited one is refused (``test_cli_edited_outputs``).
A user's file named ``.g2cons-output`` is never replaced, and a folder holding one is not taken for g2cons's."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from g2cons_plugins.cli import main
from g2cons_plugins.storage.outputs import MARKER

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "data" / "musique_excerpt_corpus.jsonl"
QUESTIONS = ROOT / "examples" / "data" / "musique_excerpt_questions.jsonl"
HASH = ["--embedder", "hash", "--quiet"]
FOREIGN = b"my own notes, in a file that happens to have this name\n"
QUESTION = "What country was the author of Brand a citizen of?"


def _rows(n: int) -> list[dict[str, str]]:
    return [json.loads(x) for x in CORPUS.read_text(encoding="utf-8").splitlines() if x.strip()][:n]


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("graph")
    src = root / "c.jsonl"
    src.write_text("".join(json.dumps({"id": f"d{i}", "text": r["text"]}) + "\n" for i, r in enumerate(_rows(40))))
    assert main(["build", str(src), "--graph", str(root / "g"), *HASH]) == 0
    return root / "g"


def _commands(graph: Path, home: Path) -> list[list[str]]:
    """Every command that writes a single file into ``home`` (a user's folder)."""
    src = home.parent / "docs.jsonl"
    if not src.exists():
        src.write_text("".join(json.dumps({"id": f"d{i}", "text": r["text"]}) + "\n" for i, r in enumerate(_rows(20))))
    cmds = [
        ["select", str(src), "--out", str(home / "core.jsonl"), "--graph", str(home.parent / "sel.g2cons"), *HASH],
        ["select", str(graph), "--out", str(home / "report.json"), "--kappa", "0.5"],
        ["export", str(graph), "--format", "graphml", "--out", str(home / "g.graphml")],
        ["export", str(graph), "--format", "gexf", "--out", str(home / "g.gexf"), "--chunks"],
        ["export", str(graph), "--format", "json", "--out", str(home / "g.json")],
        ["export", str(graph), "--format", "csv", "--out", str(home / "edges.csv")],
        ["eval", "--corpus", str(CORPUS), "--questions", str(QUESTIONS), "--methods", "dense", "--budgets", "300"]
        + ["--limit", "3", "--out", str(home / "results.json"), *HASH],
    ]
    try:
        import matplotlib  # noqa: F401

        cmds += [
            ["show", str(graph), QUESTION, "--out", str(home / f"view.{ext}"), "--budget", "800"]
            for ext in ("html", "png", "svg")
        ]
    except ImportError:
        cmds.append(["show", str(graph), QUESTION, "--out", str(home / "view.html"), "--budget", "800"])
    return cmds


def test_single_file_outputs_leave_no_marker_and_are_recognised_on_rerun(graph: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for argv in _commands(graph, home):
        assert main(argv) == 0, argv
        assert not (home / MARKER).exists(), argv  # no hidden file in the user's folder
        assert main(argv) == 0, argv  # our own earlier output, recognised by its content: replaced
    assert sorted(p.name for p in home.iterdir() if p.name.startswith(".")) == []


def test_a_users_file_named_like_the_marker_is_never_replaced(
    graph: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / MARKER).write_bytes(FOREIGN)
    for argv in _commands(graph, home):
        assert main(argv) == 0, argv
        assert (home / MARKER).read_bytes() == FOREIGN, argv
    # it cannot be an output either
    for argv in (
        ["export", str(graph), "--out", str(home / MARKER)],
        ["select", str(graph), "--out", str(home / MARKER)],
    ):
        capsys.readouterr()
        assert main(argv) == 2
        assert MARKER in capsys.readouterr().err and (home / MARKER).read_bytes() == FOREIGN
    # a folder whose only file is a foreign marker is the user's, not an earlier output: refused, naming it
    src = tmp_path / "in"
    src.mkdir()
    for i, r in enumerate(_rows(6)):
        (src / f"p{i}.txt").write_text(r["text"], encoding="utf-8")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / MARKER).write_bytes(FOREIGN)
    capsys.readouterr()
    assert main(["select", str(src), "--out", str(mine), *HASH]) == 2
    err = capsys.readouterr().err
    assert f"{mine / MARKER} was not written by g2cons" in err
    assert _tree(mine) == {MARKER: hashlib.sha256(FOREIGN).hexdigest()}


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("g.graphml", b"<?xml version='1.0'?>\n<graphml><graph/></graphml>\n"),
        ("g.json", b'{"nodes": [], "mine": true}\n'),
        ("edges.csv", b"source,target,weight,note\na,b,1,mine\n"),
        ("view.html", b"<!DOCTYPE html>\n<html><body>my page</body></html>\n"),
        ("view.png", b"\x89PNG\r\n\x1a\nnot ours"),
        ("results.json", b'{"mine": 1}'),
        ("core.jsonl", b'{"id": "x", "text": "mine"}\n'),
        ("report.json", b'{"kept_ids": [], "kappa": 0.5}'),
    ],
)
def test_a_users_file_at_an_output_path_is_refused(
    graph: Path, tmp_path: Path, name: str, content: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / name).write_bytes(content)
    argv = next(a for a in _commands(graph, home) if str(home / name) in a)
    assert main(argv) == 2
    assert name in capsys.readouterr().err and (home / name).read_bytes() == content
    assert not (home / MARKER).exists()


def test_a_selected_file_changed_since_is_refused(graph: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    argv = _commands(graph, home)[0]
    assert main(argv) == 0
    (home / "core.jsonl").write_text('{"id": "x", "text": "edited"}\n', encoding="utf-8")
    assert main(argv) == 2  # the report lists the SHA-256 it wrote: this is not that file any more
    assert "edited" in (home / "core.jsonl").read_text(encoding="utf-8")


def test_outputs_listed_by_an_earlier_versions_marker_are_still_replaced(graph: Path, tmp_path: Path) -> None:
    """Earlier versions listed single files in a marker in their folder: those stay replaceable."""
    home = tmp_path / "home"
    home.mkdir()
    out = home / "old.graphml"
    out.write_bytes(b"<?xml version='1.0'?>\n<graphml/>\n")  # no stamp: written by an earlier version
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    marker = {"kind": "g2cons-output", "command": "export", "files": {"old.graphml": digest}}
    (home / MARKER).write_text(json.dumps(marker), encoding="utf-8")
    assert main(["export", str(graph), "--out", str(out)]) == 0
    assert b"g2cons_output" in out.read_bytes()[:200]
