"""``g2cons select --root PROJECT`` (MS GraphRAG settings) and ``--host lightrag``: chunks exactly as the host,
prices each call exactly as the host would send it, never touches the project's files, and bad settings fail
clearly. GraphRAG's own config loader, input reader and chunker check the result where installed."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from g2cons_plugins import G2ConSIndex
from g2cons_plugins.cli import main
from g2cons_plugins.text import get_tokenizer

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "data" / "musique_excerpt_corpus.jsonl"
HASH = ["--embedder", "hash", "--quiet"]
# a prompt template with GraphRAG's placeholders (written for this test, not GraphRAG's prompt text)
PROMPT = (
    '-Goal-\nFind entities of types [{entity_types}] and their relations.\nRecords: ("entity"<|>NAME<|>TYPE) '
    'joined by ##, end with <|COMPLETE|>. Literal braces: {{"a": 1}}\n-Real Data-\nText: {input_text}\nOutput:'
)
# the document-processing part of settings.yaml as `graphrag init` (3.x) writes it, encoding set to cl100k_base
# (o200k_base, the init default, is bundled too: test_graphrag_init_default_o200k_works_offline)
SETTINGS = """\
completion_models:
  default_completion_model:
    model_provider: openai
    model: gpt-4.1
    auth_method: api_key # or azure_managed_identity
    api_key: ${GRAPHRAG_API_KEY} # set this in the generated .env file, or remove if managed identity
    retry:
      type: exponential_backoff

input:
  type: text # [csv, text, json, jsonl]

chunking:
  type: tokens
  size: 300
  overlap: 50
  encoding_model: cl100k_base

input_storage:
  type: file # [file, blob, cosmosdb]
  base_dir: "input"

output_storage:
  type: file # [file, blob, cosmosdb]
  base_dir: "output"

extract_graph:
  completion_model_id: default_completion_model
  prompt: "prompts/extract_graph.txt"
  entity_types: [organization,person,geo,event]
  max_gleanings: 1

summarize_descriptions:
  completion_model_id: default_completion_model
  prompt: "prompts/summarize_descriptions.txt"
  max_length: 500
"""


def _rows(n: int) -> list[dict[str, str]]:
    return [json.loads(x) for x in CORPUS.read_text(encoding="utf-8").splitlines() if x.strip()][:n]


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _project(root: Path, settings: str = SETTINGS, n: int = 24) -> Path:
    (root / "input").mkdir(parents=True)
    (root / "prompts").mkdir()
    rows = _rows(n)
    for i, r in enumerate(rows):
        (root / "input" / f"doc{i:02d}.txt").write_text(f"{r['title']}\n{r['text']}\n", encoding="utf-8")
    (root / "input" / "long.txt").write_text("\n\n".join(r["text"] for r in rows[:20]), encoding="utf-8")
    (root / "input" / "notes.md").write_text("not matched by .*\\.txt$", encoding="utf-8")
    (root / "prompts" / "extract_graph.txt").write_text(PROMPT, encoding="utf-8")
    (root / "prompts" / "summarize_descriptions.txt").write_text("Summarize {description_list}", encoding="utf-8")
    (root / "settings.yaml").write_text(settings, encoding="utf-8")
    return root


def _ntok(text: str) -> int:
    return len(get_tokenizer("cl100k_base").encode(text))


def test_graphrag_root_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    proj = _project(tmp_path / "proj")
    before = _snapshot(proj)
    assert main(["select", "--root", str(proj), "--kappa", "0.6", "--price-per-mtok", "2.0", *HASH]) == 0
    printed = capsys.readouterr().out
    assert "graphrag index --root" in printed and "2 calls per chunk" in printed
    core = proj / "g2cons"
    assert {k: v for k, v in _snapshot(proj).items() if not k.startswith("g2cons/")} == before  # user's files
    rep = json.loads((core / "selection_report.json").read_text(encoding="utf-8"))
    hc = rep["host_cost"]
    assert rep["chunk_tokens"] == 300 and rep["chunk_overlap"] == 50 and hc["encoding_model"] == "cl100k_base"
    assert rep["n_documents"] == 25  # 24 .txt + long.txt; notes.md does not match input.file_pattern

    # GraphRAG's own chunker on each document gives exactly the chunks g2cons selected from
    gchunk = pytest.importorskip("graphrag_chunking.token_chunker")
    tok = get_tokenizer("cl100k_base")
    texts = [p.read_text(encoding="utf-8") for p in sorted((proj / "input").glob("*.txt"))]
    host_chunks = [c for t in texts for c in gchunk.split_text_on_tokens(t, 300, 50, tok.encode, tok.decode)]
    graph_chunks = [{"id": c.id, "text": c.text} for c in G2ConSIndex.load(core / "graph").chunks]
    assert sorted(c["text"] for c in graph_chunks) == sorted(host_chunks)
    assert rep["n_kept"] + rep["n_dropped"] == len(host_chunks)

    # the core input: exactly the kept chunks, and GraphRAG's reader + chunker turn it into exactly those chunks
    kept_texts = sorted(c["text"] for c in graph_chunks if c["id"] in set(rep["kept_ids"]))
    written = sorted(p.read_text(encoding="utf-8") for p in (core / "input").glob("*.txt"))
    assert written == kept_texts
    # the first call of each chunk: the prompt filled in as GraphRAG fills it, counted with tiktoken
    first = [_ntok(PROMPT.format(input_text=t, entity_types="organization,person,geo,event")) for t in kept_texts]
    assert hc["selected"]["first_call_input_tokens"] == sum(first)
    assert hc["selected"]["calls"] == 2 * rep["n_kept"] and hc["full"]["calls"] == 2 * len(host_chunks)
    assert hc["selected"]["input_tokens"] == 2 * sum(first)
    assert hc["selected"]["usd_input"] == pytest.approx(2 * sum(first) / 1e6 * 2.0, abs=1e-6)
    assert hc["prompt_tokens_per_call"] == _ntok(
        PROMPT.format(input_text="", entity_types=",".join(["organization", "person", "geo", "event"]))
    )

    # settings.yaml of the core root: GraphRAG's own loader reads it; only the input folder and prompt paths change
    lc = pytest.importorskip("graphrag_common.config.load_config")
    monkeypatch.setenv("GRAPHRAG_API_KEY", "sk-test")
    cfg = lc.load_config(lambda **kw: kw, config_path=core, set_cwd=False)
    assert cfg["input_storage"]["base_dir"] == "input" and cfg["input"]["type"] == "text"
    assert cfg["extract_graph"]["prompt"] == "../prompts/extract_graph.txt"
    assert (core / cfg["extract_graph"]["prompt"]).read_text(encoding="utf-8") == PROMPT
    assert cfg["completion_models"]["default_completion_model"]["api_key"] == "sk-test"  # placeholder kept
    assert cfg["output_storage"]["base_dir"] == "output" and cfg["chunking"]["size"] == 300
    gi = pytest.importorskip("graphrag_input")
    from graphrag_storage.file_storage import FileStorage

    reader = gi.create_input_reader(gi.InputConfig(**cfg["input"]), FileStorage(base_dir=str(core / "input")))
    docs = asyncio.run(reader.read_files())
    assert sorted(d.text for d in docs) == kept_texts
    rechunked = [c for d in docs for c in gchunk.split_text_on_tokens(d.text, 300, 50, tok.encode, tok.decode)]
    assert sorted(rechunked) == kept_texts  # the host's run on the core input makes exactly the kept chunks

    # a rerun replaces g2cons's own outputs
    assert main(["select", "--root", str(proj), "--kappa", "0.3", *HASH]) == 0
    assert json.loads((core / "selection_report.json").read_text())["kappa"] == 0.3


def test_graphrag_older_layout(tmp_path: Path) -> None:
    old = """\
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
  max_gleanings: 2
"""
    proj = _project(tmp_path / "proj", old, n=10)
    assert main(["select", "--root", str(proj), "--kappa", "0.5", *HASH]) == 0
    rep = json.loads((proj / "g2cons" / "selection_report.json").read_text())
    assert rep["chunk_tokens"] == 200 and rep["chunk_overlap"] == 20
    assert rep["host_cost"]["gleanings"] == 2 and rep["host_cost"]["calls_per_chunk"] == 4  # 1 + 2 + 1 loop check
    import yaml

    core = yaml.safe_load((proj / "g2cons" / "settings.yaml").read_text())
    assert (
        core["input"]["base_dir"] == "input" and core["entity_extraction"]["prompt"] == "../prompts/extract_graph.txt"
    )


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda p: (p / "settings.yaml").unlink(), "no settings.yaml"),
        (lambda p: (p / "settings.yaml").write_text("input: [unclosed\n"), "settings.yaml: not valid YAML"),
        (lambda p: (p / "settings.yaml").write_text("- a list\n"), "expected a mapping"),
        (lambda p: (p / "prompts" / "extract_graph.txt").unlink(), "extract_graph.prompt names"),
        (lambda p: (p / "settings.yaml").write_text(SETTINGS.replace("type: text", "type: parquet")), "parquet"),
        (lambda p: (p / "settings.yaml").write_text(SETTINGS.replace("overlap: 50", "overlap: 400")), "overlap"),
        (lambda p: (p / "settings.yaml").write_text(SETTINGS.replace("size: 300", "size: big")), "chunking.size"),
        (lambda p: (p / "settings.yaml").write_text(SETTINGS.replace('"input"', '"missing"')), "does not exist"),
        (lambda p: (p / "settings.yaml").write_text(SETTINGS.replace('"input"', '"."')), "inside"),
        (lambda p: (p / "prompts" / "extract_graph.txt").write_text("Text: {input_text} {unknown}"), "cannot be"),
        (
            lambda p: (p / "settings.yaml").write_text(SETTINGS.replace("max_gleanings: 1", "max_gleanings: -1")),
            "max_gleanings",
        ),
    ],
)
def test_graphrag_bad_settings_fail_clearly(
    tmp_path: Path, edit: Any, needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    proj = _project(tmp_path / "proj", n=4)
    edit(proj)
    before = _snapshot(proj)
    assert main(["select", "--root", str(proj), *HASH]) == 2
    err = capsys.readouterr().err
    assert err.startswith("g2cons: error:") and needle in err, err
    assert _snapshot(proj) == before


def test_graphrag_unknown_keys_warn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proj = _project(tmp_path / "proj", SETTINGS + "chunkin:\n  size: 10\n", n=4)
    assert main(["select", "--root", str(proj), "--dry-run", *HASH]) == 0
    assert "unknown settings ['chunkin']" in capsys.readouterr().err


def test_graphrag_init_default_o200k_works_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))  # no downloaded copy to fall back on
    proj = _project(tmp_path / "proj", SETTINGS.replace("encoding_model: cl100k_base", "encoding_model: o200k_base"))
    assert main(["select", "--root", str(proj), "--kappa", "0.5", *HASH]) == 0, capsys.readouterr().err
    rep = json.loads((proj / "g2cons" / "selection_report.json").read_text(encoding="utf-8"))
    assert rep["host_cost"]["encoding_model"] == "o200k_base"
    o200k = get_tokenizer("o200k_base")
    texts = sorted(c.text for c in G2ConSIndex.load(proj / "g2cons" / "graph").chunks)
    assert max(len(o200k.encode(t)) for t in texts) <= 300  # chunked with o200k_base windows
    assert rep["host_cost"]["prompt_tokens_per_call"] == len(
        o200k.encode(PROMPT.format(input_text="", entity_types="organization,person,geo,event"))
    )


def test_bundled_o200k_equals_tiktokens_own_encoding(monkeypatch: Any) -> None:
    """tiktoken's own o200k_base constructor (its pattern and special tokens), fed the bundled file after checking
    tiktoken's expected hash, encodes exactly as the bundled tokenizer."""
    openai_public = pytest.importorskip("tiktoken_ext.openai_public")
    import tiktoken

    from g2cons_plugins.text import _DATA, _parse_bpe

    data = (_DATA / "o200k_base.tiktoken").read_bytes()

    def load(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        assert url.endswith("/o200k_base.tiktoken") and hashlib.sha256(data).hexdigest() == expected_hash
        return _parse_bpe(data)

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", load)
    theirs = tiktoken.Encoding(**openai_public.o200k_base())
    ours = get_tokenizer("o200k_base")
    samples = [r["text"] for r in _rows(30)] + [
        "Don't STOP 12345678 \r\n\t  x/y//z ÄÖÜß 日本語のテキスト 🙂 <|endoftext|>"
    ]
    for text in samples:
        assert ours.encode(text) == theirs.encode_ordinary(text)
        assert ours.decode(ours.encode(text)) == text


def test_encoding_model_may_be_a_tiktoken_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from g2cons_plugins.text import _DATA

    proj = _project(tmp_path / "proj", n=6)
    copy = tmp_path / "enc" / "o200k_base.tiktoken"
    copy.parent.mkdir()
    copy.write_bytes((_DATA / "o200k_base.tiktoken").read_bytes())
    assert main(["select", "--root", str(proj), "--encoding-model", str(copy), "--dry-run", "--json", *HASH]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["host_cost"]["prompt_tokens_per_call"] == len(
        get_tokenizer("o200k_base").encode(PROMPT.format(input_text="", entity_types="organization,person,geo,event"))
    )
    bad = tmp_path / "enc" / "mine.tiktoken"
    bad.write_bytes(b"YQ== 0\n")
    for spec, needle in (
        (str(bad), "mine.tiktoken: not a tiktoken encoding file"),
        (str(tmp_path / "no.tiktoken"), "no.tiktoken: cannot read"),
    ):
        assert main(["select", "--root", str(proj), "--encoding-model", spec, "--dry-run", *HASH]) == 2
        assert needle in capsys.readouterr().err


def test_lightrag_report_counts_what_lightrag_sends(tmp_path: Path) -> None:
    lightrag = pytest.importorskip("lightrag")
    import numpy as np
    from lightrag.utils import EmbeddingFunc, Tokenizer

    src = tmp_path / "input"
    src.mkdir()
    for i, r in enumerate(_rows(12)):
        (src / f"p{i:02d}.txt").write_text(f"{r['title']}\n{r['text']}\n", encoding="utf-8")
    out = tmp_path / "core"
    args = ["select", str(src), "--host", "lightrag", "--encoding-model", "cl100k_base", "--kappa", "0.5"]
    assert main([*args, "--out", str(out), "--report", str(tmp_path / "r.json"), *HASH]) == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["chunk_tokens"] == 1200 and rep["chunk_overlap"] == 100 and rep["host_cost"]["host"] == "lightrag"

    class Cl100k:
        def encode(self, s: str) -> list[int]:
            return get_tokenizer().encode(s)

        def decode(self, ids: list[int]) -> str:
            return get_tokenizer().decode(ids)

    async def embed(texts: list[str], **kw: Any) -> Any:
        v = np.array([np.frombuffer(hashlib.sha256(t.encode()).digest(), np.uint8)[:32] for t in texts], np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    sent: list[int] = []

    async def run() -> None:
        async def llm(prompt: str, system_prompt: str | None = None, history_messages: Any = None, **kw: Any) -> str:
            sent.append(_ntok(system_prompt or "") + _ntok(prompt))
            return ""

        rag = lightrag.LightRAG(
            working_dir=str(tmp_path / "rag"),
            workspace="g2cons_test_hosts",
            llm_model_func=llm,
            embedding_func=EmbeddingFunc(embedding_dim=32, func=embed, max_token_size=8192),
            tokenizer=Tokenizer("cl100k_base", Cl100k()),
            entity_extract_max_gleaning=0,
        )
        await rag.initialize_storages()
        files = sorted(out.glob("*.txt"))
        await rag.ainsert(
            [p.read_text(encoding="utf-8") for p in files],
            ids=[p.name for p in files],
            file_paths=[p.name for p in files],
        )
        await rag.finalize_storages()

    asyncio.run(run())
    assert len(sent) == rep["n_kept"]
    assert sum(sent) == rep["host_cost"]["selected"]["first_call_input_tokens"]  # exactly what LightRAG sends


# ---------------------------------------------------------------------------------------------- settings as YAML
def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_settings_yaml_values_are_copied_without_a_json_round_trip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import datetime

    import yaml

    extra = "last_run: 2024-01-01\nshared: &s {a: 1, when: 2023-05-06 07:08:09}\nother: *s\n"
    proj = _project(tmp_path / "proj", SETTINGS + extra, n=6)
    assert main(["select", "--root", str(proj), "--kappa", "0.5", *HASH]) == 0, capsys.readouterr().err
    core = yaml.safe_load((proj / "g2cons" / "settings.yaml").read_text(encoding="utf-8"))
    assert core["last_run"] == datetime.date(2024, 1, 1)
    assert core["other"] == core["shared"] == {"a": 1, "when": datetime.datetime(2023, 5, 6, 7, 8, 9)}
    assert core["chunking"]["size"] == 300 and core["input_storage"]["base_dir"] == "input"


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ("blob: !!binary aGVsbG8=\n", "key blob (line 37): YAML tag '!!binary'"),
        ("tags: !!set {a, b}\n", "key tags (line 37): YAML tag '!!set'"),
        ("cycle: &c [1, *c]\n", "key cycle[1] (line 37): a recursive alias"),
        (
            "obj: !!python/object/apply:os.system [ls]\n",
            "key obj (line 37): YAML tag '!!python/object/apply:os.system'",
        ),
        (
            "bomb:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                f"  {n}: &{n} [{', '.join(['*' + p] * 10)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
            ),
            "more than 100,000 values once its aliases are expanded",
        ),
        ("many:\n  a: &a 1\n" + "".join(f"  k{i}: *a\n" for i in range(70)), "more than 64 aliases"),
    ],
)
def test_settings_yaml_tags_and_aliases_refused_naming_the_key(
    tmp_path: Path, extra: str, needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    proj = _project(tmp_path / "proj", SETTINGS + extra, n=4)
    before = _snapshot(proj)
    assert main(["select", "--root", str(proj), *HASH]) == 2
    err = capsys.readouterr().err
    assert err.startswith("g2cons: error:") and "settings.yaml" in err and needle in err, err
    assert _snapshot(proj) == before and not (proj / "g2cons").exists() and _hidden(proj) == []


def test_core_root_is_written_all_or_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    from g2cons_plugins.cli import select as select_cmd

    proj = _project(tmp_path / "proj", n=6)
    real = select_cmd._save_graph

    def fail(*a: Any, **kw: Any) -> None:  # the disk fills up while the graph is saved, after input/ and settings
        raise OSError(28, "No space left on device", str(a[1]))

    monkeypatch.setattr(select_cmd, "_save_graph", fail)
    assert main(["select", "--root", str(proj), "--kappa", "0.5", *HASH]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert not (proj / "g2cons").exists() and _hidden(proj) == []  # nothing half-written, no temporary left
    monkeypatch.setattr(select_cmd, "_save_graph", real)
    assert main(["select", "--root", str(proj), "--kappa", "0.5", *HASH]) == 0
    earlier = _snapshot(proj / "g2cons")
    monkeypatch.setattr(select_cmd, "_save_graph", fail)
    assert main(["select", "--root", str(proj), "--kappa", "0.3", *HASH]) == 2
    assert _snapshot(proj / "g2cons") == earlier and _hidden(proj) == []  # the earlier one stands, whole


def test_core_root_is_replaced_only_when_all_ours(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proj = _project(tmp_path / "proj", n=8)
    sel = ["select", "--root", str(proj), "--kappa", "0.5", *HASH]
    assert main(sel) == 0
    core = proj / "g2cons"
    marker = json.loads((core / ".g2cons-output").read_text(encoding="utf-8"))
    assert {"settings.yaml", "selection_report.json", "graph/CURRENT"} <= set(marker["files"])
    new = tmp_path / "new.txt"
    new.write_text("Dana Li founded Umbrella in Oslo. Oslo is the capital of Norway.", encoding="utf-8")
    assert main(["add", str(core / "graph"), str(new), "--quiet"]) == 0  # the graph may change: still ours
    assert main(sel) == 0
    (core / "output").mkdir()  # what `graphrag index --root` writes there
    (core / "output" / "entities.parquet").write_bytes(b"PAR1")
    before = _snapshot(proj)
    capsys.readouterr()
    assert main(sel) == 2
    err = capsys.readouterr().err
    assert "output/" in err and "did not write" in err and _snapshot(proj) == before
    (core / "output" / "entities.parquet").unlink()
    (core / "output").rmdir()
    (core / "settings.yaml").write_text("edited: true\n", encoding="utf-8")
    assert main(sel) == 2 and "settings.yaml" in capsys.readouterr().err
    assert (core / "settings.yaml").read_text(encoding="utf-8") == "edited: true\n"


def test_core_root_of_an_earlier_version_is_replaced(tmp_path: Path) -> None:
    """Earlier versions marked only settings.yaml and the report at the top; input/ had its own marker."""
    proj = _project(tmp_path / "proj", n=8)
    sel = ["select", "--root", str(proj), "--kappa", "0.5", *HASH]
    assert main(sel) == 0
    core = proj / "g2cons"
    top = json.loads((core / ".g2cons-output").read_text(encoding="utf-8"))
    top["files"] = {k: v for k, v in top["files"].items() if "/" not in k}
    (core / ".g2cons-output").write_text(json.dumps(top), encoding="utf-8")
    assert (core / "input" / ".g2cons-output").is_file()
    assert main(sel) == 0
    (core / "graph" / "notes.txt").write_text("mine", encoding="utf-8")  # not a graph file: refused
    assert main(sel) == 2 and (core / "graph" / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_graphrag_report_has_one_avoided_figure_the_host_tokenizer_and_the_models_price(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """selection_report.json of a GraphRAG root: the top-level "avoided" numbers are host_cost.saved (gleanings
    counted), as printed; "tokenizer" is the encoding that chunked and priced (o200k_base, graphrag init's
    default); the price is the list price of the model settings.yaml names (gpt-4.1 here), and says so."""
    from g2cons_plugins.hosts.pipelines.prices import LIST_PRICES

    proj = _project(tmp_path / "proj", SETTINGS.replace("encoding_model: cl100k_base", "encoding_model: o200k_base"))
    assert main(["select", "--root", str(proj), "--kappa", "0.5", *HASH]) == 0
    printed = capsys.readouterr().out
    rep = json.loads((proj / "g2cons" / "selection_report.json").read_text(encoding="utf-8"))
    hc = rep["host_cost"]
    saved = hc["saved"]
    assert (rep["calls_avoided"], rep["input_tokens_avoided"], rep["usd_avoided"]) == (
        saved["calls"], saved["input_tokens"], saved["usd"]
    )
    assert rep["calls_avoided"] == hc["calls_per_chunk"] * rep["n_dropped"] > rep["n_dropped"]
    assert rep["tokenizer"] == hc["encoding_model"] == "o200k_base"
    assert rep["price_per_mtok"] == hc["price_per_mtok"] == LIST_PRICES["gpt-4.1"][0]
    assert "completion_models.default_completion_model.model" in rep["price_source"]
    assert "gpt-4.1 list price" in printed and f"${LIST_PRICES['gpt-4.1'][0]}/1M" in printed
    # a price given wins, and is said to be given
    assert main(["select", "--root", str(proj), "--dry-run", "--price-per-mtok", "0.5", "--json", *HASH]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["price_per_mtok"] == 0.5 and "given" in rep["price_source"]


@pytest.mark.parametrize(
    ("settings", "model", "where"),
    [
        ({"completion_models": {"default_completion_model": {"model": "gpt-4o-mini-2024-07-18"}}}, "gpt-4o-mini",
         "completion_models.default_completion_model.model"),
        ({"models": {"default_chat_model": {"model": "gpt-4-turbo-preview"}}}, "gpt-4-turbo",
         "models.default_chat_model.model"),
        ({"llm": {"model": "gpt-4o"}}, "gpt-4o", "llm.model"),
    ],
)
def test_price_follows_the_model_each_graphrag_settings_version_names(settings: Any, model: str, where: str) -> None:
    from g2cons_plugins.hosts.pipelines.prices import LIST_PRICES, graphrag_model, resolve_price

    found = graphrag_model(settings)
    assert found is not None and found[1] == where
    price = resolve_price(None, found)
    assert price.per_mtok == LIST_PRICES[model][0] and found[0] in price.source
    unknown = resolve_price(None, ("my-local-llama", "llm.model"))
    assert unknown.per_mtok == LIST_PRICES["gpt-4o-mini"][0] and "no listed price" in unknown.source
