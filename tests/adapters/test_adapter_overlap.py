"""A corpus whose chunks overlap heavily (a splitter's ``chunk_overlap`` as large as its ``chunk_size``, or
duplicated text) is noticed by the core (``g2cons_plugins.hosts.pipelines.overlap``) and named in one warning by both
adapters' selectors, with the share of overlapping chunks; a corpus split without overlap gives no warning."""

from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from g2cons_plugins.hosts.pipelines.overlap import chunk_overlap, warn_if_overlapping  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "examples" / "data" / "musique_excerpt_corpus.jsonl"


def passages(n: int) -> list[str]:
    with DATA.open(encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh][:n]


def sliding(texts: list[str], size: int, step: int) -> list[str]:
    """Word windows of ``size`` every ``step`` words (a splitter with overlap ``size - step``)."""
    out = []
    for t in texts:
        w = t.split()
        out += [" ".join(w[i : i + size]) for i in range(0, max(len(w) - size, 0) + 1, step)]
    return out


def test_distinct_passages_do_not_overlap() -> None:
    rep = chunk_overlap(passages(60))
    assert rep.n_chunks == 60 and rep.share < 0.05


def test_heavy_overlap_and_duplicates_are_measured() -> None:
    heavy = sliding(passages(40), 60, 10)  # each chunk repeats 5/6 of the previous one
    rep = chunk_overlap(heavy)
    assert rep.share > 0.8
    light = sliding(passages(40), 60, 54)  # 10% overlap: an ordinary splitter setting
    assert chunk_overlap(light).share < 0.05
    dup = passages(10) + passages(10)[:5] + ["short text", "short text", "", "another short one"]
    rep = chunk_overlap(dup)
    assert set(range(5)) | set(range(10, 15)) | {15, 16} == set(rep.overlapping) and rep.n_chunks == 18


def test_the_warning_names_the_share_and_the_fix() -> None:
    heavy = sliding(passages(20), 60, 10)
    with pytest.warns(UserWarning, match=r"Who: \d+ of \d+ chunks \(\d+%\) repeat .*chunk_overlap=0") as rec:
        rep = warn_if_overlapping(heavy, "Who")
    share = int(re.search(r"\((\d+)%\)", str(rec[0].message)).group(1))
    assert share == round(100 * rep.share)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_overlapping(passages(60), "Who")


def test_langchain_selector_warns_on_the_default_splitter_overlap() -> None:
    lc = pytest.importorskip("langchain_g2cons")
    from langchain_core.documents import Document
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    docs = [Document(page_content=t) for t in passages(30)]
    chunks = RecursiveCharacterTextSplitter(chunk_size=200, length_function=lc.token_length()).split_documents(docs)
    with pytest.warns(UserWarning, match=r"CoreChunkSelector: \d+ of \d+ chunks \(\d+%\)"):
        lc.CoreChunkSelector(kappa=0.8, embedder="hash").transform_documents(chunks)
    flat = RecursiveCharacterTextSplitter(
        chunk_size=300, chunk_overlap=0, length_function=lc.token_length()
    ).split_documents(docs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        lc.CoreChunkSelector(kappa=0.8, embedder="hash").transform_documents(flat)
    assert list(lc.CoreChunkSelector(embedder="hash").transform_documents([])) == []


def test_llama_index_selector_warns_on_overlapping_nodes() -> None:
    li = pytest.importorskip("llama_index.retrievers.g2cons")
    from llama_index.core.schema import TextNode

    nodes = [TextNode(id_=f"n{i}", text=t) for i, t in enumerate(sliding(passages(20), 60, 10))]
    with pytest.warns(UserWarning, match=r"CoreChunkSelector: \d+ of \d+ nodes \(\d+%\)"):
        li.CoreChunkSelector(kappa=0.8, embedder="hash").fit(nodes)
    plain = [TextNode(id_=f"p{i}", text=t) for i, t in enumerate(passages(30))]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        li.CoreChunkSelector(kappa=0.8, embedder="hash").fit(plain)
