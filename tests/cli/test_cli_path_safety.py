"""Path safety of the CLI (issue 10, classes 1, 2, 7, 9, 11): the data-loss regression, the path-clash matrix,
marker-proven replacement of our own outputs only, bad flags, surrogates, umask and file descriptors."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from g2cons_plugins.cli import main

HASH = ["--embedder", "hash", "--quiet"]
TEXTS = [
    "Alice Moreau founded Acme Corp in Lisbon. Bob Tanaka joined Acme Corp in Paris.",
    "Acme Corp opened an office in Berlin. Carla Diaz runs the Berlin office of Acme Corp.",
    "Bob Tanaka studied in Paris. Paris is the capital of France.",
    "Carla Diaz was born in Madrid. Madrid is the capital of Spain.",
    "Lisbon is the capital of Portugal. Alice Moreau lives in Lisbon.",
    "Globex bought Initech in Berlin. Carla Diaz met Bob Tanaka in Berlin.",
]


def _tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` with its sha256: what a command must leave alone."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "input").mkdir(parents=True)
    for i, t in enumerate(TEXTS):
        (root / "input" / f"doc{i}.txt").write_text(t, encoding="utf-8")
    return root


def test_select_into_the_parent_of_its_input_deletes_nothing(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The reproduced data loss: ``select proj/input --out proj`` with an earlier report in proj deleted
    proj/input. Now it is refused before any work, and nothing changes."""
    (proj / "selection_report.json").write_text(json.dumps({"kept_ids": []}), encoding="utf-8")
    before = _tree(proj)
    assert main(["select", str(proj / "input"), "--kappa", "0.5", "--out", str(proj), *HASH]) == 2
    err = capsys.readouterr().err
    assert "inside --out" in err and str(proj) in err
    assert _tree(proj) == before


@pytest.mark.parametrize(
    ("out", "graph", "report", "words"),
    [
        ("input", None, None, "--out"),  # the input itself
        ("input/sub", None, None, "--out"),  # inside the input
        (".", None, None, "--out"),  # around the input
        ("core", "input/g", None, "--graph"),
        ("core", "core", None, "same path"),
        ("core", "core/g", None, "inside --out"),
        ("core", None, "input/doc0.txt", "--report"),  # the report over an input file
        ("core", None, "core/report.json", "inside --out"),
        ("core", "g", "g/CURRENT", "inside --graph"),  # the report inside the graph
        ("core", "g", "input", "--report"),
    ],
)
def test_path_clash_matrix(
    proj: Path,
    out: str,
    graph: str | None,
    report: str | None,
    words: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(proj)
    before = _tree(proj)
    argv = ["select", "input", "--kappa", "0.5", "--out", out, *HASH]
    argv += ["--graph", graph] if graph else []
    argv += ["--report", report] if report else []
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err
    assert _tree(proj) == before  # nothing written, nothing removed


def test_a_previous_output_is_replaced_only_when_ours_and_unmodified(proj: Path) -> None:
    out = proj / "core"
    argv = ["select", str(proj / "input"), "--kappa", "0.6", "--out", str(out), *HASH]
    assert main(argv) == 0
    assert (out / ".g2cons-output").is_file()
    assert main(argv) == 0  # our own, unmodified: replaced
    kept = sorted(p.name for p in out.glob("*.txt"))
    (out / kept[0]).write_text("edited by the user", encoding="utf-8")
    assert main(argv) == 2  # a file changed since we wrote it: refused
    assert (out / kept[0]).read_text(encoding="utf-8") == "edited by the user"
    (out / kept[0]).unlink()
    assert main(argv) == 0  # only files we wrote, unchanged, are left: replaced
    assert main([*argv[:-3], "--out", str(proj / "fresh"), *HASH]) == 0
    (proj / "fresh" / "notes.md").write_text("mine", encoding="utf-8")
    assert main([*argv[:-3], "--out", str(proj / "fresh"), *HASH]) == 2  # a foreign file inside: refused
    assert (proj / "fresh" / "notes.md").read_text(encoding="utf-8") == "mine"


def test_foreign_folder_and_file_outputs_are_refused(proj: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "a.txt").write_text("precious", encoding="utf-8")
    assert main(["select", str(proj / "input"), "--kappa", "0.5", "--out", str(mine), *HASH]) == 2
    assert _tree(mine) == {"a.txt": hashlib.sha256(b"precious").hexdigest()}
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(TEXTS)), encoding="utf-8")
    other = tmp_path / "other.jsonl"
    other.write_text("not ours\n", encoding="utf-8")
    assert main(["select", str(src), "--kappa", "0.5", "--out", str(other), *HASH]) == 2
    assert other.read_text(encoding="utf-8") == "not ours\n"
    core = tmp_path / "core.jsonl"
    assert main(["select", str(src), "--kappa", "0.5", "--out", str(core), *HASH]) == 0
    assert main(["select", str(src), "--kappa", "0.4", "--out", str(core), *HASH]) == 0  # ours: replaced


def test_report_over_someone_elses_file_is_refused(proj: Path, tmp_path: Path) -> None:
    report = tmp_path / "notes.json"
    report.write_text('{"mine": true}', encoding="utf-8")
    argv = ["select", str(proj / "input"), "--kappa", "0.5", "--out", str(tmp_path / "core"), "--report", str(report)]
    assert main([*argv, *HASH]) == 2
    assert report.read_text(encoding="utf-8") == '{"mine": true}'


def test_build_and_add_refuse_a_graph_around_their_input(proj: Path) -> None:
    before = _tree(proj)
    assert main(["build", str(proj / "input"), "--graph", str(proj), *HASH]) == 2
    assert main(["build", str(proj / "input"), "--graph", str(proj / "input" / "g"), *HASH]) == 2
    assert _tree(proj) == before
    graph = proj.parent / "g"
    assert main(["build", str(proj / "input"), "--graph", str(graph), *HASH]) == 0
    (graph / "extra.txt").write_text("Inside the graph folder.", encoding="utf-8")
    assert main(["add", str(graph), str(graph / "extra.txt")]) == 2


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--price-per-mtok", "-1"), ("--prompt-tokens-per-call", "-500"), ("--kappa", "1.5"), ("--kappa", "abc")],
)
def test_bad_flags_name_themselves(proj: Path, flag: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        rc = main(["select", str(proj / "input"), "--dry-run", flag, value, *HASH])
    except SystemExit as e:  # argparse's own type errors
        rc = int(e.code or 0)
    assert rc == 2
    err = capsys.readouterr().err
    assert flag.lstrip("-").replace("-", "_") in err.replace("-", "_")


def test_lone_surrogate_in_a_jsonl_input_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "c.jsonl"
    rows = [json.dumps({"id": "a", "text": TEXTS[0]}), '{"id": "b", "text": "bad \\ud800 text"}']
    src.write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert main(["select", str(src), "--kappa", "0.5", "--out", str(tmp_path / "o.jsonl"), *HASH]) == 2
    err = capsys.readouterr().err
    assert "c.jsonl:2" in err and "surrogate" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl"]


def test_outputs_follow_the_umask_and_no_descriptor_leaks(proj: Path) -> None:
    old = os.umask(0o022)
    try:
        out = proj / "core"
        fds = Path("/proc/self/fd")
        argv = ["select", str(proj / "input"), "--kappa", "0.6", "--out", str(out), *HASH]
        assert main(argv) == 0
        n = len(list(fds.iterdir())) if fds.is_dir() else 0
        for _ in range(5):
            assert main(argv) == 0
        if fds.is_dir():
            assert len(list(fds.iterdir())) <= n
    finally:
        os.umask(old)
    assert (out.stat().st_mode & 0o777) == 0o755
    for p in out.rglob("*"):
        assert (p.stat().st_mode & 0o777) == (0o755 if p.is_dir() else 0o644), p
