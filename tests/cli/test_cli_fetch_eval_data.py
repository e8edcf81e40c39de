"""examples/fetch_eval_data.py turns KET-RAG's files (one passage a line, qa-pairs.json) into the project's JSONL
schema: ids are line numbers from 0 (empty lines skipped), one answer per question, MuSiQue's hop type from the id.
(Checked once against the sets behind docs/results.md: the corpora are equal record for record, and every
question's id, text and first answer.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_fetch_eval_data_converts_a_ket_rag_clone(tmp_path: Path) -> None:
    clone = tmp_path / "KET-RAG"
    (clone / "ragtest-musique" / "input").mkdir(parents=True)
    (clone / "ragtest-musique" / "qa-pairs").mkdir()
    (clone / "ragtest-musique" / "input" / "document.txt").write_text(
        "First passage.\nSecond passage, with \u00e9.\n\nThird passage.", encoding="utf-8"
    )
    qa = [{"id": "2hop__1_2", "answer": "Paris", "question": "Where?"}, {"id": "x9", "answer": "1", "question": "N?"}]
    (clone / "ragtest-musique" / "qa-pairs" / "qa-pairs.json").write_text(json.dumps(qa), encoding="utf-8")
    out = tmp_path / "data"
    cmd = [sys.executable, str(ROOT / "examples" / "fetch_eval_data.py"), "--out", str(out), "--from", str(clone)]
    done = subprocess.run([*cmd, "--sets", "musique"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    corpus = [json.loads(x) for x in (out / "musique" / "ketrag500_corpus.jsonl").read_text("utf-8").splitlines()]
    assert corpus == [
        {"id": "ketrag_musique:0", "title": None, "text": "First passage."},
        {"id": "ketrag_musique:1", "title": None, "text": "Second passage, with \u00e9."},
        {"id": "ketrag_musique:3", "title": None, "text": "Third passage."},  # the id is its line
    ]
    qs = [json.loads(x) for x in (out / "musique" / "ketrag500_questions.jsonl").read_text("utf-8").splitlines()]
    assert [(q["id"], q["answers"], q["type"], q["source"]) for q in qs] == [
        ("2hop__1_2", ["Paris"], "2hop", "KET-RAG ragtest-musique"),
        ("x9", ["1"], None, "KET-RAG ragtest-musique"),
    ]
    missing = subprocess.run([*cmd, "--sets", "2wiki"], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "ragtest-2wiki/input/document.txt not found" in missing.stderr
