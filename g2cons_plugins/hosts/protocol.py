"""What a host KG is to the core: the :class:`HostKG` protocol and what one KG build cost (:class:`HostBuildCost`).

A host builds its KG over the core chunks of a ``SelectionReport`` (``index.select(kappa=...)``) and answers
queries with :class:`~g2cons_plugins.fusion.HostItem` lists in rank order; ``build`` returns what it cost. Hosts
are found by name in :mod:`.registry`; the evaluation harness (``g2cons eval --host``) measures them beside the
concept path, and the fusion takes their results as host evidence.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..fusion import HostItem
    from ..index import G2ConSIndex
    from ..selection import SelectionReport

__all__ = ["HostBuildCost", "HostKG"]


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
        """The build's price in USD at the given prices per million input and output tokens."""
        return (self.input_tokens * price_in_per_mtok + self.output_tokens * price_out_per_mtok) / 1e6

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (JSON values)."""
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
