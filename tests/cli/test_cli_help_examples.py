"""Every example in every subcommand's ``--help`` runs as printed (exit 0), in a folder holding a tiny MS GraphRAG
project ``ragtest/`` (settings.yaml as ``graphrag init`` writes it, o200k_base included) and the files the examples
name. The examples run in the order a user follows: ``select --root ragtest`` first (it writes
``ragtest/g2cons/graph``, the DIR of the later examples), then the rest."""

from __future__ import annotations

import argparse
import importlib.util
import json
import shlex
from pathlib import Path

import pytest

from g2cons_plugins.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "data" / "musique_excerpt_corpus.jsonl"
QUESTIONS = ROOT / "examples" / "data" / "musique_excerpt_questions.jsonl"
ORDER = ["select", "build", "query", "fuse", "add", "remove", "export", "show", "eval"]
SETTINGS = """\
completion_models:
  default_completion_model:
    model_provider: openai
    model: gpt-4.1
    api_key: ${GRAPHRAG_API_KEY}
input:
  type: text
chunking:
  type: tokens
  size: 300
  overlap: 50
  encoding_model: o200k_base
input_storage:
  type: file
  base_dir: "input"
output_storage:
  type: file
  base_dir: "output"
extract_graph:
  completion_model_id: default_completion_model
  prompt: "prompts/extract_graph.txt"
  entity_types: [organization,person,geo,event]
  max_gleanings: 1
"""
PROMPT = "-Goal-\nFind entities of types [{entity_types}].\n-Real Data-\nText: {input_text}\nOutput:"


def examples() -> dict[str, list[list[str]]]:
    """Subcommand -> its example command lines (argv after ``g2cons``), as ``--help`` prints them."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out: dict[str, list[list[str]]] = {}
    for name, p in sub.choices.items():
        assert p.epilog is None or p.epilog in p.format_help()  # the examples are printed as written
        lines = [ln.strip() for ln in (p.epilog or "").splitlines() if ln.startswith("  g2cons ")]
        out[name] = [shlex.split(ln, comments=True)[1:] for ln in lines]
    return out


def _write_project(home: Path) -> None:
    rows = [json.loads(x) for x in CORPUS.read_text(encoding="utf-8").splitlines() if x.strip()]
    proj = home / "ragtest"
    (proj / "input").mkdir(parents=True)
    (proj / "prompts").mkdir()
    for i, r in enumerate(rows[:30]):
        (proj / "input" / f"doc{i:02d}.txt").write_text(f"{r['title']}\n{r['text']}\n", encoding="utf-8")
    (proj / "input" / "big.txt").write_text("\n\n".join(r["text"] for r in rows[30:60]), encoding="utf-8")
    (proj / "prompts" / "extract_graph.txt").write_text(PROMPT, encoding="utf-8")
    (proj / "settings.yaml").write_text(SETTINGS, encoding="utf-8")
    # the files the other examples name
    lines = ["id,title,body"] + [
        f'r{i},{r["title"].replace(",", " ")},"{r["text"].replace(chr(34), "")}"' for i, r in enumerate(rows[60:90])
    ]
    (home / "docs.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (home / "corpus.jsonl").write_text(CORPUS.read_text(encoding="utf-8"), encoding="utf-8")
    (home / "questions.jsonl").write_text(QUESTIONS.read_text(encoding="utf-8"), encoding="utf-8")
    (home / "big" / "input").mkdir(parents=True)
    for i, r in enumerate(rows[90:110]):
        (home / "big" / "input" / f"b{i:02d}.txt").write_text(r["text"], encoding="utf-8")
    (home / "new" / "more_docs").mkdir(parents=True)
    (home / "new" / "report.txt").write_text(
        "The Lantern Guild was founded in Ostravel by Mira Quell.", encoding="utf-8"
    )
    for i, r in enumerate(rows[110:115]):
        (home / "new" / "more_docs" / f"m{i}.txt").write_text(r["text"], encoding="utf-8")
    host = [{"chunk_id": "doc01.txt", "score": 0.9}, {"text": rows[3]["text"]}]
    (home / "host.json").write_text(json.dumps(host), encoding="utf-8")


def test_every_subcommand_has_examples() -> None:
    ex = examples()
    assert sorted(ex) == sorted(ORDER)
    assert all(ex[name] for name in ORDER), {n: len(v) for n, v in ex.items()}
    graph_dirs = {argv[1] for name in ("query", "fuse", "add", "remove", "export", "show") for argv in ex[name]}
    assert graph_dirs == {"ragtest/g2cons/graph"}  # where `select --root ragtest` writes the graph


def test_help_examples_run_as_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "no-cache"))  # offline: bundled encodings only
    home = tmp_path / "home"
    home.mkdir()
    _write_project(home)
    monkeypatch.chdir(home)
    ex = examples()
    assert ex["select"][0][:2] == ["select", "--root"]  # the first thing a user runs
    for name in ORDER:
        for argv in ex[name]:
            if "--engine" in argv and importlib.util.find_spec("ray") is None:
                continue  # the Ray engine example needs the [ray] extra
            if name == "show" and importlib.util.find_spec("matplotlib") is None and argv[-1].endswith(".png"):
                continue
            capsys.readouterr()
            rc = main(argv)
            assert rc == 0, (argv, capsys.readouterr().err[-2000:])
    assert (home / "ragtest" / "g2cons" / "graph" / "CURRENT").is_file()
    assert (home / "concepts.graphml").is_file() and (home / "view.html").is_file()
