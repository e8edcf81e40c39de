"""LlamaIndex instrumentation events of the adapter (``llama_index.core.instrumentation``).

Spans: the selector's ``fit`` / ``insert_nodes`` / ``delete_nodes`` (``dispatcher.span``) and, as for every
LlamaIndex retriever, ``ConceptGraphRetriever._retrieve`` (the concept path) and ``G2ConSRetriever._retrieve``
(host + concept path + fusion). Events, one per step, carry the same numbers as the LangChain adapter's custom
events (``g2cons_plugins.hosts.pipelines.integration``: ``selection_counts``, ``concept_counts``, ``fusion_counts``);
their ``span_id`` ties them to the enclosing span. Events are only built when a handler listens. Listen with::

    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler

    class Printer(BaseEventHandler):
        def handle(self, event, **kwargs):
            if event.class_name().startswith("G2ConS"):
                print(event.class_name(), event.model_dump())

    get_dispatcher().add_event_handler(Printer())   # the root dispatcher sees every event
"""

from __future__ import annotations

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import NullEventHandler
from llama_index.core.instrumentation.events import BaseEvent

dispatcher = get_dispatcher("llama_index.retrievers.g2cons")

__all__ = ["G2ConSConceptPathEvent", "G2ConSFusionEvent", "G2ConSSelectionEvent", "dispatcher", "listening"]


def listening() -> bool:
    """True when an event handler (other than the default null one) would receive this package's events."""
    d = dispatcher
    while True:
        if any(not isinstance(h, NullEventHandler) for h in d.event_handlers):
            return True
        if not d.propagate or not d.parent_name:
            return False
        d = d.parent


class G2ConSSelectionEvent(BaseEvent):
    """A selection: the first fit (``incremental=False``) or the decision on inserted nodes (``True``; counts and
    tokens are those of the inserted nodes; ``kappa`` etc. the rule applied), or a delete (``n_removed``)."""

    kappa: float | None = None
    kappa_by: str | None = None
    selector: str | None = None
    incremental: bool = False
    n_in: int = 0
    n_kept: int = 0
    n_dropped: int = 0
    n_removed: int = 0
    kept_tokens: int = 0
    dropped_tokens: int = 0
    total_tokens: int = 0
    n_chunks: int = 0
    """Chunks in the concept graph afterwards."""

    @classmethod
    def class_name(cls) -> str:
        """Event name."""
        return "G2ConSSelectionEvent"


class G2ConSConceptPathEvent(BaseEvent):
    """One concept-path retrieval: items and tokens (counted on the text the LLM sees)."""

    query: str
    beta: int
    n_concept: int
    concept_tokens: int

    @classmethod
    def class_name(cls) -> str:
        """Event name."""
        return "G2ConSConceptPathEvent"


class G2ConSFusionEvent(BaseEvent):
    """One fused retrieval: inputs per path, outputs by source and their tokens."""

    query: str
    beta: int
    lambda_: float
    host_in: int
    concept_in: int
    n_fused: int
    n_host: int
    n_concept: int
    n_both: int
    host_tokens: int
    concept_tokens: int
    both_tokens: int
    total_tokens: int
    rule: str = "score"
    host_dropped: int = 0
    host_dropped_reasons: dict[str, int] = {}

    @classmethod
    def class_name(cls) -> str:
        """Event name."""
        return "G2ConSFusionEvent"
