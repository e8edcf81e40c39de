"""Bad input found by an outside test fails clearly (exit 2, naming the file / key / parameter), never with a
traceback: prompt templates are filled without ``str.format`` (no attribute access, no format widths), GraphML/GEXF
stay well-formed XML whatever the ids hold, a graph's ``g2cons_input.json`` is validated, ``min_df`` is checked."""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from g2cons_plugins import G2ConSConfig
from g2cons_plugins.cli import main
from g2cons_plugins.errors import InputError
from g2cons_plugins.hosts.pipelines.host_projects import parse_template

HASH = ["--embedder", "hash", "--quiet"]
TEXTS = [
    "Alice Moreau founded Acme Corp in Lisbon. Bob Tanaka joined Acme Corp in Paris.",
    "Acme Corp opened an office in Berlin. Carla Diaz runs the Berlin office of Acme Corp.",
    "Bob Tanaka studied in Paris. Paris is the capital of France.",
    "Carla Diaz was born in Madrid. Madrid is the capital of Spain.",
    "Lisbon is the capital of Portugal. Alice Moreau lives in Lisbon.",
    "Globex bought Initech in Berlin. Carla Diaz met Bob Tanaka in Berlin.",
]
SETTINGS = """\
input:
  type: text
chunking:
  size: 300
  overlap: 50
  encoding_model: cl100k_base
input_storage:
  base_dir: "input"
extract_graph:
  prompt: "prompts/extract_graph.txt"
"""


def _project(root: Path, prompt: str) -> Path:
    (root / "input").mkdir(parents=True)
    (root / "prompts").mkdir()
    for i, t in enumerate(TEXTS):
        (root / "input" / f"doc{i}.txt").write_text(t, encoding="utf-8")
    (root / "prompts" / "extract_graph.txt").write_text(prompt, encoding="utf-8")
    (root / "settings.yaml").write_text(SETTINGS, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("template", "needle"),
    [
        ("Text: {input_text.__class__.__init__.__globals__}", "{input_text.__class__.__init__.__globals__}"),
        ("Text: {input_text:>1500000000}", "{input_text:>1500000000}"),
        ("Text: {input_text!r}", "{input_text!r}"),
        ("Text: {entity_types[0]} {input_text}", "{entity_types[0]}"),
        ("Text: {input_text} {unknown}", "unknown placeholder '{unknown}'"),
        ("Text: {} {input_text}", "'{}'"),
        ("Text: {input_text", "cannot be filled"),
    ],
)
def test_prompt_template_is_filled_without_str_format(
    tmp_path: Path, template: str, needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    proj = _project(tmp_path / "proj", template)
    t0 = time.perf_counter()
    assert main(["select", "--root", str(proj), "--dry-run", *HASH]) == 2
    err = capsys.readouterr().err
    assert err.startswith("g2cons: error:") and "extract_graph.txt" in err and needle in err, err
    assert "Traceback" not in err and time.perf_counter() - t0 < 30  # no 1.5 GB string was built


def test_prompt_placeholders_are_filled_as_graphrag_fills_them() -> None:
    tpl = 'Types [{entity_types}] {{"a": 1}} <{tuple_delimiter}> Text: {input_text}; again {input_text} end'
    parts = parse_template(tpl, {"entity_types": "person,geo", "tuple_delimiter": "<|>"}, "input_text", "p.txt")
    for text in ("", "chunk {x} with {{braces}}"):
        assert text.join(parts) == tpl.format(entity_types="person,geo", tuple_delimiter="<|>", input_text=text)
    with pytest.raises(InputError, match=r"p\.txt: .*\{input_text\.x\}"):
        parse_template("{input_text.x}", {}, "input_text", "p.txt")


def _graph(tmp_path: Path, ids: list[str]) -> Path:
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, TEXTS, strict=False)))
    assert main(["build", str(src), "--graph", str(tmp_path / "g"), *HASH]) == 0
    return tmp_path / "g"


@pytest.mark.parametrize("fmt", ["graphml", "gexf"])
def test_export_xml_is_well_formed_whatever_the_ids_hold(tmp_path: Path, fmt: str) -> None:
    ids = ["a\x01b", "tab\there", "c\x1fd", "e\x0bf", "plain", "\x7fdel"]
    g = _graph(tmp_path, ids)
    out = tmp_path / f"g.{fmt}"
    assert main(["export", str(g), "--format", fmt, "--out", str(out), "--chunks", "--kappa", "0.5"]) == 0
    root = ET.parse(out).getroot()  # well-formed XML (raised ParseError before the fix)
    text = out.read_text(encoding="utf-8")
    assert "chunk:a\\x01b" in text and "chunk:c\\x1fd" in text and "chunk:plain" in text
    assert root is not None
    # JSON keeps every id as it is
    assert main(["export", str(g), "--format", "json", "--out", str(tmp_path / "g.json"), "--chunks"]) == 0
    nodes = {n["id"] for n in json.loads((tmp_path / "g.json").read_text(encoding="utf-8"))["nodes"]}
    assert "chunk:a\x01b" in nodes


@pytest.mark.parametrize(
    ("sidecar", "needle"),
    [
        ({"chunk_tokens": "abc"}, "chunk_tokens must be an integer >= 0, got 'abc'"),
        ({"chunk_overlap": -5}, "chunk_overlap must be an integer >= 0, got -5"),
        ({"chunk_tokens": True}, "chunk_tokens must be an integer"),
        ({"text_column": 7}, "text_column must be a string, got 7"),
        ([1, 2], "expected a JSON object"),
        ("{broken", "cannot read"),
    ],
)
def test_bad_sidecar_fails_naming_the_key(
    tmp_path: Path, sidecar: object, needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    g = _graph(tmp_path, [f"d{i}" for i in range(len(TEXTS))])
    side = g / "g2cons_input.json"
    side.write_text(sidecar if isinstance(sidecar, str) else json.dumps(sidecar), encoding="utf-8")
    new = tmp_path / "new.txt"
    new.write_text("Dana Li founded Umbrella in Oslo. Oslo is the capital of Norway.", encoding="utf-8")
    capsys.readouterr()
    assert main(["add", str(g), str(new), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("g2cons: error:") and "g2cons_input.json" in err and needle in err, err


@pytest.mark.parametrize("bad", [-1, 0])
def test_min_df_below_one_is_refused_naming_it(bad: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InputError, match="min_df must be >= 1"):
        G2ConSConfig(min_df=bad)
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(TEXTS)), encoding="utf-8")
    assert main(["build", str(src), "--graph", str(tmp_path / "g"), "--set", f"min_df={bad}", *HASH]) == 2
    assert "min_df must be >= 1" in capsys.readouterr().err
    assert not (tmp_path / "g").exists()
