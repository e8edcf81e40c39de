"""Host-KG plug-ins for ``g2cons eval --host NAME``: the host framework's KG path, measured beside ours.

The core never imports a host framework. A host distribution registers a factory under the entry-point group
``g2cons_plugins.hosts`` (the LlamaIndex adapter registers ``llama-index-ner``, a ``PropertyGraphIndex`` built
with spaCy NER co-occurrence triplets and no LLM, and ``llama-index-llm``, the same index built by
``SimpleLLMPathExtractor`` with an OpenAI(-compatible) LLM); the core registers ``replay-core`` and ``graph-walk``
(a replayed extraction, queried by entity names or walked as HippoRAG 2 walks its graph). ``load_host`` also
takes ``module:factory``.

A host builds its KG over the core chunks of a ``SelectionReport`` (``index.select(kappa=...)``) and answers
queries with :class:`~g2cons_plugins.fusion.ensemble.HostItem` lists in rank order; ``build`` returns what it cost.
"""

from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import InputError

if TYPE_CHECKING:
    from ..fusion.ensemble import HostItem
    from ..index import G2ConSIndex
    from ..selection import SelectionReport

HOST_GROUP = "g2cons_plugins.hosts"


@dataclass(frozen=True)
class HostBuildCost:
    """What one KG build cost: extraction calls and tokens (``llm=False``: what an LLM extractor *would* have
    been sent for the same chunks, no output tokens), chunks given, wall time."""

    calls: int
    input_tokens: int
    output_tokens: int
    chunks: int
    seconds: float
    llm: bool
    graph: dict[str, int]

    def usd(self, price_in_per_mtok: float, price_out_per_mtok: float) -> float:
        return (self.input_tokens * price_in_per_mtok + self.output_tokens * price_out_per_mtok) / 1e6

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@runtime_checkable
class HostKG(Protocol):
    """A host framework's KG path. ``label`` says plainly what the KG is (e.g. "NOT an LLM-extracted KG");
    ``prompt_tokens_per_call``: tokens of its extraction prompt sent with every chunk (kappa by tokens is a share
    of chunk + prompt tokens)."""

    name: str
    label: str
    prompt_tokens_per_call: int

    def build(self, index: G2ConSIndex, selection: SelectionReport, show_progress: bool = False) -> HostBuildCost:
        """(Re)build the host KG over the chunks ``selection.kept_ids`` of ``index`` (``index.select(...)``)."""
        ...

    def retrieve(self, query: str) -> list[HostItem]:
        """The host's results for ``query``, best first (ids of ``index``'s chunks where known)."""
        ...


def available_hosts() -> list[str]:
    """Names registered under ``g2cons_plugins.hosts`` by installed distributions."""
    from importlib.metadata import entry_points

    return sorted(ep.name for ep in entry_points(group=HOST_GROUP))


def load_host(spec: str, **options: Any) -> HostKG:
    """A host by entry-point name, ``NAME:PATH`` (an entry point given a path, e.g. ``replay:kg.jsonl``: a
    precomputed extraction replayed as the host KG) or ``module:factory``; ``options`` go to the factory."""
    from importlib.metadata import entry_points

    factory: Any = None
    name, sep, arg = spec.partition(":")
    named = [ep for ep in entry_points(group=HOST_GROUP) if ep.name == name] if sep else []
    if named:
        if not arg:
            raise InputError(f"host {spec!r}: give a path after the colon, e.g. {name}:PATH")
        try:
            factory = named[0].load()
        except ImportError as e:
            raise InputError(f"host {name!r} is installed but cannot be imported: {e}") from e
        options = {"path": arg, **options}
    elif ":" in spec:
        mod, _, attr = spec.partition(":")
        try:
            factory = getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError) as e:
            raise InputError(f"cannot load host {spec!r}: {e}") from e
    else:
        eps = [ep for ep in entry_points(group=HOST_GROUP) if ep.name == spec]
        if not eps:
            names = available_hosts()
            raise InputError(
                f"unknown host {spec!r}; installed: {names or 'none'} "
                "(pip install llama-index-retrievers-g2cons for llama-index-ner / llama-index-llm / replay:PATH; "
                "replay-core:PATH and graph-walk:PATH need nothing more)"
            )
        try:
            factory = eps[0].load()
        except ImportError as e:
            raise InputError(f"host {spec!r} is installed but cannot be imported: {e}") from e
    host = factory(**options)
    if not isinstance(host, HostKG):
        raise InputError(
            f"host {spec!r} does not implement HostKG (name, label, prompt_tokens_per_call, build, retrieve)"
        )
    return host
