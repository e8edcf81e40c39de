"""With ``show_progress`` every build stage shows a bar (split, embedding, the concept graph), in the core and
through both adapters' selectors; LlamaIndex's own ``show_progress`` (``from_documents(..., show_progress=True)``
passes it to every transformation) turns the selector's bars on; nothing is printed without it."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from g2cons_plugins import G2ConSIndex  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "examples" / "data" / "musique_excerpt_corpus.jsonl"


def _rows(n: int) -> list[dict]:
    return [json.loads(x) for x in DATA.read_text(encoding="utf-8").splitlines()][:n]


def _bars(run) -> set[str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        run()
    text = err.getvalue().replace("\r", "\n")
    return {line.split(":")[0].strip() for line in text.splitlines() if "%|" in line}


def test_core_build_shows_every_stage() -> None:
    chunks = [{"id": r["id"], "text": r["text"]} for r in _rows(60)]
    assert _bars(lambda: G2ConSIndex.build(chunks, embedder="hash", show_progress=True)) >= {
        "split", "embed units", "concept graph"
    }
    assert _bars(lambda: G2ConSIndex.build(chunks, embedder="hash")) == set()


def test_langchain_selector_shows_every_stage() -> None:
    lc = pytest.importorskip("langchain_g2cons")
    from langchain_core.documents import Document

    docs = [Document(page_content=r["text"]) for r in _rows(40)]
    sel = lc.CoreChunkSelector(embedder="hash", show_progress=True)
    assert _bars(lambda: sel.transform_documents(docs)) >= {"split", "embed units", "concept graph"}


def test_llama_index_selector_follows_the_hosts_show_progress() -> None:
    li = pytest.importorskip("llama_index.retrievers.g2cons")
    from llama_index.core.schema import TextNode

    nodes = [TextNode(id_=r["id"], text=r["text"]) for r in _rows(40)]
    quiet = li.CoreChunkSelector(embedder="hash")
    assert _bars(lambda: quiet(nodes)) == set()
    host_flag = li.CoreChunkSelector(embedder="hash")
    assert _bars(lambda: host_flag(nodes, show_progress=True)) >= {"split", "embed units", "concept graph"}
