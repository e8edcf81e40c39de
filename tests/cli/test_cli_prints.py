"""What the command line prints: ``g2cons query`` lists scores that never increase (the rank order, with the
concept path's own score beside it where it differs), ``g2cons fuse`` names a text-only host item as such (not
"None", not "score 0.000"), and a replayed extraction's counts say they are counted per chunk when the distinct
entities and triples are fewer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from g2cons_plugins.cli import main
from g2cons_plugins.hosts import Extraction, ExtractionRecord

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "data" / "musique_excerpt_corpus.jsonl"
Q = "Who was the first president of the association which published Journal of Psychotherapy Integration?"


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("g")
    assert main(["build", str(CORPUS), "--graph", str(tmp / "graph"), "--embedder", "hash", "--quiet"]) == 0
    return tmp / "graph"


def test_query_scores_never_increase(graph: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["query", str(graph), Q, "--budget", "3000"]) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if re.match(r"\s*\d+\. \[", x)]
    scores = [float(re.search(r"score (-?[\d.]+)", x).group(1)) for x in lines]
    assert len(scores) > 3 and scores == sorted(scores, reverse=True)
    assert main(["query", str(graph), Q, "--budget", "3000", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    ranked = [r["rank_score"] for r in rows]
    assert ranked == sorted(ranked, reverse=True) and [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert any(r["score"] != r["rank_score"] for r in rows)  # the core's order is not by score: both are shown


def test_fuse_names_a_text_only_host_item(graph: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    host = tmp_path / "host.json"
    host.write_text(json.dumps([{"text": "The Lantern Guild of Ostravel was founded by Mira Quell in 1820."}]))
    for rule in ("novel", "share"):  # the default (fused rank scores) and share fusion (the host's own scores)
        args = ["fuse", str(graph), "Who founded the Lantern Guild?", "--host", str(host), "--budget", "3000"]
        assert main([*args, "--fusion", rule]) == 0
        out = capsys.readouterr().out
        host_lines = [x for x in out.splitlines() if x.startswith("[host]")]
        assert host_lines and all("None" not in x and "score 0.000" not in x for x in host_lines)
        assert "(host text, no chunk of the graph)" in host_lines[0]
        if rule == "share":
            assert "no score given" in host_lines[0]


def test_replay_label_says_counts_are_per_chunk() -> None:
    recs = (
        ExtractionRecord("u1", ("Marie Curie", "Warsaw"), (("Marie Curie", "born in", "Warsaw"),)),
        ExtractionRecord("u2", ("Marie Curie",), (("Marie Curie", "born in", "Warsaw"),)),
    )
    label = Extraction(recs, "graphrag", "out/", None).label()
    assert "2 chunks, 3 entities, 2 triples (counted per chunk; 2 distinct entities, 1 distinct triples)" in label
    one = Extraction(recs[:1], "graphrag", "out/", None).label()
    assert "counted per chunk" not in one
