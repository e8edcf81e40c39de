"""The settings of one fusion (:class:`FuseOptions`, built once from a config) and its inputs (:class:`FuseRequest`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError, positive_int, real, unit_interval

if TYPE_CHECKING:
    from ..config import G2ConSConfig
    from ..retrieval import RetrievedItem
    from ..snapshot import Snapshot
    from .items import HostItem

__all__ = ["FUSIONS", "FuseOptions", "FuseRequest", "Recount"]

FUSIONS = ("share", "score", "ensemble", "novel")
"""The fusion rules by name (``G2ConSConfig.fusion``): share (the default before novel-first), score, the paper's
ensemble, and novel-first (the default)."""

Recount = Callable[[list["RetrievedItem"]], list["RetrievedItem"]]
"""Gives concept units their token counts as the LLM will see them (an adapter rendering metadata)."""


@dataclass(frozen=True)
class FuseOptions:
    """The settings of one fusion, validated: ``rule`` (one of :data:`FUSIONS`), the budget ``beta``, the host's
    share ``lambda_`` (share, ensemble, novel), ``spill`` (ensemble: a path's unused share goes to the other),
    ``host_weight`` (score), ``host_head`` (share, score, novel: the concept path's first passages kept first),
    ``host_agreement`` (share, score: the host's say scaled by its agreement; novel: the trust check) and the
    concept path's ``strategy``. :meth:`of` builds one from a config, a ``None`` value taking the config's."""

    rule: str = "novel"
    beta: int = 4000
    lambda_: float = 0.2
    spill: bool = True
    host_weight: float = 0.6
    host_head: int = 5
    host_agreement: bool = True
    strategy: str = "bridge"

    def __post_init__(self) -> None:
        if self.rule not in FUSIONS:
            raise InputError(f"unknown fusion rule {self.rule!r}; choose one of {FUSIONS}")
        object.__setattr__(self, "beta", positive_int("beta", self.beta))
        object.__setattr__(self, "lambda_", unit_interval("lambda_", self.lambda_))
        if not isinstance(self.spill, (bool, np.bool_)):
            raise InputError(f"spill must be True or False, got {self.spill!r}")
        object.__setattr__(self, "spill", bool(self.spill))
        w = real("host_weight", self.host_weight)
        if w < 0:
            raise InputError(f"host_weight must be >= 0, got {w}")
        object.__setattr__(self, "host_weight", w)

    @classmethod
    def of(
        cls,
        config: G2ConSConfig,
        rule: str | None = None,
        beta: int | None = None,
        lambda_: float | None = None,
        spill: bool | None = None,
        host_weight: float | None = None,
        strategy: str | None = None,
    ) -> FuseOptions:
        """The config's fusion settings, each given value instead of the config's (``None``: the config's)."""
        return cls(
            rule=config.fusion if rule is None else rule,
            beta=config.beta if beta is None else beta,
            lambda_=config.fusion_lambda if lambda_ is None else lambda_,
            spill=config.fusion_spill if spill is None else spill,
            host_weight=config.fusion_options.host_weight if host_weight is None else host_weight,
            host_head=config.fusion_options.host_head,
            host_agreement=config.fusion_options.host_agreement,
            strategy=strategy or config.strategy,
        )

    def with_(self, **changes: Any) -> FuseOptions:
        """A copy with ``changes`` (validated again)."""
        return replace(self, **changes)


@dataclass(frozen=True)
class FuseRequest:
    """One fusion's inputs: the snapshot, the host's items (validated, distinct, an id-only item given its text from
    the graph), the query and its vector, the concept path alone for this query at beta when the caller already ran
    it (same strategy), and ``recount`` (token counts as the LLM sees them)."""

    snap: Snapshot
    hosts: list[HostItem]
    query: str
    query_vector: np.ndarray | None = None
    concept: Sequence[RetrievedItem] | None = None
    recount: Recount | None = None
