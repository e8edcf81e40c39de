"""Both adapters: every retriever setting survives save/load (LangChain) and persist/from_persist_dir
(LlamaIndex), checked by equal settings and equal results; retrievers, selectors and indexes pickle and deep-copy."""

from __future__ import annotations

import copy
import json
import os
import pickle
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytest.importorskip("langchain_g2cons")
pytest.importorskip("llama_index.retrievers.g2cons")

import langchain_g2cons as lc  # noqa: E402
import llama_index.retrievers.g2cons as li  # noqa: E402
from conftest import CORPUS  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402
from test_langchain_adapter import WordOverlapRetriever  # noqa: E402

from g2cons_plugins import G2ConSConfig  # noqa: E402
from g2cons_plugins.hosts.pipelines.integration import SETTINGS_FILE  # noqa: E402

QUERIES = ["Where was Marie Curie born?", "Who discovered radioactivity?", "Which river flows through Warsaw?"]
# every setting away from its default, so a lost one changes the results or the settings
CFG = G2ConSConfig(beta=5000)


def lc_out(r: Any) -> list[Any]:
    return [[(d.id, d.page_content, d.metadata.get("relevance_score")) for d in r.invoke(q)] for q in QUERIES]


def li_out(r: Any) -> list[Any]:
    return [[(n.node.node_id, n.score, n.node.get_content()) for n in r.retrieve(q)] for q in QUERIES]


@pytest.fixture(scope="module")
def lc_parts() -> dict[str, Any]:
    docs = [Document(page_content=t) for _, t in CORPUS]
    sel = lc.CoreChunkSelector(kappa=0.5, kappa_by="chunks", embedder="hash", config=CFG)
    kept = list(sel.transform_documents(docs))
    return {"sel": sel, "host": WordOverlapRetriever(docs=kept, k=3)}


@pytest.fixture(scope="module")
def li_parts() -> dict[str, Any]:
    nodes = [TextNode(id_=i, text=t) for i, t in CORPUS]
    sel = li.CoreChunkSelector(kappa=0.5, kappa_by="chunks", embedder="hash", config=CFG)
    kept = sel(nodes)
    host = li.ConceptGraphRetriever.from_defaults(nodes=kept, embedder="hash", beta=80)  # a stand-in host
    return {"sel": sel, "host": host}


def test_langchain_save_load_keeps_every_setting(lc_parts, tmp_path: Path) -> None:
    sel, host = lc_parts["sel"], lc_parts["host"]
    fused = lc.G2ConSRetriever(
        host=host, index=sel.index, beta=1500, lambda_=0.7, spill=False, k=4, strategy="paper", id_key="g2cons_id",
        fusion="ensemble",
    )
    fused.save(tmp_path / "fused")
    again = lc.G2ConSRetriever.load(tmp_path / "fused", host=host)
    assert again.settings() == fused.settings() == {
        "beta": 1500, "lambda_": 0.7, "spill": False, "k": 4, "strategy": "paper", "id_key": "g2cons_id",
        "fusion": "ensemble",
    }
    assert lc_out(again) == lc_out(fused)
    assert lc.G2ConSRetriever.load(tmp_path / "fused", host=host, beta=60).beta == 60  # kwargs override
    concept = lc.ConceptGraphRetriever(index=sel.index, beta=120, k=2, strategy="ppr")
    concept.save(tmp_path / "concept")
    back = lc.ConceptGraphRetriever.load(tmp_path / "concept")
    assert back.settings() == concept.settings() and lc_out(back) == lc_out(concept)
    with pytest.raises(Exception, match="'concept' retriever"):
        lc.G2ConSRetriever.load(tmp_path / "concept", host=host)
    saved = json.loads((tmp_path / "fused" / SETTINGS_FILE).read_text())
    assert saved["kind"] == "g2cons" and saved["settings"]["beta"] == 1500
    # a bare index directory (selector.save) still loads, with default settings
    sel.save(tmp_path / "bare")
    assert lc.ConceptGraphRetriever.load(tmp_path / "bare").beta is None


def test_llama_index_persist_keeps_every_setting(li_parts, tmp_path: Path) -> None:
    sel, host = li_parts["sel"], li_parts["host"]
    fused = li.G2ConSRetriever(
        sel.index, host, beta=1500, lambda_=0.7, spill=False, strategy="paper", similarity_top_k=4, fusion="ensemble"
    )
    fused.persist(tmp_path)
    again = li.G2ConSRetriever.from_persist_dir(tmp_path, host_retriever=host)
    assert again.settings() == fused.settings() == {
        "beta": 1500, "lambda_": 0.7, "spill": False, "strategy": "paper", "similarity_top_k": 4,
        "fusion": "ensemble",
    }
    assert li_out(again) == li_out(fused)
    concept = li.ConceptGraphRetriever(sel.index, beta=120, strategy="ppr", similarity_top_k=2)
    concept.persist(tmp_path / "c")
    back = li.ConceptGraphRetriever.from_persist_dir(tmp_path / "c")
    assert back.settings() == concept.settings() and li_out(back) == li_out(concept)
    sel.persist(tmp_path / "s")
    s2 = li.CoreChunkSelector.from_persist_dir(tmp_path / "s")
    assert s2.model_dump() == sel.model_dump() | {"persist_dir": str(tmp_path / "s")}
    assert (s2.kept_ids, s2.dropped_ids) == (sel.kept_ids, sel.dropped_ids)


def test_llama_index_reads_the_settings_file_of_version_0_1(li_parts, tmp_path: Path) -> None:
    sel, host = li_parts["sel"], li_parts["host"]
    li.G2ConSRetriever(sel.index, host, beta=700).persist(tmp_path)
    (tmp_path / SETTINGS_FILE).write_text(json.dumps({"kind": "g2cons", "beta": 333, "lambda_": 0.2, "spill": True}))
    again = li.G2ConSRetriever.from_persist_dir(tmp_path, host_retriever=host)
    assert (again.beta, again.lambda_, again.spill) == (333, 0.2, True)


def _roundtrips(obj: Any) -> list[Any]:
    return [pickle.loads(pickle.dumps(obj)), copy.deepcopy(obj)]


def test_retrievers_selectors_and_indexes_pickle_and_deepcopy(lc_parts, li_parts) -> None:
    sel, host = lc_parts["sel"], lc_parts["host"]
    for r in (lc.G2ConSRetriever(host=host, index=sel.index, beta=150, k=3), sel.as_retriever(beta=100)):
        for r2 in _roundtrips(r):
            assert r2.settings() == r.settings() and lc_out(r2) == lc_out(r)
    for s2 in _roundtrips(sel):
        assert s2.report == sel.report and s2.index.chunks == sel.index.chunks
    lsel, lhost = li_parts["sel"], li_parts["host"]
    for r in (li.G2ConSRetriever(lsel.index, lhost, beta=150), li.ConceptGraphRetriever(lsel.index, beta=90)):
        for r2 in _roundtrips(r):
            assert r2.settings() == r.settings() and li_out(r2) == li_out(r)
    for idx in _roundtrips(lsel.index):
        assert idx.retrieve(QUERIES[0]) == lsel.index.retrieve(QUERIES[0])
    # the LlamaIndex selector pickles without its concept graph (IngestionPipeline workers only filter by the
    # selection); deepcopy keeps it
    pickled, deep = _roundtrips(lsel)
    assert pickled.kept_ids == lsel.kept_ids and deep.index.chunks == lsel.index.chunks
