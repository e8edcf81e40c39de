"""A ``select --root`` killed while it swaps ``PROJECT/g2cons`` leaves nothing behind for ever: the next run puts
back the previous output or removes the copies the killed one left (``.g2cons.old-*``, ``.g2cons.tmp-*``), says
so in one line each, and touches nothing it cannot recognise as its own. A swap the OS refuses leaves no empty
folder aside."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from g2cons_plugins.cli import main
from g2cons_plugins.storage import outputs

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "data" / "musique_excerpt_corpus.jsonl"
HASH = ["--embedder", "hash", "--quiet"]
SETTINGS = """\
encoding_model: cl100k_base
input:
  type: file
  file_type: text
  base_dir: "input"
  file_encoding: utf-8
  file_pattern: ".*\\\\.txt$"
chunks:
  size: 200
  overlap: 20
entity_extraction:
  prompt: "prompts/extract_graph.txt"
  max_gleanings: 0
"""


def _project(root: Path) -> Path:
    (root / "input").mkdir(parents=True)
    (root / "prompts").mkdir()
    rows = [json.loads(x) for x in CORPUS.read_text(encoding="utf-8").splitlines() if x.strip()][:10]
    for i, r in enumerate(rows):
        (root / "input" / f"d{i}.txt").write_text(r["text"], encoding="utf-8")
    (root / "prompts" / "extract_graph.txt").write_text("Types {entity_types}. Text: {input_text}", encoding="utf-8")
    (root / "settings.yaml").write_text(SETTINGS, encoding="utf-8")
    return root


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _hidden(proj: Path) -> list[str]:
    return sorted(p.name for p in proj.iterdir() if p.name.startswith(".g2cons"))


def _select(proj: Path, kappa: str) -> list[str]:
    return ["select", "--root", str(proj), "--kappa", kappa, *HASH]


KILLED = textwrap.dedent(
    """
    import os, shutil, signal, sys
    from g2cons_plugins.cli import main
    where = sys.argv[1]
    real_replace, real_rmtree = os.replace, shutil.rmtree
    def replace(a, b):
        if where == "between" and ".g2cons.tmp-" in str(a) and str(b).endswith("g2cons"):
            os.kill(os.getpid(), signal.SIGKILL)  # the old output is aside, the new one not yet in
        if where == "build" and ".g2cons.tmp-" in str(b) and str(b).endswith("selection_report.json"):
            os.kill(os.getpid(), signal.SIGKILL)  # half-way through building the new folder aside
        return real_replace(a, b)
    def rmtree(path, *a, **k):
        if where == "cleanup" and ".g2cons.old-" in str(path):
            os.kill(os.getpid(), signal.SIGKILL)  # the new output is in, the old one not yet removed
        return real_rmtree(path, *a, **k)
    os.replace, shutil.rmtree = replace, rmtree
    sys.exit(main(sys.argv[2:]))
    """
)


def _killed_run(proj: Path, where: str) -> None:
    argv = [sys.executable, "-c", KILLED, where, *_select(proj, "0.4")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=os.environ.copy())
    assert done.returncode == -signal.SIGKILL, done.stderr


@pytest.mark.parametrize("where", ["between", "build", "cleanup"])
def test_the_next_run_puts_back_what_a_killed_select_left(tmp_path: Path, where: str) -> None:
    proj = _project(tmp_path / "proj")
    assert main(_select(proj, "0.6")) == 0
    before = _tree(proj / "g2cons")
    _killed_run(proj, where)
    left = _hidden(proj)
    assert left, "the kill left copies beside PROJECT/g2cons (what the next run must handle)"
    if where == "between":
        assert not (proj / "g2cons").exists() and any(".old-" in n for n in left)

    with pytest.warns(UserWarning, match="interrupted g2cons run"):
        said = outputs.recover_interrupted(proj / "g2cons")  # what the next run does first
    assert _hidden(proj) == [] and said
    assert all(any(n in line for line in said) for n in left)  # each copy named, in one line
    if where == "cleanup":  # the killed run had put its new output in: it stays
        assert json.loads((proj / "g2cons" / "selection_report.json").read_text(encoding="utf-8"))["kappa"] == 0.4
    else:  # the previous output, as it was
        assert _tree(proj / "g2cons") == before

    # and the next run itself works, leaving nothing hidden
    _killed_run(proj, where)
    with pytest.warns(UserWarning, match="interrupted g2cons run"):
        assert main(_select(proj, "0.5")) == 0
    assert _hidden(proj) == []
    assert json.loads((proj / "g2cons" / "selection_report.json").read_text(encoding="utf-8"))["kappa"] == 0.5


def test_the_next_run_says_so_in_one_line(tmp_path: Path) -> None:
    proj = _project(tmp_path / "proj")
    assert main(_select(proj, "0.6")) == 0
    _killed_run(proj, "between")
    done = subprocess.run(
        [sys.executable, "-m", "g2cons_plugins.cli", *_select(proj, "0.5")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if "interrupted g2cons run" in line]
    assert notes and all(line.startswith("g2cons: warning: ") for line in notes)
    assert "restored the previous output" in done.stderr and "UserWarning" not in done.stderr
    assert _hidden(proj) == []


def test_a_refused_swap_leaves_nothing_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    proj = _project(tmp_path / "proj")
    assert main(_select(proj, "0.6")) == 0
    before = _tree(proj / "g2cons")
    real = os.replace

    def busy(a: str | Path, b: str | Path) -> None:
        if Path(a) == proj / "g2cons":
            raise OSError(errno.EBUSY, "Device or resource busy", str(a))
        real(a, b)

    monkeypatch.setattr(outputs.os, "replace", busy)
    assert main(_select(proj, "0.4")) == 2
    assert "busy" in capsys.readouterr().err
    assert _hidden(proj) == [] and _tree(proj / "g2cons") == before


def test_what_g2cons_cannot_recognise_is_left_alone(tmp_path: Path) -> None:
    proj = _project(tmp_path / "proj")
    assert main(_select(proj, "0.6")) == 0
    mine = proj / ".g2cons.old-mine"  # named like ours, but the user's
    mine.mkdir()
    (mine / "notes.txt").write_text("mine", encoding="utf-8")
    running = outputs.staging_dir(proj / "g2cons")  # a run still going on (this process)
    with pytest.warns(UserWarning, match="left where it is"):
        said = outputs.recover_interrupted(proj / "g2cons")
    assert (mine / "notes.txt").read_text(encoding="utf-8") == "mine" and running.is_dir()
    assert len(said) == 1 and str(mine) in said[0]
