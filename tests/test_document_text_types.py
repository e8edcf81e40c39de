"""A document or node whose text is not a ``str`` (None, a number, bytes, a list, any object) is refused with an
``InputError`` that names it, through the core and both adapters' selectors and retrievers; metadata nested deeper
than ``MAX_METADATA_DEPTH`` is refused the same way (it used to raise ``RecursionError`` at the save), and metadata
up to that depth saves and loads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g2cons_plugins import Chunk, G2ConSIndex, InputError, make_chunks
from g2cons_plugins.chunks import MAX_METADATA_DEPTH

NOT_TEXT = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.binary(max_size=64),
    st.lists(st.text(max_size=5), max_size=4),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.tuples(st.integers()),
    st.builds(object),
)
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _nested(depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    cur = out
    for _ in range(depth - 1):
        cur["k"] = {}
        cur = cur["k"]
    return out


@SETTINGS
@given(bad=NOT_TEXT)
def test_the_core_names_a_chunk_whose_text_is_not_text(bad: Any) -> None:
    rows: list[Any] = [{"id": i, "text": t} for i, t in CORPUS]
    for form in ({"id": "bad-one", "text": bad}, ("bad-one", bad), Chunk("bad-one", bad)):
        with pytest.raises(InputError, match="bad-one"):
            make_chunks([*rows[:3], form, *rows[3:]])


@SETTINGS
@given(bad=NOT_TEXT)
def test_the_langchain_adapter_names_a_document_whose_text_is_not_text(bad: Any) -> None:
    lc = pytest.importorskip("langchain_g2cons")
    from langchain_core.documents import Document

    docs = [Document(page_content=t, id=i) for i, t in CORPUS]
    docs[2] = Document.model_construct(page_content=bad, id="bad-one", metadata={})
    with pytest.raises(InputError, match=r"document #2, id 'bad-one' has text of type"):
        lc.CoreChunkSelector(kappa=0.5, embedder="hash").transform_documents(docs)
    with pytest.raises(InputError, match="bad-one"):
        lc.ConceptGraphRetriever.from_documents(docs, embedder="hash")
    sel = lc.CoreChunkSelector(kappa=0.5, embedder="hash")
    sel.transform_documents(docs[:2])
    with pytest.raises(InputError, match="bad-one"):
        sel.add_documents(docs[2:4])


@SETTINGS
@given(bad=NOT_TEXT)
def test_the_llama_index_adapter_names_a_node_whose_text_is_not_text(bad: Any) -> None:
    li = pytest.importorskip("llama_index.retrievers.g2cons")
    from llama_index.core.schema import TextNode

    nodes = [TextNode(id_=i, text=t) for i, t in CORPUS]
    nodes[2] = TextNode.model_construct(id_="bad-one", text=bad, metadata={})
    with pytest.raises(InputError, match=r"node 'bad-one'.* has text of type"):
        li.CoreChunkSelector(kappa=0.5, embedder="hash")(nodes)
    with pytest.raises(InputError, match="bad-one"):
        li.ConceptGraphRetriever.from_defaults(nodes=nodes, embedder="hash")


def test_metadata_nested_too_deep_is_refused_naming_the_document(tmp_path: Path) -> None:
    deep = _nested(500)
    rows: list[Any] = [{"id": i, "text": t} for i, t in CORPUS]
    with pytest.raises(InputError, match=r"'c3'.*metadata nests more than"):
        G2ConSIndex.build([{**r, "metadata": deep if r["id"] == "c3" else {}} for r in rows], embedder="hash")
    with pytest.raises(InputError, match=r"'c3'.*metadata nests more than"):
        make_chunks([Chunk(i, t, deep if i == "c3" else {}) for i, t in CORPUS])
    with pytest.raises(InputError, match="metadata must be a mapping"):
        make_chunks([{"id": "x", "text": "Some text.", "metadata": ["not", "a", "mapping"]}])
    lc = pytest.importorskip("langchain_g2cons")
    from langchain_core.documents import Document

    docs = [Document(page_content=t, id=i, metadata=deep if i == "c3" else {}) for i, t in CORPUS]
    with pytest.raises(InputError, match=r"'c3'.*metadata nests more than"):
        lc.CoreChunkSelector(kappa=0.5, embedder="hash").transform_documents(docs)
    li = pytest.importorskip("llama_index.retrievers.g2cons")
    from llama_index.core.schema import TextNode

    nodes = [TextNode(id_=i, text=t, metadata=deep if i == "c3" else {}) for i, t in CORPUS]
    sel = li.CoreChunkSelector(kappa=0.5, embedder="hash")
    try:  # the node's metadata is kept inside the core chunk's: refused at the build, or saved and loaded whole
        sel(nodes)
    except InputError as e:
        assert "c3" in str(e) and "metadata nests more than" in str(e)
    else:
        sel.persist(tmp_path / "li")
        assert li.CoreChunkSelector.from_persist_dir(tmp_path / "li").kept_ids == sel.kept_ids


def test_metadata_at_the_depth_limit_saves_and_loads(tmp_path: Path) -> None:
    meta = _nested(MAX_METADATA_DEPTH)
    rows = [{"id": i, "text": t, "metadata": meta if i == "c3" else {}} for i, t in CORPUS]
    index = G2ConSIndex.build(rows, embedder="hash")
    index.save(tmp_path / "ix")
    assert dict(G2ConSIndex.load(tmp_path / "ix").snapshot.chunk("c3").metadata) == meta


def test_metadata_that_refers_to_itself_or_shares_a_container_everywhere_is_refused_at_once() -> None:
    """A mapping that holds itself, and 64 levels of one shared dict twice over (2^64 values as JSON writes them):
    both refused in well under a second, never a hang at the save."""
    import time

    loop: dict[str, Any] = {}
    loop["self"] = loop
    shared: dict[str, Any] = {}
    for _ in range(MAX_METADATA_DEPTH - 1):
        shared = {"a": shared, "b": shared}
    for meta, match in ((loop, "nests more than"), (shared, r"holds more than [\d,]+ values; keep it small")):
        t0 = time.process_time()
        with pytest.raises(InputError, match=rf"chunk #0 \('x'\): metadata {match}"):
            make_chunks([{"id": "x", "text": "Some text.", "metadata": meta}])
        assert time.process_time() - t0 < 5.0
