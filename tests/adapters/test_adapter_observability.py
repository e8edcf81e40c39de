"""Observability: LlamaIndex dispatcher spans and events, LangChain custom events on the retriever run, with the
same numbers (counts and tokens per path) in both, checked against the returned results."""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from typing import Any
from uuid import UUID

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytest.importorskip("langchain_g2cons")
pytest.importorskip("llama_index.retrievers.g2cons")

import langchain_g2cons as lc  # noqa: E402
import llama_index.retrievers.g2cons as li  # noqa: E402
from conftest import CORPUS  # noqa: E402
from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from llama_index.core.base.base_retriever import BaseRetriever  # noqa: E402
from llama_index.core.instrumentation import get_dispatcher  # noqa: E402
from llama_index.core.instrumentation.event_handlers import BaseEventHandler  # noqa: E402
from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler  # noqa: E402
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode  # noqa: E402
from llama_index.retrievers.g2cons.events import (  # noqa: E402
    G2ConSConceptPathEvent,
    G2ConSFusionEvent,
    G2ConSSelectionEvent,
)
from test_langchain_adapter import WordOverlapRetriever  # noqa: E402

Q = "Where was Marie Curie born?"
FUSION_KEYS = set(G2ConSFusionEvent.model_fields) - {"timestamp", "id_", "span_id", "tags"}
CONCEPT_KEYS = set(G2ConSConceptPathEvent.model_fields) - {"timestamp", "id_", "span_id", "tags"}


class Collect(BaseEventHandler):
    events: list[Any] = []

    @classmethod
    def class_name(cls) -> str:
        return "Collect"

    def handle(self, event: Any, **kwargs: Any) -> None:
        if event.class_name().startswith("G2ConS"):
            self.events.append(event)


@pytest.fixture()
def li_handlers() -> Any:
    root = get_dispatcher()
    events, spans = Collect(events=[]), SimpleSpanHandler()
    root.add_event_handler(events)
    root.add_span_handler(spans)
    yield events, spans
    root.event_handlers.remove(events)
    root.span_handlers.remove(spans)


def test_llama_index_spans_and_events(li_handlers) -> None:
    events, spans = li_handlers
    nodes = [TextNode(id_=i, text=t) for i, t in CORPUS]
    sel = li.CoreChunkSelector(kappa=0.5, kappa_by="chunks", embedder="hash")
    kept = sel(nodes[:-2])
    (fit,) = [e for e in events.events if isinstance(e, G2ConSSelectionEvent)]
    assert (fit.n_in, fit.n_kept, fit.n_dropped) == (len(nodes) - 2, len(kept), len(nodes) - 2 - len(kept))
    assert fit.kept_tokens + fit.dropped_tokens == fit.total_tokens == sel.report.total_tokens and not fit.incremental
    sel(nodes[-2:])
    ins = [e for e in events.events if isinstance(e, G2ConSSelectionEvent)][-1]
    assert ins.incremental and ins.n_in == 2 and ins.n_kept + ins.n_dropped == 2 and ins.n_chunks == len(nodes)

    host = FixedLI(kept[:3])
    r = li.G2ConSRetriever(sel.index, host, beta=200)
    events.events.clear()
    res = r.retrieve(Q)
    (cp,) = [e for e in events.events if isinstance(e, G2ConSConceptPathEvent)]
    (fu,) = [e for e in events.events if isinstance(e, G2ConSFusionEvent)]
    by_src = Counter(n.node.metadata["g2cons_source"] for n in res)
    assert (fu.n_fused, fu.n_host, fu.n_concept, fu.n_both) == (
        len(res), by_src["host"], by_src["concept"], by_src["both"]
    )
    llm_tokens = sel.index.count_tokens([n.node.get_content(metadata_mode=MetadataMode.LLM) for n in res])
    assert fu.total_tokens == fu.host_tokens + fu.concept_tokens + fu.both_tokens <= 200
    assert fu.total_tokens == sum(llm_tokens)
    assert fu.concept_in == cp.n_concept and fu.host_in == 3 and cp.beta == fu.beta == 200
    names = {s.id_.split("-")[0] for s in spans.completed_spans}
    assert {"G2ConSRetriever._retrieve", "CoreChunkSelector.fit"} <= names
    assert "CoreChunkSelector.insert_nodes" in names


class FixedLI(BaseRetriever):
    """Host stand-in: the same nodes for every query."""

    def __init__(self, nodes: list[Any]) -> None:
        self._nodes = nodes
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=n, score=1.0 / (i + 1)) for i, n in enumerate(self._nodes)]


class Custom(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any], UUID]] = []
        self.retriever_runs: list[UUID] = []

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: UUID, **kwargs: Any) -> None:
        self.retriever_runs.append(run_id)

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.events.append((name, data, run_id))


def test_langchain_custom_events_carry_the_same_numbers() -> None:
    docs = [Document(page_content=t) for _, t in CORPUS]
    h = Custom()
    sel = lc.CoreChunkSelector(kappa=0.5, kappa_by="chunks", embedder="hash")
    kept = list(sel.transform_documents(docs[:-2], callbacks=[h]))
    (name, data, _), *_ = h.events
    assert name == "g2cons_selection" and (data["n_in"], data["n_kept"]) == (len(docs) - 2, len(kept))
    sel.add_documents(docs[-2:], callbacks=[h])
    assert h.events[-1][1]["incremental"] and h.events[-1][1]["n_in"] == 2
    r = lc.G2ConSRetriever(host=WordOverlapRetriever(docs=kept, k=3), index=sel.index, beta=200)
    for call in ("invoke", "ainvoke"):
        h.events.clear()
        h.retriever_runs.clear()
        out = r.invoke(Q, config={"callbacks": [h]}) if call == "invoke" else asyncio.run(
            r.ainvoke(Q, config={"callbacks": [h]})
        )
        got = {n: (d, rid) for n, d, rid in h.events}
        fu, fu_run = got["g2cons_fusion"]
        cp, _ = got["g2cons_concept_path"]
        assert fu_run == h.retriever_runs[0]  # attached to the G2ConSRetriever run (the host run came after)
        assert set(fu) == FUSION_KEYS and set(cp) == CONCEPT_KEYS  # the LlamaIndex event fields, no more, no less
        by_src = Counter(d.metadata["g2cons_source"] for d in out)
        assert (fu["n_fused"], fu["n_host"], fu["n_concept"], fu["n_both"]) == (
            len(out), by_src["host"], by_src["concept"], by_src["both"]
        )
        assert fu["total_tokens"] == sum(d.metadata["g2cons_n_tokens"] for d in out) <= 200
        assert fu["host_in"] == 3 and fu["concept_in"] == cp["n_concept"]
    # no handler: no event work at all (and no error)
    assert r.invoke(Q)
