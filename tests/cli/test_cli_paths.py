"""Path safety of the command line (issue 10, class 1-2, 7, 9, 11): outputs never equal or contain an input or
each other; nothing g2cons did not write is replaced; writes are atomic, follow the umask and leak no file
descriptors; lone surrogates and bad numbers are refused naming the item or flag, before any work."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from g2cons_plugins.cli import main
from g2cons_plugins.hosts.pipelines.corpus_io import chunk_documents, read_corpus, write_selection
from g2cons_plugins.storage.outputs import MARKER

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "data" / "musique_excerpt_corpus.jsonl"
QUESTIONS = ROOT / "examples" / "data" / "musique_excerpt_questions.jsonl"
HASH = ["--embedder", "hash", "--quiet"]


def _rows(n: int) -> list[dict[str, str]]:
    rows = [json.loads(x) for x in CORPUS.read_text(encoding="utf-8").splitlines() if x.strip()]
    return rows[:n]


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    """A GraphRAG-like project: proj/input/*.txt, proj/docs.csv, and a graph built by the CLI at proj/g."""
    inp = tmp_path / "proj" / "input"
    inp.mkdir(parents=True)
    for i, r in enumerate(_rows(12)):
        (inp / f"p{i:02d}.txt").write_text(f"{r['title']}\n{r['text']}\n", encoding="utf-8")
    lines = ["id,text"] + [f"d{i},\"{r['text'].replace(chr(34), '')}\"" for i, r in enumerate(_rows(12))]
    (tmp_path / "proj" / "docs.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["build", str(inp), "--graph", str(tmp_path / "proj" / "g"), *HASH]) == 0
    return tmp_path / "proj"


EVAL = ["eval", "--corpus", "{P}/c.jsonl", "--questions", "{Q}"]
# (argv with {P} = the project folder, the two roles the error must name)
CLASHES = [
    (["select", "{P}/input", "--out", "{P}"], "--out", "INPUT"),  # the data-loss case of issue 10
    (["select", "{P}/input", "--out", "{P}/input"], "--out", "INPUT"),
    (["select", "{P}/input", "--out", "{P}/input/core"], "--out", "INPUT"),
    (["select", "{P}/input", "--out", "{P}/core", "--graph", "{P}/input/g"], "--graph", "INPUT"),
    (["select", "{P}/input", "--out", "{P}/core", "--graph", "{P}/core"], "--out", "--graph"),
    (["select", "{P}/input", "--out", "{P}/core", "--graph", "{P}/core/g"], "--graph", "--out"),
    (["select", "{P}/input", "--out", "{P}/core", "--report", "{P}/input/p00.txt"], "--report", "INPUT"),
    (["select", "{P}/input", "--out", "{P}/core", "--report", "{P}/core.g2cons/manifest.json"], "--report", "--graph"),
    (["select", "{P}/input", "--out", "{P}/core", "--graph", "{P}", "--report", "{P}/r.json"], "--graph", "INPUT"),
    (["select", "{P}/docs.csv", "--out", "{P}/docs.csv"], "--out", "INPUT"),
    (["select", "{P}/docs.csv", "--out", "{P}/core.csv", "--report", "{P}/docs.csv"], "--report", "INPUT"),
    (["select", "{P}/docs.csv", "--out", "{P}/core.csv", "--report", "{P}/core.csv"], "--out", "--report"),
    (["select", "{P}/docs.csv", "--out", "{P}/core.csv", "--graph", "{P}/docs.csv"], "--graph", "INPUT"),
    (["select", "{P}/g", "--out", "{P}/g/manifest.json"], "--out", "INPUT"),
    (["select", "{P}/g", "--out", "{P}/g"], "--out", "INPUT"),
    (["build", "{P}/input", "--graph", "{P}/input"], "--graph", "INPUT"),
    (["build", "{P}/input", "--graph", "{P}/input/g"], "--graph", "INPUT"),
    (["build", "{P}/input", "--graph", "{P}"], "--graph", "INPUT"),
    (["build", "{P}/docs.csv", "--graph", "{P}/docs.csv"], "--graph", "INPUT"),
    (["add", "{P}/g", "{P}/g/chunks.jsonl"], "FILES", "DIR"),
    (["add", "{P}/g", "{P}"], "FILES", "DIR"),
    ([*EVAL, "--out", "{P}/c.jsonl"], "--out", "--corpus"),
    ([*EVAL, "--report", "{P}"], "--report", "--corpus"),
    ([*EVAL, "--out", "{P}/r/x.json", "--report", "{P}/r"], "--out", "--report"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "role_a", "role_b"), CLASHES, ids=[" ".join(c[0][:5]) for c in CLASHES])
def test_path_clash_matrix_refused_before_anything_is_written(
    proj: Path, argv: list[str], role_a: str, role_b: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (proj / "c.jsonl").write_text(CORPUS.read_text(encoding="utf-8"), encoding="utf-8")
    (proj / "selection_report.json").write_text("{}", encoding="utf-8")  # an earlier report at the project root
    args = [a.replace("{P}", str(proj)).replace("{Q}", str(QUESTIONS)) for a in argv]
    if args[0] in ("select", "build", "eval"):
        args += HASH
    before = _snapshot(proj.parent)
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("g2cons: error:") and role_a in err and role_b in err, err
    assert _snapshot(proj.parent) == before  # nothing written, nothing deleted


def test_data_loss_regression_select_into_the_projects_folder(proj: Path) -> None:
    """Issue 10 class 1: with proj/selection_report.json from an earlier run, ``select proj/input --out proj``
    deleted proj/input. Now refused; and a folder merely holding a selection_report.json is not ours to replace."""
    (proj / "selection_report.json").write_text('{"n_kept": 3}', encoding="utf-8")
    src = _snapshot(proj / "input")
    assert main(["select", str(proj / "input"), "--out", str(proj), *HASH]) == 2
    assert _snapshot(proj / "input") == src
    other = proj / "other"
    other.mkdir()
    (other / "selection_report.json").write_text("{}", encoding="utf-8")
    (other / "notes.txt").write_text("mine", encoding="utf-8")
    assert main(["select", str(proj / "input"), "--out", str(other), *HASH]) == 2
    assert (other / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert _snapshot(proj / "input") == src


def test_marker_allows_replacing_only_g2cons_own_output(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = proj / "core"
    sel = ["select", str(proj / "input"), "--out", str(out), *HASH]
    assert main([*sel, "--kappa", "0.8"]) == 0
    marker = json.loads((out / MARKER).read_text(encoding="utf-8"))
    assert set(marker["files"]) == {p.name for p in out.iterdir()} - {MARKER}
    assert main([*sel, "--kappa", "0.3"]) == 0  # an earlier output of select, unchanged: replaced
    rep = json.loads(out.with_name(f"{out.name}.selection_report.json").read_text(encoding="utf-8"))
    assert len(list(out.glob("*.txt"))) == rep["n_kept"] and rep["kappa"] == 0.3
    # a file the user added, or a file of ours the user changed, makes the folder not ours to replace
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    capsys.readouterr()
    assert main(sel) == 2
    assert "notes.txt" in capsys.readouterr().err and (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    (out / "notes.txt").unlink()
    kept = sorted(out.glob("*.txt"))[0]
    kept.write_text("edited by hand", encoding="utf-8")
    assert main(sel) == 2
    assert kept.name in capsys.readouterr().err and kept.read_text(encoding="utf-8") == "edited by hand"
    # file outputs: no marker beside them; replaced when the stamped report beside them lists them unchanged
    csv_sel = ["select", str(proj / "docs.csv"), "--out", str(proj / "core.csv"), *HASH]
    assert main(csv_sel) == 0 and main(csv_sel) == 0
    assert not (proj / MARKER).exists()
    (proj / "core.csv").write_text("id,text\nx,edited\n", encoding="utf-8")
    capsys.readouterr()
    assert main(csv_sel) == 2
    assert "core.csv" in capsys.readouterr().err and "edited" in (proj / "core.csv").read_text(encoding="utf-8")
    # a report path naming a file g2cons did not write
    (proj / "mine.json").write_text('{"keep": 1}', encoding="utf-8")
    args = ["select", str(proj / "docs.csv"), "--out", str(proj / "c2.csv"), "--report", str(proj / "mine.json")]
    assert main([*args, *HASH]) == 2
    assert (proj / "mine.json").read_text(encoding="utf-8") == '{"keep": 1}' and not (proj / "c2.csv").exists()


def test_graph_not_written_by_the_cli_is_not_replaced(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from g2cons_plugins import G2ConSIndex

    api = proj / "api_graph"
    G2ConSIndex.load(proj / "g").save(api)  # saved with the Python API: no CLI sidecar
    before = _snapshot(api)
    assert main(["build", str(proj / "input"), "--graph", str(api), *HASH]) == 2
    assert "--graph" in capsys.readouterr().err and _snapshot(api) == before
    assert main(["build", str(proj / "input"), "--graph", str(proj / "g"), *HASH]) == 0  # the CLI's own graph


def test_write_selection_leaks_no_file_descriptors(tmp_path: Path) -> None:
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        pytest.skip("needs /proc")
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"d{i}", "text": r["text"]}) + "\n" for i, r in enumerate(_rows(5))))
    corpus = read_corpus(src)
    chunks = chunk_documents(corpus.documents)
    write_selection(corpus, chunks, [c.id for c in chunks[:3]], tmp_path / "warm.jsonl")
    n0 = len(list(fds.iterdir()))
    for i in range(25):
        write_selection(corpus, chunks, [c.id for c in chunks[:3]], tmp_path / f"o{i}.jsonl")
    assert len(list(fds.iterdir())) == n0


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_written_files_follow_the_umask(tmp_path: Path, mask: int) -> None:
    src = tmp_path / "in"
    src.mkdir()
    for i, r in enumerate(_rows(4)):
        (src / f"p{i}.txt").write_text(r["text"], encoding="utf-8")
    old = os.umask(mask)
    try:
        assert main(["select", str(src), "--out", str(tmp_path / "core"), "--kappa", "1", *HASH]) == 0
        assert main(["select", str(tmp_path / "core.g2cons"), "--out", str(tmp_path / "r.json"), "--kappa", "1"]) == 0
    finally:
        os.umask(old)
    core = tmp_path / "core"
    assert stat.S_IMODE(core.stat().st_mode) == 0o777 & ~mask
    for p in [*core.iterdir(), tmp_path / "r.json"]:
        assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~mask, p
    assert not (tmp_path / MARKER).exists()  # no marker in the user's folder for single files


def test_lone_surrogate_refused_naming_the_item_before_any_work(
    proj: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "fine text"}\n{"id": "b", "text": "broken \\ud800 text"}\n', encoding="utf-8")
    assert main(["select", str(bad), "--out", str(tmp_path / "core.jsonl"), *HASH]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl:2" in err and "surrogate" in err and not (tmp_path / "core.jsonl").exists()
    assert not (tmp_path / "core.jsonl.g2cons").exists()
    graph = _snapshot(proj / "g")
    assert main(["add", str(proj / "g"), str(bad)]) == 2  # add: refused before embedding or saving
    assert "bad.jsonl:2" in capsys.readouterr().err and _snapshot(proj / "g") == graph
    badid = tmp_path / "badid.json"
    badid.write_text('[{"id": "x\\udc80", "text": "ok"}]', encoding="utf-8")
    assert main(["select", str(badid), "--dry-run", *HASH]) == 2
    assert "badid.json[0]" in capsys.readouterr().err
    host = tmp_path / "host.json"
    host.write_text('[{"text": "fine"}, {"text": "bad \\ud800"}]', encoding="utf-8")
    assert main(["fuse", str(proj / "g"), "question", "--host", str(host)]) == 2
    assert "item #1" in capsys.readouterr().err
    assert main(["query", str(proj / "g"), "bad \ud800 question"]) == 2
    assert "QUESTION" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["select", "X", "--dry-run", "--price-per-mtok", "-1"], "--price-per-mtok"),
        (["select", "X", "--dry-run", "--price-per-mtok", "nan"], "--price-per-mtok"),
        (["select", "X", "--dry-run", "--prompt-tokens-per-call", "-500"], "--prompt-tokens-per-call"),
        (["select", "X", "--dry-run", "--prompt-tokens-per-call", "1.5"], "--prompt-tokens-per-call"),
        (["select", "X", "--dry-run", "--kappa", "1.5"], "--kappa"),
        (["select", "X", "--dry-run", "--kappa", "abc"], "--kappa"),
        (["select", "X", "--dry-run", "--kappa", "inf"], "--kappa"),
        (["select", "X", "--dry-run", "--chunk-tokens", "-3"], "--chunk-tokens"),
        (["fuse", "G", "q", "--host", "h.json", "--lambda", "1.2"], "--lambda"),
        (["fuse", "G", "q", "--host", "h.json", "--budget", "0"], "--budget"),
        (["query", "G", "q", "--budget", "-5"], "--budget"),
        (["query", "G", "q", "--budget", "abc"], "--budget"),
        (["eval", "--corpus", "c", "--questions", "q", "--price-in", "-0.1"], "--price-in"),
        (["eval", "--corpus", "c", "--questions", "q", "--lambdas", "0.2,7"], "--lambdas"),
        (["eval", "--corpus", "c", "--questions", "q", "--host-kappa", "-1"], "--host-kappa"),
    ],
)
def test_bad_numbers_name_the_flag(argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert f"argument {flag}" in capsys.readouterr().err
