"""``--host replay:WORKING_DIR`` finds a LightRAG graph written into ``WORKING_DIR/<workspace>/`` (LightRAG 1.4+
with a workspace set), refuses to guess between several workspaces, and still reads a working dir without one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_replay_readers import _lightrag

from g2cons_plugins.cli import main
from g2cons_plugins.errors import InputError
from g2cons_plugins.hosts import read_extraction


def test_replay_reads_the_one_workspace_subfolder(tmp_path: Path) -> None:
    _lightrag(tmp_path / "rag_storage" / "my_corpus")
    ex = read_extraction(tmp_path / "rag_storage")
    assert ex.format == "lightrag" and [r.source_id for r in ex.records] == ["chunk-1", "chunk-2", "chunk-3"]
    assert ex.source == str(tmp_path / "rag_storage" / "my_corpus")  # the folder read, named in its label
    assert read_extraction(tmp_path / "rag_storage", format="lightrag").records == ex.records
    assert read_extraction(_lightrag(tmp_path / "plain")).format == "lightrag"  # no workspace: as before


def test_replay_refuses_to_guess_between_workspaces(tmp_path: Path) -> None:
    _lightrag(tmp_path / "wd" / "alpha")
    _lightrag(tmp_path / "wd" / "beta")
    with pytest.raises(InputError, match=r"2 LightRAG workspaces \(alpha, beta\); give the one to read"):
        read_extraction(tmp_path / "wd")


def test_cli_fuse_with_a_lightrag_workspace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    texts = {
        "a.txt": "Marie Curie was born in Warsaw, the capital of Poland.",
        "b.txt": "Pierre Curie married Marie Curie in Paris in 1895.",
        "c.txt": "The Sorbonne is a university in Paris founded in the 13th century.",
    }
    for name, text in texts.items():
        (docs / name).write_text(text, encoding="utf-8")
    graph = tmp_path / "graph"
    assert main(["select", str(docs), "--out", str(tmp_path / "core"), "--graph", str(graph), "--embedder", "hash",
                 "--quiet"]) == 0
    _lightrag(tmp_path / "rag_storage" / "space")
    capsys.readouterr()
    rc = main(["fuse", str(graph), "Where was Marie Curie born?", "--host", f"replay:{tmp_path / 'rag_storage'}",
               "--json"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    items = json.loads(captured.out)
    assert any(i.get("source") in ("host", "both") for i in items)


def test_lightrag_example_matches_the_cli_and_cleans_up(tmp_path: Path) -> None:
    """examples/lightrag_select.py selects as ``g2cons select --host lightrag`` does, LightRAG makes exactly the
    calls the report predicts (2 per chunk with its default gleaning), --n limits --input, and the work folder is
    removed."""
    import os
    import re
    import subprocess
    import sys

    pytest.importorskip("lightrag")
    root = Path(__file__).resolve().parents[2]
    src = tmp_path / "docs"
    src.mkdir()
    rows = [json.loads(x) for x in (root / "examples/data/musique_excerpt_corpus.jsonl").read_text().splitlines()]
    for i, r in enumerate(rows[:14]):
        (src / f"d{i:02d}.txt").write_text(f"{r['title']}\n{r['text']}", encoding="utf-8")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, str(root / "examples" / "lightrag_select.py"), "--input", str(src), "--n", "10"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    kept = re.search(r"kept (\d+)/(\d+) chunks at kappa 0.8 \(2 calls per chunk", done.stdout)
    assert kept and int(kept.group(2)) == 10  # --n honoured with --input (one chunk per short file)
    calls = re.search(r"all input (\d+) \(report: (\d+)\), core (\d+) \(report: (\d+)\)", done.stdout)
    assert calls and calls.group(1) == calls.group(2) and calls.group(3) == calls.group(4)
    assert int(calls.group(3)) == 2 * int(kept.group(1))
    assert list(tmp.iterdir()) == []  # the work folder is gone
