"""The HippoRAG host: a stand-in with HippoRAG 2's ``index`` / ``delete`` / ``retrieve(queries, num_to_retrieve)``
(``QuerySolution`` with ``docs`` and ``doc_scores``) gets only the kept chunks; its passages come back as the
index's chunk ids; a rebuild over a smaller selection deletes the dropped ones; the fusion takes it as a host;
``hipporag`` is imported only when the host makes the object, with a clear error when it is missing."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace
from importlib import import_module
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.errors import InputError
from g2cons_plugins.hosts import HostKG, load_host
from g2cons_plugins.hosts.hipporag_host import HippoRAGHost


@dataclass
class QuerySolution:  # the fields of hipporag.utils.misc_utils.QuerySolution the host reads
    question: str
    docs: list[str]
    doc_scores: np.ndarray | None = None


class FakeHippoRAG:
    """Passages ranked by words shared with the query; it reformats white space as a preprocessor could."""

    def __init__(self, **options: Any) -> None:
        self.options = options
        self.passages: list[str] = []
        self.calls: list[tuple[str, Any]] = []

    def index(self, docs: list[str]) -> None:
        self.calls.append(("index", list(docs)))
        self.passages += [d for d in docs if d not in self.passages]

    def delete(self, docs: list[str]) -> None:
        self.calls.append(("delete", list(docs)))
        self.passages = [p for p in self.passages if p not in docs]

    def retrieve(self, queries: list[str], num_to_retrieve: int | None = None) -> list[QuerySolution]:
        self.calls.append(("retrieve", num_to_retrieve))
        out = []
        for q in queries:
            words = set(q.lower().split())
            ranked = sorted(self.passages, key=lambda p: -len(words & set(p.lower().split())))[:num_to_retrieve]
            scores = np.array([len(words & set(p.lower().split())) for p in ranked], float)
            out.append(QuerySolution(q, ["  " + " \n".join(p.split()) for p in ranked], scores))
        return out


@pytest.fixture(scope="module")
def index(corpus: list[dict[str, str]]) -> G2ConSIndex:
    return G2ConSIndex.build(corpus, embedder="hash", config=G2ConSConfig(unit_tokens=None))


def test_the_kept_chunks_are_indexed_and_passages_come_back_as_chunk_ids(index: G2ConSIndex) -> None:
    fake = FakeHippoRAG()
    host = HippoRAGHost(fake, limit=3)
    assert isinstance(host, HostKG) and host.name == "hipporag"
    full = index.select(kappa=1.0)
    cost = host.build(index, full)
    assert fake.calls == [("index", [index.chunk(c).text for c in full.kept_ids])]
    assert cost.llm and cost.chunks == len(full.kept_ids) and cost.calls == 2 * len(full.kept_ids)
    assert cost.input_tokens > cost.calls * host.prompt_tokens_per_call
    q = "Where was Marie Curie born?"
    got = host.retrieve(q)
    want = fake.retrieve([q], 3)[0]
    assert fake.calls[-2] == ("retrieve", 3) and len(got) == 3
    # each passage (white space changed) maps to the chunk with that text, in HippoRAG's order, with its score
    assert [index.chunk(h.chunk_id).text.split() for h in got if h.chunk_id] == [d.split() for d in want.docs]
    assert [h.score for h in got] == list(want.doc_scores)


def test_a_smaller_selection_deletes_what_it_drops_and_indexes_nothing_twice(index: G2ConSIndex) -> None:
    fake = FakeHippoRAG()
    host = HippoRAGHost(fake, limit=50)
    full = index.select(kappa=1.0)
    host.build(index, full)
    dropped = ["c1", "c2"]
    host.build(index, replace(full, kept_ids=[c for c in full.kept_ids if c not in dropped]))
    assert fake.calls[1] == ("delete", [index.chunk(c).text for c in dropped]) and len(fake.calls) == 2
    got = {h.chunk_id for h in host.retrieve("Where was Marie Curie born?")}
    assert not got & set(dropped) and len(got) == len(full.kept_ids) - 2
    host.build(index, full)  # back to all: only the two dropped are indexed again
    assert fake.calls[-1] == ("index", [index.chunk(c).text for c in dropped])


def test_a_passage_no_chunk_has_is_a_text_item_and_a_prebuilt_object_is_not_reindexed(index: G2ConSIndex) -> None:
    fake = FakeHippoRAG()
    fake.index(["A passage indexed elsewhere about Marie Curie and her birth."])
    host = HippoRAGHost(fake, index_on_build="false")
    host.build(index, index.select(kappa=1.0))
    assert fake.calls == [("index", ["A passage indexed elsewhere about Marie Curie and her birth."])]
    (item,) = host.retrieve("Where was Marie Curie born?")
    assert item.chunk_id is None and item.text is not None and "elsewhere" in item.text


def test_the_fusion_takes_it_as_a_host(index: G2ConSIndex) -> None:
    from g2cons_plugins.fusion import fuse_report

    host = HippoRAGHost(FakeHippoRAG(), limit=5)
    host.build(index, index.select(kappa=1.0))
    q = "Where was Marie Curie born?"
    report = fuse_report(index, host.retrieve(q), q, beta=400)
    hosted = {it.chunk_id for it in report.items if it.source in ("host", "both")}
    assert hosted and hosted <= {h.chunk_id for h in host.retrieve(q)}


def test_hipporag_is_imported_only_to_make_the_object(monkeypatch: pytest.MonkeyPatch, index: G2ConSIndex) -> None:
    monkeypatch.setitem(sys.modules, "hipporag", None)  # not installed
    host = HippoRAGHost(path="/tmp/hipporag-save", llm_model_name="m")  # no import yet
    with pytest.raises(InputError, match="hipporag package"):
        host.build(index, index.select(kappa=1.0))
    module = type(sys)("hipporag")
    module.HippoRAG = FakeHippoRAG  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "hipporag", module)
    host.build(index, index.select(kappa=1.0))
    assert host.hipporag.options == {"llm_model_name": "m", "save_dir": "/tmp/hipporag-save"}
    assert host.retrieve("Where was Marie Curie born?")


def test_bad_options_and_calls_are_named(index: G2ConSIndex) -> None:
    with pytest.raises(InputError, match="retrieve"):
        HippoRAGHost(object())
    with pytest.raises(InputError, match="either"):
        HippoRAGHost(FakeHippoRAG(), path="x")
    with pytest.raises(InputError, match="limit"):
        HippoRAGHost(FakeHippoRAG(), limit=0)
    with pytest.raises(InputError, match="index_on_build"):
        HippoRAGHost(FakeHippoRAG(), index_on_build="maybe")
    with pytest.raises(InputError, match="not built"):
        HippoRAGHost(FakeHippoRAG()).retrieve("q")
    host = HippoRAGHost(FakeHippoRAG())
    host.build(index, index.select(kappa=1.0))
    with pytest.raises(InputError, match="non-empty"):
        host.retrieve(" ")


def test_registry_by_module_and_entry_point_declared() -> None:
    fake = FakeHippoRAG()
    host = load_host("g2cons_plugins.hosts.hipporag_host:hipporag_host", hipporag=fake)
    assert isinstance(host, HippoRAGHost) and host.hipporag is fake
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    eps = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]["entry-points"]
    target = eps["g2cons_plugins.hosts"]["hipporag"]
    mod, _, attr = target.partition(":")
    assert getattr(import_module(mod), attr) is import_module("g2cons_plugins.hosts.hipporag_host").hipporag_host
