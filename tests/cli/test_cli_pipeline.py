"""``g2cons`` subcommands on a host pipeline's input: select/build/query/fuse/add/remove, bad input, and the hand-off
to LightRAG (``lightrag-hku``) and MS GraphRAG's input loader (``graphrag-input``) when those are installed.

Offline and fast: the ``hash`` embedder, small folders written to tmp_path. The LightRAG test replaces its LLM and
embedding functions with counting offline ones.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from g2cons_plugins import G2ConSIndex
from g2cons_plugins.cli import main
from g2cons_plugins.hosts.pipelines.corpus_io import chunk_documents, read_corpus, split_tokens
from g2cons_plugins.storage.persistence import is_index_dir
from g2cons_plugins.text import get_tokenizer

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "data" / "musique_excerpt_corpus.jsonl"
KETRAG = ROOT.parent / "shared" / "data" / "musique" / "ketrag500_corpus.jsonl"
HASH = ["--embedder", "hash", "--quiet"]


def _passages(n: int, start: int = 0) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows[start : start + n]


def _write_folder(folder: Path, rows: list[dict[str, Any]], long_doc: int = 0) -> Path:
    """One .txt per passage (``p000.txt`` ...), a .md in a subfolder, and optionally a long multi-chunk doc."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, r in enumerate(rows):
        name = f"sub/p{i:03d}.md" if i == 0 else f"p{i:03d}.txt"
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(f"{r['title']}\n{r['text']}\n", encoding="utf-8")
    if long_doc:
        text = "\n\n".join(f"{r['title']}. {r['text']}" for r in _passages(long_doc, start=300))
        (folder / "long.txt").write_text(text, encoding="utf-8")
    return folder


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _ntok(text: str) -> int:
    return len(get_tokenizer().encode(text))


def _chunks_of(graph: Path) -> dict[str, dict[str, Any]]:
    idx = G2ConSIndex.load(graph)
    tokens = dict(zip((c.id for c in idx.chunks), idx.stored.chunk_tokens.tolist(), strict=True))
    return {
        c.id: {"id": c.id, "text": c.text, "metadata": dict(c.metadata), "n_tokens": tokens[c.id]} for c in idx.chunks
    }


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write_folder(tmp_path_factory.mktemp("in") / "input", _passages(60), long_doc=40)


# ---------------------------------------------------------------------------------------------- help
@pytest.mark.parametrize("cmd", ["eval", "build", "select", "query", "fuse", "add", "remove", "export", "show"])
def test_help_on_every_subcommand(cmd: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main([cmd, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: g2cons {cmd}")


# ---------------------------------------------------------------------------------------------- select
def test_select_folder_roundtrip_exact_chunks_and_tokens(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "core"
    assert main(["select", str(folder), "--kappa", "0.6", "--out", str(out), *HASH]) == 0
    printed = capsys.readouterr().out
    assert "kept" in printed and "dropped" in printed and "LLM calls" in printed and "$" in printed
    report = json.loads(out.with_name("core.selection_report.json").read_text())
    graph = tmp_path / "core.g2cons"
    assert report["graph"] == str(graph) and is_index_dir(graph)
    chunks = _chunks_of(graph)
    assert set(chunks) == set(report["kept_ids"]) | set(report["dropped_ids"])
    assert any("#" in cid for cid in chunks)  # long.txt was split like MS GraphRAG does

    written = {p.relative_to(out).as_posix(): p.read_text(encoding="utf-8") for p in out.rglob("*") if p.is_file()}
    marker = json.loads(written.pop(".g2cons-output"))  # what g2cons wrote here, so a rerun may replace it
    assert set(marker["files"]) == set(written)  # the report lies beside the output, not in it
    # exactly the kept chunks, one file each, text byte for byte
    assert len(written) == len(report["kept_ids"]) == report["n_kept"]
    assert sorted(written.values()) == sorted(chunks[i]["text"] for i in report["kept_ids"])
    # a document that is one chunk keeps its name and content; a split one gives name.partNNNN.txt
    for cid in report["kept_ids"]:
        if "#" in cid:
            name = f"long.part{int(cid.split('#')[1]):04d}.txt"
            assert written[name] == chunks[cid]["text"]
        else:
            assert written[cid] == (folder / cid).read_text(encoding="utf-8")
    # the report's token counts are tiktoken cl100k counts of what was written
    assert report["kept_tokens"] == sum(_ntok(t) for t in written.values())
    assert report["total_tokens"] == sum(_ntok(c["text"]) for c in chunks.values())
    assert report["dropped_tokens"] == report["total_tokens"] - report["kept_tokens"]
    assert report["kept_tokens"] <= 0.6 * report["total_tokens"]
    assert report["calls_avoided"] == report["n_dropped"] > 0
    assert report["usd_avoided"] == pytest.approx(report["dropped_tokens"] / 1e6 * 0.15)
    # the saved graph is a normal index
    assert len(G2ConSIndex.load(graph).chunks) == len(chunks)

    # running again into the same output replaces it (it is an earlier g2cons output)
    assert main(["select", str(folder), "--kappa", "0.3", "--out", str(out), *HASH]) == 0
    again = json.loads(out.with_name("core.selection_report.json").read_text())
    assert len([p for p in out.rglob("*.txt")] + [p for p in out.rglob("*.md")]) == again["n_kept"]


def test_select_dry_run_writes_nothing(folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    work = tmp_path / "w"
    work.mkdir()
    before, src = _snapshot(tmp_path), _snapshot(folder)
    assert main(["select", str(folder), "--dry-run", "--out", str(work / "core"), *HASH]) == 0
    printed = capsys.readouterr().out
    assert "dry run: nothing written" in printed and "LLM calls" in printed
    assert _snapshot(tmp_path) == before and _snapshot(folder) == src
    assert main(["select", str(folder), "--dry-run", "--json", *HASH]) == 0  # no --out needed
    rep = json.loads(capsys.readouterr().out)
    assert rep["dry_run"] is True and rep["output"] is None and rep["n_kept"] + rep["n_dropped"] > 60


def test_select_csv_keeps_columns_and_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _passages(40)
    src = tmp_path / "docs.csv"
    with src.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["id", "title", "body", "year"])
        w.writeheader()
        for r in rows:
            w.writerow({"id": r["id"], "title": r["title"], "body": r["text"] + '\nsecond line, "quoted"', "year": 7})
    out = tmp_path / "core.csv"
    graph = tmp_path / "mygraph"
    args = ["select", str(src), "--text-column", "body", "--kappa", "0.5", "--out", str(out), "--graph", str(graph)]
    assert main([*args, *HASH]) == 0
    report = json.loads((tmp_path / "core.selection_report.json").read_text())
    assert report["graph"] == str(graph) and is_index_dir(graph)
    with src.open(encoding="utf-8", newline="") as fh:
        by_id = {r["id"]: r for r in csv.DictReader(fh)}
    with out.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == ["id", "title", "body", "year"]
        kept = list(reader)
    assert sorted(r["id"] for r in kept) == sorted(report["kept_ids"])
    assert all(r == by_id[r["id"]] for r in kept)  # the rows, unchanged, all columns
    assert report["kept_tokens"] == sum(_ntok(r["body"]) for r in kept)


def test_select_jsonl_corpus_records_unchanged(tmp_path: Path) -> None:
    out = tmp_path / "core.jsonl"
    assert main(["select", str(CORPUS), "--kappa", "0.8", "--out", str(out), *HASH]) == 0
    report = json.loads((tmp_path / "core.selection_report.json").read_text())
    src = {r["id"]: r for r in _passages(400)}
    kept = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert report["n_kept"] + report["n_dropped"] == 400 and len(kept) == report["n_kept"]
    assert all(r == src[r["id"]] for r in kept)
    assert [r["id"] for r in kept] == [i for i in src if i in set(report["kept_ids"])]  # input order
    assert report["kept_tokens"] == sum(_ntok(r["text"]) for r in kept)
    assert report["kept_tokens"] <= 0.8 * report["total_tokens"]


def test_chunking_is_ms_graphrags_token_splitter() -> None:
    tok = get_tokenizer()
    text = " ".join(r["text"] for r in _passages(30))
    ids = tok.encode(text)
    pieces = split_tokens(text, tok, 500, 50)
    assert pieces == [tok.decode(ids[s : s + 500]) for s in range(0, len(ids) - 50, 450)]
    assert split_tokens("short text", tok, 500, 50) == ["short text"]
    chunks = chunk_documents(read_corpus(CORPUS).documents[:3], 0, 0)
    assert [c.id for c in chunks] == [r["id"] for r in _passages(3)]  # 0 = one chunk per document
    gc = pytest.importorskip("graphrag_chunking.token_chunker")
    assert pieces == gc.split_text_on_tokens(text, 500, 50, tok.encode, tok.decode)


# ---------------------------------------------------------------------------------------------- bad input
def _fails(args: list[str], capsys: pytest.CaptureFixture[str], *needles: str) -> None:
    opts = HASH if args[0] in ("build", "select") else []
    assert main([*args, *opts]) == 2
    err = capsys.readouterr().err
    assert err.startswith("g2cons: error:") and "Traceback" not in err
    for n in needles:
        assert n in err, err


def test_bad_input_exits_2_with_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "out")
    _fails(["select", str(tmp_path / "nope"), "--out", out], capsys, "no such file or folder")
    (tmp_path / "nofiles").mkdir()
    (tmp_path / "nofiles" / "data.bin").write_bytes(b"xx")
    _fails(["select", str(tmp_path / "nofiles"), "--out", out], capsys, "no .txt or .md files")
    empty = _write_folder(tmp_path / "empty", _passages(3))
    (empty / "blank.txt").write_text("  \n", encoding="utf-8")
    _fails(["select", str(empty), "--out", out], capsys, "blank.txt: empty file")
    with pytest.warns(UserWarning, match="empty file skipped"):  # opt-in: skipped with a warning
        assert main(["select", str(empty), "--out", out, "--skip-empty", *HASH]) == 0
    binary = _write_folder(tmp_path / "binary", _passages(3))
    (binary / "image.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    _fails(["build", str(binary), "--graph", str(tmp_path / "g")], capsys, "image.txt: binary file")
    (binary / "image.txt").write_bytes(b"caf\xe9 latin-1")
    _fails(["build", str(binary), "--graph", str(tmp_path / "g")], capsys, "image.txt: not valid utf-8")
    data = tmp_path / "d.csv"
    data.write_text("id,body\n1,hello world\n", encoding="utf-8")
    _fails(["select", str(data), "--out", str(tmp_path / "o.csv")], capsys, "no column 'text'", "['id', 'body']")
    (tmp_path / "e.jsonl").write_text("", encoding="utf-8")
    _fails(["select", str(tmp_path / "e.jsonl"), "--dry-run"], capsys, "empty file")
    _fails(["select", str(empty), "--skip-empty"], capsys, "needs --out")
    _fails(["select", str(empty), "--dry-run", "--chunk-tokens", "100", "--chunk-overlap", "100"], capsys, "overlap")
    assert not (tmp_path / "g").exists() and not (tmp_path / "o.csv").exists()


def test_unwritable_output_fails_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _write_folder(tmp_path / "in", _passages(5))
    blocker = tmp_path / "a_file"
    blocker.write_text("x", encoding="utf-8")
    _fails(["select", str(src), "--out", str(blocker / "core")], capsys, "cannot write output")
    _fails(["select", str(src), "--out", str(blocker)], capsys, "not a folder")
    full = tmp_path / "full"
    full.mkdir()
    (full / "mine.txt").write_text("keep me", encoding="utf-8")
    _fails(["select", str(src), "--out", str(full)], capsys, "not empty")
    _fails(["select", str(src), "--out", str(src / "core")], capsys, "is inside INPUT")
    _fails(
        ["select", str(src), "--out", str(tmp_path / "ok"), "--graph", str(full)],
        capsys,
        "not a graph written by the g2cons",
    )
    if hasattr(os, "geteuid") and os.geteuid() != 0:  # root ignores permission bits
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        try:
            _fails(["select", str(src), "--out", str(ro / "core")], capsys, "cannot write output")
        finally:
            ro.chmod(0o700)
    assert (full / "mine.txt").read_text(encoding="utf-8") == "keep me"
    assert not (tmp_path / "ok").exists() and not (tmp_path / "ok.g2cons").exists()


# ---------------------------------------------------------------------------------------------- build / query / fuse
def test_build_query_fuse(folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph = tmp_path / "g"
    assert main(["build", str(folder), "--graph", str(graph), *HASH]) == 0
    assert "graph saved to" in capsys.readouterr().out
    question = "Who developed person-centered therapy?"
    assert main(["query", str(graph), question, "--budget", "800", "--json"]) == 0
    items = json.loads(capsys.readouterr().out)
    assert items and sum(i["n_tokens"] for i in items) <= 800 and all(i["reason"] for i in items)
    host = [{"chunk_id": items[0]["chunk_id"], "score": 0.9}, {"text": "Carl Rogers was an American psychologist."}]
    (tmp_path / "host.json").write_text(json.dumps(host), encoding="utf-8")
    args = ["fuse", str(graph), question, "--host", str(tmp_path / "host.json"), "--budget", "800", "--json"]
    assert main([*args, "--lambda", "0.5"]) == 0
    cap = capsys.readouterr()
    fused = json.loads(cap.out)
    assert sum(f["n_tokens"] for f in fused) <= 800 and "<= budget 800" in cap.err
    assert fused[0]["source"] == "both" and fused[0]["chunk_id"] == items[0]["chunk_id"]
    assert any(f["source"] == "host" and f["chunk_id"] is None for f in fused)
    (tmp_path / "bad.json").write_text('[{"score": 1}]', encoding="utf-8")
    _fails(["fuse", str(graph), question, "--host", str(tmp_path / "bad.json")], capsys, "neither a chunk_id nor text")
    _fails(["fuse", str(graph), question, "--host", str(tmp_path / "none.json")], capsys, "no such host")
    _fails(["query", str(tmp_path / "missing"), "q"], capsys, "no such index directory")


# ---------------------------------------------------------------------------------------------- add / remove
def _same_graph(a: Path, b: Path, ids: dict[str, str] | None = None) -> None:
    """Same chunks (ids mapped by ``ids``: added files keep their path as id), same graph."""
    ia, ib = G2ConSIndex.load(a), G2ConSIndex.load(b)
    ids = ids or {}
    ca, cb = {ids.get(c.id, c.id): c.text for c in ia.chunks}, {c.id: c.text for c in ib.chunks}
    assert ca == cb
    assert ia.stats.to_dict() == ib.stats.to_dict()
    assert sorted(ia.derived.vocab) == sorted(ib.derived.vocab)


def test_add_and_remove_change_the_graph_and_equal_a_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # paths given relative, as a user types them
    rows = _passages(36)
    full = _write_folder(tmp_path / "full", rows, long_doc=12)
    part = tmp_path / "part"
    shutil.copytree(full, part)
    for name in ("p030.txt", "p031.txt", "p032.txt", "long.txt"):
        (part / name).unlink()
    graph = tmp_path / "g"
    assert main(["build", str(part), "--graph", str(graph), *HASH]) == 0
    n0 = len(_chunks_of(graph))
    extra = tmp_path / "extra"  # a folder given to add: ids are the files' paths as given (extra/long.txt)
    extra.mkdir()
    shutil.copy(full / "p032.txt", extra / "p032.txt")
    shutil.copy(full / "long.txt", extra / "long.txt")
    args = ["add", str(graph), "full/p030.txt", "./full//p031.txt", "extra/", "--quiet"]
    assert main(args) == 0
    assert "added 4 documents" in capsys.readouterr().out
    added = {c: c.split("/", 1)[1] for c in _chunks_of(graph) if c.startswith(("full/", "extra/"))}
    assert {c.split("#")[0] for c in added} == {"full/p030.txt", "full/p031.txt", "extra/p032.txt", "extra/long.txt"}
    assert len(_chunks_of(graph)) > n0 + 4  # long.txt is several chunks
    rebuilt = tmp_path / "rebuilt"
    assert main(["build", str(full), "--graph", str(rebuilt), *HASH]) == 0
    _same_graph(graph, rebuilt, added)
    _fails(["add", str(graph), "full/p030.txt"], capsys, "already in")

    # remove a whole document by the path it was added with (all of long.txt's chunks) and one by chunk id
    assert main(["remove", str(graph), "extra/long.txt", "full/p031.txt"]) == 0
    assert not any(c.startswith("extra/long.txt") for c in _chunks_of(graph)) and "full/p031.txt" not in _chunks_of(
        graph
    )
    (full / "long.txt").unlink()
    (full / "p031.txt").unlink()
    assert main(["build", str(full), "--graph", str(rebuilt), *HASH]) == 0
    _same_graph(graph, rebuilt, added)
    _fails(["remove", str(graph), "nope.txt"], capsys, "unknown chunk or document ids")


# ---------------------------------------------------------------------------------------------- host pipelines
def test_output_folder_is_ms_graphrag_text_input(folder: Path, tmp_path: Path) -> None:
    """MS GraphRAG's text input: every file matching ``.*\\.txt$`` under input/ is one document. Our output holds
    exactly the kept chunks as .txt (plus .md kept as .md) and the report as .json, which that pattern skips."""
    out = tmp_path / "core"
    assert main(["select", str(folder), "--kappa", "0.5", "--out", str(out), *HASH]) == 0
    report = json.loads(out.with_name("core.selection_report.json").read_text())
    pattern = re.compile(r".*\.txt$")  # graphrag's default file_pattern for input type "text"
    txt = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and pattern.match(p.name))
    md = [i for i in report["kept_ids"] if i.endswith(".md")]
    assert len(txt) + len(md) == report["n_kept"]
    tok = get_tokenizer()
    assert all(len(tok.encode((out / t).read_text(encoding="utf-8"))) <= 1200 for t in txt)  # one GraphRAG chunk each

    gi = pytest.importorskip("graphrag_input")
    from graphrag_storage.file_storage import FileStorage

    docs = asyncio.run(gi.create_input_reader(gi.InputConfig(), FileStorage(base_dir=str(out))).read_files())
    assert sorted(d.title for d in docs) == sorted(Path(t).name for t in txt)
    assert sum(len(tok.encode(d.text)) for d in docs) == report["kept_tokens"] - sum(
        len(tok.encode((out / m).read_text(encoding="utf-8"))) for m in md
    )


def test_lightrag_llm_calls_drop_to_the_selected_share(tmp_path: Path) -> None:
    lightrag = pytest.importorskip("lightrag")
    import numpy as np
    from lightrag.utils import EmbeddingFunc, Tokenizer

    src = _write_folder(tmp_path / "input", _passages(21, start=100))
    (src / "sub" / "p000.md").unlink()
    out = tmp_path / "core"
    args = ["select", str(src), "--kappa", "0.5", "--kappa-by", "chunks", "--out", str(out), *HASH]
    assert main(args) == 0
    report = json.loads(out.with_name("core.selection_report.json").read_text())
    assert report["n_kept"] == 10 and report["n_dropped"] == 10

    class Cl100k:  # LightRAG's default tokenizer downloads o200k_base; cl100k ships with g2cons
        def encode(self, s: str) -> list[int]:
            return get_tokenizer().encode(s)

        def decode(self, ids: list[int]) -> str:
            return get_tokenizer().decode(ids)

    async def embed(texts: list[str], **kw: Any) -> Any:
        v = np.array([np.frombuffer(hashlib.sha256(t.encode()).digest(), np.uint8)[:32] for t in texts], np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    async def insert(folder: Path) -> int:
        calls: list[str] = []

        async def llm(prompt: str, system_prompt: str | None = None, history_messages: Any = None, **kw: Any) -> str:
            calls.append(prompt)
            return ""

        rag = lightrag.LightRAG(
            working_dir=str(tmp_path / f"rag_{folder.name}"),
            workspace=f"g2cons_test_{folder.name}",  # LightRAG shares in-process state per workspace
            llm_model_func=llm,
            embedding_func=EmbeddingFunc(embedding_dim=32, func=embed, max_token_size=8192),
            tokenizer=Tokenizer("cl100k_base", Cl100k()),
            entity_extract_max_gleaning=0,
            chunk_token_size=1200,
            chunk_overlap_token_size=100,
            max_parallel_insert=8,
        )
        await rag.initialize_storages()
        files = sorted(p for p in folder.rglob("*.txt"))
        await rag.ainsert(
            [p.read_text(encoding="utf-8") for p in files],
            ids=[p.name for p in files],
            file_paths=[p.name for p in files],
        )
        await rag.finalize_storages()
        return len(calls)

    full_calls = asyncio.run(insert(src))
    kept_calls = asyncio.run(insert(out))
    assert full_calls == 20 and kept_calls == 10  # one extraction call per chunk: calls drop to the kept share
    assert kept_calls / full_calls == report["n_kept"] / (report["n_kept"] + report["n_dropped"])


# ---------------------------------------------------------------------------------------------- measurement
@pytest.mark.skipif(not os.environ.get("G2CONS_MEASURE"), reason="measurement; set G2CONS_MEASURE=1")
def test_measure_dry_run_on_ketrag500(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``g2cons select --dry-run`` on musique/ketrag500 written as one text folder (target <= 30 s, wordllama)."""
    pytest.importorskip("wordllama")
    if not KETRAG.is_file():
        pytest.skip(f"{KETRAG} not found")
    folder = tmp_path / "ketrag500"
    folder.mkdir()
    for i, line in enumerate(KETRAG.read_text(encoding="utf-8").splitlines()):
        r = json.loads(line)
        (folder / f"{i:05d}.txt").write_text(f"{r.get('title') or ''}\n{r['text']}", encoding="utf-8")
    t0 = time.perf_counter()
    assert main(["select", str(folder), "--dry-run", "--embedder", "wordllama", "--quiet", "--json"]) == 0
    seconds = time.perf_counter() - t0
    rep = json.loads(capsys.readouterr().out)
    with capsys.disabled():
        print(
            f"\nketrag500 select --dry-run (wordllama): {seconds:.1f} s, {rep['n_documents']} files, "
            f"{rep['n_kept'] + rep['n_dropped']} chunks, kept {rep['n_kept']} ({rep['kept_share_tokens']:.1%} tokens)"
        )
