"""Both adapters' selectors honour ``show_progress`` and ``cache_dir``, and the same thing has the same parameter
name in both (LlamaIndex retrievers say ``similarity_top_k`` where LangChain ones say ``k``, as each host does)."""

from __future__ import annotations

import inspect
import os
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


def li_run(**kw: Any) -> Any:
    sel = li.CoreChunkSelector(kappa=0.5, embedder="hash", **kw)
    sel([TextNode(id_=i, text=t) for i, t in CORPUS])
    return sel


def lc_run(**kw: Any) -> Any:
    sel = lc.CoreChunkSelector(kappa=0.5, embedder="hash", **kw)
    sel.transform_documents([Document(page_content=t) for _, t in CORPUS])
    return sel


@pytest.mark.parametrize("run", [li_run, lc_run], ids=["llama_index", "langchain"])
def test_show_progress_and_cache_dir_are_honoured(run: Any, tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    run()
    assert "split" not in capfd.readouterr().err  # quiet by default
    cache = tmp_path / "emb"
    sel = run(show_progress=True, cache_dir=cache)
    err = capfd.readouterr().err
    assert "split" in err and "100%" in err  # the core's progress bar
    files = [p for p in cache.rglob("*") if p.is_file()]
    assert files  # the embedding cache is on disk
    again = run(cache_dir=cache)
    assert again.index.stats == sel.index.stats


def _params(obj: Any) -> set[str]:
    if isinstance(obj, type) and hasattr(obj, "model_fields") and obj.__init__ is object.__init__:
        return set(obj.model_fields)
    names = set(inspect.signature(obj).parameters)
    return names | set(getattr(obj, "model_fields", {}))


def test_same_names_for_the_same_settings() -> None:
    selector = {"kappa", "kappa_by", "selector", "embedder", "config", "cache_dir", "show_progress"}
    selector |= {"price_per_mtok", "prompt_tokens_per_call"}
    assert selector <= _params(li.CoreChunkSelector.from_defaults)
    assert selector <= _params(lc.CoreChunkSelector)
    concept = {"beta", "strategy"}
    fused = concept | {"lambda_", "spill"}
    assert concept | {"similarity_top_k"} <= _params(li.ConceptGraphRetriever)
    assert fused | {"similarity_top_k"} <= _params(li.G2ConSRetriever)
    assert concept | {"k"} <= _params(lc.ConceptGraphRetriever)
    assert fused | {"k"} <= _params(lc.G2ConSRetriever)
    # the concept graph: g2cons_index in LlamaIndex (where index= is the host index, as in LlamaIndex's own
    # from_defaults), index in LangChain (no host index there)
    assert "g2cons_index" in _params(li.G2ConSRetriever) and "g2cons_index" in _params(li.G2ConSRetriever.from_defaults)
    assert "index" in _params(li.G2ConSRetriever.from_defaults)
