"""Dual-path fusion: the host KG retriever's results and the concept path in one context of at most beta tokens.

One entry, :func:`fuse_context`, takes the settings as one :class:`FuseOptions` (built once from a config:
``FuseOptions.of(config, ...)``) and runs the rule it names, chosen from :data:`RULES`; :func:`fuse_report` is the
same with the settings as keywords (``None``: the config's). Four rules (``G2ConSConfig.fusion``):

- ``"novel"`` (the default, :mod:`~g2cons_plugins.fusion.novel`): the host's first two passages the concept path
  lacks displace the concept path's tail (the first always, the second within lambda x beta; in a context of 20
  passages or more the first from any rank of the host's list), behind its first five passages; then the spill.
  At or above the concept path in every cell measured (benchmarks/dual_path/fusion_novel.sh).
- ``"share"`` (:mod:`~g2cons_plugins.fusion.share`, the default before novel-first): lambda is the host's share of
  the budget, scaled per query by how much the host agrees with the concept path; overlap first, the concept path's
  head, the host's first item, each path's best within its share by a fused rank score, then the spill.
- ``"score"`` (:mod:`~g2cons_plugins.fusion.score`, the default before share fusion): host chunks are evidence on
  the concept path's unit scores, one ranking, one budget. It needs a strategy that takes host evidence
  ("bridge" or "dense"): with another one it raises an ``InputError`` naming both.
- ``"ensemble"`` (``mode="paper"``, :mod:`~g2cons_plugins.fusion.ensemble`): the paper's Weighted Context Ensemble
  (Section 3.2.1): overlap first, the host capped at lambda x beta, the concept path at (1 - lambda) x beta.

Every host item that contributes nothing is reported with its reason in :class:`Fusion` (``dropped``): ranked
below the budget, not in the graph and longer than the room left, or an id-only item the graph does not know.
Measured on the same runs: benchmarks/dual_path/fusion_novel.sh (novel against share) and fusion_compare.sh (share,
score and the ensemble).

The modules: :mod:`~g2cons_plugins.fusion.items` (host and fused items), :mod:`~g2cons_plugins.fusion.options`
(the settings), :mod:`~g2cons_plugins.fusion.matching` (host items against the graph), one module per rule, and
:mod:`~g2cons_plugins.fusion.report` (what happened to each host item).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..retrieval import RetrievedItem
from ..snapshot import HasSnapshot, as_snapshot
from .ensemble import fuse, fuse_ensemble
from .items import FusedItem, HostItem, as_host_items, context_tokens
from .matching import chunk_units, distinct, resolve_host_items
from .novel import fuse_novel
from .options import FUSIONS, FuseOptions, FuseRequest, Recount
from .report import REASON_BELOW, REASON_CAP, REASON_TOO_LONG, REASON_UNKNOWN, Fusion
from .score import check_strategy, fuse_score
from .share import RANK_K, SHARE_FLOOR, SHARE_FULL_AGREEMENT, fuse_share, share_scale

__all__ = [
    "FUSIONS",
    "RANK_K",
    "REASON_BELOW",
    "REASON_CAP",
    "REASON_TOO_LONG",
    "REASON_UNKNOWN",
    "RULES",
    "SHARE_FLOOR",
    "SHARE_FULL_AGREEMENT",
    "FuseOptions",
    "FuseRequest",
    "FusedItem",
    "Fusion",
    "HostItem",
    "as_host_items",
    "check_options",
    "chunk_units",
    "context_tokens",
    "fuse",
    "fuse_context",
    "fuse_report",
    "resolve_host_items",
    "share_scale",
]

Rule = Callable[[FuseRequest, FuseOptions], Fusion]

RULES: dict[str, Rule] = {"share": fuse_share, "score": fuse_score, "ensemble": fuse_ensemble, "novel": fuse_novel}
"""Each fusion rule by name (:data:`FUSIONS`): a function of the request and the options."""


def check_options(opt: FuseOptions) -> None:
    """Refuse a rule / strategy pair that cannot run (score fusion with a strategy that takes no host evidence),
    naming both: nothing falls back to another rule."""
    if opt.rule == "score":
        check_strategy(opt)


def fuse_context(
    index: HasSnapshot,
    host: Sequence[Any],
    query: str,
    options: FuseOptions,
    query_vector: np.ndarray | None = None,
    concept: Sequence[RetrievedItem] | None = None,
    recount: Recount | None = None,
) -> Fusion:
    """Fuse ``host`` (validated; id-only items take their text from the graph; repeats count once) with the
    concept path for ``query`` by ``options.rule``; returns the context and the report of host items not placed.
    ``concept``: the concept path alone (same beta and strategy) when the caller already ran it; ``recount``: gives
    units their token counts as the LLM will see them (an adapter rendering metadata; share and score)."""
    check_options(options)
    snap = as_snapshot(index)
    req = FuseRequest(snap, distinct(resolve_host_items(snap, host)), query, query_vector, concept, recount)
    return RULES[options.rule](req, options)


def fuse_report(
    index: HasSnapshot,
    host: Sequence[Any],
    query: str,
    beta: int | None = None,
    lambda_: float | None = None,
    spill: bool | None = None,
    query_vector: np.ndarray | None = None,
    rule: str | None = None,
    host_weight: float | None = None,
    concept: Sequence[RetrievedItem] | None = None,
    strategy: str | None = None,
    recount: Recount | None = None,
) -> Fusion:
    """:func:`fuse_context` with the settings as keywords, each ``None`` taking the config's
    (:meth:`FuseOptions.of`): ``rule`` ("share", "score", "ensemble" or "novel"), ``beta``, ``lambda_``, ``spill``,
    ``host_weight`` and the concept path's ``strategy``."""
    opt = FuseOptions.of(as_snapshot(index).config, rule, beta, lambda_, spill, host_weight, strategy)
    return fuse_context(index, host, query, opt, query_vector, concept, recount)
