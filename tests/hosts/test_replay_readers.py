"""Readers of precomputed LLM extractions (replay hosts) and their alignment to our chunk ids.

Fixtures of each format are written here into tmp_path: JSONL, HippoRAG 1 / 2 OpenIE JSON, MS GraphRAG output
(current ``output/*.parquet`` with a 3.x ``settings.yaml``; 0.x ``create_final_*.parquet`` with ``name`` and ``llm``),
and a LightRAG working dir laid out as LightRAG 1.5 writes it (``kv_store_text_chunks.json``, GraphML with
``d0..`` keys, ``kv_store_entity_chunks.json``). The last test reads the first 200 lines of the real shared JSONL.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from g2cons_plugins.errors import InputError
from g2cons_plugins.hosts import Extraction, ExtractionRecord, align, read_extraction
from g2cons_plugins.hosts import replay as replay_mod

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"

OURS = {
    "c1": "Marie Curie was born in Warsaw, the capital of Poland.",
    "c2": "Pierre Curie married Marie Curie in Paris in 1895.",
    "c3": "The Sorbonne is a university in Paris founded in the 13th century.",
    "c4": "Warsaw lies on the Vistula river, the longest river of Poland.",
}


def _jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------------ jsonl
def test_jsonl_records_malformed_counted_and_label(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "kg.jsonl",
        [
            {
                "id": "c1",
                "entities": ["Marie Curie", "Warsaw", "Marie Curie", 7, ""],
                "triples": [["Marie Curie", "born in", "Warsaw"], ["a", "b"], ["a", "b", "c", "d"], "x", ["a", 1, "c"]],
                "model": "gpt-4o-mini",
            },
            "",
            {"id": 2, "entities": [], "triples": [["Pierre Curie", "married", "Marie Curie"]], "text": "T2"},
        ],
    )
    ex = read_extraction(path)
    assert ex.format == "jsonl" and ex.model == "gpt-4o-mini" and ex.source == str(path)
    assert [r.source_id for r in ex.records] == ["c1", "2"]
    assert ex.records[0].entities == ("Marie Curie", "Warsaw")
    assert ex.records[0].triples == (("Marie Curie", "born in", "Warsaw"),)
    assert ex.records[0].text is None and ex.records[1].text == "T2"
    assert ex.records[1].triples == (("Pierre Curie", "married", "Marie Curie"),)
    assert dict(ex.issues) == {
        "duplicate entity": 1,
        "entity not a string": 1,
        "empty entity": 1,
        "triple not of length 3": 2,
        "triple not a list": 1,
        "triple element not a string": 1,
    }
    label = ex.label()
    assert "JSONL" in label and "model gpt-4o-mini" in label and str(path) in label
    assert "2 chunks, 2 entities, 2 triples" in label and "not re-run" in label
    assert read_extraction(path, model="other").model == "other"  # the caller's name wins


def test_jsonl_model_unknown_in_label(tmp_path: Path) -> None:
    ex = read_extraction(_jsonl(tmp_path / "kg.jsonl", [{"id": "c1", "entities": ["A"], "triples": []}]))
    assert ex.model is None and "model unknown" in ex.label()


def test_jsonl_bad_line_names_file_and_line(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "kg.jsonl", [{"id": "a", "entities": [], "triples": []}, "", '{"id": "b", "entities": ['])
    with pytest.raises(InputError, match=rf"{path.name}:3: not valid JSON"):
        read_extraction(path)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"id": "a", "entities": [], "triples": []}, {"id": "a", "entities": [], "triples": []}], r":2: duplicate id"),
        ([{"entities": [], "triples": []}], r":1: \"id\" must be"),
        ([{"id": "a", "entities": "Warsaw", "triples": []}], r":1: entities must be a list"),
        ([["a", [], []]], r":1: expected a JSON object"),
    ],
)
def test_jsonl_bad_records_name_the_line(tmp_path: Path, rows: list[Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        read_extraction(_jsonl(tmp_path / "kg.jsonl", rows))


# ------------------------------------------------------------------------------------------------ HippoRAG
def _openie(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"docs": docs, "avg_ent_chars": 9.1, "avg_ent_words": 1.6}), encoding="utf-8")
    return path


def test_hipporag1_model_from_name_and_title_passages_align_by_containment(tmp_path: Path) -> None:
    docs = [
        {
            "idx": 0,
            "passage": "Marie Curie\nMarie Curie was born in Warsaw, the capital of Poland.",
            "extracted_entities": ["Marie Curie", "Warsaw", "Poland"],
            "extracted_triples": [["Marie Curie", "born in", "Warsaw"], ["Warsaw", "capital of"]],
        },
        {
            "idx": 1,
            "passage": "Sorbonne\nThe Sorbonne is a university in Paris   founded in the 13th century.",
            "extracted_entities": ["Sorbonne"],
            "extracted_triples": [["Sorbonne", "located in", "Paris"]],
        },
    ]
    path = _openie(tmp_path / "openie_musique_results_ner_gpt-3.5-turbo-1106_11656.json", docs)
    ex = read_extraction(path)
    assert ex.format == "hipporag" and ex.model == "gpt-3.5-turbo-1106"
    assert [r.source_id for r in ex.records] == ["0", "1"]
    assert ex.records[0].entities == ("Marie Curie", "Warsaw", "Poland")
    assert dict(ex.issues) == {"triple not of length 3": 1}
    assert "HippoRAG OpenIE" in ex.label() and "model gpt-3.5-turbo-1106" in ex.label()
    aligned = align(ex, OURS)  # ids 0/1 are not ours; the passages hold our chunks (title + "\n" + text)
    assert [r.chunk_ids for r in aligned.records] == [("c1",), ("c3",)]
    assert "no matching chunk" not in aligned.issues


def test_hipporag2_file_name_gives_model(tmp_path: Path) -> None:
    docs = [{"idx": "chunk-ab", "passage": OURS["c2"], "extracted_entities": ["Pierre Curie"], "extracted_triples": []}]
    ex = read_extraction(_openie(tmp_path / "openie_results_ner_Qwen_Qwen2.5-7B-Instruct.json", docs))
    assert ex.model == "Qwen_Qwen2.5-7B-Instruct"
    assert align(ex, OURS).records[0].chunk_ids == ("c2",)  # by text


def test_json_without_docs_is_refused_naming_path_and_formats(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps([{"id": "a"}]), encoding="utf-8")
    with pytest.raises(InputError, match=r"other\.json.*no top-level \"docs\".*known formats: jsonl"):
        read_extraction(path)


# ------------------------------------------------------------------------------------------------ MS GraphRAG
def _parquet(path: Path, columns: dict[str, list[Any]]) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)


def _graphrag_current(root: Path) -> Path:
    """A GraphRAG 2.x/3.x project: settings.yaml (3.x completion_models) and output/*.parquet."""
    out = root / "output"
    packed = OURS["c1"] + "\n\n" + OURS["c4"]  # a text unit that packs two of our chunks
    _parquet(
        out / "text_units.parquet",
        {
            "id": ["tu1", "tu2"],
            "human_readable_id": [0, 1],
            "text": [packed, "Pierre Curie married Marie Curie"],
            "n_tokens": [30, 6],
            "document_id": ["d1", "d1"],
            "entity_ids": [["e1", "e2"], ["e1", "e3"]],
            "relationship_ids": [["r1"], ["r2"]],
        },
    )
    _parquet(
        out / "entities.parquet",
        {
            "id": ["e1", "e2", "e3", "e4"],
            "human_readable_id": [0, 1, 2, 3],
            "title": ["MARIE CURIE", "WARSAW", "PIERRE CURIE", "GHOST"],
            "type": ["PERSON", "GEO", "PERSON", "PERSON"],
            "description": ["", "", "", ""],
            "text_unit_ids": [["tu1", "tu2"], ["tu1"], ["tu2"], ["tu-missing"]],
            "frequency": [2, 1, 1, 1],
            "degree": [2, 1, 1, 0],
        },
    )
    _parquet(
        out / "relationships.parquet",
        {
            "id": ["r1", "r2"],
            "human_readable_id": [0, 1],
            "source": ["MARIE CURIE", "PIERRE CURIE"],
            "target": ["WARSAW", "MARIE CURIE"],
            "description": ["Marie Curie was born in Warsaw", None],
            "weight": [1.0, 2.0],
            "combined_degree": [3, 3],
            "text_unit_ids": [["tu1"], ["tu2"]],
        },
    )
    docs = {"id": ["d1"], "title": ["a.txt"], "text": [packed], "text_unit_ids": [["tu1", "tu2"]]}
    _parquet(out / "documents.parquet", docs)
    (root / "settings.yaml").write_text(
        "completion_models:\n  default_completion_model:\n    model_provider: openai\n    model: gpt-4.1-mini\n"
        "    api_key: ${GRAPHRAG_API_KEY}\n"
        "extract_graph:\n  completion_model_id: default_completion_model\n",
        encoding="utf-8",
    )
    return root


def test_graphrag_output_records_model_and_packed_text_unit(tmp_path: Path) -> None:
    ex = read_extraction(_graphrag_current(tmp_path / "project"))  # auto: the project folder, tables in output/
    assert ex.format == "graphrag" and ex.model == "gpt-4.1-mini"
    assert [r.source_id for r in ex.records] == ["tu1", "tu2"]
    assert ex.records[0].entities == ("MARIE CURIE", "WARSAW")
    assert ex.records[1].entities == ("MARIE CURIE", "PIERRE CURIE")
    assert ex.records[0].triples == (("MARIE CURIE", "Marie Curie was born in Warsaw", "WARSAW"),)
    assert ex.records[1].triples == (("PIERRE CURIE", "related to", "MARIE CURIE"),)
    assert ex.issues["entity text unit not found"] == 1
    assert ex.issues['relationship without description (relation "related to")'] == 1
    assert "MS GraphRAG" in ex.label() and "model gpt-4.1-mini" in ex.label()
    aligned = align(ex, OURS)
    assert aligned.records[0].chunk_ids == ("c1", "c4")  # both chunks the text unit packs, in text order
    assert aligned.records[1].chunk_ids == ("c2",)  # the host text unit lies inside our chunk
    by_chunk = aligned.by_chunk()
    assert list(by_chunk) == ["c1", "c4", "c2"] and by_chunk["c4"] == [aligned.records[0]]


def test_graphrag_0x_create_final_tables_with_name_and_repeated_rows(tmp_path: Path) -> None:
    art = tmp_path / "run" / "output"
    _parquet(
        art / "create_final_text_units.parquet",
        {"id": ["u1"], "text": [OURS["c3"]], "n_tokens": [12], "document_ids": [["d1"]]},
    )
    _parquet(art / "create_final_entities.parquet", {"id": ["e1"], "name": ["SORBONNE"], "text_unit_ids": [["u1"]]})
    _parquet(  # GraphRAG 0.x wrote some relationship rows several times
        art / "create_final_relationships.parquet",
        {
            "source": ["SORBONNE", "SORBONNE"],
            "target": ["PARIS", "PARIS"],
            "weight": [1.0, 1.0],
            "description": ["The Sorbonne is in Paris", "The Sorbonne is in Paris"],
            "text_unit_ids": [["u1"], ["u1"]],
            "id": ["r1", "r1"],
        },
    )
    (tmp_path / "run" / "settings.yaml").write_text("llm:\n  type: openai_chat\n  model: gpt-4-turbo-preview\n")
    ex = read_extraction(art, format="graphrag")
    assert ex.model == "gpt-4-turbo-preview"
    assert ex.records[0].entities == ("SORBONNE",)
    assert ex.records[0].triples == (("SORBONNE", "The Sorbonne is in Paris", "PARIS"),)
    assert dict(ex.issues) == {"duplicate relationship row (same id)": 1}
    (tmp_path / "run" / "output" / "settings.yaml").write_text("llm:\n  model: ${GRAPHRAG_LLM_MODEL}\n")
    assert read_extraction(art).model is None  # next to the tables wins; an unset placeholder is no model
    (tmp_path / "run" / "output" / "settings.yaml").unlink()
    (tmp_path / "run" / "settings.yaml").rename(tmp_path / "settings.yaml")
    assert read_extraction(art).model is None  # not looked for above the project


def test_graphrag_missing_column_names_file_and_column(tmp_path: Path) -> None:
    root = _graphrag_current(tmp_path / "project")
    _parquet(root / "output" / "relationships.parquet", {"id": ["r1"], "source": ["A"], "text_unit_ids": [["tu1"]]})
    with pytest.raises(InputError, match=r"relationships\.parquet: no column 'target'"):
        read_extraction(root)


# ------------------------------------------------------------------------------------------------ LightRAG
_GRAPHML_HEAD = """<?xml version='1.0' encoding='utf-8'?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="d9" for="edge" attr.name="keywords" attr.type="string" />
  <key id="d8" for="edge" attr.name="description" attr.type="string" />
  <key id="d10" for="edge" attr.name="source_id" attr.type="string" />
  <key id="d3" for="node" attr.name="source_id" attr.type="string" />
  <key id="d1" for="node" attr.name="entity_type" attr.type="string" />
  <key id="d0" for="node" attr.name="entity_id" attr.type="string" />
  <graph edgedefault="undirected">
"""


def _node(name: str, source_id: str) -> str:
    return (
        f'    <node id="{name}"><data key="d0">{name}</data><data key="d1">person</data>'
        f'<data key="d3">{source_id}</data></node>\n'
    )


def _lightrag(wd: Path) -> Path:
    wd.mkdir(parents=True)
    texts = ["Marie Curie was born in Warsaw,", "Pierre Curie married Marie Curie", "zzz unrelated text, nowhere"]
    chunks = {
        f"chunk-{i + 1}": {"tokens": 9, "content": t, "chunk_order_index": i, "full_doc_id": "doc-1"}
        for i, t in enumerate(texts)
    }
    (wd / "kv_store_text_chunks.json").write_text(json.dumps(chunks), encoding="utf-8")
    graph = (
        _GRAPHML_HEAD
        + _node("Marie Curie", "chunk-1&lt;SEP&gt;chunk-2")
        + _node("Warsaw", "chunk-1")  # truncated source_id: the full list is in kv_store_entity_chunks.json
        + _node("Pierre Curie", "chunk-2&lt;SEP&gt;chunk-gone")
        + '    <edge source="Marie Curie" target="Warsaw"><data key="d8">born there</data>'
        '<data key="d9">birthplace,born in</data><data key="d10">chunk-1</data></edge>\n'
        '    <edge source="Marie Curie" target="Pierre Curie"><data key="d8">married</data>'
        '<data key="d10">chunk-2</data></edge>\n'
        "  </graph>\n</graphml>\n"
    )
    (wd / "graph_chunk_entity_relation.graphml").write_text(graph, encoding="utf-8")
    full = {"Warsaw": {"chunk_ids": ["chunk-1", "chunk-3"], "count": 2, "_id": "Warsaw"}}
    (wd / "kv_store_entity_chunks.json").write_text(json.dumps(full), encoding="utf-8")
    return wd


def test_lightrag_working_dir_records_and_smaller_host_chunks_align(tmp_path: Path) -> None:
    ex = read_extraction(_lightrag(tmp_path / "rag_storage"), model="gpt-4o-mini")
    assert ex.format == "lightrag" and ex.model == "gpt-4o-mini" and "LightRAG" in ex.label()
    assert [r.source_id for r in ex.records] == ["chunk-1", "chunk-2", "chunk-3"]
    assert ex.records[0].entities == ("Marie Curie", "Warsaw")
    assert ex.records[0].triples == (("Marie Curie", "birthplace,born in", "Warsaw"),)  # keywords first
    assert ex.records[1].entities == ("Marie Curie", "Pierre Curie")
    assert ex.records[1].triples == (("Marie Curie", "married", "Pierre Curie"),)  # no keywords: description
    assert ex.records[2].entities == ("Warsaw",)  # from kv_store_entity_chunks.json only
    assert dict(ex.issues) == {"entity source chunk not found": 1}
    aligned = align(ex, OURS)  # host chunks smaller than ours: each lies inside one of ours
    assert [r.chunk_ids for r in aligned.records] == [("c1",), ("c2",), ()]
    assert aligned.issues["no matching chunk"] == 1


def test_lightrag_graphml_as_networkx_writes_it(tmp_path: Path) -> None:
    nx = pytest.importorskip("networkx")
    wd = _lightrag(tmp_path / "wd")
    g = nx.Graph()
    g.add_node("Marie Curie", entity_id="Marie Curie", entity_type="person", source_id="chunk-1<SEP>chunk-2")
    g.add_node("Warsaw", entity_id="Warsaw", entity_type="location", source_id="chunk-1")
    g.add_edge("Marie Curie", "Warsaw", weight=2.0, description="born", keywords="birthplace", source_id="chunk-1")
    nx.write_graphml(g, wd / "graph_chunk_entity_relation.graphml")
    (wd / "kv_store_entity_chunks.json").unlink()
    ex = read_extraction(wd)
    assert ex.records[0].entities == ("Marie Curie", "Warsaw")
    assert ex.records[0].triples == (("Marie Curie", "birthplace", "Warsaw"),)
    assert ex.records[1].entities == ("Marie Curie",) and ex.records[2].entities == ()


def test_lightrag_graphml_with_entity_declarations_is_refused(tmp_path: Path) -> None:
    wd = _lightrag(tmp_path / "wd")
    (wd / "graph_chunk_entity_relation.graphml").write_text(
        '<?xml version="1.0"?><!DOCTYPE g [<!ENTITY a "aaaa">]><graphml><graph>&a;</graph></graphml>'
    )
    with pytest.raises(InputError, match=r"graph_chunk_entity_relation\.graphml: GraphML with a DOCTYPE"):
        read_extraction(wd)


# ------------------------------------------------------------------------------------------------ alignment
def _ex(*records: ExtractionRecord) -> Extraction:
    return Extraction(records, "jsonl", "mem.jsonl", None, {"triple not of length 3": 2})


def test_align_by_id_then_text_then_containment() -> None:
    ex = _ex(
        ExtractionRecord("c3", ("Sorbonne",), ()),  # (1) id
        ExtractionRecord("h1", ("Pierre Curie",), (), "  PIERRE curie married\nMarie Curie in Paris in 1895. "),  # (2)
        ExtractionRecord("h2", ("Warsaw",), (), "Intro. " + OURS["c4"] + " " + OURS["c1"]),  # (3) packs c4 and c1
        ExtractionRecord("h3", ("X",), (), "nothing of ours is in this text at all"),
        ExtractionRecord("h4", ("Y",), ()),  # neither id nor text
    )
    aligned = align(ex, OURS)
    assert [r.chunk_ids for r in aligned.records] == [("c3",), ("c2",), ("c4", "c1"), (), ()]
    assert dict(aligned.issues) == {"triple not of length 3": 2, "no matching chunk": 2}
    assert aligned.records[1].entities == ("Pierre Curie",)  # the rest of the record is kept as-is
    again = align(aligned, {**OURS, "h4": "an extra chunk of ours"})  # re-aligning recounts
    assert again.issues["no matching chunk"] == 1


def test_align_nothing_matches_names_path_and_examples() -> None:
    ex = _ex(*(ExtractionRecord(f"other-{i}", (), (), f"another corpus entirely, passage {i}") for i in range(5)))
    with pytest.raises(InputError, match=r"mem\.jsonl: none of its 5 records.*'other-0', 'other-1', 'other-2'"):
        align(ex, OURS)
    with pytest.raises(InputError, match="none given"):
        align(ex, {})


def test_short_texts_do_not_match_by_containment() -> None:
    ex = _ex(ExtractionRecord("h1", (), (), "Paris"), ExtractionRecord("c1", (), ()))
    assert [r.chunk_ids for r in align(ex, OURS).records] == [(), ("c1",)]


def test_restrict_keeps_only_kept_chunks_records() -> None:
    ex = _ex(
        ExtractionRecord("c1", ("Marie Curie",), ()),
        ExtractionRecord("h2", ("Warsaw",), (), OURS["c4"] + " " + OURS["c2"]),
        ExtractionRecord("c3", ("Sorbonne",), ()),
    )
    aligned = align(ex, OURS)
    kept = aligned.restrict(iter(["c2", "c3"]))
    assert [r.source_id for r in kept.records] == ["h2", "c3"]
    assert kept.records[0].chunk_ids == ("c2",)  # cut to the kept chunks
    assert set(kept.by_chunk()) == {"c2", "c3"}
    assert kept.issues == aligned.issues and kept.format == "jsonl"
    assert aligned.restrict([]).records == ()
    with pytest.raises(InputError, match="align"):
        ex.restrict(["c1"])  # not aligned yet
    with pytest.raises(InputError, match="not the string"):
        aligned.restrict("c1")


# ------------------------------------------------------------------------------------------------ detection, bounds
def test_auto_detection_and_unknown_inputs(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(InputError, match=r"notes\.txt: not a known precomputed extraction; known formats"):
        read_extraction(tmp_path / "notes.txt")
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(InputError, match=r"empty_dir: not a known precomputed extraction"):
        read_extraction(tmp_path / "empty_dir")
    with pytest.raises(InputError, match=r"no such file"):
        read_extraction(tmp_path / "missing.jsonl")
    path = _jsonl(tmp_path / "kg.jsonl", [{"id": "a", "entities": ["A"], "triples": []}])
    with pytest.raises(InputError, match=r"kg\.jsonl: unknown extraction format 'neo4j'"):
        read_extraction(path, format="neo4j")
    with pytest.raises(InputError, match=r"no records"):
        read_extraction(_jsonl(tmp_path / "blank.jsonl", [""]))
    assert read_extraction(_lightrag(tmp_path / "lr")).format == "lightrag"


def test_size_bound_and_device_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _jsonl(tmp_path / "kg.jsonl", [{"id": "a", "entities": ["A" * 100], "triples": []}])
    monkeypatch.setattr(replay_mod, "MAX_FILE_BYTES", 50)
    with pytest.raises(InputError, match=r"kg\.jsonl: .* over the 50-byte limit"):
        read_extraction(path)
    if Path("/dev/zero").exists():
        link = tmp_path / "zero.jsonl"
        os.symlink("/dev/zero", link)
        with pytest.raises(InputError, match=r"zero\.jsonl: not a regular file"):
            read_extraction(link)
        with pytest.raises(InputError, match=r"zero\.jsonl: not a regular file"):
            read_extraction(link, format="jsonl")


# ------------------------------------------------------------------------------------------------ real data
@pytest.mark.skipif(not (SHARED / "musique").is_dir(), reason="shared data not present")
def test_real_hipporag_gpt35_jsonl_first_200_lines(tmp_path: Path) -> None:
    src = SHARED / "musique" / "hipporag_train100_kg_gpt35.jsonl"
    with src.open(encoding="utf-8") as fh:
        head = [next(fh) for _ in range(200)]
    path = tmp_path / "kg200.jsonl"
    path.write_text("".join(head), encoding="utf-8")
    ex = read_extraction(path, model="gpt-3.5-turbo-1106")
    assert len(ex.records) == 200 and dict(ex.issues) == {"triple not of length 3": 16}
    assert sum(len(r.entities) for r in ex.records) == 1663 and sum(len(r.triples) for r in ex.records) == 1789
    with (SHARED / "musique" / "hipporag_train100_corpus.jsonl").open(encoding="utf-8") as fh:
        corpus = {d["id"]: d["text"] for d in map(json.loads, fh)}
    aligned = align(ex, corpus)
    assert all(r.chunk_ids == (r.source_id,) for r in aligned.records)
    assert "1,789 triples" in ex.label() and "model gpt-3.5-turbo-1106" in ex.label()


# ------------------------------------------------------------------------------------------------ hostile files
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

TEXTS = st.text(st.characters(codec=None, categories=None), max_size=8)  # lone surrogates included
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXTS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXTS, inner, max_size=4),
    max_leaves=12,
)
HOSTILE = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _read_or_refused(path: Path) -> None:
    """Reading (then aligning and grouping) ends in a result or an InputError that names the file read."""
    try:
        ex = read_extraction(path)
    except InputError as e:
        assert path.name in str(e) or path.parent.name in str(e), str(e)
        return
    try:
        align(ex, OURS).chunk_graphs()
    except InputError as e:
        assert "no record matches" in str(e) or "match" in str(e), str(e)


def _fresh(tmp_path: Path, name: str) -> Path:
    import uuid

    folder = tmp_path / uuid.uuid4().hex[:8]
    folder.mkdir()
    return folder / name


@HOSTILE
@given(field=st.sampled_from(["id", "entities", "triples", "text", "model"]), value=JSON_VALUES)
def test_jsonl_any_json_value_in_any_field(tmp_path: Path, field: str, value: Any) -> None:
    row = {"id": "c1", "entities": ["Marie Curie"], "triples": [["Marie Curie", "born in", "Warsaw"]], field: value}
    _read_or_refused(_jsonl(_fresh(tmp_path, "kg.jsonl"), [row]))


@HOSTILE
@given(field=st.sampled_from(["<top>", "docs", "<doc>", "idx", "passage", "extracted_entities",
                               "extracted_triples"]), value=JSON_VALUES)  # fmt: skip
def test_hipporag_any_json_value_in_any_field(tmp_path: Path, field: str, value: Any) -> None:
    doc: Any = {"idx": "c1", "passage": OURS["c1"], "extracted_entities": ["Warsaw"], "extracted_triples": []}
    if field not in ("<top>", "docs", "<doc>"):
        doc[field] = value
    data: Any = {"docs": value} if field == "docs" else {"docs": [value if field == "<doc>" else doc]}
    path = _fresh(tmp_path, "openie_results_ner_m.json")
    path.write_text(json.dumps(value if field == "<top>" else data), encoding="utf-8")
    _read_or_refused(path)


@HOSTILE
@given(field=st.sampled_from(["<top>", "<chunk>", "content", "<entity chunks>", "chunk_ids"]), value=JSON_VALUES)
def test_lightrag_any_json_value_in_any_field(tmp_path: Path, field: str, value: Any) -> None:
    wd = _lightrag(_fresh(tmp_path, "rag_storage"))
    chunks = json.loads((wd / "kv_store_text_chunks.json").read_text(encoding="utf-8"))
    full = json.loads((wd / "kv_store_entity_chunks.json").read_text(encoding="utf-8"))
    if field == "<top>":
        chunks = value
    elif field == "<chunk>":
        chunks["chunk-1"] = value
    elif field == "content":
        chunks["chunk-1"]["content"] = value
    elif field == "<entity chunks>":
        full = value
    else:
        full["Warsaw"]["chunk_ids"] = value
    (wd / "kv_store_text_chunks.json").write_text(json.dumps(chunks), encoding="utf-8")
    (wd / "kv_store_entity_chunks.json").write_text(json.dumps(full), encoding="utf-8")
    _read_or_refused(wd)


def _deep(n: int) -> str:
    return "[" * n + "]" * n


@pytest.mark.parametrize("fmt", ["jsonl", "hipporag", "lightrag"])
def test_deeply_nested_json_and_huge_integers_are_refused_naming_the_file(tmp_path: Path, fmt: str) -> None:
    """A value nested 100,000 deep and an integer of 5,000 digits: InputError naming the file (and where the
    parser can tell, the line and column), through read_extraction and ``g2cons fuse --host replay:``."""
    from g2cons_plugins.cli import main

    G2ConSIndex = pytest.importorskip("g2cons_plugins").G2ConSIndex
    G2ConSIndex.build([{"id": k, "text": v} for k, v in OURS.items()], embedder="hash").save(tmp_path / "g")
    for label, bad, match in (("deep", _deep(100_000), "JSON nested too deep"),
                              ("long", "7" * 5_000, r"an integer of 5,000 digits at line \d+ column \d+")):  # fmt: skip
        if fmt == "jsonl":
            path = tmp_path / f"{label}.jsonl"
            path.write_text('{"id": "c1", "entities": [], "triples": []}\n' + f'{{"id": "c2", "entities": {bad}}}\n')
            match = rf"{label}\.jsonl:2: {match}"
        elif fmt == "hipporag":
            path = tmp_path / f"{label}_ner_m.json"
            path.write_text(f'{{"docs": [{{"idx": "c1", "extracted_entities": {bad}}}]}}')
            match = rf"{label}_ner_m\.json: {match}"
        else:
            path = _lightrag(tmp_path / f"{label}-wd")
            (path / "kv_store_text_chunks.json").write_text(f'{{"chunk-1": {{"content": "x", "tokens": {bad}}}}}')
            match = rf"kv_store_text_chunks\.json: {match}"
        with pytest.raises(InputError, match=match):
            read_extraction(path)
        assert main(["fuse", str(tmp_path / "g"), "Where was Marie Curie born?", "--host", f"replay:{path}"]) == 2


@pytest.mark.parametrize(
    "table, column, values",
    [
        ("entities", "text_unit_ids", [1, 2, 3, 4]),  # an int column
        ("entities", "text_unit_ids", [[["tu1"]], [["tu1"]], [["tu2"]], [["x"]]]),  # a list of lists
        ("entities", "id", [["e1"], ["e2"], ["e3"], ["e4"]]),  # an id column of lists
        ("text_units", "text", [1, 2]),  # a text column of ints
        ("text_units", "text", [{"a": 1}, {"a": 2}]),  # ... of structs
        ("relationships", "text_unit_ids", ["tu1", "tu2"]),  # a string column
        ("relationships", "id", [{"x": 1}, {"x": 2}]),
        ("relationships", "source", [1, 2]),  # counted as triples with an element not a string
        ("relationships", "description", [[1], [2]]),
        ("entities", "title", [{"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}]),
    ],
)
def test_graphrag_columns_of_the_wrong_type_are_refused_naming_file_and_row(
    tmp_path: Path, table: str, column: str, values: list[Any]
) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    root = _graphrag_current(tmp_path / "project")
    file = root / "output" / f"{table}.parquet"
    t = pq.read_table(file)
    t = t.set_column(t.column_names.index(column), column, pa.array(values))
    pq.write_table(t, file)
    try:
        ex = read_extraction(root)
    except InputError as e:
        assert f"{table}.parquet row " in str(e) and column in str(e), str(e)
    else:
        assert column in ("source", "description", "title")  # a name or relation that is not text: counted
        align(ex, OURS).chunk_graphs()


_CELLS = {  # one Parquet type each: a cell strategy
    "int": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(allow_nan=True),
    "bool": st.booleans(),
    "str": st.text(max_size=8),
    "none": st.none(),
    "list of str": st.lists(st.text(max_size=4), max_size=3),
    "list of int": st.lists(st.integers(0, 9), max_size=3),
    "list of lists": st.lists(st.lists(st.text(max_size=3), max_size=2), max_size=2),
    "struct": st.fixed_dictionaries({"a": st.integers(0, 9)}),
}
_GRAPHRAG_COLUMNS = [
    ("text_units", "id"), ("text_units", "text"), ("entities", "id"), ("entities", "title"),
    ("entities", "text_unit_ids"), ("relationships", "id"), ("relationships", "source"),
    ("relationships", "target"), ("relationships", "description"), ("relationships", "text_unit_ids"),
]  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.sampled_from(_GRAPHRAG_COLUMNS), kind=st.sampled_from(sorted(_CELLS)), data=st.data())
def test_graphrag_any_column_of_any_type(tmp_path: Path, where: tuple[str, str], kind: str, data: Any) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table, column = where
    root = _graphrag_current(_fresh(tmp_path, "project"))
    file = root / "output" / f"{table}.parquet"
    t = pq.read_table(file)
    values = data.draw(st.lists(_CELLS[kind], min_size=t.num_rows, max_size=t.num_rows))
    t = t.set_column(t.column_names.index(column), column, pa.array(values))
    pq.write_table(t, file)
    _read_or_refused(root)


def test_progress_says_the_size_first_then_shows_the_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``show_progress=True``: one line with the format, the path and the size in MB before reading, then a tqdm bar
    over the records (LightRAG: the node and edge counts, then bars over both); by default (not a terminal, a small
    input) nothing is printed."""
    docs = [{"idx": f"p{i}", "passage": f"text {i}", "extracted_entities": ["A"], "extracted_triples": []}
            for i in range(300)]  # fmt: skip
    hippo = tmp_path / "openie_results_ner_m.json"
    hippo.write_text(json.dumps({"docs": docs}), encoding="utf-8")
    read_extraction(hippo)
    assert capsys.readouterr().err == ""
    read_extraction(hippo, show_progress=True)
    err = capsys.readouterr().err
    assert re.search(r"reading the HippoRAG OpenIE extraction .*openie_results_ner_m\.json: [\d.]+ MB", err), err
    assert err.index("MB") < err.index("docs:") and "300/300" in err
    read_extraction(_lightrag(tmp_path / "wd"), show_progress=True)
    err = capsys.readouterr().err
    assert "reading the LightRAG extraction" in err and "graph_chunk_entity_relation.graphml: 3 nodes, 2 edges" in err
    assert "nodes: 100%" in err and "edges: 100%" in err
    read_extraction(_graphrag_current(tmp_path / "project"), show_progress=True)
    err = capsys.readouterr().err
    assert "reading the MS GraphRAG extraction" in err and "entities.parquet: rows" in err


def test_lone_surrogates_are_counted_or_refused_never_passed_on(tmp_path: Path) -> None:
    """JSON escapes of lone surrogates ("\\ud800"): an entity or triple holding one is counted and skipped, an id
    or a text holding one is refused naming the file; nothing that UTF-8 cannot encode reaches an embedder."""
    bad = "bad\ud800name"
    rows = [{"id": "c1", "entities": ["Marie Curie", bad], "triples": [["Marie Curie", bad, "Warsaw"]]}]
    ex = read_extraction(_jsonl(tmp_path / "kg.jsonl", rows))
    assert ex.records[0].entities == ("Marie Curie",) and ex.records[0].triples == ()
    assert ex.issues == {"entity not valid Unicode": 1, "triple element not valid Unicode": 1}
    for row in ({"id": bad, "entities": []}, {"id": "c1", "text": bad}):
        with pytest.raises(InputError, match=r"kg2\.jsonl:1: .*not valid Unicode"):
            read_extraction(_jsonl(tmp_path / "kg2.jsonl", [row]))
    wd = _lightrag(tmp_path / "wd")
    (wd / "kv_store_text_chunks.json").write_text(json.dumps({bad: {"content": "x"}}), encoding="utf-8")
    with pytest.raises(InputError, match=r"kv_store_text_chunks\.json: a chunk id is not valid Unicode"):
        read_extraction(wd)
